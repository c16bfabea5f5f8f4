// Approvals across a crash: a real `holon serve` is SIGKILLed. An approval still pending
// survives it and, approved after the restart, runs the exact call once. A host killed
// while an approved call runs never runs it again: the agent is told it was interrupted.
// Expiry runs on the deadline scheduler with an injected clock: an expired approval reaches
// the model as a denial with reason `expired`.
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { reply } from "./fake-provider/server.ts";
import { RuntimeHost } from "../src/host/host.ts";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

/** Everything the model was sent in requests after `from`. */
function sent(from: number): string {
  return fake.requests
    .slice(from)
    .map((r) => JSON.stringify(r.body))
    .join("\n");
}

async function setup() {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const ws = join(home, "ws");
  mkdirSync(ws);
  const cli = (...args: string[]) => runCli(args, { env: { HOLON_HOME: home } });
  const serve = async () => {
    const s = await spawnServe(home);
    procs.push(s.proc);
    const post = (path: string, body: unknown) =>
      fetch(s.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...s.auth },
        body: JSON.stringify(body),
      });
    const kill = async () => {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGKILL");
      await exited;
    };
    return { ...s, post, kill };
  };
  return { home, ws, cli, serve };
}

/** The pending approval asks, as GET /control/asks lists them. */
async function approvals(s: { url: string; auth: Record<string, string> }): Promise<any[]> {
  const r = await fetch(`${s.url}/control/asks`, { headers: s.auth });
  const body = (await r.json()) as { asks: any[] };
  return body.asks.filter((a) => a.kind === "approval");
}

describe("approvals across a restart", () => {
  it("SIGKILL while an approval is pending: approved after the restart, the call runs once; a second approval gets 409", async () => {
    const { home, ws, cli, serve } = await setup();
    const first = await serve();
    try {
      expect((await first.post("/control/agents/main/workspaces/use", { path: ws })).status).toBe(
        200,
      );
      expect((await cli("agent", "set", "main", "permissions.mode", "ask")).code).toBe(0);
      fake.enqueue(
        reply.tools([
          {
            name: "ExecCommand",
            arguments: { cmd: "echo pushed >> pushes" },
            call_id: "p1",
          },
        ]),
      );
      expect((await first.post("/control/agents/main/prompt", { text: "push" })).status).toBe(202);
      const [ask] = await waitFor(async () => {
        const list = await approvals(first);
        return list.length ? list : undefined;
      });
      await first.kill();

      const from = fake.requests.length;
      const second = await serve();
      const listed = await cli("asks", "--json");
      expect(listed.stdout).toContain(ask.id);
      expect((await approvals(second)).map((a: any) => a.id)).toEqual([ask.id]);
      fake.enqueue(reply.text("pushed once"));
      const ok = await cli("asks", "answer", ask.id, "approve", "--reason", "after the restart");
      expect(ok.code, ok.stderr).toBe(0);
      await waitFor(() => (fake.requests.length > from ? true : undefined), {
        what: "the resumed turn",
        timeoutMs: 30_000,
      });
      expect(readFileSync(join(ws, "pushes"), "utf8")).toBe("pushed\n");
      expect(sent(from)).toContain("Result of your call p1");
      expect(sent(from)).toContain("after the restart");
      const again = await second.post(`/control/asks/${ask.id}/decision`, { decision: "approve" });
      expect(again.status).toBe(409);
      await second.kill();
      expect(readFileSync(join(ws, "pushes"), "utf8")).toBe("pushed\n");
    } finally {
      for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
    }
    void home;
  });

  it("SIGKILL while an approved call runs: after the restart it is reported interrupted and never run again", async () => {
    const { home, ws, cli, serve } = await setup();
    const first = await serve();
    try {
      expect((await first.post("/control/agents/main/workspaces/use", { path: ws })).status).toBe(
        200,
      );
      expect((await cli("agent", "set", "main", "permissions.mode", "ask")).code).toBe(0);
      fake.enqueue(
        reply.tools([
          {
            name: "ExecCommand",
            arguments: { cmd: "echo started >> runs; sleep 30", yield_time_ms: 120_000 },
            call_id: "x1",
          },
        ]),
      );
      expect((await first.post("/control/agents/main/prompt", { text: "run it" })).status).toBe(
        202,
      );
      const [ask] = await waitFor(async () => {
        const list = await approvals(first);
        return list.length ? list : undefined;
      });
      expect((await cli("asks", "answer", ask.id, "approve")).code).toBe(0);
      await waitFor(() => existsSync(join(ws, "runs")) || undefined, {
        what: "the approved call to start",
        timeoutMs: 30_000,
      });
      await first.kill();

      const from = fake.requests.length;
      fake.enqueue(reply.text("noted: interrupted"));
      const second = await serve();
      await waitFor(() => (fake.requests.length > from ? true : undefined), {
        what: "the agent to be told",
        timeoutMs: 30_000,
      });
      const told = sent(from);
      expect(told).toContain("interrupted");
      expect(told).toContain("x1");
      await second.kill();
      expect(readFileSync(join(ws, "runs"), "utf8")).toBe("started\n");
      const host = await RuntimeHost.open({ home, autostartAgents: false });
      try {
        expect((await host.store.approvals.getCall(ask.id, "x1"))?.state).toBe("interrupted");
      } finally {
        await host.shutdown();
      }
    } finally {
      for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
    }
  });
});

