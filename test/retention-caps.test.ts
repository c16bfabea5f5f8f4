// Every retention owner has a size cap as well as an age: filled past the cap, the oldest
// finished task records go with their output (running ones never), the spend ledger's oldest
// days are rolled up without changing what `holon usage` or a budget counts, and tombstones
// go once the events they explain are gone. Real SQLite in a temp home, real HTTP, the real
// CLI; time is a fake clock.
import { existsSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { windowOf, type LedgerRow } from "../src/domain/budget.ts";
import type { TaskRecord } from "../src/domain/task.ts";
import { RetentionJob } from "../src/host/retention.ts";
import { LEDGER_BUCKET_MS } from "../src/store/ledger.ts";
import { cleanupHomes, runCli, startRuntime, tempHome, writeHomeConfig } from "./helpers/home.ts";
import {
  episodeRecord,
  fakeClock,
  onlyRetention,
  parked,
  putCommandTask,
} from "./helpers/history.ts";

afterAll(cleanupHomes);

const DAY = 86_400_000;
const T0 = Date.parse("2026-03-01T00:00:00.000Z");

/** Every limit off except what the test sets. */
const only = onlyRetention;

/** Dollars to 1e-10: a sum of rolled-up days adds the same cents in another order. */
function norm<T>(x: T): T {
  if (typeof x === "number") return (Number.isInteger(x) ? x : Number(x.toFixed(10))) as T;
  if (Array.isArray(x)) return x.map(norm) as T;
  if (x && typeof x === "object") {
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, norm(v)])) as T;
  }
  return x;
}

