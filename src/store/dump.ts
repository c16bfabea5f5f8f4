// A portable dump of a home's database: `holon store export | import | verify`. A dump is a
// directory with `manifest.json` (format, schema level, the HOLON_HOME it came from, and per
// table its columns, row count and the SHA-256 of its file) and one `<table>.ndjson` per
// table, one JSON array per row in primary-key (or rowid) order. Rows are streamed both ways:
// neither side holds a table in memory.
//
// The one thing to know: records keep absolute paths into the home (agent homes, worktrees,
// task output), and those files are not in the dump. So a dump is restored only at the path
// it was taken from, and an import checks every file against the manifest before it writes
// anything; it builds the database in a private temporary file and renames it into place
// only once every row is in, so a refused or failed import leaves the home as it was.
//
// The same dump comes from and goes into a Postgres database (the last part of this file;
// its code is loaded only when a database URL is given): the same files byte for byte, so
// a dump moves a home between the backends either way.
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  createReadStream,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  chmodSync,
  writeSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { applyMigration, MIGRATIONS, migrationsTable } from "./migrations.ts";
import type { PgDatabase } from "./pg.ts";

export const DUMP_FORMAT = "holon-store-dump";
export const DUMP_FORMAT_VERSION = 1;
/** The longest row line an import reads (a row is a few KB; a compressed body at most MBs). */
export const MAX_DUMP_LINE_BYTES = 256 * 1024 * 1024;
const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;
const WRITE_CHUNK = 1024 * 1024;

