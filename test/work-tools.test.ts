// The work-item tools and routes against a real host: what each returns, and the error
// envelope for every misuse (unknown id, another agent's item, completing a completed item,
// an empty objective or blocker, a recheck without a blocker), the completion report taken
// from the same round (or a warning without one), the prompt projection, the stale-progress
// reminder, and who may call the routes.
import { afterAll, describe, expect, it } from "vitest";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { RuntimeHost } from "../src/host/host.ts";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch, type ToolContext } from "../src/tools/registry.ts";
import type { QueuedMessage } from "../src/domain/message.ts";
import { workQueueContributor } from "../src/context/work-queue.ts";
import { staleReminder } from "../src/work/reminder.ts";
import { WorkRunObserver } from "../src/work/observer.ts";
import type { TurnOutcome } from "../src/domain/closure.ts";
import { cleanupHomes, runCli, startRuntime, tempHome } from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";

const registry = buildRegistry();
const hosts: RuntimeHost[] = [];

async function openHost(): Promise<RuntimeHost> {
  const home = tempHome();
  const host = await RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
  hosts.push(host);
  return host;
}

afterAll(async () => {
  for (const host of hosts.splice(0)) await host.shutdown();
  cleanupHomes();
});

let runSeq = 0;
async function ctxFor(
  host: RuntimeHost,
  agentId = "main",
  runId = `run_t${++runSeq}`,
): Promise<ToolContext> {
  return await toolContext(host, agentId, runId);
}

async function call(ctx: ToolContext, name: string, args: Record<string, unknown>) {
  const out = await dispatch(registry, name, JSON.stringify(args), ctx);
  return { ...out, result: out.canonical.result as any, error: out.canonical.error };
}

/** What the turn records before it runs a round's tools: the round's text and calls. */
async function assistantRound(host: RuntimeHost, ctx: ToolContext, text: string, tools: string[]) {
  await host.store.tx(
    async () =>
      await host.store.transcript.append({
        id: host.store.ids.next("tr"),
        agent_id: ctx.agent.agent_id,
        created_at: host.store.clock.now().toISOString(),
        kind: "assistant_round",
        run_id: ctx.run_id,
        message_id: ctx.message.id,
        data: {
          round: 1,
          text,
          tool_calls: tools.map((name, i) => ({
            type: "tool_call",
            call_id: `c${i}`,
            name,
            arguments: "{}",
          })),
          stop_reason: "tool_use",
          model_ref: "fake/test-model",
          input_tokens: 0,
          output_tokens: 0,
          token_usage: null,
          provider_attempt_timeline: null,
        },
      } as never),
  );
}

