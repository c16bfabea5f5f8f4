// SQLite only, on both test runs: SQLite's pages (store-pg.test.ts reports the bytes per turn on Postgres).
// What a turn costs on disk (issue 19 set 4 KB for a one-round turn; the spend ledger's row
// per provider call, with its four indexes, adds some 100-250 bytes: 4.3 KB). A real host, the
// scripted model answering with a short text, operator prompts over HTTP; the database's used
// pages (WAL checkpointed, free pages not counted) before and after a batch of turns.
import { textTurns } from "./helpers/turns.ts";
import { describe, expect, it } from "vitest";
import { startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

function usedBytes(rt: TestRuntime): number {
  const db = rt.host.store.db;
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const one = (sql: string) => Object.values(db.prepare(sql).get() as object)[0] as number;
  return (one("PRAGMA page_count") - one("PRAGMA freelist_count")) * one("PRAGMA page_size");
}

const turns = (rt: TestRuntime, n: number, from: number) => textTurns(rt, fake, n, from);

describe("store footprint", () => {
  it("a one-round turn takes at most 4.3 KB of database", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home });
    try {
      await turns(rt, 10, 0); // warm up: first-use rows, the trigger, the agent's counters
      const before = usedBytes(rt);
      const N = 60;
      await turns(rt, N, 10);
      const perTurn = (usedBytes(rt) - before) / N;
      expect(perTurn).toBeGreaterThan(500); // the turn was stored at all
      // 4 KB, plus the spend ledger's row for the turn's one provider call.
      expect(perTurn).toBeLessThanOrEqual(4400);
    } finally {
      await rt.close();
    }
  }, 120_000);
});