const TableEntry = z.object({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/),
  file: z.string(),
  /** Each row array starts with the rowid: a rowid table whose rowid no column names. */
  rowid: z.boolean(),
  columns: z.array(z.string()).min(1),
  rows: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type DumpTable = z.infer<typeof TableEntry>;

const Manifest = z.object({
  format: z.literal(DUMP_FORMAT),
  format_version: z.number().int(),
  holon_version: z.string(),
  /** The highest migration applied; `migrations` lists every one (versions have gaps). */
  schema_version: z.number().int(),
  migrations: z.array(z.number().int()),
  holon_home: z.string(),
  created_at: z.string(),
  /** `online`: read from a snapshot of a running host's database; `stopped`: read directly. */
  taken: z.enum(["stopped", "online"]),
  /** Where it was read from; absent means SQLite (only a Postgres export writes it). */
  backend: z.enum(["sqlite", "postgres"]).optional(),
  tables: z.array(TableEntry),
  /** SQLite's AUTOINCREMENT counters (sqlite_sequence), so ids continue past deleted rows. */
  sequences: z.record(z.string(), z.number().int()),
  /** Each agent's newest event_seq, and the messages that were being processed. */
  agents: z.record(z.string(), z.object({ newest_event_seq: z.number().int() })),
  processing: z.array(z.object({ id: z.string(), agent_id: z.string() })),
});
export type DumpManifest = z.infer<typeof Manifest>;

/** What a database holds, in the manifest's terms (tables without file names). */
type Contents = Omit<
  DumpManifest,
  "format" | "format_version" | "holon_version" | "holon_home" | "created_at" | "taken" | "backend"
>;

// ---------------------------------------------------------------------------------------
// Values. A JSON number that is integral is an INTEGER, any other number a REAL; what JSON
// cannot say plainly is an object with one marker key: {"$int": "…"} for an integer past
// 2^53, {"$real": "…"} for an integral, infinite or negative-zero REAL, {"$blob": base64}.

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function encodeValue(v: unknown): unknown {
  if (v === null || typeof v === "string") return v;
  if (typeof v === "bigint") return v >= -SAFE && v <= SAFE ? Number(v) : { $int: v.toString() };
  if (typeof v === "number") {
    if (Object.is(v, -0)) return { $real: "-0" };
    return Number.isInteger(v) || !Number.isFinite(v) ? { $real: String(v) } : v;
  }
  if (v instanceof Uint8Array) {
    return { $blob: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
  }
  throw new Error(`unexpected SQLite value of type ${typeof v}`);
}

function decodeValue(v: unknown): null | string | number | bigint | Uint8Array {
  if (v === null || typeof v === "string") return v;
  if (typeof v === "number") return Number.isInteger(v) ? BigInt(v) : v;
  if (typeof v === "object" && !Array.isArray(v)) {
    const keys = Object.keys(v);
    const o = v as Record<string, unknown>;
    if (keys.length === 1 && typeof o[keys[0]!] === "string") {
      const s = o[keys[0]!] as string;
      if (keys[0] === "$int" && /^-?\d{1,20}$/.test(s)) return BigInt(s);
      if (keys[0] === "$real") {
        const n = Number(s);
        if (!Number.isNaN(n)) return n;
      }
      if (keys[0] === "$blob" && /^[A-Za-z0-9+/]*={0,2}$/.test(s)) return Buffer.from(s, "base64");
    }
  }
  throw new Error(`not a dump value: ${JSON.stringify(v).slice(0, 80)}`);
}

// ---------------------------------------------------------------------------------------
// Reading a database.

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

type TableShape = {
  name: string;
  rowid: boolean;
  columns: string[];
  order: string;
  /** The INTEGER PRIMARY KEY column that is the rowid, if any. */
  alias: string | null;
};

/**
 * The tables a dump holds, by name. Left out: SQLite's own tables (`sqlite_sequence` is
 * carried in the manifest's `sequences`; `sqlite_stat*` are statistics ANALYZE rebuilds) and
 * the shadow tables of a virtual table (an FTS index's internals: the virtual table itself
 * is dumped by its columns and its rowid, and inserting them rebuilds the index).
 */
function tableShapes(db: DatabaseSync): TableShape[] {
  const list = db.prepare("PRAGMA main.table_list").all() as {
    name: string;
    type: string;
    wr: number;
  }[];
  const shapes: TableShape[] = [];
  for (const t of list) {
    if (t.type !== "table" && t.type !== "virtual") continue;
    if (t.name.startsWith("sqlite_")) continue;
    const info = db.prepare(`PRAGMA main.table_info(${q(t.name)})`).all() as {
      name: string;
      type: string;
      pk: number;
    }[];
    const columns = info.map((c) => c.name);
    const pk = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
    let rowid: boolean;
    let order: string;
    let alias: string | null = null;
    if (t.wr === 1) {
      rowid = false;
      order = pk.map((c) => q(c.name)).join(", ");
    } else {
      // An INTEGER PRIMARY KEY column is the rowid itself; otherwise the rowid is kept as
      // an extra leading value, since retention and history read in rowid order.
      if (pk.length === 1 && pk[0]!.type.toUpperCase() === "INTEGER") alias = pk[0]!.name;
      rowid = alias === null;
      order = "rowid";
      if (rowid && columns.some((c) => ["rowid", "_rowid_", "oid"].includes(c.toLowerCase()))) {
        throw new HolonError(
          "dump_unsupported",
          `table ${t.name} has a column named like its rowid; it cannot be dumped`,
        );
      }
    }
    shapes.push({ name: t.name, rowid, columns, order, alias });
  }
  return shapes.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * A database as a dump reads it: its tables, each table's rows in dump order with their
 * values as SQLite gives them (integers as bigints), and what the manifest records besides.
 * SQLite's is below; Postgres's at the end of the file.
 */
type StoreReader = {
  shapes: TableShape[];
  rows(shape: TableShape, each: (row: unknown[]) => void): void;
  migrations(): number[];
  sequences(): Record<string, number>;
  /** Each agent's newest event_seq, by agent id in bytewise order. */
  newestEventSeqs(): { agent_id: string; s: number }[];
  processing(): { id: string; agent_id: string }[];
};

function sqliteReader(db: DatabaseSync): StoreReader {
  const shapes = tableShapes(db);
  const has = (name: string) => shapes.some((t) => t.name === name);
  return {
    shapes,
    rows(shape, each) {
      const cols = [...(shape.rowid ? ["rowid"] : []), ...shape.columns.map(q)].join(", ");
      const stmt = db.prepare(`SELECT ${cols} FROM ${q(shape.name)} ORDER BY ${shape.order}`);
      stmt.setReadBigInts(true);
      stmt.setReturnArrays(true);
      for (const row of stmt.iterate() as Iterable<unknown[]>) each(row);
    },
    migrations: () =>
      has("schema_migrations")
        ? (
            db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as {
              version: number;
            }[]
          ).map((r) => r.version)
        : [],
    sequences() {
      const sequences: Record<string, number> = {};
      const seqTable = db
        .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_sequence'")
        .get();
      if (seqTable) {
        for (const r of db.prepare("SELECT name, seq FROM sqlite_sequence ORDER BY name").all() as {
          name: string;
          seq: number;
        }[])
          sequences[r.name] = r.seq;
      }
      return sequences;
    },
    newestEventSeqs: () => (has("events") ? newestEventSeqs(db) : []),
    processing: () => (has("messages") ? processingMessages(db) : []),
  };
}

// The two reads both backends run as written (text sorts bytewise on both).
const newestEventSeqs = (db: { prepare(sql: string): { all(): unknown[] } }) =>
  db
    .prepare("SELECT agent_id, MAX(event_seq) AS s FROM events GROUP BY agent_id ORDER BY agent_id")
    .all() as { agent_id: string; s: number }[];
const processingMessages = (db: { prepare(sql: string): { all(): unknown[] } }) =>
  (
    db
      .prepare("SELECT id, agent_id FROM messages WHERE status = 'processing' ORDER BY seq")
      .all() as { id: string; agent_id: string }[]
  ).map((r) => ({ id: r.id, agent_id: r.agent_id }));

type TableSink = { write(line: string): void; end(): void };

/** Every table's rows to the sink `open` gives for it, and what the manifest says of them. */
function contentsOf(reader: StoreReader, open: (shape: TableShape) => TableSink) {
  const tables: DumpTable[] = [];
  for (const shape of reader.shapes) {
    const hash = createHash("sha256");
    const sink = open(shape);
    let rows = 0;
    try {
      reader.rows(shape, (row) => {
        const line = JSON.stringify(row.map(encodeValue)) + "\n";
        hash.update(line);
        sink.write(line);
        rows++;
      });
    } finally {
      sink.end();
    }
    tables.push({
      name: shape.name,
      file: `${shape.name}.ndjson`,
      rowid: shape.rowid,
      columns: shape.columns,
      rows,
      sha256: hash.digest("hex"),
    });
  }
  const migrations = reader.migrations();
  const agents: Record<string, { newest_event_seq: number }> = {};
  for (const r of reader.newestEventSeqs()) agents[r.agent_id] = { newest_event_seq: r.s };
  return {
    schema_version: migrations.length > 0 ? Math.max(...migrations) : 0,
    migrations,
    tables,
    sequences: reader.sequences(),
    agents,
    processing: reader.processing(),
  } satisfies Contents;
}

/**
 * Run `fn` on a consistent view of the database. Stopped: the file opened read-only, read in
 * one transaction. Online: `VACUUM INTO` a private snapshot under the home (a read that goes
 * through SQLite's own locking, so the running host is never blocked for long and never sees
 * a second writer), read, then removed.
 */
function withView<T>(
  database: string,
  home: string,
  online: boolean,
  fn: (db: DatabaseSync) => T,
): T {
  if (!existsSync(database) || statSync(database).size === 0) {
    throw new HolonError("store_empty", `there is no database at ${database}`, {
      hint: "point --home at the home whose database you mean",
    });
  }
  if (!online) {
    const db = openReadOnly(database);
    try {
      db.exec("BEGIN");
      try {
        return fn(db);
      } finally {
        db.exec("COMMIT");
      }
    } finally {
      db.close();
    }
  }
  const tmp = mkdtempSync(join(home, `${SNAPSHOT_PREFIX}${process.pid}-`));
  try {
    const snapshot = join(tmp, "holon.db");
    closeSync(openSync(snapshot, "wx", 0o600));
    const src = openReadOnly(database);
    try {
      src.prepare("VACUUM INTO ?").run(snapshot);
    } finally {
      src.close();
    }
    const db = openReadOnly(snapshot);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** An online export's private snapshot directory in the home: the prefix, then its pid. */
const SNAPSHOT_PREFIX = ".store-snapshot-";
const SNAPSHOT_NAME = /^\.store-snapshot-([1-9]\d{0,9})-/;

/**
 * Remove the snapshot directories that online exports killed half-way left in `home`: those
 * whose exporting process is gone (`alive` tells). A running export's directory is kept, so
 * two exports may run at once. Returns the names removed.
 */
export function sweepSnapshots(home: string, alive: (pid: number) => boolean): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(home);
  } catch {
    return removed; // no home yet: nothing left behind
  }
  for (const name of names) {
    const m = SNAPSHOT_NAME.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    rmSync(join(home, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

function openReadOnly(path: string): DatabaseSync {
  try {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      db.exec("PRAGMA busy_timeout = 5000");
      db.prepare("SELECT COUNT(*) FROM sqlite_schema").get(); // a file that is no database fails here
    } catch (err) {
      db.close();
      throw err;
    }
    return db;
  } catch (err) {
    throw new HolonError(
      "database_unreadable",
      `${path} cannot be read as a database: ${err instanceof Error ? err.message : String(err)}`,
      { status: 503 },
    );
  }
}

// ---------------------------------------------------------------------------------------
// Export.

export type ExportOptions = {
  home: string;
  database: string;
  dir: string;
  holonVersion: string;
  /** A host runs on this home: read from a snapshot. */
  online: boolean;
  now?: () => Date;
};

export function exportStore(opts: ExportOptions): DumpManifest {
  return writeDump(opts, (open) => ({
    contents: withView(opts.database, resolve(opts.home), opts.online, (db) =>
      contentsOf(sqliteReader(db), open),
    ),
    taken: opts.online ? "online" : "stopped",
  }));
}

type Read = {
  contents: Contents;
  taken: DumpManifest["taken"];
  backend?: "postgres";
};

/**
 * Make the dump directory (new, or empty), have `read` write the table files through the
 * sinks `open` gives, then write the manifest. On any failure what was written is removed.
 */
function writeDump(
  opts: { home: string; dir: string; holonVersion: string; now?: () => Date },
  read: (open: (shape: TableShape) => TableSink) => Read,
): DumpManifest {
  const dir = resolve(opts.dir);
  let created = false;
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) {
      throw new HolonError("dump_dir_not_empty", `${dir} exists and is not a directory`, {
        hint: "name a new directory for the dump",
      });
    }
    if (readdirSync(dir).length > 0) {
      throw new HolonError("dump_dir_not_empty", `${dir} is not empty`, {
        hint: "name a new or empty directory for the dump",
      });
    }
    chmodSync(dir, 0o700);
  } else {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    created = true;
  }
  const written: string[] = [];
  try {
    const { contents, taken, backend } = read((shape) => {
      const path = join(dir, `${shape.name}.ndjson`);
      written.push(path);
      return fileWriter(path);
    });
    const manifest: DumpManifest = {
      format: DUMP_FORMAT,
      format_version: DUMP_FORMAT_VERSION,
      holon_version: opts.holonVersion,
      schema_version: contents.schema_version,
      migrations: contents.migrations,
      holon_home: resolve(opts.home),
      created_at: (opts.now?.() ?? new Date()).toISOString(),
      taken,
      ...(backend ? { backend } : {}),
      tables: contents.tables,
      sequences: contents.sequences,
      agents: contents.agents,
      processing: contents.processing,
    };
    const path = join(dir, "manifest.json");
    written.push(path);
    const fd = openSync(path, "wx", 0o600);
    try {
      writeSync(fd, JSON.stringify(manifest, null, 2) + "\n");
    } finally {
      closeSync(fd);
    }
    return manifest;
  } catch (err) {
    for (const path of written) rmSync(path, { force: true });
    if (created) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A private file written in chunks of about 1 MB. */
function fileWriter(path: string): TableSink {
  const fd = openSync(path, "wx", 0o600);
  let parts: string[] = [];
  let size = 0;
  const flush = () => {
    if (parts.length > 0) writeSync(fd, parts.join(""));
    parts = [];
    size = 0;
  };
  return {
    write(line) {
      parts.push(line);
      size += line.length;
      if (size >= WRITE_CHUNK) flush();
    },
    end() {
      try {
        flush();
      } finally {
        closeSync(fd);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------
// Reading a dump.

function corrupt(
  message: string,
  hint = "take the dump again; it was changed or cut short",
): HolonError {
  return new HolonError("dump_invalid", message, { hint });
}

/** The manifest of the dump in `dir`, checked for shape and format version. */
export function readManifest(dir: string): DumpManifest {
  const path = join(resolve(dir), "manifest.json");
  if (!existsSync(resolve(dir)) || !statSync(resolve(dir)).isDirectory()) {
    throw new HolonError("dump_not_found", `${resolve(dir)} is not a directory`, {
      hint: "name the directory `holon store export` wrote",
    });
  }
  if (!existsSync(path)) {
    throw new HolonError("dump_not_found", `${resolve(dir)} has no manifest.json`, {
      hint: "name the directory `holon store export` wrote",
    });
  }
  const fd = openSync(path, "r");
  let text: string;
  try {
    if (fstatSync(fd).size > MAX_MANIFEST_BYTES) throw corrupt(`${path} is too large`);
    text = readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw corrupt(`${path} is not JSON`);
  }
  const version = (raw as { format_version?: unknown } | null)?.format_version;
  if (
    (raw as { format?: unknown } | null)?.format === DUMP_FORMAT &&
    version !== DUMP_FORMAT_VERSION
  ) {
    throw new HolonError(
      "dump_format_unsupported",
      `${path} has dump format version ${JSON.stringify(version)}; this Holon reads version ${DUMP_FORMAT_VERSION}`,
      { hint: "import it with the Holon version that wrote it" },
    );
  }
  const parsed = Manifest.safeParse(raw);
  if (!parsed.success) {
    throw corrupt(`${path} is not a Holon store dump manifest: ${parsed.error.issues[0]?.message}`);
  }
  for (const t of parsed.data.tables) {
    if (t.file !== `${t.name}.ndjson`)
      throw corrupt(`${path}: table ${t.name} names file ${t.file}`);
  }
  return parsed.data;
}

/**
 * Each row of a table file, decoded, after checking the line is within `maxLine` bytes and
 * has the manifest's arity. Lines are split by hand rather than with readline, which would
 * buffer a line of any length before handing it over. Resolves to the file's row count and
 * SHA-256.
 */
async function readTable(
  dir: string,
  table: DumpTable,
  maxLine: number,
  onRow: ((row: (null | string | number | bigint | Uint8Array)[]) => void) | null,
): Promise<{ rows: number; sha256: string; bad: HolonError | undefined }> {
  const path = join(resolve(dir), table.file);
  if (!existsSync(path)) throw corrupt(`${path} is missing`);
  const hash = createHash("sha256");
  const width = table.columns.length + (table.rowid ? 1 : 0);
  let rows = 0;
  let held: Buffer[] = [];
  let heldBytes = 0;
  // When only checking, a bad line is remembered and the file read to its end: a file that
  // does not match its checksum is reported as changed, which says more than its first bad line.
  let bad: HolonError | undefined;
  const fail = (message: string) => {
    const err = corrupt(message);
    if (onRow) throw err;
    bad ??= err;
  };
  const line = (buf: Buffer) => {
    rows++;
    if (bad) return;
    let values: unknown;
    try {
      values = JSON.parse(buf.toString("utf8"));
    } catch {
      return fail(`${path} line ${rows} is not a JSON row (cut short?)`);
    }
    if (!Array.isArray(values) || values.length !== width) {
      return fail(`${path} line ${rows} does not have the ${width} values of its table`);
    }
    let decoded: (null | string | number | bigint | Uint8Array)[];
    try {
      decoded = values.map(decodeValue);
    } catch (err) {
      return fail(`${path} line ${rows}: ${(err as Error).message}`);
    }
    onRow?.(decoded);
  };
  const tooLong = () =>
    corrupt(
      `${path} line ${rows + 1} is longer than ${maxLine} bytes`,
      "a row line this long is not one Holon writes",
    );
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      if (heldBytes + piece.length > maxLine) throw tooLong();
      line(held.length > 0 ? Buffer.concat([...held, piece]) : piece);
      held = [];
      heldBytes = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      heldBytes += rest.length;
      if (heldBytes > maxLine) throw tooLong();
      held.push(rest);
    }
  }
  if (heldBytes > 0) fail(`${path} ends in the middle of a line (cut short?)`);
  return { rows, sha256: hash.digest("hex"), bad };
}

async function checkTableFile(dir: string, table: DumpTable, maxLine: number): Promise<void> {
  const got = await readTable(dir, table, maxLine, null);
  if (got.sha256 !== table.sha256) {
    throw corrupt(`${table.file}: its SHA-256 does not match the manifest (the file was changed)`);
  }
  if (got.bad) throw got.bad;
  if (got.rows !== table.rows) {
    throw corrupt(`${table.file}: ${got.rows} rows, the manifest says ${table.rows}`);
  }
}

// ---------------------------------------------------------------------------------------
// Import.

/**
 * Create the schema of `versions` in an empty database: the project's migrations, those
 * listed only, in their order (a dump from an older build is imported at its level; the
 * next start of the host runs the rest). The bookkeeping table is made as the store makes it.
 */
export function createSchema(db: DatabaseSync, versions: readonly number[]): void {
  const wanted = new Set(versions);
  migrationsTable(db);
  for (const m of MIGRATIONS) if (wanted.has(m.version)) applyMigration(db, m);
}

const IMPORT_PREFIX = ".holon.db.import-";

export type ImportOptions = {
  dir: string;
  home: string;
  database: string;
  maxLineBytes?: number;
};

/**
 * Restore the dump in `opts.dir` as the database of `opts.home`. The caller holds the home's
 * lock (src/host/lock.ts): no host may open the database while it is being made.
 */
export async function importStore(
  opts: ImportOptions,
): Promise<{ manifest: DumpManifest; rows: number }> {
  const manifest = readManifest(opts.dir);
  const home = resolve(opts.home);
  checkDumpFor(manifest, home);
  refuseNonEmpty(opts.database);
  const maxLine = opts.maxLineBytes ?? MAX_DUMP_LINE_BYTES;
  for (const table of manifest.tables) await checkTableFile(opts.dir, table, maxLine);

  mkdirSync(home, { recursive: true, mode: 0o700 });
  // What an import killed half-way left behind (the caller holds the home's lock, so no
  // other import is running).
  for (const name of readdirSync(home)) {
    if (name.startsWith(IMPORT_PREFIX)) rmSync(join(home, name), { force: true });
  }
  const tmp = join(home, `${IMPORT_PREFIX}${randomBytes(6).toString("hex")}`);
  closeSync(openSync(tmp, "wx", 0o600));
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(tmp);
    // As a new store does, before the first table exists (db.ts prepareIncrementalVacuum).
    db.exec("PRAGMA auto_vacuum = INCREMENTAL");
    db.exec("PRAGMA foreign_keys = OFF");
    db.exec("BEGIN");
    createSchema(db, manifest.migrations);
    db.exec("COMMIT");
    const shapes = tableShapes(db);
    const mismatch = schemaMismatch(shapes, manifest.tables);
    if (mismatch) {
      throw corrupt(
        `the dump's tables do not match schema level ${manifest.schema_version}: ${mismatch}`,
        "the dump was written by a different build of Holon",
      );
    }
    let rows = 0;
    db.exec("BEGIN");
    try {
      // The dump carries every table's rows as they were, the tallies the triggers keep
      // included: the triggers are lifted while rows go in, so nothing is counted twice.
      const triggers = db
        .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")
        .all() as { name: string; sql: string }[];
      for (const t of triggers) db.exec(`DROP TRIGGER ${q(t.name)}`);
      for (const shape of shapes) db.exec(`DELETE FROM ${q(shape.name)}`);
      for (const table of manifest.tables) {
        const names = [...(table.rowid ? ["rowid"] : []), ...table.columns.map(q)];
        const insert = db.prepare(
          `INSERT INTO ${q(table.name)} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
        );
        // Read again, and checked again: the file must not change between check and use.
        const got = await readTable(opts.dir, table, maxLine, (row) => {
          try {
            insert.run(...row);
          } catch (err) {
            throw corrupt(`${table.file}: a row cannot be stored: ${(err as Error).message}`);
          }
        });
        if (got.sha256 !== table.sha256 || got.rows !== table.rows) {
          throw corrupt(`${table.file} changed while it was imported`);
        }
        rows += got.rows;
      }
      if (db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_sequence'").get()) {
        db.exec("DELETE FROM sqlite_sequence");
      }
      for (const [name, seq] of Object.entries(manifest.sequences)) {
        db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").run(name, seq);
      }
      for (const t of triggers) db.exec(t.sql);
      // The migrations the rows record must be the ones the schema was built from, or the
      // next start would run a migration twice or skip one.
      const recorded = (
        db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as {
          version: number;
        }[]
      ).map((r) => r.version);
      const built = [...manifest.migrations].sort((a, b) => a - b);
      if (recorded.join(",") !== built.join(",")) {
        throw corrupt(
          `schema_migrations.ndjson records migrations ${recorded.join(", ")}, the manifest ${built.join(", ")}`,
        );
      }
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
    db.exec("PRAGMA journal_mode = WAL");
    db.close();
    db = undefined;
    refuseNonEmpty(opts.database);
    for (const suffix of ["-wal", "-shm"]) rmSync(opts.database + suffix, { force: true });
    renameSync(tmp, opts.database);
    return { manifest, rows };
  } catch (err) {
    if (db?.isOpen) db.close();
    for (const suffix of ["", "-journal", "-wal", "-shm"]) rmSync(tmp + suffix, { force: true });
    throw err;
  }
}

/** Refuse a dump taken under another path, or one with migrations this build does not know. */
function checkDumpFor(manifest: DumpManifest, home: string): void {
  if (manifest.holon_home !== home) {
    throw new HolonError(
      "dump_home_mismatch",
      `the dump was taken from ${manifest.holon_home}, not ${home}; the paths must match`,
      {
        hint: `its records hold absolute paths into that home (agent homes, worktrees, task output): restore the home's files to ${manifest.holon_home} and import there`,
        details: { dump_home: manifest.holon_home, target_home: home },
      },
    );
  }
  const known = new Set(MIGRATIONS.map((m) => m.version));
  const unknown = manifest.migrations.filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new HolonError(
      "dump_schema_newer",
      `the dump's schema has migrations this Holon does not know (${unknown.join(", ")}); it was written by a newer version (${manifest.holon_version})`,
      { hint: `import it with Holon ${manifest.holon_version} or newer` },
    );
  }
}

/** Refuse a database that holds anything (a file of zero bytes, as a fresh store leaves, is empty). */
function refuseNonEmpty(database: string): void {
  const has = (path: string) => existsSync(path) && statSync(path).size > 0;
  if (!has(database) && !has(database + "-wal")) return;
  throw new HolonError("import_target_not_empty", `${database} already holds a database`, {
    hint: "import only into a home whose database was removed (holon.db, holon.db-wal, holon.db-shm); move it aside first",
  });
}

function schemaMismatch(shapes: TableShape[], tables: DumpTable[]): string | undefined {
  const made = new Map(shapes.map((s) => [s.name, s]));
  for (const t of tables) {
    const s = made.get(t.name);
    if (!s) return `table ${t.name} is not in the schema`;
    if (s.rowid !== t.rowid || s.columns.join(",") !== t.columns.join(",")) {
      return `table ${t.name} has columns (${s.columns.join(", ")}), the dump (${t.columns.join(", ")})`;
    }
    made.delete(t.name);
  }
  const missing = [...made.keys()];
  return missing.length > 0 ? `the dump has no file for table ${missing.join(", ")}` : undefined;
}

// ---------------------------------------------------------------------------------------
// Verify.

export type Difference = { what: string; dump: string; home: string };

export type VerifyOptions = {
  dir: string;
  home: string;
  maxLineBytes?: number;
} & (
  | { database: string; online: boolean }
  /** A Postgres database instead of the home's SQLite file. */
  | { databaseUrl: string }
);

/**
 * Compare a dump with a home's database: the schema level, each table's row count and
 * checksum (computed as an export would, without writing), the AUTOINCREMENT counters, each
 * agent's newest event_seq and the messages in `processing`. The dump's own files are
 * checked against its manifest too, so `identical` also means the dump can be imported.
 */
export async function verifyStore(
  opts: VerifyOptions,
): Promise<{ identical: boolean; tables: number; rows: number; differences: Difference[] }> {
  const manifest = readManifest(opts.dir);
  const maxLine = opts.maxLineBytes ?? MAX_DUMP_LINE_BYTES;
  const diffs: Difference[] = [];
  const add = (what: string, dump: unknown, home: unknown) =>
    diffs.push({ what, dump: show(dump), home: show(home) });
  for (const t of manifest.tables) {
    try {
      await checkTableFile(opts.dir, t, maxLine);
    } catch (err) {
      add(`dump file ${t.file}`, (err as Error).message, "-");
    }
  }
  const discard = () => ({ write() {}, end() {} });
  const live =
    "databaseUrl" in opts
      ? await postgresView(opts.databaseUrl, (reader) => contentsOf(reader, discard))
      : withView(opts.database, resolve(opts.home), opts.online, (db) =>
          contentsOf(sqliteReader(db), discard),
        );
  if (manifest.holon_home !== resolve(opts.home))
    add("home path", manifest.holon_home, resolve(opts.home));
  if (manifest.migrations.join(",") !== live.migrations.join(",")) {
    add("schema migrations", manifest.migrations.join(","), live.migrations.join(","));
  }
  const liveTables = new Map(live.tables.map((t) => [t.name, t]));
  for (const t of manifest.tables) {
    const l = liveTables.get(t.name);
    liveTables.delete(t.name);
    if (!l) {
      add(`table ${t.name}`, `${t.rows} rows`, "missing");
      continue;
    }
    if (l.columns.join(",") !== t.columns.join(",")) {
      add(`table ${t.name} columns`, t.columns.join(","), l.columns.join(","));
    }
    if (l.rows !== t.rows) add(`table ${t.name} rows`, t.rows, l.rows);
    if (l.sha256 !== t.sha256)
      add(`table ${t.name} sha256`, t.sha256.slice(0, 16), l.sha256.slice(0, 16));
  }
  for (const l of liveTables.values()) add(`table ${l.name}`, "missing", `${l.rows} rows`);
  for (const name of new Set([
    ...Object.keys(manifest.sequences),
    ...Object.keys(live.sequences),
  ])) {
    if (manifest.sequences[name] !== live.sequences[name]) {
      add(`sequence ${name}`, manifest.sequences[name], live.sequences[name]);
    }
  }
  for (const id of new Set([...Object.keys(manifest.agents), ...Object.keys(live.agents)].sort())) {
    const a = manifest.agents[id]?.newest_event_seq;
    const b = live.agents[id]?.newest_event_seq;
    if (a !== b) add(`agent ${id} newest event_seq`, a, b);
  }
  const dumpProc = new Map(manifest.processing.map((m) => [m.id, m.agent_id]));
  const liveProc = new Map(live.processing.map((m) => [m.id, m.agent_id]));
  for (const id of new Set([...dumpProc.keys(), ...liveProc.keys()])) {
    if (dumpProc.get(id) !== liveProc.get(id)) {
      add(`processing message ${id}`, dumpProc.get(id), liveProc.get(id));
    }
  }
  return {
    identical: diffs.length === 0,
    tables: manifest.tables.length,
    rows: manifest.tables.reduce((n, t) => n + t.rows, 0),
    differences: diffs,
  };
}

function show(v: unknown): string {
  return v === undefined || v === null ? "-" : String(v);
}

// ---------------------------------------------------------------------------------------
// Postgres. Its schema is the SQLite migrations' written in Postgres terms (pg-schema.ts):
// the same tables with the same columns in the same order, plus a `rowid` column wherever
// SQLite has an implicit rowid (an identity of its own, or generated from the INTEGER
// PRIMARY KEY it aliases). So a dump reads and writes exactly the SQLite columns, and the
// rowid where SQLite's dump carries one, and the files are the same byte for byte. The
// codec's body columns are tagged bytea there (pg.ts): tagged on the way in here, untagged
// by the connection on the way out; the tag never reaches a file. The code is loaded only
// when a database URL is given.

/** Rows per FETCH of an export, and at most per INSERT of an import. */
const PG_FETCH_ROWS = 500;
const PG_INSERT_ROWS = 1000;
/** Below Postgres's 65535 parameters per statement. */
const PG_MAX_PARAMS = 30_000;
/** An INSERT is sent once its values reach this size (bodies may be large). */
const PG_INSERT_BYTES = 8 * 1024 * 1024;
/** The first byte of a body column: what was written (as pg.ts tags it). */
const PG_TAG_TEXT = 0;
const PG_TAG_BYTES = 1;

type PgColumn = { name: string; type: string; identity: boolean };

async function loadPostgres() {
  const [pg, open] = await Promise.all([import("./pg.ts"), import("./pg-open.ts")]);
  return {
    PgDatabase: pg.PgDatabase,
    installSchema: open.installSchema,
    isEmptyDatabase: open.isEmptyDatabase,
    HOST_LOCK_KEY: open.HOST_LOCK_KEY,
  };
}

/** The SQLite schema of `versions`, as tables a dump holds, and its AUTOINCREMENT tables. */
function sqliteSchemaOf(versions: readonly number[]): {
  shapes: TableShape[];
  autoincrement: Set<string>;
} {
  const mem = new DatabaseSync(":memory:");
  try {
    createSchema(mem, versions);
    const autoincrement = new Set(
      (
        mem.prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table'").all() as {
          name: string;
          sql: string;
        }[]
      )
        .filter((t) => /\bAUTOINCREMENT\b/i.test(t.sql))
        .map((t) => t.name),
    );
    return { shapes: tableShapes(mem), autoincrement };
  } finally {
    mem.close();
  }
}

/** Every table of the database's schema and its columns, in their order. */
function pgColumns(db: PgDatabase): Map<string, PgColumn[]> {
  const rows = db
    .prepare(
      `SELECT table_name, column_name, data_type, is_identity FROM information_schema.columns
       WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
    )
    .all() as { table_name: string; column_name: string; data_type: string; is_identity: string }[];
  const out = new Map<string, PgColumn[]>();
  for (const r of rows) {
    let cols = out.get(r.table_name);
    if (!cols) out.set(r.table_name, (cols = []));
    cols.push({ name: r.column_name, type: r.data_type, identity: r.is_identity === "YES" });
  }
  return out;
}

/** What differs between the SQLite tables and the database's, or undefined. */
function pgMismatch(shapes: TableShape[], cols: Map<string, PgColumn[]>): string | undefined {
  for (const s of shapes) {
    const have = cols.get(s.name)?.map((c) => c.name);
    if (!have) return `it has no table ${s.name}`;
    const want = [...s.columns, ...(s.rowid || s.alias !== null ? ["rowid"] : [])];
    if (have.join(",") !== want.join(",")) {
      return `table ${s.name} has columns (${have.join(", ")}), the schema (${want.join(", ")})`;
    }
  }
  return undefined;
}

function pgReader(
  db: PgDatabase,
  migrations: number[],
  shapes: TableShape[],
  autoincrement: Set<string>,
  cols: Map<string, PgColumn[]>,
): StoreReader {
  return {
    shapes,
    rows(shape, each) {
      const names = [...(shape.rowid ? ["rowid"] : []), ...shape.columns].map(q).join(", ");
      // The INTEGER PRIMARY KEY orders as the rowid it generates, and has the index.
      const order = shape.alias !== null ? q(shape.alias) : shape.order;
      db.exec(
        `DECLARE holon_dump NO SCROLL CURSOR FOR SELECT ${names} FROM ${q(shape.name)} ORDER BY ${order}`,
      );
      for (;;) {
        const got = db.request({
          op: "query",
          text: `FETCH FORWARD ${PG_FETCH_ROWS} FROM holon_dump`,
          values: [],
          exact: true,
        }).rows as unknown[][];
        for (const row of got) each(row);
        if (got.length < PG_FETCH_ROWS) break;
      }
      db.exec("CLOSE holon_dump");
    },
    migrations: () => migrations,
    sequences() {
      // SQLite's counter is the highest id the table ever handed out; here that is the
      // identity's sequence, or its highest row where rows were given their ids.
      const out: Record<string, number> = {};
      for (const table of [...autoincrement].sort()) {
        const id = cols.get(table)?.find((c) => c.identity && c.name !== "rowid");
        if (!id) continue;
        const r = db
          .prepare(
            `SELECT pg_sequence_last_value(pg_get_serial_sequence(?, ?)::regclass) AS v, (SELECT MAX(${q(id.name)}) FROM ${q(table)}) AS m`,
          )
          .get(table, id.name) as { v: number | null; m: number | null };
        if (r.v === null && r.m === null) continue;
        out[table] = Math.max(r.v ?? r.m!, r.m ?? r.v!);
      }
      return out;
    },
    newestEventSeqs: () => (cols.has("events") ? newestEventSeqs(db) : []),
    processing: () => (cols.has("messages") ? processingMessages(db) : []),
  };
}

/** Whether a host holds the database's one-host advisory lock (pg-open.ts) right now. */
function hostRunsOn(db: PgDatabase, key: number): boolean {
  const r = db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND classid = ?::bigint::oid AND objid = ?::bigint::oid AND objsubid = 1) AS held`,
    )
    .get(Math.floor(key / 2 ** 32), key % 2 ** 32) as { held: number };
  return r.held === 1;
}

/**
 * Run `fn` on a consistent snapshot of a Holon store in Postgres: one REPEATABLE READ,
 * READ ONLY transaction, which a running host never waits for. It takes no lock and writes
 * nothing: an empty database, or one that is not a Holon store, is refused, never set up.
 */
async function postgresView<T>(
  url: string,
  fn: (reader: StoreReader, taken: DumpManifest["taken"]) => T,
): Promise<T> {
  return readPostgres(await loadPostgres(), url, fn);
}

type PgModules = Awaited<ReturnType<typeof loadPostgres>>;

function readPostgres<T>(
  pg: PgModules,
  url: string,
  fn: (reader: StoreReader, taken: DumpManifest["taken"]) => T,
): T {
  const db = new pg.PgDatabase(url);
  try {
    if (pg.isEmptyDatabase(db)) {
      throw new HolonError("store_empty", `the database at ${db.where} holds no tables`, {
        hint: "name the database the home's host uses (--database-url)",
      });
    }
    db.exec("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    try {
      const present = db
        .prepare("SELECT to_regclass('schema_migrations') IS NOT NULL AS ok")
        .get() as { ok: number };
      if (present.ok !== 1) {
        throw new HolonError(
          "database_not_holon",
          `the database at ${db.where} is not a Holon store (it has no schema_migrations table)`,
          { hint: "name the database the home's host uses (--database-url)" },
        );
      }
      const migrations = (
        db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as {
          version: number;
        }[]
      ).map((r) => r.version);
      const known = new Set(MIGRATIONS.map((m) => m.version));
      const unknown = migrations.filter((v) => !known.has(v));
      if (unknown.length > 0) {
        throw new HolonError(
          "database_schema_newer",
          `the database at ${db.where} was written by a newer Holon (migrations ${unknown.join(", ")})`,
          { hint: "run the Holon version that wrote it" },
        );
      }
      const { shapes, autoincrement } = sqliteSchemaOf(migrations);
      const cols = pgColumns(db);
      const mismatch = pgMismatch(shapes, cols);
      if (mismatch) {
        throw new HolonError(
          "database_schema_mismatch",
          `the database at ${db.where} does not have the tables of its schema level: ${mismatch}`,
          { hint: "it was changed by hand, or written by a different build of Holon" },
        );
      }
      const taken = hostRunsOn(db, pg.HOST_LOCK_KEY) ? "online" : "stopped";
      return fn(pgReader(db, migrations, shapes, autoincrement, cols), taken);
    } finally {
      try {
        db.exec("ROLLBACK");
      } catch {
        // the connection is gone; what failed is reported
      }
    }
  } finally {
    db.close();
  }
}

export type PostgresExportOptions = {
  home: string;
  databaseUrl: string;
  dir: string;
  holonVersion: string;
  now?: () => Date;
};

/**
 * `exportStore` from a Postgres database: the same files a SQLite export of the same rows
 * writes, the manifest with `backend: "postgres"`. `taken` says whether a host held the
 * database then (the read is a consistent snapshot either way).
 */
export async function exportPostgres(opts: PostgresExportOptions): Promise<DumpManifest> {
  const pg = await loadPostgres();
  return writeDump(opts, (open) =>
    readPostgres(pg, opts.databaseUrl, (reader, taken) => ({
      contents: contentsOf(reader, open),
      taken,
      backend: "postgres",
    })),
  );
}

export type PostgresImportOptions = {
  dir: string;
  home: string;
  databaseUrl: string;
  maxLineBytes?: number;
};

/**
 * Restore the dump in `opts.dir` into an empty Postgres database, for the home at the path
 * it was taken from. Refused before anything is written: another path, a schema level other
 * than this build's (the Postgres backend has no in-place migrations), a database that holds
 * anything or that a host holds, and any file that does not match the manifest. Then the
 * schema, every row with its ids and rowids, and the identity sequences moved past them (and
 * past SQLite's AUTOINCREMENT counters) go in as one transaction: a failed import leaves the
 * database empty.
 */
export async function importPostgres(
  opts: PostgresImportOptions,
): Promise<{ manifest: DumpManifest; rows: number; where: string }> {
  const manifest = readManifest(opts.dir);
  const home = resolve(opts.home);
  checkDumpFor(manifest, home);
  const current = MIGRATIONS.map((m) => m.version).sort((a, b) => a - b);
  const dumped = [...manifest.migrations].sort((a, b) => a - b);
  if (dumped.join(",") !== current.join(",")) {
    const missing = current.filter((v) => !dumped.includes(v));
    if (missing.length === 0) throw corrupt("the manifest lists a migration more than once");
    throw new HolonError(
      "dump_schema_older",
      `the dump is at an older schema level (it lacks migrations ${missing.join(", ")}), and the Postgres backend cannot migrate a schema in place`,
      {
        hint: "import the dump into a SQLite home (holon store import without --database-url), start the host there once (it migrates), stop it, export again and import that dump",
      },
    );
  }
  const { shapes, autoincrement } = sqliteSchemaOf(manifest.migrations);
  const mismatch = schemaMismatch(shapes, manifest.tables);
  if (mismatch) {
    throw corrupt(
      `the dump's tables do not match schema level ${manifest.schema_version}: ${mismatch}`,
      "the dump was written by a different build of Holon",
    );
  }
  const pg = await loadPostgres();
  const db = new pg.PgDatabase(opts.databaseUrl);
  try {
    // Held until the connection closes: no host starts on the database while it is made.
    const got = db.prepare("SELECT pg_try_advisory_lock(?) AS ok").get(pg.HOST_LOCK_KEY) as {
      ok: number;
    };
    if (got.ok !== 1) {
      throw new HolonError("database_locked", `a Holon host is using the database at ${db.where}`, {
        hint: "import only into a new, empty database, with no host on it",
      });
    }
    if (!pg.isEmptyDatabase(db)) {
      throw new HolonError(
        "import_target_not_empty",
        `the database at ${db.where} already holds tables`,
        {
          hint: "import only into a new, empty database (createdb holon_new), then point the home at it",
        },
      );
    }
    const maxLine = opts.maxLineBytes ?? MAX_DUMP_LINE_BYTES;
    for (const table of manifest.tables) await checkTableFile(opts.dir, table, maxLine);

    let rows = 0;
    db.exec("BEGIN");
    try {
      pg.installSchema(inSavepoint(db));
      const cols = pgColumns(db);
      const wrong = pgMismatch(shapes, cols);
      if (wrong) throw new Error(`the Postgres schema does not match SQLite's: ${wrong}`);
      // The dump carries every row as it was, the tallies the triggers keep and the
      // migrations' own rows included: the triggers are off while rows go in, and what
      // making the schema wrote is replaced.
      for (const s of shapes) {
        db.exec(`ALTER TABLE ${q(s.name)} DISABLE TRIGGER USER`);
        db.exec(`DELETE FROM ${q(s.name)}`);
      }
      for (const table of manifest.tables) {
        const insert = pgInserter(db, table, cols.get(table.name)!);
        // Read again, and checked again: the file must not change between check and use.
        const got = await readTable(opts.dir, table, maxLine, (row) => insert.add(row));
        insert.end();
        if (got.sha256 !== table.sha256 || got.rows !== table.rows) {
          throw corrupt(`${table.file} changed while it was imported`);
        }
        rows += got.rows;
      }
      // New rows continue numbering as SQLite would: after the highest id, and after an
      // AUTOINCREMENT table's counter.
      for (const s of shapes) {
        for (const c of cols.get(s.name)!) {
          if (!c.identity) continue;
          const r = db.request({
            op: "query",
            text: `SELECT MAX(${q(c.name)}) FROM ${q(s.name)}`,
            values: [],
            exact: true,
          }).rows[0] as [bigint | null];
          let next = r[0] ?? 0n;
          const counter = manifest.sequences[s.name];
          if (autoincrement.has(s.name) && c.name !== "rowid" && counter !== undefined) {
            if (BigInt(counter) > next) next = BigInt(counter);
          }
          if (next < 1n) continue;
          db.request({
            op: "query",
            text: "SELECT setval(pg_get_serial_sequence($1, $2), $3::bigint, true)",
            values: [s.name, c.name, next.toString()],
          });
        }
        db.exec(`ALTER TABLE ${q(s.name)} ENABLE TRIGGER USER`);
      }
      // The migrations the rows record must be the ones the schema stands for.
      const recorded = (
        db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as {
          version: number;
        }[]
      ).map((r) => r.version);
      if (recorded.join(",") !== dumped.join(",")) {
        throw corrupt(
          `schema_migrations.ndjson records migrations ${recorded.join(", ")}, the manifest ${dumped.join(", ")}`,
        );
      }
      db.exec("COMMIT");
    } catch (err) {
      try {
        db.exec("ROLLBACK");
      } catch {
        // the connection is gone, and the transaction with it
      }
      throw err;
    }
    return { manifest, rows, where: db.where };
  } finally {
    db.close();
  }
}

/**
 * `db` for installSchema inside the import's transaction: its BEGIN, COMMIT and ROLLBACK
 * become a savepoint's, so the schema commits with the rows or not at all.
 */
function inSavepoint(db: PgDatabase): PgDatabase {
  const nested: Record<string, string> = {
    BEGIN: "SAVEPOINT holon_schema",
    COMMIT: "RELEASE SAVEPOINT holon_schema",
    ROLLBACK: "ROLLBACK TO SAVEPOINT holon_schema",
  };
  return new Proxy(db, {
    get(target, key) {
      if (key === "exec") {
        return (sql: string) => target.exec(nested[sql.trim().toUpperCase()] ?? sql);
      }
      const v: unknown = Reflect.get(target, key);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

type Value = null | string | number | bigint | Uint8Array;

/**
 * Rows of one table into Postgres, many to an INSERT. Each value is checked against its
 * column's type, as Postgres would otherwise convert it (and a second export would differ):
 * an integer for bigint, a real for double precision, text for text. A bytea column (the
 * codec's bodies) takes text or bytes, tagged as pg.ts tags them: the connection untags
 * every bytea it reads.
 */
function pgInserter(
  db: PgDatabase,
  table: DumpTable,
  columns: PgColumn[],
): { add(row: Value[]): void; end(): void } {
  const names = [...(table.rowid ? ["rowid"] : []), ...table.columns];
  const types = names.map((n) => columns.find((c) => c.name === n)!.type);
  const perInsert = Math.max(1, Math.min(PG_INSERT_ROWS, Math.floor(PG_MAX_PARAMS / names.length)));
  const head = `INSERT INTO ${q(table.name)} (${names.map(q).join(", ")}) OVERRIDING SYSTEM VALUE VALUES `;
  const textFor = (n: number) => {
    let p = 0;
    const one = () => `(${types.map((t) => `$${++p}::${t}`).join(", ")})`;
    return head + Array.from({ length: n }, one).join(", ");
  };
  const full = textFor(perInsert);
  let values: unknown[] = [];
  let held = 0;
  let bytes = 0;
  let line = 0;
  let first = 1;
  const flush = () => {
    if (held === 0) return;
    try {
      db.request({
        op: "query",
        ...(held === perInsert ? { name: `holon_dump_${table.name}` } : {}),
        text: held === perInsert ? full : textFor(held),
        values,
      });
    } catch (err) {
      throw corrupt(
        `${table.file}: a row cannot be stored (lines ${first}–${line}): ${(err as Error).message}`,
      );
    }
    values = [];
    held = 0;
    bytes = 0;
    first = line + 1;
  };
  return {
    add(row) {
      line++;
      for (let i = 0; i < row.length; i++) {
        const v = row[i]!;
        const type = types[i]!;
        const bad = () =>
          corrupt(
            `${table.file} line ${line}: a row cannot be stored: column ${names[i]} holds ${kindOf(v)}, which Postgres keeps as ${type} only by changing it`,
          );
        if (v === null) values.push(null);
        else if (type === "bytea") {
          if (typeof v !== "string" && !(v instanceof Uint8Array)) throw bad();
          const body = typeof v === "string" ? Buffer.from(v, "utf8") : v;
          const out = Buffer.allocUnsafe(body.length + 1);
          out[0] = typeof v === "string" ? PG_TAG_TEXT : PG_TAG_BYTES;
          out.set(body, 1);
          values.push(out);
          bytes += out.length;
        } else if (type === "bigint") {
          if (typeof v !== "bigint") throw bad();
          values.push(v.toString());
        } else if (type === "double precision") {
          if (typeof v !== "number") throw bad();
          values.push(Object.is(v, -0) ? "-0" : String(v));
        } else if (type === "text") {
          if (typeof v !== "string") throw bad();
          values.push(v);
          bytes += v.length;
        } else {
          throw bad();
        }
      }
      held++;
      if (held === perInsert || bytes >= PG_INSERT_BYTES) flush();
    },
    end: flush,
  };
}

function kindOf(v: Value): string {
  if (typeof v === "bigint") return "an integer";
  if (typeof v === "number") return "a real";
  if (typeof v === "string") return "text";
  return "bytes";
}
