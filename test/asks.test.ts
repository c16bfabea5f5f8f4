// Asks end to end: the runaway guard halts a never-picked work item once and asks; further
// prompts do not restart the loop, `continue 5` does (through the real CLI); a question
// the agent leaves as `needs_input` becomes an input ask that blocks only its item; an
// agent-scope budget ask gates the agent (ingress kept, no provider call) until a human
// decides it; bad decisions are refused with clear errors and change nothing.
import { describe, expect, it } from "vitest";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

const events = async (rt: TestRuntime, type: string, agent = "main") =>
  (await rt.host.store.events.after(agent, 0, 100_000)).filter((e) => e.type === type);
const admittedTicks = async (rt: TestRuntime) =>
  (await events(rt, "work_activation")).filter((e) => e.payload.disposition === "admitted").length;

async function idle(rt: TestRuntime, agent = "main") {
  await waitFor(
    async () =>
      (await rt.host.store.messages.pendingCount(agent)) === 0 &&
      !(await rt.host.store.agents.get(agent))!.current_run_id,
    { what: "an idle agent", timeoutMs: 20_000 },
  );
}

async function runtime(env: Record<string, string> = {}) {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const rt = await startRuntime({ home, env: { ...process.env, ...env } });
  const cli = (...args: string[]) => runCli(args, { env: { HOLON_HOME: home } });
  return { rt, cli, home };
}

