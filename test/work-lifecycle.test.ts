// The work plane end to end with the scripted fake model: one agent creates a work item
// with a plan and todos, works on it across runtime-owned ticks, blocks with a recheck,
// survives a host restart, is reminded once the recheck falls due, clears the blocker and
// completes with a same-round report; `holon run` answers with the completion report.
import { describe, expect, it } from "vitest";
import { readFileSync, statSync } from "node:fs";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { runOnce } from "../src/host/run-once.ts";
import type { ClosureDecision } from "../src/domain/closure.ts";

const fake = useFakeProvider();

/** A clock the test moves by hand (timers still use real time; deadlines use this). */
function manualClock(start: string): Clock & { advance(ms: number): void } {
  let t = Date.parse(start);
  return {
    now: () => new Date(t),
    sleep: systemClock.sleep,
    advance(ms: number) {
      t += ms;
    },
  };
}

const call =
  (name: string, args: () => Record<string, unknown> | Promise<Record<string, unknown>>) =>
  async () =>
    reply.tools([{ name, arguments: await args() }]);

async function processedCount(rt: TestRuntime, agentId: string): Promise<number> {
  return (await rt.host.store.events.after(agentId, 0, 10_000)).filter(
    (e) => e.type === "message_processed",
  ).length;
}

async function closure(rt: TestRuntime, agentId: string): Promise<ClosureDecision | undefined> {
  return (await rt.host.store.agents.get(agentId))?.closure;
}

/** Wait until `n` messages were processed and nothing is queued or running. */
async function settledAfter(rt: TestRuntime, agentId: string, n: number) {
  await waitFor(
    async () => {
      const a = (await rt.host.store.agents.get(agentId))!;
      return (
        (await processedCount(rt, agentId)) >= n &&
        (await rt.host.store.messages.pendingCount(agentId)) === 0 &&
        !a.current_run_id
      );
    },
    { what: `${n} processed messages and an idle agent`, timeoutMs: 15_000 },
  );
}

