// The portable dump between SQLite and Postgres, through `holon store` as a user runs it: a
// SQLite home's dump imported into an empty Postgres database, exported from there (the same
// files byte for byte), imported into a SQLite home again and exported (the same files
// again); the Postgres database carries on numbering as SQLite would; and every refusal
// leaves the database as it was: empty, with no schema.
import { appendFileSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Store } from "../src/store/db.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import type { DumpManifest } from "../src/store/dump.ts";
import { cleanupHomes, runCli, tempHome } from "./helpers/home.ts";
import {
  dropDatabases,
  emptyDatabaseUrl,
  freshDatabaseUrl,
  psqlQuery,
  requirePostgres,
} from "./helpers/postgres.ts";

const BIG = 9_007_199_254_740_993n; // 2^53 + 1: not a JavaScript number

const urls: string[] = [];
afterAll(() => {
  cleanupHomes();
  dropDatabases(urls.splice(0));
});
/** A SQLite home (in a Postgres run of the suite too), or a scratch directory for dumps. */
const scratch = (prefix: string) => tempHome(prefix, { sqlite: true });
const emptyDb = () => {
  const url = emptyDatabaseUrl();
  urls.push(url);
  return url;
};

/** A SQLite home whose database holds rows of every awkward kind, written through a real Store. */
function populatedHome(): { home: string; database: string } {
  const home = scratch("holon-dumppg-");
  const database = join(home, "holon.db");
  const store = new Store(database, systemClock, randomIds);
  const db = store.db;
  db.exec(
    `INSERT INTO agents (agent_id, data, group_id) VALUES ('main', '{"id":"main"}', 'main'), ('b"q', '{}', NULL)`,
  );
  const ev = db.prepare(
    "INSERT INTO events (agent_id, event_seq, id, ts, type_id, body) VALUES (?, ?, ?, ?, ?, ?)",
  );
  db.exec("INSERT INTO event_types (name) VALUES ('note'), ('other')");
  for (let i = 1; i <= 7; i++) {
    ev.run("main", i, `evt_${i}`, 1_700_000_000_000 + i, 1, `{"n":${i},"t":"é ✓ \\u0000 \n"}`);
  }
  ev.run('b"q', 1, "evt_b1", BIG, 2, new Uint8Array([0, 1, 2, 255, 10, 13]));
  ev.run('b"q', 2, "evt_b2", -BIG, 2, new Uint8Array([1])); // the bytes start like a tag
  ev.run('b"q', 3, "evt_b3", 0, 2, new Uint8Array([]));
  // Retention took the oldest events: the rowids now have a gap that must stay.
  db.exec("DELETE FROM events WHERE event_seq <= 2 AND agent_id = 'main'");
  const msg = db.prepare(
    "INSERT INTO messages (id, agent_id, priority_rank, status, created_at, envelope) VALUES (?, 'main', 2, ?, 'now', ?)",
  );
  msg.run("msg_1", "processed", "{}");
  msg.run("msg_2", "processing", new Uint8Array([9, 8, 7]));
  msg.run("msg_3", "queued", '{"text":"\\u0000 ✓"}');
  db.exec("DELETE FROM messages WHERE id = 'msg_1'");
  db.prepare(
    "INSERT INTO transcript (agent_id, seq, id, created_at, run_id, body) VALUES (?, ?, ?, ?, ?, ?)",
  ).run("main", 1, "tr_1", 5, null, new Uint8Array([0, 0, 0]));
  db.prepare("INSERT INTO briefs (id, agent_id, data) VALUES (?, ?, ?)").run("br_1", "main", "");
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
  ledger.run(-BIG, 1e-300);
  const ep = db.prepare(
    "INSERT INTO context_episodes (id, agent_id, data) VALUES (?, 'main', '{}')",
  );
  for (let i = 1; i <= 5; i++) ep.run(`ep_${i}`);
  db.exec("DELETE FROM context_episodes WHERE seq >= 4"); // the counter stays at 5
  // Text keys in a WITHOUT ROWID table: the dump's order is bytewise on both backends.
  const link = db.prepare("INSERT INTO trace_links (key, value, created_at) VALUES (?, ?, ?)");
  for (const k of ["b", "B", "é", "z", "~", "a b", "😀", "Z"]) link.run(k, `v ${k}`, 1);
  db.prepare(
    "INSERT INTO approval_calls (ask_id, call_id, agent_id, state, created_at, data) VALUES (?, ?, 'main', 'pending', 'now', '{}')",
  ).run("ask_2", "call_1");
  db.prepare(
    "INSERT INTO approval_calls (ask_id, call_id, agent_id, state, created_at, data) VALUES (?, ?, 'main', 'pending', 'now', '{}')",
  ).run("ask_1", "call_1");
  store.close();
  return { home, database };
}