describe("work-item tools", () => {
  it("create, pick, update, get and list return the item with its plan descriptor", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const created = await call(ctx, "CreateWorkItem", {
      objective: "  Split the provider fixtures  ",
      plan: "Keep behaviour; move fixtures only.\n",
      todo_list: [{ text: "move fixtures", state: "pending" }],
    });
    expect(created.error).toBeNull();
    const item = created.result.work_item;
    expect(item).toMatchObject({
      objective: "Split the provider fixtures",
      state: "open",
      plan_status: "draft",
      view: "queued",
      workspace_id: "agent_home",
      created_by: "agent",
      plan_artifact: { preview: "Keep behaviour; move fixtures only.\n", preview_complete: true },
    });
    expect(item.plan_artifact.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(statSync(dirname(item.plan_artifact.path)).mode & 0o777).toBe(0o700);
    expect(created.rendered).toContain("PickWorkItem");

    const picked = await call(ctx, "PickWorkItem", { work_item_id: item.id });
    expect(picked.result.current).toMatchObject({ id: item.id, view: "current", is_current: true });
    expect(picked.result.previous).toBeNull();
    expect(picked.result.binding_note).toContain(item.id);
    expect((await host.store.agents.get("main"))!.current_work_item_id).toBe(item.id);

    // A plan edited by hand shows in the descriptor on the next read and update.
    writeFileSync(item.plan_artifact.path, "x".repeat(5_000));
    const got = await call(ctx, "GetWorkItem", { work_item_id: item.id, include_todo_list: false });
    expect(got.result.work_item.plan_artifact).toMatchObject({
      bytes: 5_000,
      preview_complete: false,
    });
    expect(got.result.work_item.todo_list).toBeUndefined();
    const updated = await call(ctx, "UpdateWorkItem", {
      work_item_id: item.id,
      plan_status: "ready",
      todo_list: [{ text: "move fixtures", state: "in_progress" }],
    });
    expect(updated.result.work_item).toMatchObject({ plan_status: "ready", revision: 2 });
    const change = (await host.store.events.after("main", 0, 1000))
      .filter((e) => e.type === "work_item_updated")
      .at(-1)!;
    expect(change.payload.changes).toEqual(["plan_status", "todo_list", "plan_artifact"]);

    // Blocking without recheck_after takes the one-hour default; other updates keep it.
    const blocked = await call(ctx, "UpdateWorkItem", {
      work_item_id: item.id,
      blocked_by: "CI is down",
    });
    const due = blocked.result.work_item.recheck_at;
    expect(Date.parse(due) - Date.now()).toBeGreaterThan(59 * 60_000);
    expect((await host.store.deadlines.byKey(`work_recheck:${item.id}`))?.due_at).toBe(due);
    const kept = await call(ctx, "UpdateWorkItem", {
      work_item_id: item.id,
      objective: "Split fixtures",
    });
    expect(kept.result.work_item.recheck_at).toBe(due);
    const cleared = await call(ctx, "UpdateWorkItem", { work_item_id: item.id, blocked_by: null });
    expect(cleared.result.work_item.recheck_at).toBeUndefined();
    expect(await host.store.deadlines.byKey(`work_recheck:${item.id}`)).toBeUndefined();

    const other = await call(ctx, "CreateWorkItem", { objective: "Something else" });
    const listed = await call(ctx, "ListWorkItems", {});
    expect(listed.result.work_items.map((w: any) => [w.id, w.view])).toEqual([
      [item.id, "current"],
      [other.result.work_item.id, "queued"],
    ]);
    const queued = await call(ctx, "ListWorkItems", { filter: "queued" });
    expect(queued.result.work_items).toHaveLength(1);
  });

  it("CompleteWorkItem promotes the same round's text; without text it warns and makes no report", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const a = (await call(ctx, "CreateWorkItem", { objective: "With a report" })).result.work_item;
    const b = (await call(ctx, "CreateWorkItem", { objective: "Without a report" })).result
      .work_item;
    await call(ctx, "PickWorkItem", { work_item_id: a.id });

    await assistantRound(host, ctx, "Done: the fixtures live in support/compaction.rs now.", [
      "CompleteWorkItem",
    ]);
    const withReport = await call(ctx, "CompleteWorkItem", { work_item_id: a.id });
    expect(withReport.result).toMatchObject({ report_promoted: true, warning: null });
    expect(withReport.result.work_item).toMatchObject({
      state: "completed",
      result_summary: "Done: the fixtures live in support/compaction.rs now.",
      completion_report: { source: "same_round_report" },
    });
    expect((await host.store.agents.get("main"))!.current_work_item_id).toBeUndefined();
    const brief = (await host.store.briefs.recent("main", 10)).at(-1)!;
    expect(brief).toMatchObject({ kind: "result", work_item_id: a.id });

    const ctx2 = await ctxFor(host);
    await assistantRound(host, ctx2, "", ["CompleteWorkItem"]);
    const bare = await call(ctx2, "CompleteWorkItem", { work_item_id: b.id });
    expect(bare.canonical.status).toBe("success");
    expect(bare.result.report_promoted).toBe(false);
    expect(bare.result.warning.kind).toBe("missing_completion_report");
    expect(bare.rendered).toContain("Warning (missing_completion_report)");
    expect(bare.result.work_item.completion_report).toBeNull();
    expect(bare.result.work_item.result_summary).toBeUndefined();
  });

  it("every misuse is an error envelope with a kind and a hint", async () => {
    const host = await openHost();
    await host.agents.create("other");
    const ctx = await ctxFor(host);
    const mine = (await call(ctx, "CreateWorkItem", { objective: "mine" })).result.work_item;
    const theirs = (
      await call(await ctxFor(host, "other"), "CreateWorkItem", { objective: "theirs" })
    ).result.work_item;

    const cases: [string, Record<string, unknown>, string][] = [
      ["GetWorkItem", { work_item_id: "wi_nope" }, "unknown_work_item"],
      ["PickWorkItem", { work_item_id: "wi_nope" }, "unknown_work_item"],
      ["UpdateWorkItem", { work_item_id: "wi_nope", plan_status: "ready" }, "unknown_work_item"],
      ["CompleteWorkItem", { work_item_id: "wi_nope" }, "unknown_work_item"],
      // Another agent's item looks exactly like an unknown one.
      ["PickWorkItem", { work_item_id: theirs.id }, "unknown_work_item"],
      ["GetWorkItem", { work_item_id: theirs.id }, "unknown_work_item"],
      ["CompleteWorkItem", { work_item_id: theirs.id }, "unknown_work_item"],
      ["CreateWorkItem", { objective: "   " }, "empty_objective"],
      ["CreateWorkItem", {}, "invalid_tool_input"],
      ["UpdateWorkItem", { work_item_id: mine.id, objective: "" }, "empty_objective"],
      ["UpdateWorkItem", { work_item_id: mine.id, blocked_by: "  " }, "empty_blocker"],
      ["UpdateWorkItem", { work_item_id: mine.id, recheck_after: 1000 }, "invalid_work_item_input"],
      [
        "UpdateWorkItem",
        { work_item_id: mine.id, todo_list: [{ text: "x", state: "blocked" }] },
        "invalid_tool_input",
      ],
      ["ListWorkItems", { filter: "everything" }, "invalid_tool_input"],
    ];
    for (const [tool, args, kind] of cases) {
      const r = await call(ctx, tool, args);
      expect(r.canonical.status, `${tool} ${JSON.stringify(args)}`).toBe("error");
      expect(r.error!.kind, `${tool} ${JSON.stringify(args)}`).toBe(kind);
      expect(r.error!.recovery_hint, `${tool} hint`).toBeTruthy();
      expect(JSON.parse(r.rendered)).toMatchObject({ ok: false, kind });
    }
    expect((await host.services.work.item("other", theirs.id)).state).toBe("open");

    // Completing a completed item, picking or updating it: work_item_completed.
    await assistantRound(host, ctx, "report", ["CompleteWorkItem"]);
    expect((await call(ctx, "CompleteWorkItem", { work_item_id: mine.id })).error).toBeNull();
    for (const [tool, args] of [
      ["CompleteWorkItem", { work_item_id: mine.id }],
      ["PickWorkItem", { work_item_id: mine.id }],
      ["UpdateWorkItem", { work_item_id: mine.id, plan_status: "ready" }],
    ] as const) {
      const r = await call(ctx, tool, args);
      expect(r.error?.kind, tool).toBe("work_item_completed");
    }
  });
});

