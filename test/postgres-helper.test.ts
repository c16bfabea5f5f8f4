// The tests' Postgres (test/helpers/postgres.ts): a private server per worker, run as the
// postgres user and reachable on 127.0.0.1 only, whose databases are independent copies of a
// migrated template. Runs in `npm test` too; skips locally without PostgreSQL, fails in CI.
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import {
  dropDatabases,
  emptyDatabaseUrl,
  freshDatabaseUrl,
  psqlQuery,
  requirePostgres,
  testServer,
} from "./helpers/postgres.ts";

const pg = requirePostgres();

/** The TCP sockets listening on `port` (local addresses, hex as /proc/net/tcp* has them). */
function listeners(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const out: string[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 4 || cols[3] !== "0A") continue; // LISTEN
      const [addr, p] = cols[1]!.split(":");
      if (p === hexPort) out.push(addr!);
    }
  }
  return out;
}

describe.skipIf(!pg)("the tests' Postgres", () => {
  it("copies each database from the migrated template, and the copies are independent", async () => {
    const a = freshDatabaseUrl();
    const b = freshDatabaseUrl();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+$/);
    const migrations = psqlQuery(a, "SELECT count(*) FROM schema_migrations");
    expect(Number(migrations)).toBeGreaterThan(0);
    expect(psqlQuery(b, "SELECT count(*) FROM schema_migrations")).toBe(migrations);

    psqlQuery(a, "CREATE TABLE only_in_a (x int); INSERT INTO only_in_a VALUES (1)");
    psqlQuery(a, "DELETE FROM schema_migrations");
    expect(psqlQuery(b, "SELECT to_regclass('only_in_a') IS NULL")).toBe("t");
    expect(psqlQuery(b, "SELECT count(*) FROM schema_migrations")).toBe(migrations);
    // A third copy is still the template's, untouched by the writes to the first.
    const c = freshDatabaseUrl();
    expect(psqlQuery(c, "SELECT count(*) FROM schema_migrations")).toBe(migrations);

    // The store opens a copy as it is (the schema at this version), and each database has its
    // own one-host lock: holding b's does not keep c from opening.
    const { openPostgres } = await import("../src/store/pg-open.ts");
    const held = openPostgres(b);
    try {
      expect(() => openPostgres(b)).toThrow(expect.objectContaining({ kind: "database_locked" }));
      openPostgres(c).close();
    } finally {
      held.close();
    }
    dropDatabases([a, b, c]);
  });

  it("makes empty databases too, without a schema", () => {
    const e = emptyDatabaseUrl();
    expect(
      psqlQuery(e, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"),
    ).toBe("0");
    dropDatabases([e]);
  });

  it("runs as the postgres user, under the temp dir, on 127.0.0.1 only, committing durably", () => {
    const s = testServer();
    const url = freshDatabaseUrl();
    const status = readFileSync(`/proc/${s.pid}/status`, "utf8");
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)![1]);
    expect(uid).not.toBe(0);
    if (process.getuid?.() === 0) {
      expect(uid).toBe(Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })));
    }
    expect(s.dataDir.startsWith(tmpdir() + "/")).toBe(true);
    expect(s.socketDir.startsWith(tmpdir() + "/")).toBe(true);
    expect(psqlQuery(url, "SHOW listen_addresses")).toBe("127.0.0.1");
    expect(listeners(s.port)).toEqual(["0100007F"]);
    expect(psqlQuery(url, "SHOW synchronous_commit")).toBe("on");
    expect(psqlQuery(url, "SHOW data_directory")).toBe(s.dataDir);
    dropDatabases([url]);
  });
});