describe("a work item from plan to report, across a restart", () => {
  it("creates, works, blocks with a recheck, restarts, is reminded, clears and completes", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const clock = manualClock("2026-03-01T09:00:00.000Z");
    let rt = await startRuntime({ home, clock });
    const agent = rt.host.defaultAgentId;
    const itemId = async () =>
      (await rt.host.store.workItems.withState(agent, "open"))[0]?.id ?? "missing";
    const closures: (ClosureDecision | undefined)[] = [];

    // Turn 1 (operator prompt): create the item with a plan and todos, pick it, say so.
    fake.enqueue(
      reply.tools([
        {
          name: "CreateWorkItem",
          arguments: {
            objective: "Migrate the CI from Travis to GitHub Actions",
            plan_status: "ready",
            plan: "# Plan\nPort .travis.yml to .github/workflows/ci.yml.\nVerify on a branch.\n",
            todo_list: [
              { text: "write the workflow", state: "pending" },
              { text: "configure secrets", state: "pending" },
            ],
          },
        },
      ]),
      call("PickWorkItem", async () => ({ work_item_id: await itemId() })),
      reply.text("Planned the migration and picked it up."),
      // Turn 2 (work-queue tick, continue_active): one step done, then blocked.
      call("UpdateWorkItem", async () => ({
        work_item_id: await itemId(),
        todo_list: [
          { text: "write the workflow", state: "completed" },
          { text: "configure secrets", state: "in_progress" },
        ],
      })),
      call("UpdateWorkItem", async () => ({
        work_item_id: await itemId(),
        blocked_by: "waiting for the operator to add the DEPLOY_KEY secret",
        recheck_after: 60_000,
      })),
      reply.text("Blocked until the secret exists."),
    );
    const first = await rt.req("POST", `/control/agents/${agent}/prompt`, {
      text: "Please migrate our CI from Travis to GitHub Actions.",
    });
    expect(first.status).toBeLessThan(300);
    await settledAfter(rt, agent, 2);
    const item = (await rt.host.store.workItems.withState(agent, "open"))[0]!;

    // The first turn's closure was continuable (the runtime continued it with a tick).
    const decided = (await rt.host.store.events.after(agent, 0, 10_000))
      .filter((e) => e.type === "closure_decided")
      .map((e) => e.payload as unknown as ClosureDecision);
    closures.push(...decided);
    expect(decided[0]!.outcome).toBe("continuable");
    expect(decided[0]!.work_signal).toEqual({
      work_item_id: item.id,
      status: "active",
      reactivation_mode: "continue_active",
    });
    // After blocking, nothing runnable remains: the turn completed, nothing was continued.
    expect(decided[1]!.outcome).toBe("completed");
    expect(decided[1]!.work_signal).toBeUndefined();
    const tick = (await rt.host.store.messages.recent(agent, 10)).find(
      (m) => m.kind === "system_tick",
    );
    expect(tick?.origin).toEqual({ kind: "system", subsystem: "work_queue" });
    expect(tick?.work_item_id).toBe(item.id);

    // The plan file is where the record says, owner-only, with the seeded text.
    const planPath = item.plan_artifact.path;
    expect(planPath).toBe(
      `${(await rt.host.store.agents.get(agent))!.agent_home}/work-items/${item.id}/plan.md`,
    );
    expect(readFileSync(planPath, "utf8")).toContain("Port .travis.yml");
    expect(statSync(planPath).mode & 0o777).toBe(0o600);

    // Over HTTP: the item is current and blocked, with todos, blocker and recheck.
    const shown = await rt.req("GET", `/agents/${agent}/work-items/${item.id}`);
    expect(shown.status).toBe(200);
    expect(shown.json.work_item).toMatchObject({
      id: item.id,
      state: "open",
      view: "current",
      readiness: "blocked",
      blocked_by: "waiting for the operator to add the DEPLOY_KEY secret",
      recheck_at: "2026-03-01T09:01:00.000Z",
      todo_progress: { done: 1, total: 2 },
      plan_artifact: { path: planPath, preview_complete: true },
      completion_report: null,
    });
    expect(shown.json.work_item.plan_artifact.preview).toContain("Verify on a branch");
    const status = await rt.req("GET", `/agents/${agent}/status`);
    expect(status.json.current_work_item).toMatchObject({ id: item.id, readiness: "blocked" });
    const state = await rt.req("GET", `/agents/${agent}/state`);
    expect(state.json.work_plan).toMatchObject({ work_item_id: item.id, plan_status: "ready" });
    expect(state.json.work_items).toHaveLength(1);

    // The host goes down; the recheck falls due while it is down.
    await rt.close();
    clock.advance(5 * 60_000);
    fake.enqueue(
      // Turn 3 (recheck reminder): the secret exists now; clear, finish, complete with a report.
      call("UpdateWorkItem", () => ({
        work_item_id: item.id,
        blocked_by: null,
        todo_list: [
          { text: "write the workflow", state: "completed" },
          { text: "configure secrets", state: "completed" },
        ],
      })),
      reply.tools([{ name: "CompleteWorkItem", arguments: { work_item_id: item.id } }], {
        text: "CI now runs on GitHub Actions: ci.yml replaces .travis.yml and the DEPLOY_KEY secret is set.",
      }),
      reply.text("All done."),
    );
    const sentBefore = fake.requests.length;
    rt = await startRuntime({ home, clock });
    await settledAfter(rt, agent, 3);
    // The recheck turn's prompt projects the item with what the bound turn before did for it.
    const recheckPrompt = fake.requests[sentBefore]!.raw;
    expect(recheckPrompt).toContain(`id: ${item.id}`);
    expect(recheckPrompt).toContain("Recent progress on it (oldest first):");
    expect(recheckPrompt).toContain("- said: Blocked until the secret exists.");
    expect(recheckPrompt).toMatch(/- UpdateWorkItem \(success\)/);
    expect(recheckPrompt).toContain("waiting for the operator to add the DEPLOY_KEY secret");

    // The recheck fired once after start, as a low-priority runtime tick naming the item.
    const rechecks = (await rt.host.store.events.after(agent, 0, 10_000)).filter(
      (e) => e.type === "work_recheck_due",
    );
    expect(rechecks).toHaveLength(1);
    expect(rechecks[0]!.payload).toMatchObject({ work_item_ids: [item.id], delivered: true });
    // Each turn that started with the item current was bound to it, and its end committed
    // what the turn left: blocked by its own UpdateWorkItem, then completed by CompleteWorkItem.
    const commits = (await rt.host.store.events.after(agent, 0, 10_000))
      .filter((e) => e.type === "work_item_turn_end_committed")
      .map((e) => e.payload);
    expect(commits).toEqual([
      expect.objectContaining({ work_item_id: item.id, transition: "blocked" }),
      expect.objectContaining({ work_item_id: item.id, transition: "completed" }),
    ]);
    expect(commits.every((c) => c.runtime_blocker === undefined)).toBe(true);
    const bound = (await rt.host.store.events.after(agent, 0, 10_000)).filter(
      (e) => e.type === "work_item_bound",
    );
    expect(bound.map((e) => e.payload.run_id)).toEqual(commits.map((c) => c.run_id));
    const recheckTick = (await rt.host.store.messages.recent(agent, 10)).find(
      (m) => m.origin.kind === "system" && m.origin.subsystem === "work_recheck",
    );
    expect(recheckTick?.priority).toBe("background");

    // Completed with the same-round report; no current item; the closure is completed.
    const done = await rt.req("GET", `/agents/${agent}/work-items/${item.id}`);
    expect(done.json.work_item).toMatchObject({
      state: "completed",
      view: "completed",
      result_summary:
        "CI now runs on GitHub Actions: ci.yml replaces .travis.yml and the DEPLOY_KEY secret is set.",
      completion_report: { source: "same_round_report" },
    });
    expect(done.json.work_item.blocked_by).toBeUndefined();
    expect(done.json.work_item.recheck_at).toBeUndefined();
    expect((await rt.host.store.agents.get(agent))!.current_work_item_id).toBeUndefined();
    expect((await closure(rt, agent))!.outcome).toBe("completed");
    const briefs = await rt.host.store.briefs.recent(agent, 20);
    expect(briefs.some((b) => b.work_item_id === item.id && b.kind === "result")).toBe(true);

    // `holon run`: final_text is the newest completion report, raw_final_text the last text.
    fake.enqueue(
      reply.tools([{ name: "CreateWorkItem", arguments: { objective: "Say hello" } }]),
      call("PickWorkItem", async () => ({ work_item_id: await itemId() })),
      async () =>
        reply.tools([{ name: "CompleteWorkItem", arguments: { work_item_id: await itemId() } }], {
          text: "Hello, said properly: this is the report.",
        }),
      reply.text("ok"),
    );
    const run = await runOnce(rt.host, { text: "say hello", agent_id: agent });
    expect(run.final_text).toBe("Hello, said properly: this is the report.");
    expect(run.raw_final_text).toBe("ok");
    await settledAfter(rt, agent, 4);
    expect(closures.length).toBeGreaterThanOrEqual(2);
    await rt.close();
  });

  it("holon run prints the completion report as final_text and keeps the last text as raw_final_text", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    // The model learns the new item's id from CreateWorkItem's output in the next request.
    const itemIdFrom = (raw: string) => /wi_[A-Za-z0-9]+/.exec(raw)?.[0] ?? "missing";
    fake.enqueue(
      reply.tools([{ name: "CreateWorkItem", arguments: { objective: "Count the files" } }]),
      (req) =>
        reply.tools([{ name: "PickWorkItem", arguments: { work_item_id: itemIdFrom(req.raw) } }]),
      (req) =>
        reply.tools(
          [{ name: "CompleteWorkItem", arguments: { work_item_id: itemIdFrom(req.raw) } }],
          {
            text: "There are 3 files; the report lists them.",
          },
        ),
      reply.text("Finished."),
    );
    const r = await runCli(["run", "--json", "count the files"], { env: { HOLON_HOME: home } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      final_text: "There are 3 files; the report lists them.",
      raw_final_text: "Finished.",
    });
  });
});