describe("prompt projection and the stale-progress reminder", () => {
  it("projects nothing without work items, and the current item in full when there is one", async () => {
    const host = await openHost();
    const pc = async () => ({
      store: host.store,
      agent: (await host.store.agents.get("main"))!,
      message: { id: "m" } as QueuedMessage,
      executionRoot: "/",
      cwd: "/",
      tools: [],
    });
    expect(await workQueueContributor.contribute(await pc())).toEqual([]);
    const work = host.services.work;
    const cur = await work.create(
      "main",
      {
        objective: "Current one",
        plan: "Plan body here.",
        todo_list: [{ text: "step", state: "in_progress" }],
      },
      "agent",
    );
    await work.pick("main", cur.id);
    const q = await work.create("main", { objective: "Queued one" }, "agent");
    const bl = await work.create("main", { objective: "Blocked one" }, "agent");
    await work.update("main", bl.id, { blocked_by: "waiting for review" });
    const ni = await work.create(
      "main",
      { objective: "Unclear one", plan_status: "needs_input" },
      "agent",
    );
    const [section] = await workQueueContributor.contribute(await pc());
    const text = section!.text;
    expect(text).toContain(`id: ${cur.id}`);
    expect(text).toContain("Plan body here.");
    expect(text).toContain("[in_progress] step");
    expect(text).toMatch(new RegExp(`queued_runnable:\\n- ${q.id}`));
    expect(text).toMatch(new RegExp(`blocked:\\n- ${bl.id}.*waiting for review`));
    expect(text).toMatch(new RegExp(`waiting_for_operator:\\n- ${ni.id}`));
  });

  it("reminds after the configured rounds without a work-item update, then only after the cooldown", async () => {
    const host = await openHost();
    const work = host.services.work;
    const cur = await work.create(
      "main",
      {
        objective: "Long task",
        todo_list: [
          { text: "a", state: "completed" },
          { text: "b", state: "pending" },
        ],
      },
      "agent",
    );
    await work.pick("main", cur.id);
    const ctx = await ctxFor(host);
    const settings = { rounds: 2, cooldown: 2, max_tokens: 100 };
    const at = async () =>
      await staleReminder(host.store, work, settings, { agent: ctx.agent, run_id: ctx.run_id });
    const seen: boolean[] = [];
    for (let r = 0; r < 6; r++) {
      seen.push((await at()) !== undefined);
      await assistantRound(host, ctx, "", ["ExecCommand"]);
    }
    expect(seen).toEqual([false, false, true, false, true, false]);
    const text =
      (await at()) ??
      (await staleReminder(host.store, work, { ...settings, rounds: 1, cooldown: 1 }, ctx))!;
    expect(text.length).toBeLessThanOrEqual(400);
    expect(text).toContain("Long task");
    expect(text).not.toContain("[completed] a");
    // A successful work-item update resets the count.
    await call(ctx, "UpdateWorkItem", { work_item_id: cur.id, plan_status: "ready" });
    await host.store.tx(
      async () =>
        await host.store.transcript.append({
          id: host.store.ids.next("tr"),
          agent_id: "main",
          created_at: new Date().toISOString(),
          kind: "tool_execution",
          run_id: ctx.run_id,
          message_id: ctx.message.id,
          data: { tool_name: "UpdateWorkItem", envelope: { status: "success" } },
        } as never),
    );
    expect(await at()).toBeUndefined();
  });
});

