// An agent's newest briefs and episodes (what the prompt lists on every turn) are listed again
// only when the agent's rows changed: the list kept is checked against the agent's lowest
// and highest sequence numbers. A new row, rows removed oldest first (retention), a larger
// limit and a rolled-back transaction or savepoint each give what the table holds.
import { describe, expect, it } from "vitest";
import type { BriefRecord } from "../src/domain/brief.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import { Store } from "../src/store/db.ts";
import { episodeRecord } from "./helpers/history.ts";

function brief(id: string, agentId = "a"): BriefRecord {
  return {
    id,
    agent_id: agentId,
    kind: "result",
    created_at: "2026-11-27T12:00:00.000Z",
    text: `brief ${id}`,
  };
}

const idsOf = (rows: { id: string }[]) => rows.map((r) => r.id);

describe("recent briefs and episodes", () => {
  it("briefs: new rows, other agents, larger limits and rows removed oldest first", async () => {
    const store = new Store(":memory:", systemClock, randomIds);
    await store.tx(async () => {
      for (const id of ["b1", "b2", "b3"]) await store.briefs.insert(brief(id));
      await store.briefs.insert(brief("x1", "other"));
    });
    expect(idsOf(await store.briefs.recent("a", 2))).toEqual(["b2", "b3"]);
    expect(idsOf(await store.briefs.recent("a", 2))).toEqual(["b2", "b3"]);
    // A larger limit than the list kept was read with.
    expect(idsOf(await store.briefs.recent("a", 10))).toEqual(["b1", "b2", "b3"]);
    expect(idsOf(await store.briefs.recent("a", 1))).toEqual(["b3"]);
    expect(idsOf(await store.briefs.recent("other", 10))).toEqual(["x1"]);
    expect(await store.briefs.recent("nobody", 10)).toEqual([]);

    await store.tx(async () => await store.briefs.insert(brief("b4")));
    expect(idsOf(await store.briefs.recent("a", 10))).toEqual(["b1", "b2", "b3", "b4"]);
    // A list of the newest few takes each new row in front and drops its oldest.
    expect(idsOf(await store.briefs.recent("a", 2))).toEqual(["b3", "b4"]);
    await store.tx(async () => await store.briefs.insert(brief("b5")));
    expect(idsOf(await store.briefs.recent("a", 2))).toEqual(["b4", "b5"]);
    expect(idsOf(await store.briefs.recent("a", 3))).toEqual(["b3", "b4", "b5"]);
    await store.tx(async () => await store.briefs.insert(brief("b6")));
    expect(idsOf(await store.briefs.recent("a", 3))).toEqual(["b4", "b5", "b6"]);
    expect(idsOf(await store.briefs.recent("a", 10))).toEqual(["b1", "b2", "b3", "b4", "b5", "b6"]);

    // Retention removes an agent's oldest rows.
    store.db.prepare("DELETE FROM briefs WHERE id IN ('b1', 'b2')").run();
    expect(idsOf(await store.briefs.recent("a", 10))).toEqual(["b3", "b4", "b5", "b6"]);
    store.close();
  });

  it("briefs: a rolled-back insert is never listed, even when its sequence number is used again", async () => {
    const store = new Store(":memory:", systemClock, randomIds);
    await store.tx(async () => await store.briefs.insert(brief("b1")));
    await expect(
      store.tx(async () => {
        await store.briefs.insert(brief("gone"));
        expect(idsOf(await store.briefs.recent("a", 5))).toEqual(["b1", "gone"]);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    // The next brief takes the rolled-back one's sequence number: the bounds are those the
    // rolled-back transaction listed at.
    await store.tx(async () => await store.briefs.insert(brief("b2")));
    expect(idsOf(await store.briefs.recent("a", 5))).toEqual(["b1", "b2"]);
    store.close();
  });

  it("episodes: new rows, removal oldest first, and a rolled-back savepoint", async () => {
    const store = new Store(":memory:", systemClock, randomIds);
    const at = new Date("2026-11-27T12:00:00.000Z");
    await store.tx(async () => {
      for (let i = 1; i <= 3; i++) await store.memory.addEpisode(episodeRecord("a", i, at));
    });
    const first = idsOf(await store.memory.recentEpisodes("a", 2));
    expect(first).toHaveLength(2);
    const all = idsOf(await store.memory.recentEpisodes("a", 10));
    expect(all).toHaveLength(3);
    expect(all.slice(1)).toEqual(first);

    // A savepoint that rolls back inside a transaction that commits.
    await store.tx(async () => {
      await expect(
        store.memory.atomically(async () => {
          await store.memory.addEpisode(episodeRecord("a", 4, at));
          expect(await store.memory.recentEpisodes("a", 10)).toHaveLength(4);
          throw new Error("roll back");
        }),
      ).rejects.toThrow("roll back");
    });
    // The next episode takes the rolled-back one's sequence number (listed only then).
    await store.tx(async () => await store.memory.addEpisode(episodeRecord("a", 5, at)));
    const after = idsOf(await store.memory.recentEpisodes("a", 10));
    expect(after).toHaveLength(4);
    expect(after.slice(0, 3)).toEqual(all);

    store.db.prepare("DELETE FROM context_episodes WHERE id = ?").run(all[0]!);
    expect(idsOf(await store.memory.recentEpisodes("a", 10))).toEqual(after.slice(1));
    store.close();
  });
});