describe("runaway loops end in an ask", () => {
  it("a never-picked item halts once and asks; five prompts do not restart the loop; continue 5 does", async () => {
    const { rt, cli } = await runtime({ HOLON_WORK_MAX_CONTINUATIONS: "3" });
    fake.setFallback(() => reply.text("I will get to it later."));
    try {
      const add = await cli("work", "add", "main", "port the CLI to Deno");
      expect(add.code, add.stderr).toBe(0);
      const itemId = /(wi_\w+)/.exec(add.stdout)![1]!;
      const ask = await waitFor(async () => (await rt.host.services.asks.list())[0], {
        what: "the runaway ask",
        timeoutMs: 20_000,
      });
      await idle(rt);
      expect(ask).toMatchObject({
        agent_id: "main",
        kind: "input",
        source: "runaway_guard",
        scope: "work_item",
        work_item_id: itemId,
        options: ["continue N", "block item", "cancel item"],
        state: "pending",
      });
      expect(await admittedTicks(rt)).toBe(3);
      const halted = (await events(rt, "work_activation")).filter(
        (e) => e.payload.disposition === "halted",
      );
      expect(halted).toHaveLength(1);

      // The operator sees it: in the inbox, and on the item.
      const inbox = await cli("asks");
      expect(inbox.code, inbox.stderr).toBe(0);
      expect(inbox.stdout).toContain(ask.id);
      expect(inbox.stdout).toContain("Halted work item");
      const show = await cli("work", "show", "main", itemId);
      expect(show.stdout).toMatch(/halted: +Halted work item .*3 continuations without progress/);
      expect(show.stdout).toContain(`holon asks answer ${ask.id}`);
      const item = (await rt.req("GET", `/agents/main/work-items/${itemId}`)).json.work_item;
      expect(item.view).toBe("blocked");
      expect(item.blocked_by).toContain(`(ask ${ask.id})`);
      expect(item.held_by_asks).toEqual([expect.objectContaining({ ask_id: ask.id })]);
      // No recheck reminder: a held item costs nothing while it waits.
      expect(item.recheck_at).toBeUndefined();
      expect((await rt.host.store.deadlines.forAgent("main")).map((d) => d.kind)).toEqual([
        "ask_expiry",
      ]);

      // Five ordinary prompts: each is answered, none restarts the loop.
      const before = fake.requests.length;
      for (let i = 0; i < 5; i++) {
        const p = await rt.req("POST", "/control/agents/main/prompt", { text: `hello ${i}` });
        expect(p.status).toBe(202);
        await idle(rt);
      }
      expect(fake.requests.length - before).toBe(5);
      expect(await admittedTicks(rt)).toBe(3);
      expect((await rt.host.services.asks.list()).map((a) => a.id)).toEqual([ask.id]);
      expect((await rt.host.store.agents.get("main"))!.closure).toMatchObject({
        outcome: "waiting",
        waiting_reason: "awaiting_operator_input",
      });

      // `continue 5`: five more continuations, then it halts again with a new ask.
      const answered = await cli("asks", "answer", ask.id, "continue", "5");
      expect(answered.code, answered.stderr).toBe(0);
      expect(answered.stdout).toContain(`decided ${ask.id}: continue 5`);
      const second = await waitFor(
        async () => (await rt.host.services.asks.list()).find((a) => a.id !== ask.id),
        { what: "the second halt", timeoutMs: 20_000 },
      );
      await idle(rt);
      expect(await admittedTicks(rt)).toBe(3 + 5);
      expect(second.work_item_id).toBe(itemId);
      const decided = await rt.host.services.asks.get(ask.id);
      expect(decided).toMatchObject({
        state: "decided",
        decision: "continue 5",
        decided_by: { kind: "operator", via: "control" },
      });
      // The decision reached the agent as an operator message.
      const msg = (await rt.host.store.messages.recent("main", 100)).find(
        (m) => m.metadata?.ask_id === ask.id,
      )!;
      expect(msg).toMatchObject({
        kind: "operator_prompt",
        authority_class: "operator_instruction",
        admission_context: "control_authenticated",
      });

      // `cancel item` closes it and nothing waits any more.
      const cancel = await cli("asks", "answer", second.id, "cancel item", "--reason", "not now");
      expect(cancel.code, cancel.stderr).toBe(0);
      await idle(rt);
      const closed = (await rt.req("GET", `/agents/main/work-items/${itemId}`)).json.work_item;
      expect(closed.state).toBe("completed");
      expect(closed.result_summary).toContain("Cancelled by the operator");
      expect(await rt.host.services.asks.list()).toEqual([]);
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });

  it("a turn on a work item that reaches its round limit halts the item with an ask, not a failure", async () => {
    const { rt } = await runtime();
    try {
      const work = rt.host.services.work;
      const item = await work.create(
        "main",
        { objective: "spin", plan_status: "ready" },
        "operator",
      );
      await work.pick("main", item.id, "operator");
      // The model never stops calling a tool: 100 rounds (the default limit), then the halt.
      fake.setFallback(() =>
        reply.tools([{ name: "GetWorkItem", arguments: { work_item_id: item.id } }]),
      );
      const before = fake.requests.length;
      await rt.req("POST", "/control/agents/main/prompt", { text: "go" });
      const ask = await waitFor(async () => (await rt.host.services.asks.list())[0], {
        what: "the round-limit ask",
        timeoutMs: 30_000,
      });
      await idle(rt);
      expect(fake.requests.length - before).toBe(100);
      expect(ask).toMatchObject({
        source: "max_turns",
        work_item_id: item.id,
        options: ["continue N", "block item", "cancel item"],
      });
      expect(ask.about).toContain("100 model rounds");
      expect((await rt.host.store.agents.get("main"))!.closure).toMatchObject({
        outcome: "waiting",
        waiting_reason: "awaiting_operator_input",
      });
      // No failure brief: the ask is what the operator sees.
      expect(
        (await rt.host.store.briefs.recent("main", 10)).some((b) => b.kind === "failure"),
      ).toBe(false);
      expect((await work.item("main", item.id)).blocked_by).toContain(`(ask ${ask.id})`);
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });

  it("bad decisions get clear errors and change nothing", async () => {
    const { rt, cli } = await runtime({ HOLON_WORK_MAX_CONTINUATIONS: "1" });
    fake.setFallback(() => reply.text("later"));
    try {
      await rt.req("POST", "/control/agents/main/work-items", { objective: "never picked" });
      const ask = await waitFor(async () => (await rt.host.services.asks.list())[0], {
        what: "the ask",
      });
      await idle(rt);
      const snapshot = async () => ({
        ask: JSON.stringify(await rt.host.services.asks.get(ask.id)),
        // (refused requests are audited, nothing else may be written)
        events: (await rt.host.store.events.after("main", 0, 100_000)).filter(
          (e) => e.type !== "http_request_refused",
        ).length,
        messages: (await rt.host.store.messages.recent("main", 1_000)).length,
      });
      const before = await snapshot();

      const unknown = await rt.req("POST", "/control/asks/ask_nope/decision", { decision: "x" });
      expect(unknown.status).toBe(404);
      expect(unknown.json.error.kind).toBe("unknown_ask");
      const bad = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "continue forever",
      });
      expect(bad.status).toBe(400);
      expect(bad.json.error.kind).toBe("invalid_decision");
      expect(bad.json.error.hint).toContain("continue N");
      const zero = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "continue 0",
      });
      expect(zero.json.error.kind).toBe("invalid_decision");
      const extra = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "block item",
        trust: "trusted_operator",
      });
      expect(extra.json.error.kind).toBe("unknown_field");
      const noToken = await rt.req(
        "POST",
        `/control/asks/${ask.id}/decision`,
        { decision: "block item" },
        { authorization: "" },
      );
      expect(noToken.status).toBe(401);
      const binding = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "block item",
        binding_id: "opbind_fake",
        actor_id: "operator:me",
      });
      expect(binding.status).toBe(403);
      expect(binding.json.error.kind).toBe("unknown_binding");
      // A parent-agent credential may never decide a budget ask, nor a stranger's question.
      await expect(
        rt.host.services.asks.decide(
          ask.id,
          { decision: "block item" },
          { kind: "agent", agent_id: "someone" },
        ),
      ).rejects.toThrow(/only the parent/);
      expect(await snapshot()).toEqual(before);

      const cli404 = await cli("asks", "answer", "ask_nope", "yes");
      expect(cli404.code).not.toBe(0);
      expect(cli404.stderr).toContain("unknown_ask");

      // Decided once; the second decision is 409 and changes nothing.
      const ok = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "Block Item",
        reason: "legal first",
      });
      expect(ok.status).toBe(200);
      expect(ok.json.ask).toMatchObject({ state: "decided", decision: "block item" });
      await idle(rt);
      const after = await snapshot();
      const again = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
        decision: "continue 3",
      });
      expect(again.status).toBe(409);
      expect(again.json.error.kind).toBe("ask_not_pending");
      expect(await snapshot()).toEqual(after);
      const item = (await rt.host.store.workItems.get(ask.work_item_id!))!;
      expect(item.blocked_by).toContain("blocked by the operator");
      expect(item.blocked_by).toContain("legal first");
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });
});

