// Trace links (what caused a message, task, timer or child, kept while tracing is on) are a
// retention family like every other: `retention.trace_links.max_mb` and `max_age_days`, set
// with the real CLI, are applied by the real host's retention job; the oldest links go first
// and the newest stay. Real SQLite in a temp home; time is a fake clock.
import { afterAll, describe, expect, it } from "vitest";
import type { TurnExecutor } from "../src/agent/runtime.ts";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { TraceLinksRepo } from "../src/store/trace-links.ts";
import { cleanupHomes, runCli, startRuntime } from "./helpers/home.ts";

afterAll(cleanupHomes);

const DAY = 86_400_000;
const MB = 1024 * 1024;
const T0 = Date.parse("2026-05-01T00:00:00.000Z");
const parked: TurnExecutor = { run: () => new Promise(() => {}) };

function fakeClock(): Clock & { set(ms: number): void } {
  let now = T0;
  return { now: () => new Date(now), sleep: systemClock.sleep, set: (ms) => (now = ms) };
}

describe("trace links under retention", () => {
  it("over retention.trace_links.max_mb the oldest go and the newest stay; past max_age_days they go", async () => {
    const clock = fakeClock();
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      const store = rt.host.store;
      const links = new TraceLinksRepo(store.db);
      const set = async (key: string, value: string) => {
        const r = await runCli(["config", "set", key, value], { env: { HOLON_HOME: rt.home } });
        expect(r.code, r.stderr).toBe(0);
        // The host re-reads config.json between turns at most once a second: now, here.
        rt.host.services.config.refresh();
      };
      const keys = () =>
        (
          store.db.prepare("SELECT key FROM trace_links ORDER BY created_at, key").all() as {
            key: string;
          }[]
        ).map((r) => r.key);

      // About 1.5 MB of links, one a second, the newest a second before now.
      const n = 6000;
      const value = JSON.stringify({
        tp: `00-${"a".repeat(32)}-${"b".repeat(16)}-01`,
        kind: "task",
        note: "x".repeat(160),
      });
      const all: string[] = [];
      await store.tx(() => {
        for (let i = 0; i < n; i++) {
          const key = `task:task_${String(i).padStart(5, "0")}`;
          links.put(key, value, T0 - (n - i) * 1000);
          all.push(key);
        }
      });
      expect(links.bytes()).toBeGreaterThan(1.4 * MB);

      // The cap, as a user sets it; ages off so only the size decides.
      await set("retention.trace_links.max_age_days", "0");
      await set("retention.trace_links.max_mb", "1");
      const capped = await rt.host.services.retention.runOnce();
      const kept = keys();
      expect(links.bytes()).toBeLessThanOrEqual(MB);
      // Trimmed to the cap, not far below it: one row's worth of slack at most.
      expect(links.bytes()).toBeGreaterThan(MB - 300);
      // The oldest went, the newest stayed: what is kept is the newest part, in order.
      expect(kept.length).toBeGreaterThan(3000);
      expect(kept).toEqual(all.slice(n - kept.length));
      expect(capped.removed.trace_links).toBe(n - kept.length);
      expect(capped.bytes_removed.trace_links).toBeGreaterThan(0.4 * MB);
      expect(links.get(all.at(-1)!)).toBe(value);
      expect(links.get(all[0]!)).toBeUndefined();

      // Under the cap a second pass removes nothing.
      const again = await rt.host.services.retention.runOnce();
      expect(again.removed.trace_links ?? 0).toBe(0);
      expect(keys()).toEqual(kept);

      // The age: a day later, links written more than a day ago go, younger ones stay.
      await set("retention.trace_links.max_mb", "0");
      await set("retention.trace_links.max_age_days", "1");
      clock.set(T0 + DAY - 1800 * 1000); // the cutoff is half an hour before T0
      const aged = await rt.host.services.retention.runOnce();
      const young = all.slice(n - 1800); // written at T0 - 1800 s … T0 - 1 s
      expect(keys()).toEqual(young);
      expect(aged.removed.trace_links).toBe(kept.length - young.length);
    } finally {
      await rt.close();
    }
  }, 60_000);
});