function testClock(start: string): Clock & { advance(ms: number): void } {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    sleep: systemClock.sleep,
    advance: (ms) => {
      t += ms;
    },
  };
}

describe("approval expiry", () => {
  it("an approval nobody decides expires and reaches the agent as a denial with reason expired", async () => {
    const clock = testClock("2026-03-01T12:00:00.000Z");
    const host = await RuntimeHost.open({ home: tempHome(), clock, autostartAgents: false });
    try {
      const { approvals: gate, asks, scheduler } = host.services;
      const snapshot = {
        agent_id: "main",
        run_id: "run_x",
        message_id: "msg_x",
        call_id: "e1",
        tool_name: "ExecCommand",
        input: { cmd: "git push" },
        input_digest: "0".repeat(64),
        execution_root: "/tmp",
        cwd: "/tmp",
        workspace: { workspace_id: null, workspace_anchor: null },
        policy: {
          mode: "ask" as const,
          effective_mode: "ask" as const,
          rules_digest: "1".repeat(64),
          verdict: { decision: "ask" as const, reason: "needs approval: mode ask", rule: null },
          hook_reason: null,
        },
        execution_snapshot: null,
        trigger: {
          policy_authority: "external_evidence" as const,
          authority_class: "external_evidence" as const,
          message_kind: "channel_event",
          origin: { kind: "channel", channel_id: "public" },
          delivery_surface: null,
          admission_context: null,
        },
      };
      const waiting = await gate.request(snapshot);
      expect(waiting.error?.kind).toBe("awaiting_approval");
      const askId = (await gate.flush("run_x"))!;
      expect((await asks.get(askId)).details.trigger).toMatchObject({
        policy_authority: "external_evidence",
      });
      clock.advance(7 * 24 * 3600_000);
      expect(await scheduler.fireDue()).toBe(1);
      expect((await asks.get(askId)).state).toBe("expired");
      expect(await asks.gatedBy("main")).toBeUndefined();
      expect((await host.store.approvals.getCall(askId, "e1"))?.state).toBe("denied");
      const told = (await host.store.messages.recent("main", 10)).find(
        (m) => m.metadata?.ask_id === askId,
      )!;
      expect(told.authority_class).toBe("runtime_instruction");
      // The resumed turn keeps the taint of the turn that asked.
      expect(told.metadata?.policy_authority).toBe("external_evidence");
      expect(JSON.stringify(told.body)).toContain("approval_expired");
      expect(JSON.stringify(told.body)).toContain("reason: expired");
    } finally {
      await host.shutdown();
    }
  });
});
