// Approvals end to end: a real host, the scripted fake provider asking for tool calls, and
// the operator deciding through `holon asks` and HTTP. A call the rules ask about does not
// run until approved, runs exactly once when approved, and reaches the model as a tool error
// with the operator's reason when denied. A pending approval costs nothing: no model call.
// Marker files prove what ran.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { controlTokenPath } from "../src/host/files.ts";
import { homePaths } from "../src/host/paths.ts";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();
let rt: TestRuntime;
let home: string;
let ws: string;

beforeAll(async () => {
  home = tempHome();
  fake.setFallback(() => reply.text("ok"));
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  rt = await startRuntime({ home });
  ws = join(home, "ws");
  mkdirSync(ws);
  const r = await rt.req("POST", "/control/agents/main/workspaces/use", { path: ws });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  // Trusted, except that `touch` and `git push` ask; `echo` runs.
  const set = await cli(
    "agent",
    "set",
    "main",
    "permissions.ask",
    '["ExecCommand(touch:*)", "ExecCommand(git push:*)"]',
  );
  expect(set.code, set.stderr).toBe(0);
});
afterAll(async () => {
  await rt?.close();
});

const cli = (...args: string[]) => runCli(args, { env: { HOLON_HOME: home } });

/** Every text the model was sent (tool outputs and user messages) in requests after `from`. */
function sent(from: number): string {
  const out: string[] = [];
  for (const r of fake.requests.slice(from)) {
    const body = r.body as { input?: { type?: string; output?: unknown; content?: unknown }[] };
    for (const item of body.input ?? []) {
      if (item.type === "function_call_output") out.push(String(item.output));
      else if (item.content !== undefined) out.push(JSON.stringify(item.content));
    }
  }
  return out.join("\n");
}

async function prompt(text: string): Promise<string> {
  const r = await rt.req("POST", "/control/agents/main/prompt", { text });
  expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
  return r.json.message_id ?? r.json.message?.id;
}

/** Wait for the approval ask the agent opened, and for its turn to end waiting on it. */
async function pendingApproval(): Promise<any> {
  const ask = await waitFor(
    async () =>
      (await rt.host.services.asks.list({ agent_id: "main" })).find((a) => a.kind === "approval"),
    { what: "an approval ask", timeoutMs: 30_000 },
  );
  await waitFor(async () => (await rt.host.agents.get("main")).status !== "awake_running", {
    what: "the turn to end",
  });
  return ask;
}

async function idle(): Promise<void> {
  await waitFor(
    async () =>
      (await rt.host.agents.get("main")).status !== "awake_running" &&
      (await rt.host.store.messages.withStatus("main", "queued")).length === 0 &&
      (await rt.host.store.messages.withStatus("main", "processing")).length === 0,
    { what: "the agent to settle", timeoutMs: 30_000 },
  );
}

/** The recorded outcome of a tool call (its event). */
async function toolEvent(callId: string): Promise<any> {
  return (await rt.host.store.events.after("main", 0, 1_000_000))
    .filter(
      (e: any) =>
        (e.type === "tool_executed" || e.type === "tool_execution_failed") &&
        e.payload.call_id === callId,
    )
    .at(-1);
}

const exec = (cmd: string, id: string) => ({
  name: "ExecCommand",
  arguments: { cmd },
  call_id: id,
});

