// Opening a Postgres database as a home's store: a connection (pg.ts), the checks a store of
// record needs before it takes a write, and the schema. Loaded with `await import()` only
// when a database URL is configured, so an embedded host never loads any of it.
import { HolonError } from "../domain/errors.ts";
import { PgDatabase } from "./pg.ts";
import { postgresSchema, schemaVersions } from "./pg-schema.ts";

/** The advisory lock one host holds on its database ("Holon" in ASCII). */
export const HOST_LOCK_KEY = 0x486f6c6f6e;

export type OpenPostgresOptions = {
  /** Skip the one-host lock (the dump's import and export, which refuse a running host otherwise). */
  lock?: boolean;
};

/**
 * Connect, refuse a server that acknowledges commits before they are durable, take the
 * one-host lock, and create the schema in an empty database (or check an existing one's).
 */
export function openPostgres(url: string, opts: OpenPostgresOptions = {}): PgDatabase {
  const db = new PgDatabase(url, opts.lock !== false ? { lockKey: HOST_LOCK_KEY } : {});
  try {
    const sync = db.prepare("SELECT current_setting('synchronous_commit') AS v").get() as {
      v: string;
    };
    if (sync.v === "off") {
      throw new HolonError(
        "database_not_durable",
        `Postgres at ${db.where} has synchronous_commit = off: a commit it acknowledges can still be lost, and the runtime tells clients a message is durable only when it is`,
        {
          status: 503,
          hint: "set synchronous_commit to on (or local, remote_write, remote_apply) for this database or role",
        },
      );
    }
    ensureSchema(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Whether the database holds no tables of its own (a dump imports only into such a one). */
export function isEmptyDatabase(db: PgDatabase): boolean {
  const r = db
    .prepare(
      "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    .get() as { n: number };
  return r.n === 0;
}

/** Create the schema in an empty database; refuse one at another level or someone else's. */
export function ensureSchema(db: PgDatabase): void {
  const present = db.prepare("SELECT to_regclass('schema_migrations') IS NOT NULL AS ok").get() as {
    ok: number;
  };
  const want = schemaVersions();
  if (present.ok !== 1) {
    if (!isEmptyDatabase(db)) {
      throw new HolonError(
        "database_not_empty",
        `the database at ${db.where} holds tables that are not a Holon store`,
        { status: 409, hint: "give Holon a database of its own (createdb holon)" },
      );
    }
    installSchema(db);
    return;
  }
  const have = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  const missing = want.filter((m) => !have.has(m.version));
  const known = new Set(want.map((m) => m.version));
  const unknown = [...have].filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new HolonError(
      "database_schema_newer",
      `the database at ${db.where} was written by a newer Holon (migrations ${unknown.join(", ")})`,
      { status: 409, hint: "run the Holon version that wrote it" },
    );
  }
  if (missing.length > 0) {
    throw new HolonError(
      "database_schema_older",
      `the database at ${db.where} lacks migrations ${missing.map((m) => m.version).join(", ")}, and the Postgres backend cannot upgrade a schema in place yet`,
      {
        status: 409,
        hint: "export it (holon store export), import the dump into a SQLite home, start that once, export again and import into an empty database",
      },
    );
  }
}

/** The whole schema and its seed rows, in one transaction. */
export function installSchema(db: PgDatabase, versions = schemaVersions()): void {
  const { ddl, seed } = postgresSchema();
  db.exec("BEGIN");
  try {
    for (const stmt of ddl) db.exec(stmt);
    for (const s of seed) {
      const ins = db.prepare(
        `INSERT INTO ${s.table} (${s.columns.join(", ")}) VALUES (${s.columns.map(() => "?").join(", ")})`,
      );
      for (const row of s.rows) ins.run(...(row as never[]));
    }
    const rec = db.prepare(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
    );
    const at = new Date().toISOString();
    for (const m of versions) rec.run(m.version, m.name, at);
    db.exec("COMMIT");
  } catch (err) {
    db.exec("ROLLBACK");
    throw err;
  }
}