describe("turn binding and the turn-end commit", () => {
  it("binds a run to the current item and commits only the blocker, from real turn ends", async () => {
    const host = await openHost();
    const work = host.services.work;
    const observer = new WorkRunObserver({
      store: host.store,
      work,
      maxContinuations: () => 20,
    });
    const item = await work.create("main", { objective: "Bound item" }, "agent");
    await work.pick("main", item.id);
    const run = async (outcome: TurnOutcome, kind = "operator_prompt") => {
      const info = {
        agent_id: "main",
        run_id: `run_b${++runSeq}`,
        message: { id: `msg_b${runSeq}`, kind } as QueuedMessage,
      };
      await host.store.tx(async () => await observer.beforeRun(info));
      // Focus moves during the run: the commit still goes to the item bound at the start.
      const other = await work.create("main", { objective: "Picked mid-turn" }, "agent");
      await work.pick("main", other.id);
      await host.store.tx(async () => await observer.afterRun({ ...info, outcome }));
      await work.pick("main", item.id);
      const last = (await host.store.events.after("main", 0, 10_000))
        .filter((e) => e.payload?.run_id === info.run_id)
        .map((e) => [e.type, e.payload] as [string, Record<string, unknown>]);
      return last;
    };

    // A settled turn without completion or blocker leaves the item open.
    expect(await run({ kind: "settled" })).toEqual([
      ["work_item_bound", { run_id: expect.any(String), work_item_id: item.id }],
      [
        "work_item_turn_end_committed",
        expect.objectContaining({ work_item_id: item.id, transition: "open" }),
      ],
    ]);
    expect(await work.item("main", item.id)).toMatchObject({ state: "open" });
    expect((await work.item("main", item.id)).blocked_by).toBeUndefined();

    // A liveness tick and a failed turn are no real turn ends: nothing is committed.
    for (const [outcome, reason] of [
      [{ kind: "liveness_only" }, "not_a_model_turn"],
      [{ kind: "failed", summary: "boom" }, "turn_did_not_finish"],
      [{ kind: "aborted", reason: "operator_aborted" }, "turn_did_not_finish"],
    ] as const) {
      const events = await run(outcome, "system_tick");
      expect(events.at(-1)).toEqual([
        "work_item_turn_end_commit_skipped",
        expect.objectContaining({ work_item_id: item.id, reason }),
      ]);
    }

    // A turn that ended waiting on the operator blocks the bound item, never completes it.
    const waited = await run({ kind: "await_operator", detail: "which region?" });
    expect(waited.at(-1)).toEqual([
      "work_item_turn_end_committed",
      expect.objectContaining({
        transition: "blocked",
        runtime_blocker: "waiting for the operator: which region?",
      }),
    ]);
    expect(await work.item("main", item.id)).toMatchObject({
      state: "open",
      blocked_by: "waiting for the operator: which region?",
    });
    // A blocker already set is kept as the turn's tools left it.
    const again = await run({ kind: "await_external", detail: "CI" });
    expect(again.at(-1)![1]).toMatchObject({ transition: "blocked" });
    expect(again.at(-1)![1].runtime_blocker).toBeUndefined();
    expect((await work.item("main", item.id)).blocked_by).toBe(
      "waiting for the operator: which region?",
    );
    // The mid-turn item was never touched by a commit.
    const others = (await work.list("main")).filter((w) => w.id !== item.id);
    expect(others.every((w) => w.blocked_by === undefined && w.state === "open")).toBe(true);
  });
});

