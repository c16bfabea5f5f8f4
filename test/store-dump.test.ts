// SQLite only, on both test runs: the dump of the SQLite file (store-dump-pg.test.ts is the Postgres counterpart).
// The portable dump on real database files: a round trip keeps every row, rowid, type and
// AUTOINCREMENT counter; an online export reads a snapshot; verify reports what differs; and
// every bad dump or target is refused with a stable kind before anything is written.
import { DatabaseSync } from "node:sqlite";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Store } from "../src/store/db.ts";
import { MIGRATIONS } from "../src/store/migrations.ts";
import {
  createSchema,
  exportStore,
  importStore,
  readManifest,
  verifyStore,
  type DumpManifest,
} from "../src/store/dump.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import { HolonError } from "../src/domain/errors.ts";
import { cleanupHomes, tempHome } from "./helpers/home.ts";

afterAll(cleanupHomes);

const BIG = 9_007_199_254_740_993n; // 2^53 + 1: not a JavaScript number

/** A home whose database holds rows of every awkward kind, written through a real Store. */
function populatedHome(): { home: string; database: string } {
  const home = tempHome("holon-dump-", { sqlite: true });
  const database = join(home, "holon.db");
  const store = new Store(database, systemClock, randomIds);
  const db = store.db;
  db.exec(`INSERT INTO agents (agent_id, data) VALUES ('main', '{"id":"main"}'), ('b"q', '{}')`);
  const ev = db.prepare(
    "INSERT INTO events (agent_id, event_seq, id, ts, type_id, body) VALUES (?, ?, ?, ?, ?, ?)",
  );
  db.exec("INSERT INTO event_types (name) VALUES ('note')");
  for (let i = 1; i <= 7; i++) {
    ev.run("main", i, `evt_${i}`, 1_700_000_000_000 + i, 1, `{"n":${i},"t":"é ✓ \\u0000"}`);
  }
  ev.run('b"q', 1, "evt_b1", BIG, 1, new Uint8Array([0, 1, 2, 255, 10, 13]));
  // Retention took the oldest events: the rowids now have a gap that must stay.
  db.exec("DELETE FROM events WHERE event_seq <= 2 AND agent_id = 'main'");
  const msg = db.prepare(
    "INSERT INTO messages (id, agent_id, priority_rank, status, created_at, envelope) VALUES (?, 'main', 2, ?, 'now', '{}')",
  );
  msg.run("msg_1", "processed");
  msg.run("msg_2", "processing");
  msg.run("msg_3", "queued");
  const ledger = db.prepare(
    `INSERT INTO spend_ledger (ts, agent_id, kind, agent_path, item_path, model_ref, input_tokens,
      cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens, cost_usd, elapsed_ms)
     VALUES (1, 'main', 'round', '/main/', '/', 'fake/m', ?, 0, 0, 5, 0, ?, 3)`,
  );
  ledger.run(BIG, 0.1 + 0.2);
  ledger.run(1n, 2.0); // an integral REAL must come back a REAL
  ledger.run(2n, -0.0);
  ledger.run(3n, Number.POSITIVE_INFINITY);
  ledger.run(4n, null);
  const ep = db.prepare(
    "INSERT INTO context_episodes (id, agent_id, data) VALUES (?, 'main', '{}')",
  );
  for (let i = 1; i <= 5; i++) ep.run(`ep_${i}`);
  db.exec("DELETE FROM context_episodes WHERE seq >= 4"); // the counter stays at 5
  store.close();
  return { home, database };
}

function exportTo(home: string, dir: string, online = false): DumpManifest {
  return exportStore({
    home,
    database: join(home, "holon.db"),
    dir,
    holonVersion: "test",
    online,
  });
}

async function refused(p: Promise<unknown> | (() => unknown), kind: string): Promise<HolonError> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(HolonError);
    expect((err as HolonError).kind, (err as Error).message).toBe(kind);
    return err as HolonError;
  }
  throw new Error(`expected a ${kind} refusal`);
}

const mode = (p: string) => statSync(p).mode & 0o777;
const sha = (p: string) => createHash("sha256").update(readFileSync(p)).digest("hex");