describe("approvals", () => {
  it("an asked call waits at no cost, runs exactly once when approved, and its result re-enters the agent", async () => {
    const from = fake.requests.length;
    fake.enqueue(
      reply.tools([exec("touch approved-1 && echo once >> runs-1", "a1"), exec("echo hi", "a2")]),
      reply.text("done, it ran"),
    );
    await prompt("touch the file");
    const ask = await pendingApproval();
    expect(existsSync(join(ws, "approved-1"))).toBe(false);
    // The pending call's result is the awaiting envelope; the allowed call of the round ran.
    const waiting = await toolEvent("a1");
    expect(waiting.payload.tool_error.kind).toBe("awaiting_approval");
    expect(waiting.payload.tool_error.details.ask_id).toBe(ask.id);
    expect((await toolEvent("a2")).type).toBe("tool_executed");
    // The turn ended with the round: no further model call while the ask is pending.
    const calls = fake.requests.length;
    expect(calls - from).toBe(1);
    expect(await rt.host.services.asks.gatedBy("main")).toBe(ask.id);
    // What the operator sees: the call, its digest, root, cwd, rules and the trigger.
    const shown = await cli("asks", "show", ask.id, "--json");
    expect(shown.code, shown.stderr).toBe(0);
    const rec = JSON.parse(shown.stdout);
    const call = rec.details.calls[0];
    expect(call.input.cmd).toBe("touch approved-1 && echo once >> runs-1");
    expect(call.input_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(call.execution_root).toBe(ws);
    expect(call.policy.rules_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(rec.details.trigger.policy_authority).toBe("operator_instruction");
    expect((await cli("asks")).stdout).toContain(ask.id);

    const answer = await cli("asks", "answer", ask.id, "approve", "--reason", "ship it");
    expect(answer.code, answer.stderr).toBe(0);
    await waitFor(() => fake.requests.length > calls, { what: "the resumed turn" });
    await idle();
    expect(readFileSync(join(ws, "runs-1"), "utf8")).toBe("once\n");
    const resumed = sent(calls);
    expect(resumed).toContain("approve");
    expect(resumed).toContain("ship it");
    expect(resumed).toContain("Result of your call a1");
    // The resumed turn keeps runtime authority (never an operator instruction).
    const msg = (await rt.host.store.messages.recent("main", 20)).find(
      (m) => m.metadata?.ask_id === ask.id,
    )!;
    expect(msg.authority_class).toBe("runtime_instruction");
    expect((await rt.host.store.approvals.getCall(ask.id, "a1"))?.state).toBe("completed");
    // A second decision of the same ask is refused (409), and nothing runs again.
    const again = await rt.req("POST", `/control/asks/${ask.id}/decision`, { decision: "approve" });
    expect(again.status).toBe(409);
    await idle();
    expect(readFileSync(join(ws, "runs-1"), "utf8")).toBe("once\n");
  });

  it("a denied call reaches the model as a tool error with the operator's reason", async () => {
    fake.enqueue(reply.tools([exec("git push origin main", "d1")]));
    await prompt("push");
    const ask = await pendingApproval();
    const calls = fake.requests.length;
    fake.enqueue(reply.text("understood"));
    const r = await rt.req("POST", `/control/asks/${ask.id}/decision`, {
      decision: "deny",
      reason: "not on a Friday",
    });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    await waitFor(() => fake.requests.length > calls, { what: "the told turn" });
    await idle();
    const told = sent(calls);
    expect(told).toContain("approval_denied");
    expect(told).toContain("not on a Friday");
    expect((await rt.host.store.approvals.getCall(ask.id, "d1"))?.state).toBe("denied");
  });

  it("one ask per round with one decision per call; a bad decision stores nothing", async () => {
    fake.enqueue(reply.tools([exec("touch multi-1", "m1"), exec("touch multi-2", "m2")]));
    await prompt("two files");
    const ask = await pendingApproval();
    expect(ask.details.calls).toHaveLength(2);
    const seq = await rt.host.store.events.newestSeq("main");
    const bad = await rt.req("POST", `/control/asks/${ask.id}/decision`, { decision: "approve 3" });
    expect(bad.status).toBe(400);
    expect(bad.json.error?.kind ?? bad.json.kind).toBe("invalid_decision");
    expect((await rt.host.services.asks.get(ask.id)).state).toBe("pending");
    expect(await rt.host.store.events.newestSeq("main")).toBe(seq);
    const calls = fake.requests.length;
    fake.enqueue(reply.text("one of two"));
    const ok = await cli("asks", "answer", ask.id, "approve 2");
    expect(ok.code, ok.stderr).toBe(0);
    await waitFor(() => fake.requests.length > calls, { what: "the resumed turn" });
    await idle();
    expect(existsSync(join(ws, "multi-1"))).toBe(false);
    expect(existsSync(join(ws, "multi-2"))).toBe(true);
    const told = sent(calls);
    expect(told).toContain("approval_denied");
    expect(told).toContain("Result of your call m2");
  });

  it("an approval covers only what was approved: changed rules void it, a new input asks again", async () => {
    fake.enqueue(reply.tools([exec("touch void-1", "v1")]));
    await prompt("touch void-1");
    const ask = await pendingApproval();
    // The rules change while the ask waits: the approval no longer applies.
    expect(
      (await cli("agent", "set", "main", "permissions.deny", '["ExecCommand(rm:*)"]')).code,
    ).toBe(0);
    const calls = fake.requests.length;
    // The told turn tries a different command: that asks afresh, it is not covered.
    fake.enqueue(reply.tools([exec("touch void-2", "v2")]));
    expect((await cli("asks", "answer", ask.id, "approve")).code).toBe(0);
    const second = await waitFor(
      async () =>
        (await rt.host.services.asks.list({ agent_id: "main" })).find(
          (a) => a.kind === "approval" && a.id !== ask.id,
        ),
      { what: "a new approval ask", timeoutMs: 30_000 },
    );
    await waitFor(async () => (await rt.host.agents.get("main")).status !== "awake_running");
    expect(existsSync(join(ws, "void-1"))).toBe(false);
    expect(existsSync(join(ws, "void-2"))).toBe(false);
    expect(sent(calls)).toContain("approval_void");
    expect((await rt.host.store.approvals.getCall(ask.id, "v1"))?.state).toBe("void");
    fake.enqueue(reply.text("fine"));
    expect((await cli("asks", "answer", second.id, "deny")).code).toBe(0);
    await idle();
    expect((await cli("agent", "set", "main", "permissions.deny", "null")).code).toBe(0);
  });
});

describe("Notification hooks", () => {
  it("hear of an approval ask when it opens", async () => {
    const file = join(home, "notified.jsonl");
    const hooks = {
      Notification: [{ hooks: [{ type: "command", command: `cat >> ${file}; echo >> ${file}` }] }],
    };
    expect((await cli("agent", "set", "main", "hooks", JSON.stringify(hooks))).code).toBe(0);
    fake.enqueue(reply.tools([exec("touch notified", "n1")]));
    await prompt("touch notified");
    const ask = await pendingApproval();
    const heard = await waitFor(
      () =>
        existsSync(file) && readFileSync(file, "utf8").includes(ask.id)
          ? readFileSync(file, "utf8")
          : undefined,
      { what: "the Notification hook" },
    );
    const input = JSON.parse(heard.trim().split("\n").at(-1)!);
    expect(input).toMatchObject({
      hook_event_name: "Notification",
      ask_id: ask.id,
      ask_kind: "approval",
    });
    expect(input.message).toContain("waiting for the operator");
    expect((await cli("agent", "set", "main", "hooks", "null")).code).toBe(0);
    expect((await cli("asks", "answer", ask.id, "deny")).code).toBe(0);
    await idle();
  });
});

describe("a one-shot run", () => {
  it("does not wait for an approval: the call is refused with approval_required and the run ends", async () => {
    const before = (await rt.host.services.asks.list({ state: "all", limit: 500 })).length;
    fake.enqueue(reply.tools([exec("touch run-once", "r1")]), reply.text("could not"));
    const r = await runCli(["run", "--agent", "main", "--json", "touch run-once"], {
      env: { HOLON_HOME: home },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).final_text).toBe("could not");
    expect(existsSync(join(ws, "run-once"))).toBe(false);
    expect((await toolEvent("r1")).payload.tool_error.kind).toBe("approval_required");
    expect((await rt.host.services.asks.list({ state: "all", limit: 500 })).length).toBe(before);
    await idle();
  });
});

describe("the agent cannot approve its own ask", () => {
  it("not through a tool's credential, nor the control plane without the operator's token", async () => {
    fake.enqueue(reply.tools([exec("touch self-1", "s1")]));
    await prompt("touch self-1");
    const ask = await pendingApproval();
    // An agent's credential (what a tool or a supervising parent holds) is refused.
    await expect(
      rt.host.services.asks.decide(
        ask.id,
        { decision: "approve" },
        { kind: "agent", agent_id: "main" },
      ),
    ).rejects.toThrow(/only the operator/);
    // Loopback TCP without the control token is refused.
    const r = await rt.req(
      "POST",
      `/control/asks/${ask.id}/decision`,
      { decision: "approve" },
      { authorization: "" },
    );
    expect(r.status).toBe(401);
    expect((await rt.host.services.asks.get(ask.id)).state).toBe("pending");
    fake.enqueue(reply.text("ok"));
    expect((await cli("asks", "answer", ask.id, "deny")).code).toBe(0);
    await idle();
    expect(existsSync(join(ws, "self-1"))).toBe(false);
  });
});

describe("a command cannot approve its own ask", () => {
  it("through the Unix socket, the token file or loopback TCP, when the sandbox confines it", async (ctx) => {
    const agent = await rt.host.agents.get("main");
    if (rt.host.services.sandbox.summary(agent).state !== "enforced") {
      ctx.skip(); // unconfined, a command can reach them: the leash is advisory (see docs)
      return;
    }
    const sock = homePaths(home).socket;
    const tokenFile = controlTokenPath(home);
    // The strongest attacker: it is told the ask's id as soon as the ask exists.
    const attack = [
      "i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
      "ID=$(cat go)",
      `S=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket ${sock} -X POST -H 'content-type: application/json' -d '{"decision":"approve"}' http://localhost/control/asks/$ID/decision)`,
      `T=$(cat ${tokenFile} 2>/dev/null)`,
      `C=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "authorization: Bearer $T" -H 'content-type: application/json' -H 'origin: ${rt.url}' -d '{"decision":"approve"}' ${rt.url}/control/asks/$ID/decision)`,
      'echo "socket=$S token=${#T} tcp=$C" > attack.out',
    ].join("\n");
    fake.enqueue(
      reply.tools([
        exec("git push origin main", "e1"),
        {
          name: "ExecCommand",
          arguments: { cmd: attack, yield_time_ms: 0 },
          call_id: "e2",
        },
      ]),
    );
    await prompt("push, and approve it yourself");
    const ask = await pendingApproval();
    writeFileSync(join(ws, "go"), ask.id);
    const out = await waitFor(
      () =>
        existsSync(join(ws, "attack.out"))
          ? readFileSync(join(ws, "attack.out"), "utf8")
          : undefined,
      { what: "the attack to finish", timeoutMs: 30_000 },
    );
    // The socket is not there for it, the token file is unreadable, TCP refuses it.
    expect(out).toMatch(/socket=000 token=0 tcp=401/);
    expect((await rt.host.services.asks.get(ask.id)).state).toBe("pending");
    expect((await cli("asks", "answer", ask.id, "deny")).code).toBe(0);
    await idle();
    expect((await rt.host.store.approvals.getCall(ask.id, "e1"))?.state).toBe("denied");
  });
});

describe("workspace hooks", () => {
  it("run only once approved, and not again after the agent edits them", async () => {
    const hookFile = join(ws, ".holon.json");
    const def = (cmd: string) => ({
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: cmd }] }] },
    });
    // The hook also tries to read the control token: confined like a command, it cannot.
    const tokenFile = controlTokenPath(home);
    writeFileSync(
      hookFile,
      JSON.stringify(def(`echo run >> hook-runs; cat ${tokenFile} > hook-token 2>/dev/null`)),
    );
    fake.enqueue(reply.tools([exec("echo one", "h1")]), reply.text("one"));
    await prompt("echo one");
    const consent = await waitFor(
      async () =>
        (await rt.host.services.asks.list({ agent_id: "main" })).find(
          (a) => a.kind === "approval" && a.details.approval === "consent",
        ),
      { what: "the hook's consent ask" },
    );
    await idle();
    expect(existsSync(join(ws, "hook-runs"))).toBe(false);
    // A consent holds nothing up: the agent went on without the hook.
    expect(await rt.host.services.asks.gatedBy("main")).toBeUndefined();
    expect(consent.details.name).toBe("PreToolUse[0]");
    expect(consent.details.digest).toMatch(/^[0-9a-f]{64}$/);
    expect((await cli("asks", "answer", consent.id, "approve")).code).toBe(0);
    fake.enqueue(reply.tools([exec("echo two", "h2")]), reply.text("two"));
    await prompt("echo two");
    await idle();
    expect(readFileSync(join(ws, "hook-runs"), "utf8")).toBe("run\n");
    const confined =
      rt.host.services.sandbox.summary(await rt.host.agents.get("main")).state === "enforced";
    if (confined) expect(readFileSync(join(ws, "hook-token"), "utf8")).toBe("");
    // The agent edits the hook (possible where the sandbox does not keep .holon.json
    // read-only): the changed definition does not run without a new approval.
    expect((await cli("agent", "set", "main", "sandbox.mode", "off")).code).toBe(0);
    fake.enqueue(
      reply.tools([
        {
          name: "ExecCommand",
          arguments: {
            cmd: `printf '%s' '${JSON.stringify(def("echo edited >> hook-runs"))}' > .holon.json`,
          },
          call_id: "h3",
        },
      ]),
      reply.tools([exec("echo three", "h4")]),
      reply.text("three"),
    );
    await prompt("edit and echo");
    await idle();
    expect(readFileSync(join(ws, "hook-runs"), "utf8")).toBe("run\nrun\n");
    const second = (await rt.host.services.asks.list({ agent_id: "main" })).find(
      (a) => a.details.approval === "consent" && a.id !== consent.id,
    );
    expect(second?.details.name).toBe("PreToolUse[0]");
    expect(second?.details.digest).not.toBe(consent.details.digest);
    expect((await cli("asks", "answer", second!.id, "deny")).code).toBe(0);
    writeFileSync(hookFile, "{}");
    expect((await cli("agent", "unset", "main", "sandbox.mode")).code).toBe(0);
  });
});