describe("what counts as progress for the runaway guard", () => {
  it("a todo state change, a plan change, a pick, a block and a completion reset it; a reworded todo does not", async () => {
    const host = await openHost();
    const work = host.services.work;
    const repo = host.store.workItems;
    const item = await work.create(
      "main",
      { objective: "guarded", todo_list: [{ text: "a", state: "pending" }] },
      "agent",
    );
    const other = await work.create("main", { objective: "other" }, "agent");
    const stalled = async () =>
      await repo.putAgentState("main", {
        ...(await repo.agentState("main")),
        continuations_without_progress: 7,
      });
    const count = async () => (await repo.agentState("main")).continuations_without_progress;
    const steps: [string, () => Promise<unknown>, number][] = [
      [
        "reworded todo",
        async () =>
          await work.update("main", item.id, {
            todo_list: [{ text: "a, reworded", state: "pending" }],
          }),
        7,
      ],
      [
        "todo state",
        async () =>
          await work.update("main", item.id, {
            todo_list: [{ text: "a, reworded", state: "completed" }],
          }),
        0,
      ],
      [
        "plan file",
        async () => {
          writeFileSync((await work.item("main", item.id)).plan_artifact.path, "new plan\n");
          await work.update("main", item.id, {});
        },
        0,
      ],
      [
        "objective only",
        async () => await work.update("main", item.id, { objective: "guarded, renamed" }),
        7,
      ],
      ["pick", async () => await work.pick("main", item.id), 0],
      ["block", async () => await work.update("main", item.id, { blocked_by: "review" }), 0],
      [
        "complete",
        async () => await work.complete("main", other.id, { by: "operator", note: "x" }),
        0,
      ],
    ];
    for (const [what, step, expected] of steps) {
      await stalled();
      await step();
      expect(await count(), what).toBe(expected);
    }
  });
});

