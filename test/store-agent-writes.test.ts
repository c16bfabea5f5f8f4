// An agent's record put several times in one transaction is written once, at its commit, and
// what commits is the last record put; reads inside the transaction (by id or the whole list)
// see every put so far; a rolled-back transaction leaves the committed record.
import { describe, expect, it } from "vitest";
import { AgentRecord } from "../src/domain/agent.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import { Store } from "../src/store/db.ts";
import { agentRecord } from "./helpers/records.ts";

const record = (id: string, count: number) => agentRecord(id, count, "asleep");

describe("agent record writes", () => {
  it("several puts in one transaction write the row once, with the last record", async () => {
    const store = new Store(":memory:", systemClock, randomIds);
    const changes = () =>
      (store.db.prepare("SELECT total_changes() AS n").get() as { n: number }).n;
    const stored = (id: string) =>
      JSON.parse(
        (store.db.prepare("SELECT data FROM agents WHERE agent_id = ?").get(id) as { data: string })
          .data,
      ) as AgentRecord;
    await store.tx(async () => await store.agents.put(record("a", 0)));
    const before = changes();
    await store.tx(async () => {
      for (let i = 1; i <= 5; i++) {
        await store.agents.put(record("a", i));
        expect((await store.agents.get("a"))!.total_message_count).toBe(i);
      }
      await store.agents.put(record("b", 7));
      // The whole list, read through SQL, sees the puts made so far.
      expect((await store.agents.list()).map((a) => [a.agent_id, a.total_message_count])).toEqual([
        ["a", 5],
        ["b", 7],
      ]);
      await store.agents.put(record("a", 6));
    });
    // One write of each record for the list, one more of "a" after it.
    expect(changes() - before).toBe(3);

    // The other questions answered in SQL see a put of the same transaction too.
    await store.tx(async () => {
      const stopped = { ...record("run-x", 0), visibility: "private", status: "stopped" } as const;
      await store.agents.put(AgentRecord.parse(stopped));
      expect(await store.agents.dormantRunIds()).toEqual(["run-x"]);
      await store.agents.put(AgentRecord.parse({ ...stopped, status: "asleep" }));
      expect(await store.agents.dormantRunIds()).toEqual([]);
    });
    expect(await store.agents.dormantRunIds()).toEqual([]);
    expect(stored("a").total_message_count).toBe(6);
    expect(stored("b").total_message_count).toBe(7);

    await expect(
      store.tx(async () => {
        await store.agents.put(record("a", 99));
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect((await store.agents.get("a"))!.total_message_count).toBe(6);
    expect(stored("a").total_message_count).toBe(6);
    // Outside a transaction a put is written at once.
    await store.agents.put(record("a", 8));
    expect(stored("a").total_message_count).toBe(8);
    store.close();
  });

  it("an agent removed in the transaction that put it is not written back", async () => {
    const store = new Store(":memory:", systemClock, randomIds);
    await store.tx(async () => await store.agents.put(record("gone", 0)));
    await store.tx(async () => {
      await store.agents.put(record("gone", 1));
      await store.agents.remove("gone", "2026-11-27T12:00:00.000Z", { reason: "test" });
    });
    expect(store.db.prepare("SELECT count(*) AS n FROM agents").get()).toEqual({ n: 0 });
    store.close();
  });
});
