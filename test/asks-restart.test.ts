// Asks survive the host: a real `holon serve` is SIGKILLed while its agent waits on an ask
// whose delivery to the operator binding has not been accepted yet; after the restart
// `holon asks` shows the ask, the binding gets it again with the ask id as Idempotency-Key,
// `holon asks show --wait` returns once `holon asks answer` decides it, and the agent
// hears the decision. A bridge may decide through its binding, never through a revoked one.
// Expiry runs on the deadline scheduler (injected clock): an expired question tells the
// agent, an expired budget ask keeps its gate.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { reply } from "./fake-provider/server.ts";
import { RuntimeHost } from "../src/host/host.ts";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { runCli, spawnServe, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

type Received = { headers: IncomingMessage["headers"]; body: any };

/** A bridge's delivery callback: answers each POST with the next status (then 202). */
async function callbackServer(answers: number[]) {
  const received: Received[] = [];
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    received.push({ headers: req.headers, body: JSON.parse(text) });
    const status = answers.shift() ?? 202;
    res.writeHead(status, { "content-type": "application/json" });
    res.end("{}");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/deliver`, received, close: () => server.close() };
}

const TOKEN = "bridge-delivery-token-0123456789";

describe("asks across a restart", () => {
  it("SIGKILL while waiting on an ask: after restart it is listed, re-delivered, and answering works", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.setFallback(() => reply.text("Not picking it."));
    // The bridge refuses everything before the crash, and accepts after it.
    const cb = await callbackServer([503, 503, 503, 503]);
    const env = { HOLON_WORK_MAX_CONTINUATIONS: "1" };
    const cli = (...args: string[]) => runCli(args, { env: { HOLON_HOME: home } });
    try {
      const first = await spawnServe(home, [], env);
      procs.push(first.proc);
      const post = (url: string, auth: Record<string, string>, path: string, body: unknown) =>
        fetch(url + path, {
          method: "POST",
          headers: { "content-type": "application/json", ...auth },
          body: JSON.stringify(body),
        });
      const bound = await post(first.url, first.auth, "/control/agents/main/operator-bindings", {
        transport: "agentinbox",
        operator_actor_id: "operator:jo",
        delivery_callback_url: cb.url,
        delivery_token: TOKEN,
      });
      expect(bound.status).toBe(201);
      const add = await cli("work", "add", "main", "never picked");
      expect(add.code, add.stderr).toBe(0);
      // The halt's ask reaches the bridge, which refuses it.
      const firstTry = await waitFor(
        () => cb.received.find((r) => r.body.kind === "operator_ask"),
        { what: "the ask's first delivery attempt", timeoutMs: 20_000 },
      );
      const askId = firstTry.body.ask.ask_id as string;
      expect(firstTry.headers["idempotency-key"]).toBe(askId);
      expect(firstTry.headers.authorization).toBe(`Bearer ${TOKEN}`);
      const exited = new Promise((r) => first.proc.once("exit", r));
      first.proc.kill("SIGKILL");
      await exited;

      cb.received.length = 0;
      const second = await spawnServe(home, [], env);
      procs.push(second.proc);
      const listed = await cli("asks");
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain(askId);
      // Delivered again after the restart, under the same idempotency key, and accepted.
      const again = await waitFor(
        () => cb.received.find((r) => r.headers["idempotency-key"] === askId),
        { what: "re-delivery after the restart", timeoutMs: 20_000 },
      );
      expect(again.body).toMatchObject({ delivery_intent_id: askId, target_agent_id: "main" });
      expect(again.body.ask.options).toEqual(["continue N", "block item", "cancel item"]);
      await waitFor(
        async () => {
          const r = await cli("asks", "show", askId, "--json");
          const deliveries = JSON.parse(r.stdout).deliveries as Record<string, { status: string }>;
          return Object.values(deliveries).some((d) => d.status === "accepted_by_transport");
        },
        { what: "the accepted delivery to be recorded" },
      );

      // `show --wait` blocks until the answer comes.
      const waiting = cli("asks", "show", askId, "--wait");
      const answered = await cli("asks", "answer", askId, "block", "item");
      expect(answered.code, answered.stderr).toBe(0);
      const shown = await waiting;
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toContain("(decided)");
      expect(shown.stdout).toMatch(/decided: +block item \(by operator/);
      const again409 = await cli("asks", "answer", askId, "continue", "2");
      expect(again409.code).not.toBe(0);
      expect(again409.stderr).toContain("ask_not_pending");
      const item = await cli("work", "list", "main", "--state", "blocked");
      expect(item.stdout).toContain("blocked by the operator");
      const exited2 = new Promise((r) => second.proc.once("exit", r));
      second.proc.kill("SIGTERM");
      await exited2;
    } finally {
      fake.setFallback(null);
      cb.close();
    }
  }, 60_000);

  it("a new binding gets what is pending; a bridge decides through it; a revoked binding or another actor is refused", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const cb = await callbackServer([]);
    const rt = await startRuntime({ home });
    try {
      const asks = rt.host.services.asks;
      const ask = await asks.open({
        agent_id: "main",
        kind: "budget",
        source: "budget",
        scope: "agent",
        about: "Weekly $5 budget spent",
        detail: "main spent $5.00 of $5.00 this week.",
        options: ["raise"],
      });
      // Opened before the binding existed: the new binding gets it at once.
      const b = await rt.req("POST", "/control/agents/main/operator-bindings", {
        transport: "agentinbox",
        operator_actor_id: "operator:jo",
        delivery_callback_url: cb.url,
        delivery_token: TOKEN,
      });
      const bindingId = b.json.binding.binding_id as string;
      await waitFor(
        async () =>
          (await asks.get(ask.id)).deliveries[bindingId]?.status === "accepted_by_transport",
        {
          what: "the ask delivered to the binding",
        },
      );
      const wrongActor = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "raise",
        binding_id: bindingId,
        actor_id: "operator:mallory",
      });
      expect(wrongActor.status).toBe(403);
      expect(wrongActor.json.error.kind).toBe("actor_mismatch");
      fake.enqueue(reply.text("resumed"));
      const ok = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "raise",
        binding_id: bindingId,
        actor_id: "operator:jo",
      });
      expect(ok.status).toBe(200);
      expect(ok.json.ask.decided_by).toEqual({
        kind: "operator",
        via: "operator_binding",
        binding_id: bindingId,
        actor_id: "operator:jo",
      });
      const msg = (await rt.host.store.messages.get(ok.json.message_id))!;
      expect(msg).toMatchObject({
        kind: "operator_prompt",
        delivery_surface: "remote_operator_transport",
        admission_context: "operator_transport_authenticated",
        authority_class: "operator_instruction",
      });
      await rt.req("POST", `/control/agents/main/operator-bindings/${bindingId}/revoke`, {});
      const next = await asks.open({
        agent_id: "main",
        kind: "budget",
        source: "budget",
        scope: "agent",
        about: "again",
        detail: "again",
      });
      const revoked = await rt.req("POST", `/control/asks/${next.id}/decision`, {
        decision: "ok",
        binding_id: bindingId,
        actor_id: "operator:jo",
      });
      expect(revoked.status).toBe(403);
      expect(revoked.json.error.kind).toBe("binding_revoked");
      expect((await asks.get(next.id)).state).toBe("pending");
    } finally {
      cb.close();
      await rt.close();
    }
  });
});

type TestClock = Clock & { advance(ms: number): void };
function testClock(start: string): TestClock {
  let t = Date.parse(start);
  return { now: () => new Date(t), sleep: systemClock.sleep, advance: (ms) => (t += ms) };
}

describe("ask expiry", () => {
  it("after 7 days an input ask expires and tells the agent; a budget ask expires and keeps its gate", async () => {
    const clock = testClock("2026-03-01T12:00:00.000Z");
    const host = await RuntimeHost.open({ home: tempHome(), clock, autostartAgents: false });
    try {
      const { asks, work, scheduler } = host.services;
      const item = await work.create("main", { objective: "pick a name" }, "operator");
      const question = await asks.open({
        agent_id: "main",
        kind: "input",
        source: "needs_input",
        scope: "work_item",
        work_item_id: item.id,
        about: "Which name?",
        detail: "Which name should the release have?",
      });
      const gate = await asks.open({
        agent_id: "main",
        kind: "budget",
        source: "budget",
        scope: "agent",
        about: "budget",
        detail: "spent",
      });
      expect(question.expires_at).toBe("2026-03-08T12:00:00.000Z");
      clock.advance(7 * 24 * 3600_000 - 1);
      expect(await scheduler.fireDue()).toBe(0);
      clock.advance(1);
      expect(await scheduler.fireDue()).toBe(2);
      expect((await asks.get(question.id)).state).toBe("expired");
      expect((await asks.get(gate.id)).state).toBe("expired");
      // The question's agent was told; its item is runnable again.
      const told = (await host.store.messages.recent("main", 10)).find(
        (m) => m.metadata?.ask_id === question.id,
      )!;
      expect(told.kind).toBe("system_tick");
      expect(told.body).toMatchObject({ text: expect.stringContaining("expired") });
      expect((await work.item("main", item.id)).blocked_by).toBeUndefined();
      // The budget ask still gates the agent until it is withdrawn (its window turned over).
      expect(await asks.gatedBy("main")).toBe(gate.id);
      const late = async () =>
        await asks.decide(gate.id, { decision: "raise" }, { kind: "operator", via: "control" });
      await expect(late()).rejects.toThrow(/expired, not pending/);
      await asks.withdraw(gate.id, "budget_window_turned_over", {
        wake: "Your budget window turned over.",
      });
      expect(await asks.gatedBy("main")).toBeUndefined();
      expect(await host.store.deadlines.forAgent("main")).toEqual([]);
    } finally {
      void host.shutdown();
    }
  });
});
