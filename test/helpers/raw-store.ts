// A home's records read directly, for tests that look at what a killed host left before a
// new host recovers it. The connection is the backend's own: SQLite's file (read-only by
// default) or, for a home configured with a database URL, a Postgres connection without the
// host lock (so it works beside a running host) and without creating any schema.
import { DatabaseSync } from "node:sqlite";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { homePaths } from "../../src/host/paths.ts";
import { PgDatabase } from "../../src/store/pg.ts";
import type { SqlDatabase } from "../../src/store/sql.ts";
import { Store } from "../../src/store/db.ts";
import { openPostgres } from "../../src/store/pg-open.ts";
import { randomIds, systemClock, type Clock, type IdSource } from "../../src/domain/clock.ts";

/** The database URL a home's config.json names, if any. */
export function homeDatabaseUrl(home: string): string | null {
  try {
    const cfg = JSON.parse(readFileSync(join(home, "config.json"), "utf8")) as {
      store?: { database_url?: string };
    };
    return cfg.store?.database_url ?? null;
  } catch {
    return null;
  }
}

/** The home's records, on whichever backend holds them; close it when done. */
export function openRecords(home: string, opts: { write?: boolean } = {}): SqlDatabase {
  const url = homeDatabaseUrl(home);
  if (url) return new PgDatabase(url);
  return new DatabaseSync(homePaths(home).database, { readOnly: !opts.write });
}

/**
 * The home's store, opened as a host would open it (the test's own, with no host running):
 * its SQLite file, or the Postgres database its config.json names.
 */
export function openHomeStore(
  home: string,
  clock: Clock = systemClock,
  ids: IdSource = randomIds,
): Store {
  const url = homeDatabaseUrl(home);
  return new Store(
    homePaths(home).database,
    clock,
    ids,
    url ? { database: openPostgres(url) } : {},
  );
}

/** The store's own tables (SQLite's internal ones left out), by name, on either backend. */
export function tableNames(db: SqlDatabase): string[] {
  const sql =
    db.dialect === "postgres"
      ? "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY name"
      : "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name";
  return (db.prepare(sql).all() as { name: string }[]).map((r) => r.name);
}