describe("input and budget asks", () => {
  it("a needs_input question blocks only its item: the agent works on the other one, the answer unblocks it", async () => {
    const { rt, cli } = await runtime();
    try {
      const work = rt.host.services.work;
      const asked = await work.create(
        "main",
        { objective: "pick a database", plan_status: "ready" },
        "operator",
      );
      const other = await work.create("main", { objective: "write the README" }, "operator");
      await work.pick("main", asked.id, "operator");
      fake.enqueue(
        reply.tools([
          {
            name: "UpdateWorkItem",
            arguments: { work_item_id: asked.id, plan_status: "needs_input" },
          },
        ]),
        reply.text("Which database should I use, staging or production?"),
        // The other item runs meanwhile.
        reply.tools([{ name: "PickWorkItem", arguments: { work_item_id: other.id } }]),
        reply.tools([{ name: "CompleteWorkItem", arguments: { work_item_id: other.id } }], {
          text: "README written.",
        }),
        reply.text("done with the README"),
      );
      await rt.req("POST", "/control/agents/main/prompt", { text: "go" });
      await waitFor(async () => (await work.item("main", other.id)).state === "completed", {
        what: "the other item to complete",
        timeoutMs: 20_000,
      });
      await idle(rt);
      const [ask] = await rt.host.services.asks.list();
      expect(ask).toMatchObject({
        kind: "input",
        source: "needs_input",
        work_item_id: asked.id,
        detail: "Which database should I use, staging or production?",
        free_text: true,
      });
      expect((await work.item("main", asked.id)).blocked_by).toContain(`(ask ${ask!.id})`);
      expect((await rt.host.store.agents.get("main"))!.closure?.waiting_reason).toBe(
        "awaiting_operator_input",
      );

      // The agent cannot lift the blocker itself.
      await expect(work.update("main", asked.id, { blocked_by: null }, "agent")).rejects.toThrow(
        /held by ask/,
      );

      fake.enqueue(reply.text("Using staging."));
      const r = await cli("asks", "answer", ask!.id, "use the staging database");
      expect(r.code, r.stderr).toBe(0);
      await waitFor(() => fake.requests.at(-1)?.raw.includes("use the staging database"), {
        what: "the answer to reach the model",
      });
      await idle(rt);
      const item = await work.item("main", asked.id);
      expect(item.blocked_by).toBeUndefined();
      expect(item.plan_status).toBe("draft");
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });

  it("an agent-scope budget ask gates the agent: prompts are kept, no provider call, until a human decides", async () => {
    const { rt } = await runtime();
    try {
      const asks = rt.host.services.asks;
      const ask = await asks.open({
        agent_id: "main",
        kind: "budget",
        source: "budget",
        scope: "agent",
        about: "Daily token budget spent (2M of 2M)",
        detail: "main spent its daily budget.",
        options: ["raise", "wait"],
      });
      expect(await asks.gatedBy("main")).toBe(ask.id);
      const before = fake.requests.length;
      const p = await rt.req("POST", "/control/agents/main/prompt", { text: "kept for later" });
      expect(p.status).toBe(202);
      await waitFor(async () => (await rt.host.store.agents.get("main"))!.status === "asleep", {
        what: "the gated agent to rest",
      });
      expect(await rt.host.store.messages.pendingCount("main")).toBe(1);
      expect(fake.requests.length).toBe(before);
      // An agent never decides a budget ask; the refusal writes nothing.
      await expect(
        asks.decide(ask.id, { decision: "raise" }, { kind: "agent", agent_id: "main" }),
      ).rejects.toThrow(/only the operator can decide it/);
      expect((await asks.get(ask.id)).state).toBe("pending");

      fake.enqueue(reply.text("first"), reply.text("second"));
      const d = await rt.req("POST", `/control/asks/${ask.id}/decision`, { decision: "raise" });
      expect(d.status).toBe(200);
      await waitFor(() => fake.requests.length >= before + 2, { what: "both messages to run" });
      await idle(rt);
      expect(await asks.gatedBy("main")).toBeUndefined();
    } finally {
      await rt.close();
    }
  });

  it("asks are withdrawn when their item completes or their agent stops", async () => {
    const { rt } = await runtime();
    try {
      const asks = rt.host.services.asks;
      const work = rt.host.services.work;
      const item = await work.create("main", { objective: "x" }, "operator");
      const a = await asks.open({
        agent_id: "main",
        kind: "budget",
        source: "budget",
        scope: "work_item",
        work_item_id: item.id,
        about: "item budget spent",
        detail: "500k of 500k tokens",
      });
      expect((await work.item("main", item.id)).blocked_by).toContain(a.id);
      await work.complete("main", item.id, { by: "operator", note: "done elsewhere" });
      expect(await asks.get(a.id)).toMatchObject({
        state: "withdrawn",
        reason: "work_item_completed",
      });
      const b = await asks.open({
        agent_id: "main",
        kind: "budget",
        source: "budget",
        scope: "agent",
        about: "freeze",
        detail: "kill switch",
      });
      const stop = await rt.req("POST", "/control/agents/main/control", { action: "stop" });
      expect(stop.status).toBe(200);
      expect(await asks.get(b.id)).toMatchObject({ state: "withdrawn", reason: "agent_stopped" });
      expect(await rt.host.store.deadlines.forAgent("main")).toEqual([]);
      const list = await rt.req("GET", "/control/asks?state=withdrawn");
      expect(list.json.asks.map((x: { id: string }) => x.id).sort()).toEqual([a.id, b.id].sort());
    } finally {
      await rt.close();
    }
  });
});