describe("closure inputs from work state", () => {
  it("blocked, needs-input and completed items never give a work signal", async () => {
    const host = await openHost();
    const work = host.services.work;
    const observer = new WorkRunObserver({ store: host.store, work, maxContinuations: () => 20 });
    const facts = async () =>
      await observer.closureFacts({
        agent_id: "main",
        run_id: `run_c${++runSeq}`,
        message: { id: "m", kind: "operator_prompt" } as QueuedMessage,
        outcome: { kind: "settled" },
      });
    expect(await facts()).toEqual({});
    const blocked = await work.create("main", { objective: "blocked" }, "agent");
    await work.update("main", blocked.id, { blocked_by: "legal" });
    const unclear = await work.create(
      "main",
      { objective: "unclear", plan_status: "needs_input" },
      "agent",
    );
    const done = await work.create("main", { objective: "done" }, "agent");
    await work.complete("main", done.id, { by: "operator", note: "n/a" });
    expect((await facts()).work_signal).toBeUndefined();
    // A needs-input current item is an operator wait, not work to continue.
    await work.pick("main", unclear.id);
    expect(await facts()).toEqual({ operator_wait: `work_item:${unclear.id}:needs_input` });
    // A blocked current item with a runnable queued one: the agent is woken to pick.
    await work.pick("main", blocked.id);
    const queued = await work.create("main", { objective: "runnable" }, "agent");
    expect((await facts()).work_signal).toEqual({
      work_item_id: queued.id,
      status: "queued",
      reactivation_mode: "activate_queued",
    });
    await work.pick("main", queued.id);
    expect((await facts()).work_signal).toMatchObject({ reactivation_mode: "continue_active" });
  });
});