describe("size caps beside the ages", () => {
  it("finished task records over the cap go oldest first with their output; running ones never", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      const store = rt.host.store;
      const task = async (id: string, status: TaskRecord["status"]): Promise<TaskRecord> =>
        await putCommandTask(rt.host, {
          id,
          status,
          at: new Date(clock.now()).toISOString(),
          files: { "stdout.log": `output of ${id}\n` },
          cmd: `echo ${"x".repeat(1500)}`,
        });
      // The oldest is still running; then 20 finished ones, a minute apart.
      const running = await task("task_running", "running");
      const finished: TaskRecord[] = [];
      for (let i = 0; i < 20; i++) {
        clock.set(T0 + (i + 1) * 60_000);
        finished.push(
          await task(`task_${String(i).padStart(2, "0")}`, i % 3 === 0 ? "failed" : "completed"),
        );
      }
      const recordBytes = (
        store.db
          .prepare("SELECT MAX(octet_length(data) + octet_length(id) + 40) AS b FROM tasks")
          .get() as { b: number }
      ).b;
      // Room for about six records: the running one counts, so five finished ones stay.
      const summary = await new RetentionJob({
        store,
        policy: only({ tasks: { max_age_ms: null, max_bytes: recordBytes * 6 } }),
      }).runOnce();

      const present = await Promise.all(finished.map(async (t) => !!(await store.tasks.get(t.id))));
      const kept = finished.filter((_, i) => present[i]);
      const gone = finished.filter((_, i) => !present[i]);
      expect(gone.length).toBeGreaterThanOrEqual(14);
      expect(kept.length).toBeGreaterThanOrEqual(4);
      // The oldest went, the newest stayed: a prefix.
      expect(gone.map((t) => t.id)).toEqual(finished.slice(0, gone.length).map((t) => t.id));
      for (const t of gone) expect(existsSync(t.process_dir!), t.id).toBe(false);
      for (const t of kept) expect(existsSync(t.process_dir!), t.id).toBe(true);
      expect((await store.tasks.get(running.id))?.status).toBe("running");
      expect(existsSync(running.process_dir!)).toBe(true);
      expect(summary.removed.tasks).toBe(gone.length);
      expect(summary.removed.task_output).toBe(gone.length);
      expect(summary.bytes_removed.tasks).toBeGreaterThan(0);
      // The retention_applied event says so.
      const applied = (await store.events.after("main", 0, 10_000))
        .filter((e) => e.type === "retention_applied")
        .at(-1);
      expect(applied?.payload).toMatchObject({ removed: { tasks: gone.length } });

      // A cap no finished record can satisfy removes every finished one, never the running one.
      await new RetentionJob({
        store,
        policy: only({ tasks: { max_age_ms: null, max_bytes: 1 } }),
      }).runOnce();
      const left = await Promise.all(finished.map(async (t) => !!(await store.tasks.get(t.id))));
      expect(finished.filter((_, i) => left[i])).toEqual([]);
      expect((await store.tasks.get(running.id))?.status).toBe("running");
    } finally {
      await rt.close();
    }
  });

  it("the spend ledger over its cap rolls old calls up: holon usage and budget checks count the same", async () => {
    const home = tempHome();
    const clock = fakeClock(T0);
    const now = T0 + 61 * DAY + 13 * 3_600_000; // 61 days in, at 13:00 UTC
    clock.set(now);
    let rt = await startRuntime({ home, executor: () => parked, clock });
    try {
      // Budgets that read the ledger: main's total and its month (in a zone that is not UTC).
      for (const body of [
        { period: "total", limits: { tokens: 1e12, rounds: 1e9 } },
        { period: "month", limits: { tokens: 1e12 }, time_zone: "America/New_York" },
        { period: "day", limits: { rounds: 1e9 }, time_zone: "Pacific/Kiritimati" },
      ]) {
        const r = await rt.req("POST", "/control/agents/main/budget", body);
        expect(r.status, JSON.stringify(r.json)).toBe(200);
      }
      // 61 days of calls, 150 a day: main and a child of it, two models (one without a
      // price), some on a work item.
      const writer = rt.host.store;
      let n = 0;
      await writer.tx(async () => {
        for (let d = 0; d <= 61; d++) {
          for (let i = 0; i < 150; i++) {
            // Mostly in two busy quarter-hours (09:00 and 21:30), a tenth spread over the day,
            // and some just after midnight in Kathmandu (18:15 UTC) and St. John's (03:30).
            const at =
              i % 10 === 0
                ? Math.floor((i * DAY) / 150)
                : i % 10 === 5
                  ? (i % 20 === 5 ? 18 * 60 + 20 : 3 * 60 + 40) * 60_000 + i * 1_000
                  : (i < 75 ? 9 * 60 : 21 * 60 + 30) * 60_000 + i * 5_000;
            const ts = T0 + d * DAY + at;
            if (ts > now) continue;
            const kid = i % 5 === 0;
            const row: LedgerRow = {
              ts: new Date(ts).toISOString(),
              agent_id: kid ? "kid" : "main",
              run_id: `run_${++n}`,
              round: 1,
              kind: i % 17 === 0 ? "compaction" : "round",
              work_item_id: i % 4 === 0 ? "wi_a" : null,
              parent_agent_ids: kid ? ["main"] : [],
              parent_work_item_ids: kid ? ["wi_p"] : [],
              model_ref: i % 7 === 0 ? "free/unpriced" : "fake/test-model",
              input_tokens: 100 + (i % 13),
              cached_input_tokens: i % 3,
              cache_write_tokens: i % 2,
              output_tokens: 10 + (i % 11),
              reasoning_tokens: i % 5,
              cost_usd: i % 7 === 0 ? null : 0.0001 * (1 + (i % 9)),
              elapsed_ms: 50 + i,
              estimated: i % 19 === 0,
            };
            await writer.ledger.insert(row);
          }
        }
      });
      // A restart: budgets load their totals from the ledger as it now is.
      await rt.close();
      rt = await startRuntime({ home, executor: () => parked, clock });
      const store = rt.host.store;
      const rowsBefore = await store.ledger.count();
      const horizon = now - 48 * 3_600_000; // retention.ledger.detail_hours below
      const recentDetail = () =>
        (
          store.db
            .prepare("SELECT COUNT(*) AS n FROM spend_ledger WHERE rollup = 0 AND ts >= ?")
            .get(horizon) as { n: number }
        ).n;
      const recentBefore = recentDetail();
      // What budgets read: sums by scope, and calendar windows in zones a quarter-hour,
      // half an hour and 14 hours off UTC, at instants all over the rolled-up days.
      const zones = ["UTC", "Asia/Kathmandu", "America/St_Johns", "Pacific/Kiritimati"];
      const sums = async () => {
        const L = store.ledger;
        const windows: Record<string, unknown> = {};
        for (let d = 0; d <= 61; d += 3) {
          for (const tz of zones) {
            for (const period of ["day", "week", "month"] as const) {
              const w = windowOf(period, new Date(T0 + d * DAY + 5 * 3_600_000), tz);
              windows[`${d}:${tz}:${period}`] = await L.sum(
                { kind: "agent_tree", agent_id: "main" },
                w.start,
                w.end,
              );
            }
          }
        }
        return {
          tree: await L.sum({ kind: "agent_tree", agent_id: "main" }),
          main: await L.sum({ kind: "agent", agent_id: "main" }),
          kid: await L.sum({ kind: "agent", agent_id: "kid" }),
          item: await L.sum({ kind: "work_item_tree", work_item_id: "wi_a" }),
          parentItem: await L.sum({ kind: "work_item_tree", work_item_id: "wi_p" }),
          windows,
        };
      };
      // `holon usage` as a user runs it, and the views it reads over HTTP.
      const cli = async () => {
        const r = await runCli(["usage", "--json"], { env: { HOLON_HOME: home } });
        expect(r.code, r.stderr).toBe(0);
        return JSON.parse(r.stdout);
      };
      const usage = async () => {
        const get = async (q: string) => (await rt.req("GET", `/usage${q}`)).json;
        return {
          groups: await get(""),
          tree: await get("?view=tree"),
          items: await get("?view=work_items"),
          last30: await get("?since=30d"),
        };
      };
      const budgetView = async () => (await rt.req("GET", "/agents/main/budget")).json.budget;
      const sumsBefore = norm(await sums());
      const usageBefore = norm(await usage());
      const cliBefore = norm(await cli());
      expect(cliBefore.total).toEqual(usageBefore.groups.total);
      const budgetBefore = norm(await budgetView());
      const mainRows = store.db
        .prepare("SELECT COUNT(*) AS n FROM spend_ledger WHERE agent_id = 'main'")
        .get() as { n: number };
      expect(usageBefore.groups.total.rounds).toBe(mainRows.n);
      const bytesBefore = await store.ledger.bytes();
      expect(bytesBefore).toBeGreaterThan(1024 * 1024);

      // The cap, as a user sets it: 1 MB.
      writeHomeConfig(
        home,
        { retention: { ledger: { max_mb: 1, detail_hours: 48 } } },
        { mode: 0o600 },
      );
      const summary = await rt.host.services.retention.runOnce();
      expect(summary.removed.ledger_rolled_up).toBeGreaterThan(0);
      expect(summary.removed.ledger ?? 0).toBe(0); // nothing past its age (400 days)
      expect(await store.ledger.bytes()).toBeLessThanOrEqual(1024 * 1024);
      expect(await store.ledger.count()).toBeLessThan(rowsBefore);
      // The newest 48 hours keep every call; summaries sit on quarter-hours before that.
      expect(recentDetail()).toBe(recentBefore);
      const rolled = store.db
        .prepare("SELECT DISTINCT ts FROM spend_ledger WHERE rollup = 1 ORDER BY ts")
        .all() as { ts: number }[];
      expect(rolled.length).toBeGreaterThan(0);
      expect(rolled[0]!.ts).toBe(T0);
      for (const r of rolled) {
        expect(r.ts % LEDGER_BUCKET_MS).toBe(0);
        expect(r.ts + LEDGER_BUCKET_MS).toBeLessThanOrEqual(horizon);
      }

      // The rounds list shows a rolled-up quarter-hour as one row that says how many calls.
      const listed = (
        await rt.req(
          "GET",
          `/agents/main/usage/rounds?since=${new Date(T0).toISOString()}&until=${new Date(T0 + DAY).toISOString()}&limit=1000`,
        )
      ).json.rounds as { calls?: number; rolled_up?: boolean; run_id: string }[];
      expect(listed.length).toBeGreaterThan(0);
      expect(listed.every((r) => r.rolled_up === true && r.run_id === "")).toBe(true);
      expect(listed.reduce((n, r) => n + (r.calls ?? 1), 0)).toBe(
        usageBefore.groups.groups
          .filter((g: { day: string }) => g.day === "2026-03-01")
          .reduce((n: number, g: { rounds: number }) => n + g.rounds, 0),
      );

      // What budgets read, and what `holon usage` shows, is unchanged.
      expect(norm(await sums())).toEqual(sumsBefore);
      expect(norm(await usage())).toEqual(usageBefore);
      // A restart re-reads every budget's totals from the ledger: the same.
      await rt.close();
      rt = await startRuntime({ home, executor: () => parked, clock });
      expect(norm(await budgetView())).toEqual(budgetBefore);
      expect(budgetBefore.spent_total.rounds).toBe(rowsBefore);
      expect(norm(await usage())).toEqual(usageBefore);

      // A second pass under the cap changes nothing.
      const again = await rt.host.services.retention.runOnce();
      expect(again.removed.ledger_rolled_up ?? 0).toBe(0);
    } finally {
      await rt.close();
    }
  }, 60_000);

  it("episodes over their cap are trimmed below it, so the mirror and index are not rebuilt on every pass", async () => {
    const rt = await startRuntime({ executor: () => parked });
    try {
      const store = rt.host.store;
      const add = async (n: number) =>
        await store.tx(
          async () =>
            await store.memory.addEpisode(
              episodeRecord("main", n, store.clock.now(), { id: `ep_${n}`, padding: 1000 }),
            ),
        );
      for (let n = 1; n <= 100; n++) await add(n);
      const bytes = () =>
        (
          store.db
            .prepare(
              "SELECT SUM(octet_length(data) + octet_length(id) + octet_length(agent_id) + 24) AS b FROM context_episodes",
            )
            .get() as { b: number }
        ).b;
      const cap = Math.floor(bytes() / 2);
      let rebuilds = 0;
      const job = new RetentionJob({
        store,
        policy: only({ episodes: { max_age_ms: null, max_bytes: cap } }),
        afterRemoval: async () => {
          rebuilds++;
        },
      });
      await job.runOnce();
      expect(rebuilds).toBe(1);
      expect(bytes()).toBeLessThanOrEqual(cap * 0.9);
      expect(bytes()).toBeGreaterThan(cap * 0.75);
      // A few more episodes, still under the cap: nothing goes and nothing is rebuilt.
      for (let n = 101; n <= 104; n++) await add(n);
      expect(bytes()).toBeLessThanOrEqual(cap);
      await job.runOnce();
      expect(rebuilds).toBe(1);
      expect((await store.memory.recentEpisodes("main", 1))[0]!.id).toBe("ep_104");
    } finally {
      await rt.close();
    }
  });

  it("tombstones go past the events' age or once the events they explain are gone", async () => {
    const rt = await startRuntime({ executor: () => parked });
    try {
      const store = rt.host.store;
      const at = store.clock.now().toISOString();
      const put = store.db.prepare(
        "INSERT INTO agent_tombstones (agent_id, deleted_at, data) VALUES (?, ?, '{}')",
      );
      // `ghost`'s events are gone (none exist); `main` still has its events.
      put.run("ghost", at);
      put.run("main", at);
      const summary = await new RetentionJob({ store, policy: only({}) }).runOnce();
      expect(summary.removed.tombstones).toBe(1);
      expect(await store.agents.tombstones("ghost")).toEqual([]);
      expect(await store.agents.tombstones("main")).toHaveLength(1);
    } finally {
      await rt.close();
    }
  });
});
