// The Postgres backend's own guarantees, on a real server (test/helpers/postgres.ts): what a
// store of record must refuse (a second host, a server that acknowledges commits before they
// are durable, a database that is not Holon's or is at another schema level), the schema it
// creates from the migrations, a retried serialization failure, and the bytes a turn costs.
import { textTurns } from "./helpers/turns.ts";
import { afterAll, describe, expect, it } from "vitest";
import { HOLON_BIN, cleanupHomes, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import {
  emptyDatabaseUrl,
  freshDatabaseUrl,
  psqlAlongside,
  psqlQuery,
  requirePostgres,
} from "./helpers/postgres.ts";
import { Store } from "../src/store/db.ts";
import { openPostgres } from "../src/store/pg-open.ts";
import { PgDatabase, workerExecArgv } from "../src/store/pg.ts";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { HolonError } from "../src/domain/errors.ts";
import { systemClock, randomIds } from "../src/domain/clock.ts";

const pg = requirePostgres();
const fake = useFakeProvider();

afterAll(() => cleanupHomes());

function refusal(fn: () => unknown): HolonError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HolonError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe.skipIf(!pg)("the Postgres store", () => {
  it("an empty database gets the whole schema, at the migrations' level", () => {
    const url = emptyDatabaseUrl();
    openPostgres(url).close();
    const versions = psqlQuery(url, "SELECT version FROM schema_migrations ORDER BY version")
      .split("\n")
      .map(Number);
    expect(versions).toEqual(MIGRATIONS.map((m) => m.version).sort((a, b) => a - b));
    // The same tables SQLite has, text sorted bytewise, the bodies tagged bytea.
    const tables = psqlQuery(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    ).split("\n");
    expect(tables).toEqual(
      expect.arrayContaining(["agents", "messages", "events", "transcript", "spend_ledger"]),
    );
    expect(
      psqlQuery(
        url,
        "SELECT collation_name FROM information_schema.columns WHERE table_name = 'agents' AND column_name = 'agent_id'",
      ),
    ).toBe("C");
    expect(
      psqlQuery(
        url,
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'body'",
      ),
    ).toBe("bytea");
    // Opening again finds it in place.
    openPostgres(url).close();
  });

  it("a second host on the same database is refused with database_locked until the first closes", () => {
    const url = freshDatabaseUrl();
    const first = openPostgres(url);
    try {
      const e = refusal(() => openPostgres(url));
      expect(e.kind).toBe("database_locked");
      expect(e.status).toBe(409);
    } finally {
      first.close();
    }
    openPostgres(url).close();
  });

  it("a database whose commits are not durable is refused", () => {
    const url = freshDatabaseUrl();
    const name = new URL(url).pathname.slice(1);
    psqlQuery(url, `ALTER DATABASE "${name}" SET synchronous_commit = off`);
    const e = refusal(() => openPostgres(url));
    expect(e.kind).toBe("database_not_durable");
    expect(e.message).not.toContain("password");
  });

  it("someone else's database, and a schema from another version, are refused untouched", () => {
    const other = emptyDatabaseUrl();
    psqlQuery(other, "CREATE TABLE invoices (id int)");
    expect(refusal(() => openPostgres(other)).kind).toBe("database_not_empty");
    expect(
      psqlQuery(
        other,
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
      ),
    ).toBe("1");

    const newer = freshDatabaseUrl();
    psqlQuery(
      newer,
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 'x')",
    );
    expect(refusal(() => openPostgres(newer)).kind).toBe("database_schema_newer");
    const older = freshDatabaseUrl();
    psqlQuery(older, `DELETE FROM schema_migrations WHERE version = ${MIGRATIONS.at(-1)!.version}`);
    expect(refusal(() => openPostgres(older)).kind).toBe("database_schema_older");
  });

  it("opens from a host run as an eval'd module too (its worker does not inherit the script)", () => {
    expect(workerExecArgv(["--input-type=module", "-e", "code"])).toEqual([]);
    expect(workerExecArgv(["--max-old-space-size=64"])).toBeUndefined();
    const url = freshDatabaseUrl();
    const script = `const { openPostgres } = await import(${JSON.stringify(new URL("../src/store/pg-open.ts", import.meta.url).href)});
openPostgres(${JSON.stringify(url)}).close(); console.log("opened");`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.stdout.trim(), r.stderr).toBe("opened");
  });

  it("a host started through the launcher (with its heap flags) runs on Postgres", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    const url = freshDatabaseUrl();
    const proc = spawn("/bin/sh", [HOLON_BIN, "serve", "--port", "0", "--home", home], {
      env: {
        ...process.env,
        HOLON_DATABASE_URL: url,
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    proc.stderr!.on("data", (d) => (err += String(d)));
    try {
      await waitFor(() => err.includes("listening on"), {
        what: "the host to listen",
        timeoutMs: 30_000,
      });
      // The launcher's flags reached Node, and the store's worker started under them.
      expect(readFileSync(`/proc/${proc.pid}/cmdline`, "utf8")).toContain("--max-old-space-size");
      expect(psqlQuery(url, "SELECT count(*) FROM agents")).toBe("1");
      expect(existsSync(join(home, "holon.db"))).toBe(false);
    } finally {
      const gone = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await gone;
    }
  });

  it("an unreachable server is one clear error, without the password", () => {
    const e = refusal(() => new PgDatabase("postgres://holon:s3cret-pw@127.0.0.1:1/nowhere"));
    expect(e.kind).toBe("database_unavailable");
    expect(e.message).not.toContain("s3cret-pw");
    expect(e.message).toContain("***");
  });

  it("a transaction Postgres fails with a serialization failure runs again, and commits once", async () => {
    const url = freshDatabaseUrl();
    // The first insert into trace_links fails as a serialization failure would (a sequence
    // is not rolled back, so only the first attempt trips it).
    psqlQuery(
      url,
      `CREATE SEQUENCE trip;
       CREATE FUNCTION trip_once() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF nextval('trip') = 1 THEN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END IF; RETURN NEW; END $$;
       CREATE TRIGGER trip_once BEFORE INSERT ON trace_links FOR EACH ROW EXECUTE FUNCTION trip_once();`,
    );
    const store = new Store("", systemClock, randomIds, { database: openPostgres(url) });
    try {
      const before = store.counts.transactions;
      let runs = 0;
      await store.tx(async () => {
        runs++;
        store.db
          .prepare("INSERT INTO trace_links (key, value, created_at) VALUES (?, ?, ?)")
          .run("k", "v", 1);
      });
      expect(runs).toBe(2);
      expect(store.counts.transactions - before).toBe(2);
      expect(store.db.prepare("SELECT value FROM trace_links WHERE key = 'k'").all()).toEqual([
        { value: "v" },
      ]);
      // Any other error is not retried.
      await expect(
        store.tx(async () => {
          runs++;
          store.db
            .prepare("INSERT INTO trace_links (key, value, created_at) VALUES (?, ?, ?)")
            .run("k2", null, 1);
        }),
      ).rejects.toThrow(/null value/);
      expect(runs).toBe(3);
    } finally {
      store.close();
    }
  });

  it("a lost connection is replaced between transactions, with the lock; a transaction it cut off commits nothing", async () => {
    const url = freshDatabaseUrl();
    const store = new Store("", systemClock, randomIds, { database: openPostgres(url) });
    const db = new URL(url).pathname.slice(1);
    const kill = () =>
      psqlQuery(
        url,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db}' AND application_name LIKE 'holon %'`,
      );
    const put = (key: string) =>
      store.db
        .prepare("INSERT INTO trace_links (key, value, created_at) VALUES (?, ?, ?)")
        .run(key, "v", 1);
    const keys = () =>
      (store.db.prepare("SELECT key FROM trace_links ORDER BY key").all() as { key: string }[]).map(
        (r) => r.key,
      );
    try {
      await store.tx(async () => put("a"));
      // Killed between transactions (a server restart): the next one runs on a new connection.
      kill();
      await store.tx(async () => put("b"));
      expect(keys()).toEqual(["a", "b"]);
      // The new connection holds the one-host lock again.
      expect(refusal(() => openPostgres(url)).kind).toBe("database_locked");
      // Killed inside a transaction: what it wrote before is gone with the old connection, and
      // nothing after it is written on a new one (no half transaction commits).
      await expect(
        store.tx(async () => {
          put("c");
          kill();
          put("d");
        }),
      ).rejects.toThrow();
      expect(keys()).toEqual(["a", "b"]);
      await store.tx(async () => put("e"));
      expect(keys()).toEqual(["a", "b", "e"]);
      // Killed just before COMMIT: it fails, and the next transaction runs on a new connection.
      await expect(
        store.tx(async () => {
          put("f");
          kill();
        }),
      ).rejects.toThrow();
      await store.tx(async () => put("g"));
      expect(keys()).toEqual(["a", "b", "e", "g"]);
    } finally {
      store.close();
    }
  });

  it("a statement cut off outside a transaction: a read is sent again on a new connection, a write fails and is not", async () => {
    const url = freshDatabaseUrl();
    psqlQuery(url, "CREATE SEQUENCE nap");
    const store = new Store("", systemClock, randomIds, { database: openPostgres(url) });
    // Ends the session running a statement that names `marker`, once it is seen running; the
    // statement sleeps the first time only (the sequence outlives the session).
    const cutOff = (marker: string) =>
      psqlAlongside(
        url,
        `DO $$ BEGIN LOOP
           PERFORM pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND state = 'active'
               AND pid <> pg_backend_pid() AND query LIKE '%${marker}%';
           EXIT WHEN FOUND OR clock_timestamp() > now() + interval '60 s';
           PERFORM pg_sleep(0.02);
         END LOOP; END $$`,
      );
    const nap = "pg_sleep(CASE WHEN nextval('nap') % 2 = 1 THEN 60 ELSE 0 END)";
    try {
      let killer = cutOff("slow_read");
      const rows = store.db.prepare(`SELECT 'slow_read' AS k, ${nap} AS z`).all();
      await killer;
      expect(rows).toEqual([{ k: "slow_read", z: "" }]);
      expect(psqlQuery(url, "SELECT last_value FROM nap")).toBe("2");
      killer = cutOff("slow_write");
      const cut = refusal(() =>
        store.db
          .prepare(
            `INSERT INTO trace_links (key, value, created_at) SELECT 'slow_write', 'v', 1 FROM ${nap} x`,
          )
          .run(),
      );
      expect(cut.kind).toBe("database_unavailable");
      expect(cut.message).toMatch(/terminat/);
      await killer;
      // Not sent again: the one attempt went with its session, and the next statement runs.
      expect(psqlQuery(url, "SELECT last_value FROM nap")).toBe("3");
      expect(store.db.prepare("SELECT key FROM trace_links").all()).toEqual([]);
      await store.tx(async () => {
        store.db
          .prepare("INSERT INTO trace_links (key, value, created_at) VALUES (?, ?, ?)")
          .run("after", "v", 1);
      });
      expect(psqlQuery(url, "SELECT key FROM trace_links")).toBe("after");
    } finally {
      store.close();
    }
  });

  it("bytes a one-round text turn adds, reported (the SQLite footprint test's counterpart)", async () => {
    const home = tempHome();
    const url = freshDatabaseUrl();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home, env: { ...process.env, HOLON_DATABASE_URL: url } });
    const rowBytes = () =>
      Number(
        psqlQuery(
          url,
          `SELECT ${[
            "agents",
            "messages",
            "events",
            "transcript",
            "briefs",
            "spend_ledger",
            "context_episodes",
            "working_memory",
          ]
            .map((t) => `(SELECT COALESCE(SUM(pg_column_size(x.*)), 0) FROM ${t} x)`)
            .join(" + ")}`,
        ),
      );
    try {
      const turns = (from: number, n: number) => textTurns(rt, fake, n, from);
      await turns(0, 3);
      const before = rowBytes();
      await turns(3, 10);
      const perTurn = (rowBytes() - before) / 10;
      console.log(`postgres: ${perTurn.toFixed(0)} bytes of rows per one-round text turn`);
      // Rows only (indexes and page overhead come on top): the same records SQLite keeps in
      // about 4 KB with its indexes.
      expect(perTurn).toBeGreaterThan(500);
      expect(perTurn).toBeLessThan(8000);
    } finally {
      await rt.close();
    }
  });
});