describe("work-item routes", () => {
  it("refuse bad input and callers without the right, and keep other agents' items apart", async () => {
    const rt = await startRuntime();
    try {
      const agent = rt.host.defaultAgentId;
      const empty = await rt.req("POST", `/control/agents/${agent}/work-items`, { objective: " " });
      expect(empty.status).toBe(400);
      expect(empty.json.error.kind).toBe("empty_objective");
      const extra = await rt.req("POST", `/control/agents/${agent}/work-items`, {
        objective: "x",
        work_item_id: "wi_forged",
      });
      expect(extra.status).toBe(400);
      const tooLong = await rt.req("POST", `/control/agents/${agent}/work-items`, {
        objective: "x".repeat(3_000),
      });
      expect(tooLong.status).toBe(400);
      // No token on TCP: the control route refuses, nothing is created.
      const anon = await rt.req(
        "POST",
        `/control/agents/${agent}/work-items`,
        { objective: "x" },
        { authorization: "" },
      );
      expect(anon.status).toBe(401);
      expect(await rt.host.store.workItems.hasAny(agent)).toBe(false);

      // Enqueuing work leaves the current item current and writes no transcript message.
      await rt.req("POST", `/control/agents/${agent}/control`, { action: "pause" });
      const work = rt.host.services.work;
      const current = await work.create(agent, { objective: "what I am on" }, "agent");
      await work.pick(agent, current.id);
      const messagesBefore = (await rt.host.store.messages.recent(agent, 100)).length;
      const queued = await rt.req("POST", `/control/agents/${agent}/work-items`, {
        objective: "for later",
      });
      expect(queued.status).toBe(201);
      expect(queued.json.work_item).toMatchObject({ view: "queued", created_by: "operator" });
      expect((await rt.host.store.agents.get(agent))!.current_work_item_id).toBe(current.id);
      expect(await rt.host.store.messages.recent(agent, 100)).toHaveLength(messagesBefore);

      await rt.host.agents.create("other");
      const theirs = await rt.req("POST", `/control/agents/other/work-items`, {
        objective: "theirs",
      });
      expect(theirs.status).toBe(201);
      const cross = await rt.req("GET", `/agents/${agent}/work-items/${theirs.json.work_item.id}`);
      expect(cross.status).toBe(404);
      expect(cross.json.error.kind).toBe("unknown_work_item");
      const crossDone = await rt.req(
        "POST",
        `/control/agents/${agent}/work-items/${theirs.json.work_item.id}/complete`,
        {},
      );
      expect(crossDone.status).toBe(404);
      const badState = await rt.req("GET", `/agents/${agent}/work-items?state=bogus`);
      expect(badState.status).toBe(400);
      const blockEmpty = await rt.req(
        "POST",
        `/control/agents/other/work-items/${theirs.json.work_item.id}/block`,
        {
          reason: "",
        },
      );
      expect(blockEmpty.json.error.kind).toBe("empty_blocker");
      const done = await rt.req(
        "POST",
        `/control/agents/other/work-items/${theirs.json.work_item.id}/complete`,
      );
      expect(done.status).toBe(200);
      const again = await rt.req(
        "POST",
        `/control/agents/other/work-items/${theirs.json.work_item.id}/complete`,
      );
      expect(again.status).toBe(409);
      expect(again.json.error.kind).toBe("work_item_completed");
      expect(existsSync(theirs.json.work_item.plan_artifact.path)).toBe(true);
    } finally {
      await rt.close();
    }
  });
});

describe("holon work", () => {
  it("adds, lists, shows, blocks, unblocks and completes work items through the CLI", async () => {
    const rt = await startRuntime();
    try {
      const env = { HOLON_HOME: rt.home };
      // Park the agent so the enqueued work is not picked up by a model turn meanwhile.
      const paused = await rt.req("POST", `/control/agents/main/control`, { action: "pause" });
      expect(paused.status).toBe(200);
      const added = await runCli(["work", "add", "main", "migrate", "the", "CI", "--json"], {
        env,
      });
      expect(added.code, added.stderr).toBe(0);
      const id = JSON.parse(added.stdout).work_item.id as string;
      const list = await runCli(["work", "list", "main"], { env });
      expect(list.stdout).toMatch(new RegExp(`${id}\\s+queued\\s+draft.*migrate the CI`));
      const blocked = await runCli(["work", "block", "main", id, "--reason", "waiting for legal"], {
        env,
      });
      expect(blocked.stdout).toContain("blocked");
      const show = await runCli(["work", "show", "main", id], { env });
      expect(show.stdout).toContain("objective: migrate the CI");
      expect(show.stdout).toContain("blocked:   waiting for legal");
      expect(show.stdout).toMatch(/plan: +\/.*work-items\/wi_.*plan\.md/);
      const unblocked = await runCli(["work", "unblock", "main", id], { env });
      expect(unblocked.code, unblocked.stderr).toBe(0);
      const done = await runCli(["work", "done", "main", id, "--note", "superseded"], { env });
      expect(done.stdout).toContain(`completed ${id} with a note`);
      const shown = await runCli(["work", "show", "main", id, "--json"], { env });
      expect(JSON.parse(shown.stdout)).toMatchObject({
        state: "completed",
        result_summary: "superseded",
      });
      const again = await runCli(["work", "done", "main", id], { env });
      expect(again.code).toBe(1);
      expect(again.stderr).toContain("already completed");
      const empty = await runCli(["work", "add", "main", " "], { env });
      expect(empty.code).toBe(1);
    } finally {
      await rt.close();
    }
  });
});
