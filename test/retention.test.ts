// Retention on a fake clock: a pass removes exactly the history older than the policy and
// nothing newer, says what it removed per agent and kind, hands the space back, and the
// event stream tells a client resuming from a removed seq that those events are gone.
// Real SQLite in a temp home, real HTTP on 127.0.0.1; nothing sleeps.
import fs, { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { TaskRecord } from "../src/domain/task.ts";
import { RetentionJob } from "../src/host/retention.ts";
import {
  effectiveRetention,
  type RetentionFile,
  type RetentionPolicy,
} from "../src/host/retention-config.ts";
import { taskOutputView } from "../src/tasks/service.ts";
import { fakeClock, historyRound, parked, putCommandTask } from "./helpers/history.ts";
import { cleanupHomes, runCli, startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";
import { openSse } from "./helpers/sse.ts";

afterAll(cleanupHomes);

const DAY = 86_400_000;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** Everything off except what a test turns on. */
function policy(file: RetentionFile): () => RetentionPolicy {
  const none = { max_age_days: 0, max_mb: 0 };
  return () =>
    effectiveRetention({
      events: none,
      transcript: none,
      messages: none,
      briefs: none,
      tasks: { max_age_days: 0 },
      task_output: none,
      ...file,
    });
}

async function rows(rt: TestRuntime) {
  const db = rt.host.store.db;
  const q = (sql: string) => db.prepare(sql).all() as Record<string, any>[];
  return {
    eventSeqs: q("SELECT event_seq FROM events WHERE agent_id = 'main' ORDER BY event_seq").map(
      (r) => r.event_seq as number,
    ),
    eventTimes: q("SELECT ts FROM events").map((r) => r.ts as number),
    transcript: q("SELECT created_at FROM transcript").map((r) => r.created_at as number),
    messages: (await rt.host.store.messages.recent("main", 1000)).map((m) => m.body),
    briefs: (await rt.host.store.briefs.recent("main", 1000)).map((b) => b.text),
  };
}

describe("retention", () => {
  it("removes exactly what is older than the policy, nothing newer, and says what it removed", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      await rt.host.lifecycle.control("main", "pause");
      const store = rt.host.store;
      for (let i = 0; i < 3; i++) await historyRound(rt.host, `old${i}`);
      const oldThrough = await store.events.newestSeq("main");
      const oldEventTypes: Record<string, number> = {};
      for (const e of await store.events.after("main", 0, 10_000)) {
        oldEventTypes[e.type] = (oldEventTypes[e.type] ?? 0) + 1;
      }
      clock.set(T0 + 20 * DAY);
      for (let i = 0; i < 3; i++) await historyRound(rt.host, `young${i}`);
      const before = await rows(rt);
      const youngEvents = before.eventSeqs.filter((s) => s > oldThrough);

      // Day 30 minus a millisecond: nothing is old enough yet.
      clock.set(T0 + 30 * DAY - 1);
      const all30 = policy({
        events: { max_age_days: 30 },
        transcript: { max_age_days: 30 },
        messages: { max_age_days: 30 },
        briefs: { max_age_days: 30 },
      });
      const early = await new RetentionJob({ store, policy: all30 }).runOnce();
      expect(early.removed).toEqual({});
      expect(await rows(rt)).toEqual(before);

      // Day 30 plus a millisecond: exactly the day-0 history goes.
      clock.set(T0 + 30 * DAY + 1);
      const summary = await new RetentionJob({ store, policy: all30 }).runOnce();
      const after = await rows(rt);
      const cutoff = T0 + 1; // stored times are epoch milliseconds
      expect(after.eventSeqs).toEqual([...youngEvents, await store.events.newestSeq("main")]);
      expect(after.eventTimes.every((t) => t >= cutoff)).toBe(true);
      expect(after.transcript).toHaveLength(3);
      expect(after.transcript.every((t) => t >= cutoff)).toBe(true);
      expect(after.messages.map((b: any) => b.text).sort()).toEqual(["young0", "young1", "young2"]);
      expect(after.briefs).toEqual(["failure young0", "failure young1", "failure young2"]);

      expect(summary.removed).toMatchObject({
        events: oldThrough,
        transcript: 3,
        messages: 3,
        briefs: 3,
      });
      expect(summary.by_agent.main).toEqual({
        counts: { events: oldThrough, transcript: 3, messages: 3, briefs: 3 },
        event_types: oldEventTypes,
        events_removed_through: oldThrough,
      });
      // The removal is on the agent's own stream, where a client sees it.
      const told = (await store.events.after("main", oldThrough, 10_000)).at(-1)!;
      expect(told.type).toBe("retention_applied");
      expect(told.payload).toMatchObject({
        removed: { events: oldThrough, transcript: 3, messages: 3, briefs: 3 },
        events_removed_through: oldThrough,
        oldest_available_seq: oldThrough + 1,
      });
      expect(await store.events.removedThrough("main")).toBe(oldThrough);
      expect(summary.pages_returned).toBeGreaterThanOrEqual(0);
      // Incremental vacuum is SQLite's (Postgres's autovacuum frees its space).
      if (store.kind === "sqlite") {
        expect(store.db.prepare("PRAGMA freelist_count").get()).toEqual({ freelist_count: 0 });
      }

      // A second pass finds nothing more and says nothing.
      const again = await new RetentionJob({ store, policy: all30 }).runOnce();
      expect(again.removed).toEqual({});
      expect(await store.events.after("main", told.event_seq, 10)).toEqual([]);

      // The event stream: a cursor inside the removed range is refused, explicitly.
      const stream = `${rt.url}/agents/main/events/stream`;
      for (const [query, headers] of [
        ["?after_seq=0", {}],
        ["?after_seq=1", {}],
        ["", { "last-event-id": String(oldThrough - 1) }],
      ] as const) {
        const res = await fetch(stream + query, {
          headers: { ...headers, authorization: `Bearer ${rt.token}` },
        });
        expect(res.status).toBe(410);
        const body = (await res.json()) as any;
        expect(body.error).toMatchObject({
          kind: "replay_unavailable",
          removed_through_seq: oldThrough,
          oldest_available_seq: oldThrough + 1,
          newest_seq: told.event_seq,
          snapshot: "/agents/main/state",
        });
        expect(body.error.hint).toMatch(/\/agents\/main\/state/);
      }
      // Resuming exactly at the edge still works, with no gap.
      const edge = await openSse(`${stream}?after_seq=${oldThrough}`, {
        authorization: `Bearer ${rt.token}`,
      });
      expect(edge.status).toBe(200);
      for await (const f of edge.frames) {
        expect(Number(f.id)).toBe(oldThrough + 1);
        break;
      }
      edge.close();
      // Paging says where the log now starts.
      const page = await rt.req("GET", "/agents/main/events?after_seq=0&order=asc&limit=1");
      expect(page.json).toMatchObject({
        removed_through_seq: oldThrough,
        oldest_available_seq: oldThrough + 1,
      });
      expect(page.json.events[0].event_seq).toBe(oldThrough + 1);
      // The snapshot a refused client rebuilds from gives the cursor to resume with.
      const state = await rt.req("GET", "/agents/main/state");
      expect(state.json.newest_seq).toBe(await store.events.newestSeq("main"));
      expect(state.json.newest_seq).toBeGreaterThanOrEqual(told.event_seq);
    } finally {
      await rt.close();
    }
  });

  it("a size cap removes the oldest rows first until the family fits, and numbering survives a restart", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    const home = rt.home;
    let newest = 0;
    try {
      await rt.host.lifecycle.control("main", "pause");
      const store = rt.host.store;
      for (let i = 0; i < 20; i++) {
        clock.set(T0 + i * 1000);
        await historyRound(rt.host, `r${i}`);
      }
      const tally = () =>
        (store.db.prepare("SELECT bytes FROM store_stats WHERE family = 'events'").get() as any)
          .bytes as number;
      const cap = Math.floor(tally() / 2);
      // Pages returned to the file system: SQLite's incremental vacuum only.
      const sqlite = store.kind === "sqlite";
      const pages = () =>
        sqlite ? ((store.db.prepare("PRAGMA page_count").get() as any).page_count as number) : 0;
      const pagesBefore = pages();
      const capped: () => RetentionPolicy = () => ({
        ...policy({})(),
        events: { max_age_ms: null, max_bytes: cap },
      });
      const summary = await new RetentionJob({ store, policy: capped, batchSize: 7 }).runOnce();
      expect(tally()).toBeLessThanOrEqual(cap + 2_000); // plus the retention_applied event
      // The freed pages went back to the file system, not just to a free list.
      if (sqlite) {
        expect(summary.pages_returned).toBeGreaterThan(0);
        expect(pages()).toBeLessThan(pagesBefore);
      }
      const removedThrough = await store.events.removedThrough("main");
      expect(summary.by_agent.main!.events_removed_through).toBe(removedThrough);
      const seqs = (await rows(rt)).eventSeqs;
      newest = await store.events.newestSeq("main");
      // What is left is the newest part of the log, without a hole.
      expect(seqs).toEqual(
        Array.from({ length: newest - removedThrough }, (_, i) => removedThrough + 1 + i),
      );
      // The other families had no limit and lost nothing.
      expect((await rows(rt)).briefs).toHaveLength(20);
    } finally {
      await rt.close();
    }
    // Remove the rest by hand: after a restart the numbering still continues from the floor.
    const again = await startRuntime({ home, executor: () => parked, clock });
    try {
      const store = again.host.store;
      store.db.exec("DELETE FROM events");
      await store.events.invalidate();
      store.db
        .prepare(
          "UPDATE retention_floors SET removed_through = ? WHERE agent_id = 'main' AND family = 'events'",
        )
        .run(newest);
      expect(await store.events.newestSeq("main")).toBe(newest);
      const e = await store.tx(
        async () =>
          await store.appendEvent("main", {
            type: "wake_requested",
            payload: { source: "test", disposition: "noop" },
          }),
      );
      expect(e.event_seq).toBe(newest + 1);
    } finally {
      await again.close();
    }
  });

  it("finished task output past its age is removed; the task keeps its snapshot, and old records go", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      const store = rt.host.store;
      const task = async (
        id: string,
        finishedDay: number,
        status: TaskRecord["status"],
      ): Promise<TaskRecord> =>
        await putCommandTask(rt.host, {
          id,
          status,
          at: new Date(T0 + finishedDay * DAY).toISOString(),
          files: { "output.log": `output of ${id}\n`.repeat(100) },
          cmd: "echo",
          output_snapshot: { preview: `output of ${id}`, total_bytes: 1500, truncated: true },
        });
      const ancient = await task("task_ancient", 0, "completed");
      const old = await task("task_old", 20, "failed");
      const recent = await task("task_recent", 28, "completed");
      const running = await task("task_running", 0, "running");
      clock.set(T0 + 31 * DAY);
      const summary = await new RetentionJob({
        store,
        policy: policy({ tasks: { max_age_days: 30 }, task_output: { max_age_days: 7 } }),
      }).runOnce();

      expect(await store.tasks.get(ancient.id)).toBeUndefined();
      expect(existsSync(ancient.process_dir)).toBe(false);
      expect(await store.tasks.get(old.id)).toBeDefined();
      expect(existsSync(old.process_dir)).toBe(false);
      expect(existsSync(recent.process_dir)).toBe(true);
      expect(existsSync(running.process_dir)).toBe(true);
      expect((await store.tasks.get(running.id))?.status).toBe("running");
      expect(summary.removed).toMatchObject({ tasks: 1, task_output: 2 });
      expect(summary.by_agent.main!.counts).toMatchObject({ tasks: 1, task_output: 2 });

      // The spec's fallback: a terminal task whose file is gone still answers from its snapshot.
      const view = taskOutputView((await store.tasks.get(old.id))!, 1000, false);
      expect(view.retrieval_status).toBe("success");
      expect(view.task.output_source).toBe("terminal_snapshot");

      // A size cap on task output removes the oldest remaining output first.
      const newer = await task("task_newer", 30, "completed");
      await new RetentionJob({
        store,
        policy: () => ({
          ...policy({})(),
          task_output: { max_age_ms: null, max_bytes: 3_000 },
        }),
      }).runOnce();
      expect(existsSync(recent.process_dir)).toBe(false);
      expect(existsSync(newer.process_dir)).toBe(true);
      expect(existsSync(running.process_dir)).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it("a pass over many kept tasks yields per page, not once per output file", async () => {
    // The task pass measures every kept task's output on every pass; awaiting each readdir
    // and stat made a pass take a loop turn per file, minutes on a busy host (issue 35).
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      const store = rt.host.store;
      const agentHome = (await store.agents.get("main"))!.agent_home;
      const at = new Date(T0).toISOString();
      const kept = 300;
      await store.tx(async () => {
        for (let i = 0; i < kept; i++) {
          await putCommandTask(rt.host, {
            id: `task_kept_${i}`,
            status: "completed",
            at,
            files: { "stdout.log": "out\n", "stderr.log": "" },
            cmd: "true",
          });
        }
      });
      // One output over the cap: the pass measures all of them and removes the oldest.
      const job = new RetentionJob({
        store,
        policy: () => ({
          ...policy({})(),
          task_output: { max_age_ms: null, max_bytes: 4 * (kept - 1) },
        }),
      });
      // Count the pass's awaited file-system calls (the old code awaited a readdir per kept
      // task and a stat per file: 900 here, each at least one event-loop turn).
      const fsp = fs.promises as unknown as Record<string, (...a: unknown[]) => unknown>;
      const original = { readdir: fsp.readdir!, stat: fsp.stat! };
      let awaited = 0;
      for (const name of ["readdir", "stat"] as const) {
        fsp[name] = (...a: unknown[]) => {
          awaited++;
          return original[name](...a);
        };
      }
      syncBuiltinESMExports();
      let summary;
      try {
        summary = await job.runOnce();
      } finally {
        fsp.readdir = original.readdir;
        fsp.stat = original.stat;
        syncBuiltinESMExports();
      }
      expect(summary.removed.task_output).toBe(1);
      expect(existsSync(join(agentHome, ".holon", "processes", "task_kept_0"))).toBe(false);
      expect(existsSync(join(agentHome, ".holon", "processes", "task_kept_1"))).toBe(true);
      // Kept tasks are measured with synchronous calls, a page between two yields.
      expect(awaited).toBeLessThan(kept / 10);
    } finally {
      await rt.close();
    }
  });

  it("the host runs retention with the policy config.json sets", async () => {
    const home = tempHome();
    const env = { HOLON_HOME: home };
    const set = await runCli(["config", "set", "retention.events.max_age_days", "7"], { env });
    expect(set.code, set.stderr).toBe(0);
    const clock = fakeClock(T0);
    const rt = await startRuntime({ home, executor: () => parked, clock });
    try {
      await rt.host.lifecycle.control("main", "pause");
      await historyRound(rt.host, "old");
      const oldThrough = await rt.host.store.events.newestSeq("main");
      clock.set(T0 + 8 * DAY);
      await historyRound(rt.host, "young");
      const summary = await rt.host.services.retention.runOnce();
      expect(summary.by_agent.main?.events_removed_through).toBe(oldThrough);
      // Only events had a 7-day limit; the rest keep their 30- and 90-day defaults.
      expect(summary.removed).toEqual({ events: oldThrough });
    } finally {
      await rt.close();
    }
  });

  it("rotated log files past their age go; the live log, younger ones and other files stay", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      const dir = join(tempHome("holon-logs-"), "logs");
      mkdirSync(dir);
      const file = (name: string, ageDays: number) => {
        writeFileSync(join(dir, name), `${name}\n`);
        const t = (T0 - ageDays * DAY) / 1000;
        utimesSync(join(dir, name), t, t);
      };
      file("holon.log", 90); // the live log, however old, is never removed
      file("holon.log.1", 29);
      file("holon.log.2", 31);
      file("holon.log.3", 60);
      file("holon.logx", 90);
      file("other.log.1", 90);
      const job = new RetentionJob({
        store: rt.host.store,
        policy: policy({ logs: { max_age_days: 30 } }),
        logFile: join(dir, "holon.log"),
      });
      const summary = await job.runOnce();
      expect(summary.removed).toEqual({ logs: 2 });
      expect(readdirSync(dir).sort()).toEqual([
        "holon.log",
        "holon.log.1",
        "holon.logx",
        "other.log.1",
      ]);
      // 0 turns the age limit off.
      file("holon.log.2", 400);
      const off = new RetentionJob({
        store: rt.host.store,
        policy: policy({ logs: { max_age_days: 0 } }),
        logFile: join(dir, "holon.log"),
      });
      expect((await off.runOnce()).removed).toEqual({});
      expect(existsSync(join(dir, "holon.log.2"))).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it("start() runs passes in the background and stop() waits for the one in progress", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      const store = rt.host.store;
      await rt.host.lifecycle.control("main", "pause");
      await historyRound(rt.host, "old");
      clock.set(T0 + 40 * DAY);
      let passes = 0;
      const job = new RetentionJob({
        store,
        policy: policy({ events: { max_age_days: 30 } }),
        firstPassDelayMs: 0,
      });
      const run = job.runOnce.bind(job);
      job.runOnce = () => {
        passes++;
        return run();
      };
      job.start();
      await waitForPass(() => passes > 0);
      await job.stop();
      expect(await store.events.removedThrough("main")).toBeGreaterThan(0);
    } finally {
      await rt.close();
    }
  });
});

/** Yield to the event loop until `done` (the first pass is due at once; no wall-clock waits). */
async function waitForPass(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setImmediate(r));
  expect(done()).toBe(true);
}