/** Rewrite a table file and make the manifest agree, so only the content check can object. */
function rewriteConsistently(dir: string, table: string, text: string): void {
  const path = join(dir, `${table}.ndjson`);
  writeFileSync(path, text);
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  const t = manifest.tables.find((x: { name: string }) => x.name === table);
  t.sha256 = sha(path);
  t.rows = text.split("\n").length - 1 || 1;
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest));
}

describe("holon store dump", () => {
  it("round trip: export, import at the same path, export again gives byte-identical tables", async () => {
    const { home, database } = populatedHome();
    const one = join(tempHome("holon-dumpdir-", { sqlite: true }), "one");
    const m1 = exportTo(home, one);

    // Private: the directory 0700, every file 0600.
    expect(mode(one)).toBe(0o700);
    for (const f of readdirSync(one)) expect(mode(join(one, f))).toBe(0o600);
    expect(m1.holon_home).toBe(home);
    expect(m1.taken).toBe("stopped");
    expect(m1.migrations).toEqual(
      MIGRATIONS.map((m) => m.version)
        .slice()
        .sort((a, b) => a - b),
    );
    expect(m1.schema_version).toBe(Math.max(...MIGRATIONS.map((m) => m.version)));
    const names = m1.tables.map((t) => t.name);
    expect(names).toContain("events");
    expect(names).toContain("schema_migrations");
    expect(names.some((n) => n.startsWith("sqlite_"))).toBe(false);
    expect(m1.sequences).toEqual({ context_episodes: 5 });
    expect(m1.agents).toEqual({ 'b"q': { newest_event_seq: 1 }, main: { newest_event_seq: 7 } });
    expect(m1.processing).toEqual([{ id: "msg_2", agent_id: "main" }]);
    const events = m1.tables.find((t) => t.name === "events")!;
    expect(events).toMatchObject({ rowid: true, rows: 6 });
    expect(m1.tables.find((t) => t.name === "messages")!.rowid).toBe(false); // seq is the rowid
    // The awkward values, as written in the file.
    const ledgerText = readFileSync(join(one, "spend_ledger.ndjson"), "utf8");
    expect(ledgerText).toContain('{"$int":"9007199254740993"}');
    expect(ledgerText).toContain('{"$real":"2"}');
    expect(ledgerText).toContain('{"$real":"0"}'); // SQLite keeps no negative zero
    expect(ledgerText).toContain('{"$real":"Infinity"}');
    expect(readFileSync(join(one, "events.ndjson"), "utf8")).toContain('{"$blob":"AAEC/woN"}');

    // Verify against the home it came from: identical.
    const same = await verifyStore({ dir: one, home, database, online: false });
    expect(same).toMatchObject({ identical: true, differences: [] });

    // Move the database away (the rest of the home stays) and import.
    renameSync(database, join(home, "old.db"));
    writeFileSync(join(home, ".holon.db.import-0badc0ffee00"), "left by an import killed half-way");
    const result = await importStore({ dir: one, home, database });
    expect(result.rows).toBe(m1.tables.reduce((n, t) => n + t.rows, 0));
    expect(mode(database)).toBe(0o600);
    expect(readdirSync(home).filter((f) => f.includes("import"))).toEqual([]);
    expect((await verifyStore({ dir: one, home, database, online: false })).identical).toBe(true);

    const two = join(tempHome("holon-dumpdir-", { sqlite: true }), "two");
    const m2 = exportTo(home, two);
    for (const t of m1.tables) {
      expect(readFileSync(join(two, t.file)).equals(readFileSync(join(one, t.file))), t.name).toBe(
        true,
      );
    }
    expect({ ...m2, created_at: "" }).toEqual({ ...m1, created_at: "" });

    // Types and rowids survived, and the AUTOINCREMENT counter continues past deleted rows.
    const store = new Store(database, systemClock, randomIds);
    try {
      const db = store.db as DatabaseSync; // this test is SQLite's (typeof, setReadBigInts)
      const rows = db
        .prepare("SELECT cost_usd, typeof(cost_usd) AS t FROM spend_ledger ORDER BY seq")
        .all() as { cost_usd: number | null; t: string }[];
      expect(rows.map((r) => r.t)).toEqual(["real", "real", "real", "real", "null"]);
      expect(rows[0]!.cost_usd).toBe(0.1 + 0.2);
      const big = db.prepare("SELECT input_tokens FROM spend_ledger WHERE seq = 1");
      big.setReadBigInts(true);
      expect((big.get() as { input_tokens: bigint }).input_tokens).toBe(BIG);
      const ids = db.prepare("SELECT rowid AS r, id FROM events ORDER BY rowid").all();
      const old = new DatabaseSync(join(home, "old.db"), { readOnly: true });
      expect(ids).toEqual(old.prepare("SELECT rowid AS r, id FROM events ORDER BY rowid").all());
      old.close();
      const blob = db.prepare("SELECT body FROM events WHERE id = 'evt_b1'").get() as {
        body: Uint8Array;
      };
      expect([...blob.body]).toEqual([0, 1, 2, 255, 10, 13]);
      // The tallies the triggers keep were restored, not counted twice; the triggers work again.
      const tally = () =>
        (
          db.prepare("SELECT row_count FROM store_stats WHERE family = 'events'").get() as {
            row_count: number;
          }
        ).row_count;
      const before = tally();
      db.prepare(
        "INSERT INTO events (agent_id, event_seq, id, ts, type_id, body) VALUES ('main', 8, 'evt_8', 1, 1, '{}')",
      ).run();
      expect(tally()).toBe(before + 1);
      db.prepare(
        "INSERT INTO context_episodes (id, agent_id, data) VALUES ('ep_new', 'main', '{}')",
      ).run();
      expect(
        (
          db.prepare("SELECT seq FROM context_episodes WHERE id = 'ep_new'").get() as {
            seq: number;
          }
        ).seq,
      ).toBe(6);
    } finally {
      store.close();
    }
  });

  it("online: a snapshot of an open, written database, and the snapshot is removed", () => {
    const { home, database } = populatedHome();
    const store = new Store(database, systemClock, randomIds);
    try {
      // A write still in the WAL (the store holds the database open).
      store.db.exec("INSERT INTO agents (agent_id, data) VALUES ('late', '{}')");
      expect(existsSync(database + "-wal")).toBe(true);
      const dir = join(tempHome("holon-dumpdir-", { sqlite: true }), "online");
      const m = exportTo(home, dir, true);
      expect(m.taken).toBe("online");
      expect(m.tables.find((t) => t.name === "agents")!.rows).toBe(3);
      expect(readdirSync(home).filter((f) => f.startsWith(".store-snapshot"))).toEqual([]);
      // Read directly (as after a crash that left the newest rows in the WAL): the same rows.
      const direct = exportTo(
        home,
        join(tempHome("holon-dumpdir-", { sqlite: true }), "direct"),
        false,
      );
      expect(direct.tables.map((t) => [t.name, t.sha256])).toEqual(
        m.tables.map((t) => [t.name, t.sha256]),
      );
    } finally {
      store.close();
    }
  });

  it("verify lists what differs and says so", async () => {
    const { home, database } = populatedHome();
    const dir = join(tempHome("holon-dumpdir-", { sqlite: true }), "d");
    exportTo(home, dir);
    const db = new DatabaseSync(database);
    db.prepare(
      "INSERT INTO events (agent_id, event_seq, id, ts, type_id, body) VALUES ('main', 8, 'evt_8', 1, 1, '{}')",
    ).run();
    db.exec("UPDATE messages SET status = 'interrupted' WHERE id = 'msg_2'");
    db.close();
    const got = await verifyStore({ dir, home, database, online: false });
    expect(got.identical).toBe(false);
    const what = got.differences.map((d) => d.what);
    expect(what).toContain("table events rows");
    expect(what).toContain("table events sha256");
    expect(what).toContain("table messages sha256");
    expect(got.differences).toContainEqual({
      what: "agent main newest event_seq",
      dump: "7",
      home: "8",
    });
    expect(got.differences).toContainEqual({
      what: "processing message msg_2",
      dump: "main",
      home: "-",
    });
  });

  it("a dump from an older schema is imported at its level; the next open migrates it", async () => {
    const home = tempHome("holon-dump-old-", { sqlite: true });
    const database = join(home, "holon.db");
    // A database as a build without migrations 15 and 18 left it.
    const versions = MIGRATIONS.map((m) => m.version).filter((v) => v !== 15 && v !== 18);
    const raw = new DatabaseSync(database);
    createSchema(raw, versions);
    raw.exec(
      `INSERT INTO spend_ledger (ts, agent_id, kind, agent_path, item_path, model_ref, input_tokens,
        cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens, cost_usd, elapsed_ms)
       VALUES (1, 'main', 'round', '/main/', '/', 'fake/m', 10, 0, 0, 5, 0, 0.5, 3)`,
    );
    raw.close();
    const dir = join(tempHome("holon-dumpdir-", { sqlite: true }), "old");
    const m = exportTo(home, dir);
    expect(m.migrations).not.toContain(15);
    expect(m.tables.find((t) => t.name === "trace_links")).toBeUndefined();
    rmSync(database);
    await importStore({ dir, home, database });
    expect((await verifyStore({ dir, home, database, online: false })).identical).toBe(true);
    const store = new Store(database, systemClock, randomIds);
    try {
      const row = store.db.prepare("SELECT calls, rollup, input_tokens FROM spend_ledger").get();
      expect(row).toEqual({ calls: 1, rollup: 0, input_tokens: 10 });
      const applied = (
        store.db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]
      ).map((r) => r.version);
      expect(applied).toContain(15);
      expect(applied).toContain(18);
    } finally {
      store.close();
    }
  });

  describe("refusals (nothing is written)", () => {
    const fixture = () => {
      const { home, database } = populatedHome();
      const dir = join(tempHome("holon-dumpdir-", { sqlite: true }), "d");
      exportTo(home, dir);
      renameSync(database, join(home, "old.db"));
      return { home, database, dir };
    };
    const untouched = (home: string, database: string) => {
      expect(existsSync(database)).toBe(false);
      expect(readdirSync(home).filter((f) => f.startsWith(".holon.db"))).toEqual([]);
    };

    it("a table file changed after the export", async () => {
      const { home, database, dir } = fixture();
      appendFileSync(join(dir, "agents.ndjson"), '[99,"evil","{}"]\n');
      const err = await refused(importStore({ dir, home, database }), "dump_invalid");
      expect(err.message).toContain("agents.ndjson");
      expect(err.message).toContain("SHA-256");
      untouched(home, database);
    });

    it("a row line cut short (even with a manifest that agrees)", async () => {
      const { home, database, dir } = fixture();
      const text = readFileSync(join(dir, "messages.ndjson"), "utf8");
      rewriteConsistently(dir, "messages", text.slice(0, text.length - 9) + "\n");
      const err = await refused(importStore({ dir, home, database }), "dump_invalid");
      expect(err.message).toMatch(/messages\.ndjson line 3 is not a JSON row/);
      untouched(home, database);
      // A file that ends without its newline is cut short too.
      rewriteConsistently(dir, "messages", text.slice(0, text.length - 1));
      await refused(importStore({ dir, home, database }), "dump_invalid");
      untouched(home, database);
    });

    it("a row with the wrong number of values, or an unknown marker", async () => {
      const { home, database, dir } = fixture();
      const agents = readFileSync(join(dir, "agents.ndjson"), "utf8");
      rewriteConsistently(dir, "agents", '[1,"main"]\n');
      expect(
        (await refused(importStore({ dir, home, database }), "dump_invalid")).message,
      ).toContain("does not have the 4 values"); // rowid, agent_id, data, group_id
      rewriteConsistently(dir, "agents", '[1,"main",{"$eval":"x"},"main"]\n');
      expect(
        (await refused(importStore({ dir, home, database }), "dump_invalid")).message,
      ).toContain("not a dump value");
      // Well-formed rows that the table refuses: a repeated key, an integer past 64 bits.
      rewriteConsistently(dir, "agents", agents + agents.split("\n")[0] + "\n");
      expect((await refused(importStore({ dir, home, database }), "dump_invalid")).message).toMatch(
        /agents\.ndjson: a row cannot be stored: .*UNIQUE/,
      );
      rewriteConsistently(dir, "agents", '[{"$int":"99999999999999999999"},"x","{}"]\n');
      await refused(importStore({ dir, home, database }), "dump_invalid");
      untouched(home, database);
    });

    it("a line over the cap", async () => {
      const { home, database, dir } = fixture();
      const err = await refused(
        importStore({ dir, home, database, maxLineBytes: 64 }),
        "dump_invalid",
      );
      expect(err.message).toMatch(/longer than 64 bytes/);
      untouched(home, database);
    });

    it("an unknown format version, a newer schema, a manifest naming another file", async () => {
      const { home, database, dir } = fixture();
      const path = join(dir, "manifest.json");
      const good = readFileSync(path, "utf8");
      writeFileSync(path, good.replace('"format_version": 1', '"format_version": 2'));
      const err = await refused(importStore({ dir, home, database }), "dump_format_unsupported");
      expect(err.message).toContain("version 2");
      const m = JSON.parse(good);
      writeFileSync(path, JSON.stringify({ ...m, migrations: [...m.migrations, 9999] }));
      expect(
        (await refused(importStore({ dir, home, database }), "dump_schema_newer")).message,
      ).toContain("9999");
      const without = (v: number) => ({
        ...m,
        migrations: m.migrations.filter((x: number) => x !== v),
      });
      // Without 18 the schema has no trace_links, which the dump has a file for.
      writeFileSync(path, JSON.stringify(without(18)));
      expect(
        (await refused(importStore({ dir, home, database }), "dump_invalid")).message,
      ).toContain("trace_links");
      // Migration 8 makes no table: only the recorded migrations give the lie away.
      writeFileSync(path, JSON.stringify(without(8)));
      expect(
        (await refused(importStore({ dir, home, database }), "dump_invalid")).message,
      ).toContain("schema_migrations.ndjson records migrations");
      m.tables[0].file = "../../etc/passwd";
      writeFileSync(path, JSON.stringify(m));
      await refused(importStore({ dir, home, database }), "dump_invalid");
      writeFileSync(path, "{not json");
      await refused(() => readManifest(dir), "dump_invalid");
      untouched(home, database);
    });

    it("a dump directory that does not exist, or has no manifest", async () => {
      const { home, database } = fixture();
      await refused(importStore({ dir: join(home, "nope"), home, database }), "dump_not_found");
      mkdirSync(join(home, "empty"));
      await refused(importStore({ dir: join(home, "empty"), home, database }), "dump_not_found");
      untouched(home, database);
    });

    it("a target home that already has a database, or a leftover WAL", async () => {
      const { home, database, dir } = fixture();
      renameSync(join(home, "old.db"), database);
      const before = sha(database);
      await refused(importStore({ dir, home, database }), "import_target_not_empty");
      expect(sha(database)).toBe(before);
      rmSync(database);
      writeFileSync(database + "-wal", "leftover");
      await refused(importStore({ dir, home, database }), "import_target_not_empty");
      rmSync(database + "-wal");
      writeFileSync(database, ""); // an empty file, as a fresh store leaves it, is fine
      await importStore({ dir, home, database });
    });

    it("a different home path, with the rule in the message", async () => {
      const { dir } = fixture();
      const other = tempHome("holon-dump-other-", { sqlite: true });
      const database = join(other, "holon.db");
      const err = await refused(importStore({ dir, home: other, database }), "dump_home_mismatch");
      expect(err.message).toContain("the paths must match");
      expect(err.hint).toContain("restore the home's files");
      expect(existsSync(database)).toBe(false);
    });

    it("export refuses a directory that is not empty, and leaves it as it was", async () => {
      const { home } = populatedHome();
      const dir = tempHome("holon-dumpdir-", { sqlite: true });
      writeFileSync(join(dir, "keep.txt"), "mine");
      await refused(() => exportTo(home, dir), "dump_dir_not_empty");
      expect(readdirSync(dir)).toEqual(["keep.txt"]);
      await refused(
        () => exportTo(tempHome("holon-nodb-", { sqlite: true }), join(dir, "x")),
        "store_empty",
      );
      expect(existsSync(join(dir, "x"))).toBe(false);
      const notDb = tempHome("holon-notdb-", { sqlite: true });
      writeFileSync(join(notDb, "holon.db"), "this is not a database, just text ".repeat(200));
      await refused(() => exportTo(notDb, join(dir, "y")), "database_unreadable");
      expect(existsSync(join(dir, "y"))).toBe(false);
    });
  });
});
