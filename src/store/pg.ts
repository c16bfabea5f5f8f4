// The Postgres backend's connection: the same synchronous `SqlDatabase` the repositories use
// on SQLite, so one set of repositories, caches and transaction rules serves both backends.
// Each statement is posted to a worker thread that holds the `pg` client (pg-worker.ts) while
// this thread waits on a shared flag for the answer. A statement costs a loopback round trip
// (about 0.1–0.3 ms) during which this thread does nothing else; transactions are short and
// their bodies await only store calls (the seam's rule), so a turn's store time stays a few
// milliseconds. Loaded with `await import()` only when a database URL is configured.
import { fileURLToPath } from "node:url";
import type { SQLInputValue } from "node:sqlite";
import { HolonError } from "../domain/errors.ts";
import type { SqlDatabase, SqlRow, SqlStatement } from "./sql.ts";
import type { PgReply, PgRequest } from "./pg-worker.ts";
import { maskDatabaseUrl } from "./url.ts";

/** pg-worker.ts's answer when the one-host lock is held elsewhere (not imported: that module loads pg). */
const LOCK_REFUSED = "HOLON_LOCKED";

const TAG_TEXT = 0;
const TAG_BYTES = 1;

/** How long one statement may take before the store gives up on the connection. */
const STATEMENT_WAIT_MS = 60_000;

/** Columns that hold either JSON text or a compressed blob (the codec's bodies): tagged bytea. */
export const BODY_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  messages: ["envelope"],
  briefs: ["data"],
  events: ["body"],
  transcript: ["body"],
};

/** Tables without an implicit row id on SQLite (WITHOUT ROWID): no `rowid` column here either. */
export const NO_ROWID = new Set([
  "retention_floors",
  "store_stats",
  "work_agent_state",
  "agent_workspaces",
  "agent_skills",
  "working_memory",
  "spend_ledger_meta",
  "trace_links",
]);

export type PgTranslation = {
  text: string;
  /** Parameter positions written to a body column (tagged before sending). */
  tagged: number[];
  /** An INSERT into a table with a row id: RETURNING rowid was added for lastInsertRowid. */
  returnsRowid: boolean;
};

/** Split a comma list at depth 0 (outside parentheses and quotes). */
export function splitTop(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      out.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(list.slice(start).trim());
  return out;
}

/**
 * A statement in SQLite's dialect, in Postgres's: numbered parameters, `BEGIN` for
 * `BEGIN IMMEDIATE`, `ON CONFLICT DO NOTHING` for `INSERT OR IGNORE`, GREATEST for the
 * two-argument MAX, LIMIT ALL for LIMIT -1, and RETURNING rowid where the caller may read lastInsertRowid. The few
 * statements that need more (JSON functions, PRAGMAs) branch on `isPostgres` where they live.
 */