/** `holon store …` in a child process, on no database but the ones named. */
const holon = (...args: string[]) =>
  runCli(["store", ...args], { env: { HOLON_DATABASE_URL: "" } });

const manifestOf = (dir: string) =>
  JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as DumpManifest;
const sha = (p: string) => createHash("sha256").update(readFileSync(p)).digest("hex");
const tablesIn = (url: string) =>
  Number(
    psqlQuery(
      url,
      "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
    ),
  );

/** The same table files, and the same manifest but for when, whence and whether online. */
function expectSameFiles(a: string, b: string): void {
  const ma = manifestOf(a);
  for (const t of ma.tables) {
    expect(readFileSync(join(b, t.file)).equals(readFileSync(join(a, t.file))), t.name).toBe(true);
  }
  const { created_at: _a, backend: _b, taken: _c, ...restA } = ma;
  const { created_at: _d, backend: _e, taken: _f, ...restB } = manifestOf(b);
  expect(restB).toEqual(restA);
}

const pg = requirePostgres();

describe.skipIf(!pg)("holon store: a dump into and out of Postgres", () => {
  it("SQLite → Postgres → SQLite: the same files each way, and Postgres continues as SQLite would", async () => {
    const { home, database } = populatedHome();
    const dumps = scratch("holon-dumpdir-");
    const one = join(dumps, "one");
    const exp1 = await holon("export", one, "--home", home);
    expect(exp1.code, exp1.stderr).toBe(0);
    const m1 = manifestOf(one);
    expect(m1.backend).toBeUndefined();
    expect(m1.sequences).toEqual({ context_episodes: 5 });

    const url = emptyDb();
    const imp = await holon("import", one, "--home", home, "--database-url", url, "--json");
    expect(imp.code, imp.stderr).toBe(0);
    expect(JSON.parse(imp.stdout)).toMatchObject({
      home,
      tables: m1.tables.length,
      rows: m1.tables.reduce((n, t) => n + t.rows, 0),
    });
    const ver = await holon("verify", one, "--home", home, "--database-url", url);
    expect(ver.code, ver.stdout + ver.stderr).toBe(0);
    expect(ver.stdout).toMatch(/^identical: \d+ tables, \d+ rows\n$/);
    // The body columns hold the tag byte in Postgres; the files never see it.
    expect(psqlQuery(url, "SELECT encode(envelope, 'hex') FROM messages WHERE id = 'msg_2'")).toBe(
      "01090807",
    );

    // Export from Postgres: the same files, byte for byte; the manifest says where from.
    const two = join(dumps, "two");
    const exp2 = await holon("export", two, "--home", home, "--database-url", url);
    expect(exp2.code, exp2.stderr).toBe(0);
    expect(exp2.stdout).toMatch(/^exported \d+ tables \(\d+ rows, schema \d+\) from postgres:\/\//);
    const m2 = manifestOf(two);
    expect(m2.backend).toBe("postgres");
    expect(m2.taken).toBe(m1.taken);
    expectSameFiles(one, two);
    const ledger = readFileSync(join(two, "spend_ledger.ndjson"), "utf8");
    expect(ledger).toContain('{"$int":"9007199254740993"}');
    expect(ledger).toContain('{"$int":"-9007199254740993"}');
    expect(ledger).toContain("0.30000000000000004");
    expect(ledger).toContain('{"$real":"2"}');
    expect(ledger).toContain('{"$real":"Infinity"}');
    expect(ledger).toContain("null");
    expect(readFileSync(join(two, "events.ndjson"), "utf8")).toContain('{"$blob":"AAEC/woN"}');

    // And back into a SQLite home at the same path: the same files again.
    renameSync(database, join(home, "old.db"));
    const imp2 = await holon("import", two, "--home", home);
    expect(imp2.code, imp2.stderr).toBe(0);
    expect(imp2.stdout).toContain(join(home, "holon.db"));
    const three = join(dumps, "three");
    const exp3 = await holon("export", three, "--home", home);
    expect(exp3.code, exp3.stderr).toBe(0);
    expectSameFiles(one, three);
    expect(manifestOf(three).backend).toBeUndefined();

    // The Postgres database is a store a host opens, and its ids carry on as SQLite's would:
    // after the AUTOINCREMENT counter, after the highest rowid; the tallies count on.
    const { openPostgres } = await import("../src/store/pg-open.ts");
    const db = openPostgres(url);
    try {
      const ep = db
        .prepare("INSERT INTO context_episodes (id, agent_id, data) VALUES (?, 'main', '{}')")
        .run("ep_new");
      expect(ep.lastInsertRowid).toBe(6);
      const maxRowid = Number(psqlQuery(url, "SELECT max(rowid) FROM events"));
      const tally = () =>
        (
          db.prepare("SELECT row_count FROM store_stats WHERE family = 'events'").get() as {
            row_count: number;
          }
        ).row_count;
      const before = tally();
      const ev = db
        .prepare(
          "INSERT INTO events (agent_id, event_seq, id, ts, type_id, body) VALUES ('main', 8, 'evt_8', 1, 1, '{}')",
        )
        .run();
      expect(ev.lastInsertRowid).toBe(maxRowid + 1);
      expect(tally()).toBe(before + 1);
      const msg = db
        .prepare(
          "INSERT INTO messages (id, agent_id, priority_rank, status, created_at, envelope) VALUES ('msg_4', 'main', 2, 'queued', 'now', '{}')",
        )
        .run();
      expect(msg.lastInsertRowid).toBe(4); // after msg_3, as SQLite would
    } finally {
      db.close();
    }
    // Verify now names what moved on.
    const moved = await holon("verify", one, "--home", home, "--database-url", url, "--json");
    expect(moved.code).toBe(1);
    const what = (JSON.parse(moved.stdout) as { differences: { what: string }[] }).differences.map(
      (d) => d.what,
    );
    expect(what).toContain("table events rows");
    expect(what).toContain("sequence context_episodes");
    expect(what).toContain("agent main newest event_seq");
  });

  it("a host running on the database: the export is a snapshot, taken online", async () => {
    const { home } = populatedHome();
    const dumps = scratch("holon-dumpdir-");
    const url = emptyDb();
    expect((await holon("export", join(dumps, "a"), "--home", home)).code).toBe(0);
    expect(
      (await holon("import", join(dumps, "a"), "--home", home, "--database-url", url)).code,
    ).toBe(0);
    const { openPostgres } = await import("../src/store/pg-open.ts");
    const db = openPostgres(url); // holds the one-host lock, as a host does
    try {
      db.exec("BEGIN");
      db.prepare("INSERT INTO agents (agent_id, data) VALUES ('uncommitted', '{}')").run();
      const exp = await holon("export", join(dumps, "b"), "--home", home, "--database-url", url);
      expect(exp.code, exp.stderr).toBe(0);
      expect(exp.stdout).toContain("(online, from a snapshot)");
      const m = manifestOf(join(dumps, "b"));
      expect(m.taken).toBe("online");
      expect(m.tables.find((t) => t.name === "agents")!.rows).toBe(2); // not the open write
      db.exec("ROLLBACK");
      // No import into a database a host holds (nor into one that holds anything).
      const busy = await holon("import", join(dumps, "a"), "--home", home, "--database-url", url);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain("database_locked");
    } finally {
      db.close();
    }
    expectSameFiles(join(dumps, "a"), join(dumps, "b"));
  });

  describe("refusals (the database stays empty)", () => {
    const fixture = async () => {
      const { home } = populatedHome();
      const dir = join(scratch("holon-dumpdir-"), "d");
      const exp = await holon("export", dir, "--home", home);
      expect(exp.code, exp.stderr).toBe(0);
      return { home, dir, url: emptyDb() };
    };

    it("a database that holds anything: a Holon store, or someone else's table", async () => {
      const { home, dir } = await fixture();
      const fresh = freshDatabaseUrl();
      urls.push(fresh);
      const before = psqlQuery(fresh, "SELECT count(*) FROM schema_migrations");
      const r = await holon("import", dir, "--home", home, "--database-url", fresh);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("import_target_not_empty");
      expect(psqlQuery(fresh, "SELECT count(*) FROM schema_migrations")).toBe(before);
      const theirs = emptyDb();
      psqlQuery(theirs, "CREATE TABLE mine (x int)");
      const r2 = await holon("import", dir, "--home", home, "--database-url", theirs);
      expect(r2.code).toBe(1);
      expect(r2.stderr).toContain("import_target_not_empty");
      expect(tablesIn(theirs)).toBe(1);
      // Nor does an export set up a database that is not a Holon store, or an empty one.
      const out = join(scratch("holon-dumpdir-"), "x");
      const e1 = await holon("export", out, "--home", home, "--database-url", theirs);
      expect(e1.code).toBe(1);
      expect(e1.stderr).toContain("database_not_holon");
      expect(tablesIn(theirs)).toBe(1);
      const nothing = emptyDb();
      const e2 = await holon("export", out, "--home", home, "--database-url", nothing);
      expect(e2.code).toBe(1);
      expect(e2.stderr).toContain("store_empty");
      expect(tablesIn(nothing)).toBe(0);
      expect(readdirSync(join(out, ".."))).toEqual([]);
    });

    it("a dump taken under another home path", async () => {
      const { dir, url } = await fixture();
      const other = scratch("holon-dumppg-other-");
      const r = await holon("import", dir, "--home", other, "--database-url", url);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("dump_home_mismatch");
      expect(r.stderr).toContain("the paths must match");
      expect(tablesIn(url)).toBe(0);
    });

    it("a table file changed after the export", async () => {
      const { home, dir, url } = await fixture();
      appendFileSync(join(dir, "agents.ndjson"), '[99,"evil","{}",null]\n');
      const r = await holon("import", dir, "--home", home, "--database-url", url);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("dump_invalid");
      expect(r.stderr).toContain("agents.ndjson");
      expect(tablesIn(url)).toBe(0);
    });

    it("rows Postgres refuses after every file checked out: the schema goes too", async () => {
      const { home, dir, url } = await fixture();
      // A repeated key, with a manifest that agrees: found only while rows go in.
      const path = join(dir, "agents.ndjson");
      const text = readFileSync(path, "utf8");
      writeFileSync(path, text + text.split("\n")[0] + "\n");
      const m = manifestOf(dir);
      const t = m.tables.find((x) => x.name === "agents")!;
      t.sha256 = sha(path);
      t.rows += 1;
      writeFileSync(join(dir, "manifest.json"), JSON.stringify(m));
      const r = await holon("import", dir, "--home", home, "--database-url", url);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("dump_invalid");
      expect(r.stderr).toMatch(/agents\.ndjson: a row cannot be stored/);
      expect(tablesIn(url)).toBe(0);
      // A value of another type than its column's is refused, not converted.
      writeFileSync(path, text.replace(/"main"\]/, '{"$blob":"AAE="}]'));
      t.sha256 = sha(path);
      t.rows -= 1;
      writeFileSync(join(dir, "manifest.json"), JSON.stringify(m));
      const r2 = await holon("import", dir, "--home", home, "--database-url", url);
      expect(r2.code).toBe(1);
      expect(r2.stderr).toMatch(/column group_id holds bytes/);
      expect(tablesIn(url)).toBe(0);
    });

    it("a dump at an older schema level: import into SQLite, start, export again", async () => {
      const { home, dir, url } = await fixture();
      const m = manifestOf(dir);
      m.migrations = m.migrations.filter((v) => v !== 18);
      writeFileSync(join(dir, "manifest.json"), JSON.stringify(m));
      const r = await holon("import", dir, "--home", home, "--database-url", url);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("dump_schema_older");
      expect(r.stderr).toContain("SQLite home");
      expect(tablesIn(url)).toBe(0);
    });
  });

  it("a dump of over 100 000 rows goes in and out in seconds", async () => {
    const home = scratch("holon-dumppg-big-");
    const store = new Store(join(home, "holon.db"), systemClock, randomIds);
    const db = store.db;
    db.exec("BEGIN");
    db.exec("INSERT INTO event_types (name) VALUES ('note')");
    const ev = db.prepare(
      "INSERT INTO events (agent_id, event_seq, id, ts, type_id, body) VALUES (?, ?, ?, ?, 1, ?)",
    );
    const body = JSON.stringify({ text: "x".repeat(150) });
    for (let i = 1; i <= 100_000; i++)
      ev.run(`a${i % 10}`, i, `evt_${i}`, 1_700_000_000_000 + i, body);
    db.exec("COMMIT");
    store.close();
    const dumps = scratch("holon-dumpdir-");
    expect((await holon("export", join(dumps, "one"), "--home", home)).code).toBe(0);
    const url = emptyDb();
    let t = Date.now();
    const imp = await runCli(
      ["store", "import", join(dumps, "one"), "--home", home, "--database-url", url],
      { env: { HOLON_DATABASE_URL: "" }, timeoutMs: 120_000 },
    );
    const importMs = Date.now() - t;
    expect(imp.code, imp.stderr).toBe(0);
    t = Date.now();
    const exp = await runCli(
      ["store", "export", join(dumps, "two"), "--home", home, "--database-url", url],
      { env: { HOLON_DATABASE_URL: "" }, timeoutMs: 120_000 },
    );
    const exportMs = Date.now() - t;
    expect(exp.code, exp.stderr).toBe(0);
    expect(sha(join(dumps, "two", "events.ndjson"))).toBe(sha(join(dumps, "one", "events.ndjson")));
    console.log(`100k rows: import ${importMs} ms, export ${exportMs} ms (CLI, with start-up)`);
    // A stall bound, not a speed check: a row at a time took minutes.
    expect(importMs).toBeLessThan(60_000);
    expect(exportMs).toBeLessThan(60_000);
  }, 180_000);
});
