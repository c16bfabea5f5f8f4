// Retention floors (how far removal went, per agent and family) of deleted agents do not stay
// forever: agent ids are names an operator may use again, so a deleted agent keeps exactly one
// floor, its events', which keeps a re-created agent of that name from repeating an event
// number; every other floor of a deleted agent goes at the next pass. Real SQLite in a temp
// home, the real CLI to create and delete agents, the real host's retention job.
import { afterAll, describe, expect, it } from "vitest";
import { recordRuntimeFailure } from "../src/agent/briefs.ts";
import { episodeRecord, fakeClock, parked } from "./helpers/history.ts";
import { cleanupHomes, runCli, startRuntime, writeHomeConfig } from "./helpers/home.ts";

afterAll(cleanupHomes);

const DAY = 86_400_000;
const T0 = Date.parse("2026-06-01T00:00:00.000Z");
describe("retention floors of deleted agents", () => {
  it("a deleted agent keeps one floor, its events'; a re-created agent of that name goes on numbering after it", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    try {
      const store = rt.host.store;
      const env = { HOLON_HOME: rt.home };
      const cli = async (...args: string[]) => {
        const r = await runCli(args, { env });
        expect(r.code, r.stderr).toBe(0);
        return r;
      };
      const floors = (agentId: string) =>
        (
          store.db
            .prepare(
              "SELECT family, removed_through FROM retention_floors WHERE agent_id = ? ORDER BY family",
            )
            .all(agentId) as { family: string; removed_through: number }[]
        ).map((r) => [r.family, r.removed_through]);
      const seqs = (agentId: string) =>
        (
          store.db
            .prepare("SELECT event_seq FROM events WHERE agent_id = ? ORDER BY event_seq")
            .all(agentId) as { event_seq: number }[]
        ).map((r) => r.event_seq);

      await cli("agent", "create", "scout");
      // History for both: failure briefs with their transcript entries and events, and
      // context episodes; then a day's age limit, and two days later a pass removes it all.
      for (const agentId of ["scout", "main"]) {
        for (let i = 1; i <= 3; i++) {
          await recordRuntimeFailure(store, { agent_id: agentId, summary: `failure ${i}` });
          await store.tx(
            async () => await store.memory.addEpisode(episodeRecord(agentId, i, clock.now())),
          );
        }
      }
      const day = { max_age_days: 1 };
      writeHomeConfig(
        rt.home,
        { retention: { events: day, transcript: day, briefs: day, episodes: day } },
        { mode: 0o600 },
      );
      rt.host.services.config.refresh(); // read between turns at most once a second otherwise
      clock.set(T0 + 2 * DAY);
      const job = rt.host.services.retention;
      await job.runOnce();
      const scoutThrough = await store.events.removedThrough("scout");
      expect(scoutThrough).toBeGreaterThan(3);
      expect(floors("scout").map(([f]) => f)).toEqual([
        "briefs",
        "episodes",
        "events",
        "transcript",
      ]);
      const mainFloors = floors("main");
      expect(mainFloors.map(([f]) => f)).toEqual(["briefs", "episodes", "events", "transcript"]);

      // Deleted: the next pass leaves scout its events' floor alone; main, alive, keeps all.
      await cli("agent", "delete", "scout", "--yes");
      const deleted = await job.runOnce();
      expect(deleted.removed.floors).toBe(3);
      expect(floors("scout")).toEqual([["events", scoutThrough]]);
      expect(floors("main")).toEqual(mainFloors);

      // Later its last events (the deletion's) go too, and the tombstone with them: the
      // floor, moved past them, is all that is left of scout, still one row.
      clock.set(T0 + 4 * DAY);
      await job.runOnce();
      expect(seqs("scout")).toEqual([]);
      expect(await store.agents.tombstones("scout")).toEqual([]);
      const lastThrough = await store.events.removedThrough("scout");
      expect(lastThrough).toBeGreaterThan(scoutThrough);
      expect(floors("scout")).toEqual([["events", lastThrough]]);

      // A new agent of the same name numbers its events after every number the old one used.
      await cli("agent", "create", "scout");
      const fresh = seqs("scout");
      expect(fresh.length).toBeGreaterThan(0);
      expect(fresh[0]).toBe(lastThrough + 1);
      const listed = await rt.req("GET", `/agents/scout/events?after_seq=${lastThrough}&order=asc`);
      expect(listed.status, JSON.stringify(listed.json)).toBe(200);
      expect(listed.json.events.map((e: { event_seq: number }) => e.event_seq)).toEqual(fresh);
      // Alive again, it keeps what floors retention writes for it, as main does.
      await job.runOnce();
      expect(floors("scout")).toEqual([["events", lastThrough]]);
    } finally {
      await rt.close();
    }
  }, 60_000);
});
