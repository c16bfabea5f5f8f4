// SQLite only, on both test runs: SQLite layout migrations (store-pg.test.ts: the Postgres schema from an empty database; store-dump-pg and store-pg-move-e2e: from an imported dump).
// Upgrading a database written before migration 3: the history reads back exactly as it
// was written, numbering continues, the size tallies start right, and the file switches to
// incremental vacuum.
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Store } from "../src/store/db.ts";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { randomIds, systemClock, type Clock } from "../src/domain/clock.ts";
import { cleanupHomes, tempHome } from "./helpers/home.ts";

afterAll(cleanupHomes);

const clock: Clock = { now: () => new Date("2026-03-01T00:00:00.000Z"), sleep: systemClock.sleep };

/** A database as versions 1 and 2 left it, with rows in their old formats. */
function oldDatabase(path: string): void {
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec(
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  for (const m of MIGRATIONS.filter((m) => m.version < 3)) {
    db.exec(m.sql);
    db.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(m.version, m.name, "x");
  }
  const ev = db.prepare(
    "INSERT INTO events (agent_id, event_seq, id, ts, type, provenance, payload) VALUES (?, ?, ?, ?, ?, ?, ?)",
  );
  // Two agents, interleaved in time.
  for (let i = 1; i <= 5; i++) {
    for (const agent of ["a", "b"]) {
      ev.run(
        agent,
        i,
        `evt_${agent}${i}`,
        `2026-01-01T00:00:0${i}.000Z`,
        "note",
        JSON.stringify(i === 1 ? {} : { message_id: `msg_${i}` }),
        JSON.stringify({ n: i, text: "é".repeat(i) }),
      );
    }
  }
  const tr = db.prepare("INSERT INTO transcript (agent_id, seq, id, data) VALUES (?, ?, ?, ?)");
  for (let i = 1; i <= 3; i++) {
    const entry = {
      id: `tr_${i}`,
      agent_id: "a",
      created_at: `2026-01-01T00:00:0${i}.000Z`,
      kind: "assistant_round",
      ...(i === 2 ? {} : { run_id: "run_1", message_id: "msg_1" }),
      data: { round: i, text: `t${i}` },
      seq: i,
    };
    tr.run("a", i, entry.id, JSON.stringify(entry));
  }
  db.close();
}

describe("migration 3", () => {
  it("keeps every event and transcript entry readable, in order, and continues their numbering", async () => {
    const path = join(tempHome("holon-test-", { sqlite: true }), "holon.db");
    oldDatabase(path);
    const store = new Store(path, clock, randomIds);
    try {
      const a = await store.events.after("a", 0, 100);
      expect(a.map((e) => e.event_seq)).toEqual([1, 2, 3, 4, 5]);
      expect(a[0]).toEqual({
        id: "evt_a1",
        event_seq: 1,
        ts: "2026-01-01T00:00:01.000Z",
        agent_id: "a",
        type: "note",
        provenance: {},
        payload: { n: 1, text: "é" },
      });
      expect(a[3]!.provenance).toEqual({ message_id: "msg_4" });
      expect(await store.events.newestSeq("b")).toBe(5);
      // The copy interleaves agents by time and keeps each agent's own order.
      const order = store.db
        .prepare("SELECT agent_id, event_seq FROM events ORDER BY rowid")
        .all()
        .map((r: any) => `${r.agent_id}${r.event_seq}`);
      expect(order).toEqual(["a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4", "a5", "b5"]);

      const entries = await store.transcript.recent("a", 10);
      expect(entries.map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(entries[0]).toEqual({
        id: "tr_1",
        agent_id: "a",
        seq: 1,
        created_at: "2026-01-01T00:00:01.000Z",
        kind: "assistant_round",
        run_id: "run_1",
        message_id: "msg_1",
        data: { round: 1, text: "t1" },
      });
      expect(entries[1]).not.toHaveProperty("run_id");
      expect(entries[1]).not.toHaveProperty("message_id");
      expect((await store.transcript.forRun("a", "run_1")).map((e) => e.seq)).toEqual([1, 3]);

      await store.tx(async () => {
        await store.appendEvent("a", {
          type: "workspace_attached",
          payload: { workspace_root: "/w" },
        });
        await store.transcript.append({
          id: "tr_4",
          agent_id: "a",
          created_at: clock.now().toISOString(),
          kind: "turn_terminal",
          data: { kind: "aborted" },
        });
      });
      expect(await store.events.newestSeq("a")).toBe(6);
      expect((await store.transcript.recent("a", 1))[0]!.seq).toBe(4);

      const tally = store.db
        .prepare("SELECT family, row_count FROM store_stats ORDER BY family")
        .all()
        .map((r: any) => [r.family, r.row_count]);
      expect(tally).toEqual([
        ["briefs", 0],
        ["events", 11],
        ["messages", 0],
        ["transcript", 4],
      ]);
      expect(store.db.prepare("PRAGMA auto_vacuum").get()).toEqual({ auto_vacuum: 2 });
    } finally {
      store.close();
    }
  });

  it("a new database starts in incremental-vacuum mode", () => {
    const store = new Store(
      join(tempHome("holon-test-", { sqlite: true }), "holon.db"),
      clock,
      randomIds,
    );
    try {
      expect(store.db.prepare("PRAGMA auto_vacuum").get()).toEqual({ auto_vacuum: 2 });
    } finally {
      store.close();
    }
  });
});