export function translate(sql: string): PgTranslation {
  let text = sql.trim().replace(/;\s*$/, "");
  if (/^BEGIN IMMEDIATE$/i.test(text)) return { text: "BEGIN", tagged: [], returnsRowid: false };
  let ignore = false;
  text = text.replace(/^INSERT OR IGNORE INTO/i, () => {
    ignore = true;
    return "INSERT INTO";
  });
  text = text.replace(/\bMAX\(([^(),]+),([^(),]+)\)/g, "GREATEST($1,$2)");
  // SQLite's "no limit" (LIMIT -1, used with OFFSET) is Postgres's LIMIT ALL.
  text = text.replace(/\bLIMIT -1\b/gi, "LIMIT ALL");
  // Which parameters land in a body column.
  const tagged: number[] = [];
  const insert = /^INSERT INTO\s+"?(\w+)"?\s*\(([^)]*)\)\s*VALUES\s*\(/i.exec(text);
  let table: string | null = null;
  if (insert) {
    table = insert[1]!;
    const bodies = BODY_COLUMNS[table];
    if (bodies) {
      const cols = insert[2]!.split(",").map((c) => c.trim().replace(/"/g, ""));
      const rest = text.slice(insert[0].length);
      let depth = 1;
      let end = 0;
      for (; end < rest.length && depth > 0; end++) {
        if (rest[end] === "(") depth++;
        else if (rest[end] === ")") depth--;
      }
      let param = 0;
      splitTop(rest.slice(0, end - 1)).forEach((item, i) => {
        const n = (item.match(/\?/g) ?? []).length;
        if (item === "?" && bodies.includes(cols[i]!)) tagged.push(param);
        param += n;
      });
    }
  }
  // Numbered parameters, outside quoted text.
  let n = 0;
  let out = "";
  let quote: string | null = null;
  for (const c of text) {
    if (quote) {
      if (c === quote) quote = null;
      out += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      out += c;
    } else if (c === "?") out += `$${++n}`;
    else out += c;
  }
  text = out;
  if (ignore) text += " ON CONFLICT DO NOTHING";
  const returnsRowid =
    table !== null && !NO_ROWID.has(table) && !/\bRETURNING\b/i.test(text) && /^INSERT/i.test(text);
  if (returnsRowid) text += " RETURNING rowid";
  return { text, tagged, returnsRowid };
}

function tag(v: SQLInputValue): Uint8Array | null {
  if (v === null) return null;
  if (typeof v === "string") {
    const body = Buffer.from(v, "utf8");
    const out = new Uint8Array(body.length + 1);
    out[0] = TAG_TEXT;
    out.set(body, 1);
    return out;
  }
  if (ArrayBuffer.isView(v)) {
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    const out = new Uint8Array(bytes.length + 1);
    out[0] = TAG_BYTES;
    out.set(bytes, 1);
    return out;
  }
  throw new TypeError(`a body column takes text or bytes, not ${typeof v}`);
}

function plain(v: SQLInputValue): unknown {
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "boolean") return v ? 1 : 0;
  if (v !== null && typeof v === "object" && ArrayBuffer.isView(v)) {
    return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  }
  return v;
}

/** A Postgres error, with its SQLSTATE as `pgCode` (40001: serialization, 40P01: deadlock). */
export class PgError extends Error {
  readonly pgCode: string | undefined;
  constructor(e: { message: string; code?: string; detail?: string }) {
    super(e.detail ? `${e.message} (${e.detail})` : e.message);
    this.name = "PgError";
    this.pgCode = e.code;
  }
}

/**
 * The worker's Node flags: the host's, inherited (undefined), unless they give Node a script
 * to run (`-e`/`--eval`/`-p`/`--print`, `--input-type`): a worker inherits those too, and
 * would run the host's eval'd script instead of waiting on its port. Then it gets none (a
 * worker refuses an explicit list holding the host's V8 heap flags, and needs no other).
 */
export function workerExecArgv(argv: readonly string[]): string[] | undefined {
  const script = argv.some(
    (a) =>
      ["-e", "--eval", "-p", "--print", "-pe", "--input-type"].includes(a) ||
      /^--(eval|print|input-type)=/.test(a),
  );
  return script ? [] : undefined;
}

type Started = {
  post(req: PgRequest): PgReply;
  end(): void;
};

function startWorker(url: string): Started {
  const { Worker, MessageChannel, receiveMessageOnPort } =
    process.getBuiltinModule("node:worker_threads");
  const shared = new SharedArrayBuffer(4);
  const flag = new Int32Array(shared);
  const { port1, port2 } = new MessageChannel();
  const source = fileURLToPath(
    new URL(import.meta.url.endsWith(".ts") ? "./pg-worker.ts" : "./pg-worker.js", import.meta.url),
  );
  const execArgv = workerExecArgv(process.execArgv);
  const worker = new Worker(source, {
    workerData: {
      holonPg: { url, port: port2, flag: shared, applicationName: `holon ${process.pid}` },
    },
    transferList: [port2],
    ...(execArgv ? { execArgv } : {}),
    // It needs none of the host's environment: the URL carries the connection.
    env: {},
    stdout: false,
    stderr: false,
  });
  worker.unref();
  port1.unref();
  let dead: Error | null = null;
  let lastId = 0;
  worker.on("error", (err) => {
    dead = err;
  });
  worker.on("exit", () => {
    dead ??= new Error("the Postgres connection thread exited");
  });
  return {
    post(req) {
      if (dead) throw dead;
      // Each request carries an id its answer echoes: an answer that comes after its request
      // gave up waiting is dropped, never taken for the next one's. The flag only says "look":
      // a wake-up can be late (the notify of an answer already taken), so the port is drained
      // after the flag is cleared, and the wait goes on until this request's answer is there.
      const id = (lastId = (lastId % 0x7fffffff) + 1);
      port1.postMessage({ ...req, id });
      const deadline = performance.now() + STATEMENT_WAIT_MS;
      for (;;) {
        Atomics.store(flag, 0, 0);
        for (let m = receiveMessageOnPort(port1); m; m = receiveMessageOnPort(port1)) {
          const reply = m.message as PgReply & { id?: number };
          if (reply.id === id) return reply;
        }
        if (dead) throw dead;
        const left = deadline - performance.now();
        if (left <= 0 || Atomics.wait(flag, 0, 0, left) === "timed-out") {
          throw new HolonError(
            "database_unavailable",
            `Postgres did not answer within ${STATEMENT_WAIT_MS / 1000} s`,
            { status: 503 },
          );
        }
      }
    },
    end() {
      void worker.terminate();
    },
  };
}

/** One statement prepared on the connection (by name, on its first run). */
class PgStatement implements SqlStatement {
  private readonly db: PgDatabase;
  private readonly name: string;
  private readonly t: PgTranslation;

  constructor(db: PgDatabase, name: string, t: PgTranslation) {
    this.db = db;
    this.name = name;
    this.t = t;
  }

  private values(params: SQLInputValue[]): unknown[] {
    const t = this.t.tagged;
    return params.map((v, i) => (t.length > 0 && t.includes(i) ? tag(v) : plain(v)));
  }

  get(...params: SQLInputValue[]): SqlRow | undefined {
    return this.db.query(this.name, this.t.text, this.values(params)).rows[0] as SqlRow | undefined;
  }

  all(...params: SQLInputValue[]): SqlRow[] {
    return this.db.query(this.name, this.t.text, this.values(params)).rows as SqlRow[];
  }

  run(...params: SQLInputValue[]): { changes: number; lastInsertRowid: number } {
    const r = this.db.query(this.name, this.t.text, this.values(params));
    const row = this.t.returnsRowid ? (r.rows[0] as { rowid?: number } | undefined) : undefined;
    return { changes: r.rowCount, lastInsertRowid: row?.rowid ?? 0 };
  }
}

/** A synchronous connection to one Postgres database. */
export class PgDatabase implements SqlDatabase {
  readonly dialect = "postgres" as const;
  /** The connection string with its password masked, for messages. */
  readonly where: string;
  private readonly conn: Started;
  private readonly prepared = new Map<string, PgStatement>();
  private closed = false;

  get isOpen(): boolean {
    return !this.closed;
  }

  /**
   * `lockKey`: hold that advisory lock for as long as this connection lives, taken again by
   * any connection that replaces a lost one (`database_locked` when another session has it).
   */
  constructor(url: string, opts: { lockKey?: number } = {}) {
    this.where = maskDatabaseUrl(url);
    this.conn = startWorker(url);
    try {
      this.request({
        op: "connect",
        ...(opts.lockKey !== undefined ? { lockKey: opts.lockKey } : {}),
      });
    } catch (err) {
      this.conn.end();
      if (err instanceof HolonError) throw err;
      throw new HolonError(
        "database_unavailable",
        `cannot connect to Postgres at ${this.where}: ${err instanceof Error ? err.message : String(err)}`,
        {
          status: 503,
          hint: "is the server running and the URL right (user, password, host, port, database, sslmode)?",
        },
      );
    }
  }

  request(req: PgRequest): { rows: unknown[]; rowCount: number; fields?: string[] } {
    if (this.closed) throw new Error("the Postgres connection is closed");
    const r = this.conn.post(req);
    if (!r.ok) {
      if (r.error.code === LOCK_REFUSED) {
        throw new HolonError(
          "database_locked",
          `another Holon host is using the database at ${this.where}`,
          {
            status: 409,
            hint: "stop the other host first; several hosts on one database need cluster mode, which does not exist yet",
          },
        );
      }
      if (r.error.lost) {
        // The server went away (a restart, a failover, a network cut) or refuses connections
        // for now: the same statement may well work in a moment.
        throw new HolonError(
          "database_unavailable",
          `no connection to Postgres at ${this.where}: ${r.error.message}`,
          {
            status: 503,
            hint: "the database server is down or unreachable; the host reconnects on its own, try again",
          },
        );
      }
      throw new PgError(r.error);
    }
    return {
      rows: r.rows ?? [],
      rowCount: r.rowCount ?? 0,
      ...(r.fields ? { fields: r.fields } : {}),
    };
  }

  query(name: string, text: string, values: unknown[]) {
    return this.request({ op: "query", name, text, values });
  }

  prepare(sql: string): PgStatement {
    let s = this.prepared.get(sql);
    if (!s) {
      s = new PgStatement(this, `h${this.prepared.size + 1}`, translate(sql));
      this.prepared.set(sql, s);
    }
    return s;
  }

  exec(sql: string): void {
    const t = translate(sql);
    this.request({ op: "exec", text: t.text });
  }

  close(): void {
    if (this.closed) return;
    try {
      this.request({ op: "close" });
    } catch {
      // already gone
    }
    this.closed = true;
    this.conn.end();
  }
}
