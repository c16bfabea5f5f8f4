// Closure, continuation and the deadline scheduler through the whole product: every turn
// ends in a stored ClosureDecision, every dequeue in a ContinuationResolution, and a Sleep
// deadline survives SIGKILL (it wakes the agent at the original time, once).
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import {
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { fault, reply } from "./fake-provider/server.ts";
import { deriveClosure, resolveContinuation } from "../src/agent/closure.ts";
import type { ClosureDecision } from "../src/domain/closure.ts";
import type { QueuedMessage } from "../src/domain/message.ts";

const fake = useFakeProvider();

const NOW = "2026-01-01T00:00:00.000Z";
const facts = {
  prior: undefined,
  continuation: undefined,
  sleep_wake_at: undefined,
  reentry_task_ids: [] as string[],
  pending_messages: 0,
  work_signal: undefined,
  now: NOW,
};
function msg(kind: QueuedMessage["kind"], extra: Partial<QueuedMessage> = {}): QueuedMessage {
  const trigger: Record<string, QueuedMessage["trigger_kind"]> = {
    operator_prompt: "operator_input",
    task_result: "task_result",
    system_tick: "system_tick",
    webhook_event: "external_event",
    timer_tick: "timer_fire",
  };
  return {
    id: "msg_1",
    agent_id: "a",
    created_at: NOW,
    kind,
    origin: { kind: "operator" },
    trust: "trusted_operator",
    authority_class: "operator_instruction",
    priority: "normal",
    trigger_kind: trigger[kind] ?? "external_event",
    body: { type: "text", text: "x" },
    seq: 1,
    status: "queued",
    ...extra,
  };
}
const waitingOn = (reason: ClosureDecision["waiting_reason"]): ClosureDecision => ({
  outcome: "waiting",
  waiting_reason: reason,
  runtime_posture: "sleeping",
  evidence: [],
  decided_at: NOW,
});

describe("closure derivation (table)", () => {
  it.each([
    ["a settled turn completes", { kind: "settled" }, {}, "completed", undefined],
    ["a rest completes", { kind: "rest" }, {}, "completed", undefined],
    ["a failure fails", { kind: "failed", summary: "boom" }, {}, "failed", undefined],
    ["an abort fails", { kind: "aborted", reason: "operator_aborted" }, {}, "failed", undefined],
    [
      "a timed sleep waits on the timer",
      { kind: "sleep_until", wake_at: NOW, duration_ms: 5 },
      {},
      "waiting",
      "awaiting_timer",
    ],
    [
      "awaiting tasks",
      { kind: "await_tasks", task_ids: ["t1"] },
      {},
      "waiting",
      "awaiting_task_result",
    ],
    [
      "awaiting the operator",
      { kind: "await_operator", detail: "q" },
      {},
      "waiting",
      "awaiting_operator_input",
    ],
    [
      "awaiting outside change",
      { kind: "await_external", detail: "ci" },
      {},
      "waiting",
      "awaiting_external_change",
    ],
    [
      "operator wait outranks tasks",
      { kind: "await_operator", detail: "q" },
      { reentry_task_ids: ["t1"] },
      "waiting",
      "awaiting_operator_input",
    ],
    [
      "a mismatched trigger keeps a timer wait whose deadline still stands",
      { kind: "settled" },
      {
        prior: waitingOn("awaiting_timer"),
        continuation: { class: "local_continuation" },
        sleep_wake_at: NOW,
      },
      "waiting",
      "awaiting_timer",
    ],
    [
      "an override clears the wait",
      { kind: "settled" },
      {
        prior: waitingOn("awaiting_timer"),
        continuation: { class: "resume_override" },
        sleep_wake_at: NOW,
      },
      "completed",
      undefined,
    ],
    [
      "an ask about one work item leaves other runnable work continuable",
      { kind: "await_operator", detail: "ask:a1", ask_id: "a1", scope: "work_item" },
      {
        work_signal: { work_item_id: "w2", status: "queued", reactivation_mode: "activate_queued" },
      },
      "continuable",
      undefined,
    ],
    [
      "an ask about one work item with nothing else runnable waits for the operator",
      { kind: "await_operator", detail: "ask:a1", ask_id: "a1", scope: "work_item" },
      {},
      "waiting",
      "awaiting_operator_input",
    ],
    [
      "an agent-scope ask waits even with runnable work",
      { kind: "await_operator", detail: "ask:a1", ask_id: "a1", scope: "agent" },
      {
        work_signal: { work_item_id: "w2", status: "queued", reactivation_mode: "activate_queued" },
      },
      "waiting",
      "awaiting_operator_input",
    ],
    [
      "an operator wait a decided ask no longer holds is not carried",
      { kind: "settled" },
      {
        prior: waitingOn("awaiting_operator_input"),
        continuation: { class: "local_continuation" },
      },
      "completed",
      undefined,
    ],
    [
      "an operator wait an ask still holds is carried",
      { kind: "settled" },
      {
        prior: waitingOn("awaiting_operator_input"),
        continuation: { class: "local_continuation" },
        operator_wait: "ask:a1",
      },
      "waiting",
      "awaiting_operator_input",
    ],
    [
      "runnable work is continuable",
      { kind: "settled" },
      {
        work_signal: { work_item_id: "w1", status: "active", reactivation_mode: "continue_active" },
      },
      "continuable",
      undefined,
    ],
  ] as const)("%s", (_name, outcome, extra, expected, reason) => {
    const c = deriveClosure(outcome as never, { ...facts, ...(extra as object) } as never);
    expect(c.outcome).toBe(expected);
    expect(c.waiting_reason).toBe(reason);
    expect(c.work_signal !== undefined).toBe(expected === "continuable");
    expect(c.evidence.length).toBeGreaterThan(0);
  });

  it.each([
    ["an explicit rest", { kind: "rest" }, "completed"],
    ["a timed sleep", { kind: "sleep_until", wake_at: NOW, duration_ms: 5 }, "waiting"],
    ["a wait on tasks", { kind: "await_tasks", task_ids: ["t1"] }, "waiting"],
    ["a wait on the operator", { kind: "await_operator", detail: "q" }, "waiting"],
    ["an outside wait", { kind: "await_external", detail: "ci" }, "waiting"],
    ["a provider retry", { kind: "retry_at", retry_at: NOW, reason: "rate" }, "waiting"],
    ["a failure", { kind: "failed", summary: "boom" }, "failed"],
    ["an abort", { kind: "aborted", reason: "operator_aborted" }, "failed"],
    ["a liveness tick", { kind: "liveness_only" }, "completed"],
  ] as const)("runnable work never re-activates %s", (_name, outcome, expected) => {
    for (const mode of ["continue_active", "activate_queued"] as const) {
      const c = deriveClosure(
        outcome as never,
        {
          ...facts,
          work_signal: {
            work_item_id: "w1",
            status: mode === "continue_active" ? "active" : "queued",
            reactivation_mode: mode,
          },
        } as never,
      );
      expect(c.outcome).toBe(expected);
      expect(c.work_signal).toBeUndefined();
    }
  });

  it("posture is awake while messages are queued or work is runnable", () => {
    expect(
      deriveClosure({ kind: "settled" }, { ...facts, pending_messages: 2 }).runtime_posture,
    ).toBe("awake");
    expect(deriveClosure({ kind: "settled" }, facts).runtime_posture).toBe("sleeping");
  });
});

describe("continuation resolution (table)", () => {
  const visible = { model_visible: true, why: "contentful" };
  it.each([
    [
      "operator input satisfies an operator wait",
      msg("operator_prompt"),
      "awaiting_operator_input",
      "resume_expected_wait",
    ],
    [
      "operator input overrides any other wait",
      msg("operator_prompt"),
      "awaiting_timer",
      "resume_override",
    ],
    [
      "a task result satisfies a task wait",
      msg("task_result"),
      "awaiting_task_result",
      "resume_expected_wait",
    ],
    [
      "the sleep wake satisfies a timer wait",
      msg("system_tick", { origin: { kind: "system", subsystem: "sleep" } }),
      "awaiting_timer",
      "resume_expected_wait",
    ],
    [
      "an external event does not satisfy a task wait",
      msg("webhook_event"),
      "awaiting_task_result",
      "local_continuation",
    ],
    [
      "an external event satisfies an external wait",
      msg("webhook_event"),
      "awaiting_external_change",
      "resume_expected_wait",
    ],
    ["no prior wait: local continuation", msg("operator_prompt"), undefined, "local_continuation"],
  ] as const)("%s", (_n, m, reason, cls) => {
    const r = resolveContinuation(m, reason ? waitingOn(reason) : undefined, visible, NOW);
    expect(r.class).toBe(cls);
    expect(r.matched_waiting_reason).toBe(cls === "resume_expected_wait");
    expect(r.prior_waiting_reason).toBe(reason);
  });

  it("observational triggers are liveness only and never model visible", () => {
    const r = resolveContinuation(
      msg("task_result"),
      waitingOn("awaiting_task_result"),
      { model_visible: false, why: "task_status_is_observational" },
      NOW,
    );
    expect(r).toMatchObject({
      class: "liveness_only",
      model_visible: false,
      matched_waiting_reason: false,
    });
  });
});

async function prompt(rt: TestRuntime, text: string) {
  const res = await rt.req("POST", "/control/agents/main/prompt", { text });
  expect(res.status).toBe(202);
  return res.json.message_id as string;
}
function settledMessage(rt: TestRuntime, id: string) {
  return waitFor(
    async () => {
      const s = (await rt.host.store.messages.get(id))?.status;
      return s && s !== "queued" && s !== "processing" ? s : undefined;
    },
    { what: `message ${id} to settle` },
  );
}
async function eventsFor(rt: TestRuntime, type: string, messageId: string) {
  return (await rt.host.store.events.query("main", { limit: 100_000, order: "asc" })).filter(
    (e) => e.type === type && e.provenance.message_id === messageId,
  );
}
/** The closure stored after the message settled, and the continuation before it ran. */
async function recordsOf(rt: TestRuntime, messageId: string) {
  const closure = await eventsFor(rt, "closure_decided", messageId);
  const continuation = await eventsFor(rt, "continuation_resolved", messageId);
  expect(closure).toHaveLength(1);
  expect(continuation).toHaveLength(1);
  return { closure: closure[0]!.payload, continuation: continuation[0]!.payload };
}

describe("closure and continuation end to end", () => {
  it("rest, timed sleep, operator override, waiting on a task, and failure each leave their records", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home });
    const agentHome = (await rt.host.agents.get("main")).agent_home;

    // rest
    fake.enqueue(
      reply.tools([{ name: "Sleep", arguments: {}, call_id: "s1" }], { text: "resting" }),
    );
    const m1 = await prompt(rt, "rest now");
    await settledMessage(rt, m1);
    let r = await recordsOf(rt, m1);
    expect(r.continuation).toMatchObject({
      class: "local_continuation",
      model_visible: true,
      trigger_kind: "operator_input",
    });
    expect(r.closure).toMatchObject({
      outcome: "completed",
      turn_outcome: "rest",
      runtime_posture: "sleeping",
    });

    // timed sleep: the deadline is durable and sleeping_until says when
    fake.enqueue(
      reply.tools([{ name: "Sleep", arguments: { duration_ms: 600_000 }, call_id: "s2" }]),
    );
    const m2 = await prompt(rt, "sleep ten minutes");
    await settledMessage(rt, m2);
    r = await recordsOf(rt, m2);
    expect(r.closure).toMatchObject({ outcome: "waiting", waiting_reason: "awaiting_timer" });
    const state = (await rt.req("GET", "/agents/main/state")).json;
    expect(state.agent.closure).toMatchObject({
      outcome: "waiting",
      waiting_reason: "awaiting_timer",
    });
    expect(state.sleep_wake_at).toEqual(expect.any(String));
    expect(state.deadlines).toHaveLength(1);
    await waitFor(async () => (await rt.host.agents.get("main")).status === "asleep");
    expect((await rt.host.agents.get("main")).sleeping_until).toBe(state.sleep_wake_at);
    // `holon status` shows the same closure and the continuation that preceded it.
    const status = await runCli(["status"], { env: { HOLON_HOME: home } });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`wakes at: ${state.sleep_wake_at}`);
    expect(status.stdout).toMatch(/closure: +waiting \(awaiting_timer\), sleeping/);
    expect(status.stdout).toContain("last trigger: operator_input → local_continuation");

    // operator input overrides the wait: the deadline is dropped
    fake.enqueue(reply.text("back to it"));
    const m3 = await prompt(rt, "never mind, do this now");
    await settledMessage(rt, m3);
    r = await recordsOf(rt, m3);
    expect(r.continuation).toMatchObject({
      class: "resume_override",
      prior_closure_outcome: "waiting",
      prior_waiting_reason: "awaiting_timer",
      matched_waiting_reason: false,
    });
    expect(r.closure).toMatchObject({ outcome: "completed" });
    expect(await rt.host.store.deadlines.forAgent("main")).toHaveLength(0);
    expect(await eventsFor(rt, "wake_cancelled", m3)).toHaveLength(0); // recorded on the agent, not the message
    expect(
      (await rt.host.store.events.query("main", { limit: 1000, order: "asc" })).some(
        (e) => e.type === "wake_cancelled",
      ),
    ).toBe(true);

    // waiting on a task: rest while a promoted command runs, then its result resumes the wait
    const gate = join(agentHome, "gate");
    fake.enqueue(
      reply.tools([
        {
          name: "ExecCommand",
          arguments: {
            cmd: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo done`,
            yield_time_ms: 50,
          },
          call_id: "c1",
        },
      ]),
      reply.tools([{ name: "Sleep", arguments: {}, call_id: "s3" }]),
    );
    const m4 = await prompt(rt, "start the build and wait for it");
    await settledMessage(rt, m4);
    r = await recordsOf(rt, m4);
    expect(r.closure).toMatchObject({
      outcome: "waiting",
      waiting_reason: "awaiting_task_result",
      turn_outcome: "await_tasks",
    });
    await waitFor(async () => (await rt.host.agents.get("main")).status === "awaiting_task", {
      what: "awaiting_task",
    });
    fake.enqueue(reply.text("the build finished"));
    writeFileSync(gate, "");
    const result = await waitFor(async () =>
      (await rt.host.store.messages.recent("main", 20)).find(
        (m) => m.kind === "task_result" && m.status === "processed",
      ),
    );
    r = await recordsOf(rt, result.id);
    expect(r.continuation).toMatchObject({
      class: "resume_expected_wait",
      trigger_kind: "task_result",
      matched_waiting_reason: true,
      prior_waiting_reason: "awaiting_task_result",
    });
    expect(r.closure).toMatchObject({ outcome: "completed" });

    // failure
    fake.enqueue(fault.status(400));
    const m5 = await prompt(rt, "this one fails");
    await settledMessage(rt, m5);
    r = await recordsOf(rt, m5);
    expect(r.closure).toMatchObject({ outcome: "failed", turn_outcome: "failed" });
    expect((await rt.req("GET", "/agents/main/status")).json.closure).toMatchObject({
      outcome: "failed",
    });
    await rt.close();
  });
});

describe("sleep deadlines across a crash", () => {
  async function sleepThenKill(durationMs: number) {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(
      reply.tools([{ name: "Sleep", arguments: { duration_ms: durationMs }, call_id: "s" }]),
      reply.text("awake again"),
    );
    const s = await spawnServe(home);
    const res = await fetch(`${s.url}/control/agents/main/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json", ...s.auth },
      body: JSON.stringify({ text: "sleep a little" }),
    });
    expect(res.status).toBe(202);
    const wakeAt = await waitFor(async () => {
      const st = (await (
        await fetch(`${s.url}/agents/main/state`, { headers: s.auth })
      ).json()) as {
        sleep_wake_at: string | null;
      };
      return st.sleep_wake_at;
    });
    const exited = new Promise((r) => s.proc.once("exit", r));
    s.proc.kill("SIGKILL");
    await exited;
    return { home, wakeAt };
  }

  async function wokenOnce(home: string, wakeAt: string, restartedAt: number) {
    const s = await spawnServe(home);
    const readyAt = Date.now();
    await waitFor(
      async () => {
        const briefs = (await (
          await fetch(`${s.url}/agents/main/briefs`, { headers: s.auth })
        ).json()) as {
          briefs: { text: string }[];
        };
        return briefs.briefs.some((b) => b.text === "awake again");
      },
      { what: "the agent to wake after restart", timeoutMs: 20_000 },
    );
    const exited = new Promise((r) => s.proc.once("exit", r));
    s.proc.kill("SIGTERM");
    await exited;
    const rt = await startRuntime({ home });
    const ticks = (await rt.host.store.messages.recent("main", 50)).filter(
      (m) => m.kind === "system_tick",
    );
    expect(ticks).toHaveLength(1);
    const tick = ticks[0]!;
    expect(tick.origin).toEqual({ kind: "system", subsystem: "sleep" });
    expect(tick.metadata?.due_at).toBe(wakeAt);
    // admitted at or after the original deadline, and not before this host started
    expect(Date.parse(tick.created_at)).toBeGreaterThanOrEqual(Date.parse(wakeAt));
    expect(Date.parse(tick.created_at)).toBeGreaterThanOrEqual(restartedAt - 5);
    // …and at it: not later than the deadline (or, when it passed during the downtime, the
    // restart) by more than a timer's slack.
    expect(Date.parse(tick.created_at)).toBeLessThanOrEqual(
      Math.max(Date.parse(wakeAt), readyAt) + 1_500,
    );
    expect(await rt.host.store.deadlines.forAgent("main")).toHaveLength(0);
    await rt.close();
  }

  it("an agent asleep for 3 s when the host is SIGKILLed wakes at the original deadline, once", async () => {
    const { home, wakeAt } = await sleepThenKill(3_000);
    expect(Date.parse(wakeAt)).toBeGreaterThan(Date.now()); // still ahead when the host restarts
    const restartedAt = Date.now();
    await wokenOnce(home, wakeAt, restartedAt);
  });

  it("a deadline that fell due while the host was down fires once after start", async () => {
    const { home, wakeAt } = await sleepThenKill(300);
    await waitFor(() => Date.now() > Date.parse(wakeAt) + 50, { what: "the deadline to pass" });
    const restartedAt = Date.now();
    await wokenOnce(home, wakeAt, restartedAt);
  });
});
