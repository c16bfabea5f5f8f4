// The Postgres connection's thread (see pg.ts). The store's repositories are synchronous, so
// the host thread posts each statement here and blocks on a shared flag until this thread,
// which holds the one `pg` client, has the answer. Only this thread ever loads `pg`.
//
// Values come back in SQLite's terms, so the repositories read both backends alike:
// int8 and numeric as numbers (or bigints when asked), booleans as 0/1, JSON as its text,
// and bytea, which only the tagged body columns use, as the string or bytes it was written as.
import { parentPort, workerData } from "node:worker_threads";
import type { MessagePort } from "node:worker_threads";
import pg from "pg";

export type PgRequest =
  /** `lockKey`: hold this advisory lock on the connection, and on every one that replaces it. */
  | { op: "connect"; lockKey?: number }
  | { op: "exec"; text: string }
  | {
      op: "query";
      /** A prepared statement's name, once per connection; none for a one-off. */
      name?: string;
      text: string;
      values: unknown[];
      /** Integers as bigints and rows as arrays (the dump's exact read). */
      exact?: boolean;
    }
  | { op: "close" };

export type PgReply = (
  | { ok: true; rows?: unknown[]; rowCount?: number; fields?: string[] }
  | {
      ok: false;
      error: {
        message: string;
        code?: string;
        detail?: string;
        severity?: string;
        /** The statement failed for want of a connection (lost, or none to be had). */
        lost?: true;
      };
    }
) & {
  /** The request's id, echoed. */
  id?: number | undefined;
};

type Start = { url: string; port: MessagePort; flag: SharedArrayBuffer; applicationName: string };

/** A body column's first byte says what was written: text (0) or bytes (1). */
export const TAG_TEXT = 0;
export const TAG_BYTES = 1;

function untag(b: Buffer): string | Uint8Array {
  if (b.length > 0 && b[0] === TAG_TEXT) return b.toString("utf8", 1);
  return new Uint8Array(b.buffer, b.byteOffset + 1, Math.max(0, b.length - 1));
}

const toNumber = (v: string) => Number(v);
const toBit = (v: string) => (v === "t" ? 1 : 0);
const asText = (v: string) => v;

function parsers(exact: boolean) {
  return {
    getTypeParser(oid: number, format?: string): (v: string) => unknown {
      if (format === "binary") return pg.types.getTypeParser(oid, "binary") as never;
      switch (oid) {
        case 20: // int8
          return exact ? (v) => BigInt(v) : toNumber;
        case 21: // int2
        case 23: // int4
        case 700: // float4
        case 701: // float8
        case 1700: // numeric (SUM of integers)
          return toNumber;
        case 16: // bool
          return toBit;
        case 114: // json
        case 3802: // jsonb
          return asText;
        case 17: // bytea
          return (v) => untag(pg.types.getTypeParser(17)(v) as Buffer);
        default:
          return pg.types.getTypeParser(oid) as (v: string) => unknown;
      }
    },
  };
}

const NUMBERS = parsers(false);
const EXACT = parsers(true);

/** The code this worker answers with when the one-host lock is held by someone else (pg.ts
 * knows it by value: importing it from here would load pg into the host thread). */
const LOCK_REFUSED = "HOLON_LOCKED";

/** How long one attempt to connect may take. */
const CONNECT_TIMEOUT_MS = 10_000;

/** How long a replacement connection waits for the lost session's lock to be let go. */
const REPLACE_PATIENCE_MS = 5_000;

/**
 * Whether a failed statement failed because its connection is gone: the server ended the
 * session (SQLSTATE class 57P, an administrator or a shutdown; class 08, the connection), or
 * the socket closed under it.
 */
function connectionLost(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? "");
  if (/^(57P|08)/.test(code) || /^(ECONNRESET|EPIPE|ETIMEDOUT)$/.test(code)) return true;
  return /Connection terminated|not queryable/i.test(String((err as Error)?.message));
}

/** Errors of statements that failed for want of a connection (see PgReply's `lost`). */
const unreachable = new WeakSet<object>();
function noConnection(err: unknown): unknown {
  if (err !== null && typeof err === "object") unreachable.add(err);
  return err;
}

function start({ url, port, flag, applicationName }: Start): void {
  const signal = new Int32Array(flag);
  let client: pg.Client | null = null;
  // A dropped connection (a server restart, a failover, an idle timeout) is reported on the
  // next statement, not as an uncaught error here; see handle() for how it is replaced.
  let lost: Error | null = null;
  /** Inside BEGIN … COMMIT/ROLLBACK, as the host's exec calls say. */
  let inTx = false;
  /** The advisory lock the host holds, taken again on a new connection. */
  let lockKey: number | null = null;

  /**
   * `patience`: how long to keep asking for the lock. A replacement connection waits a while,
   * since the lost session's lock goes only when its server process has finished exiting.
   */
  async function connect(patience = 0): Promise<void> {
    // A server that cannot be reached fails the attempt in seconds, not at the TCP timeout:
    // the host thread waits on each statement, reconnection included.
    const c = new pg.Client({
      connectionString: url,
      application_name: applicationName,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    c.on("error", (err) => {
      if (client === c) lost = err;
    });
    c.on("end", () => {
      if (client === c) lost ??= new Error("the Postgres connection ended");
    });
    await c.connect();
    if (lockKey !== null) {
      const until = Date.now() + patience;
      for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
        const r = await c.query("SELECT pg_try_advisory_lock($1) AS ok", [lockKey]);
        if (r.rows[0]?.ok === true) break;
        if (Date.now() + wait > until) {
          await c.end().catch(() => {});
          throw Object.assign(new Error("another host holds the database's lock"), {
            code: LOCK_REFUSED,
          });
        }
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    client = c;
    lost = null;
  }

  const reply = (r: PgReply) => {
    port.postMessage(r);
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
  };
  const fail = (err: unknown): PgReply => {
    const e = err as { message?: string; code?: string; detail?: string; severity?: string };
    return {
      ok: false,
      error: {
        message: e?.message ?? String(err),
        ...(e?.code ? { code: e.code } : {}),
        ...(e?.detail ? { detail: e.detail } : {}),
        ...(e?.severity ? { severity: e.severity } : {}),
        ...(unreachable.has(err as object) ? { lost: true as const } : {}),
      },
    };
  };
  port.on("message", (req: PgRequest & { id?: number }) => {
    const answer = (r: PgReply) => {
      try {
        reply({ ...r, id: req.id });
      } catch (err) {
        // An answer that cannot cross to the host thread is an error of that request.
        reply({ ...fail(err), id: req.id });
      }
    };
    void handle(req).then(answer, (err: unknown) => answer(fail(err)));
  });

  /**
   * Before a statement: a lost connection is replaced, but never inside a transaction: the
   * statements it already ran went with the old connection, so the rest of the body fails
   * until the host's ROLLBACK ends it (answered here, the server having rolled it back).
   * Outside one, a new connection (with the lock taken again) serves the statement.
   */
  async function ready(): Promise<pg.Client> {
    if (lost || !client) {
      if (inTx) throw noConnection(lost ?? new Error("the Postgres connection was lost"));
      try {
        await connect(client ? REPLACE_PATIENCE_MS : 0);
      } catch (err) {
        throw (err as { code?: string })?.code === LOCK_REFUSED ? err : noConnection(err);
      }
    }
    return client!;
  }

  /**
   * Runs one statement. The loss of a connection may be learnt only from the statement sent
   * on it (the server's farewell not yet read), so a loss is recorded here too. Outside a
   * transaction, a statement that cannot have changed anything (a BEGIN, a SELECT) is sent
   * again on a new connection; any other fails, since it may or may not have run.
   */
  async function run<T>(text: string, send: (c: pg.Client) => Promise<T>): Promise<T> {
    const wasInTx = inTx;
    const c = await ready();
    try {
      return await send(c);
    } catch (err) {
      if (!connectionLost(err)) throw err;
      if (client === c) lost ??= err as Error;
      if (wasInTx || !/^\s*(BEGIN|START|SELECT)\b/i.test(text)) throw noConnection(err);
      return send(await ready()).catch((again: unknown) => {
        throw connectionLost(again) ? noConnection(again) : again;
      });
    }
  }

  async function handle(req: PgRequest): Promise<PgReply> {
    switch (req.op) {
      case "connect":
        lockKey = req.lockKey ?? null;
        await connect();
        return { ok: true };
      case "exec": {
        const word = /^\s*(\w+)/.exec(req.text)?.[1]?.toUpperCase();
        const ends =
          (word === "COMMIT" || word === "END" || word === "ROLLBACK") &&
          !/^\s*ROLLBACK\s+TO\b/i.test(req.text);
        if (lost && inTx && word === "ROLLBACK" && ends) {
          inTx = false;
          return { ok: true };
        }
        try {
          await run(req.text, (c) => c.query(req.text));
        } catch (err) {
          // A COMMIT or ROLLBACK whose connection went: the transaction went with it (the
          // server rolls back what it had not committed), so the next BEGIN may reconnect.
          if (lost && ends) {
            inTx = false;
            if (word === "ROLLBACK") return { ok: true };
          }
          throw err;
        }
        if (word === "BEGIN" || word === "START") inTx = true;
        else if (ends) inTx = false;
        return { ok: true };
      }
      case "query": {
        const values = req.values.map((v) => (v instanceof Uint8Array ? Buffer.from(v) : v));
        const r = await run(req.text, (c) =>
          c.query({
            ...(req.name ? { name: req.name } : {}),
            text: req.text,
            values,
            types: req.exact ? EXACT : NUMBERS,
            ...(req.exact ? { rowMode: "array" as const } : {}),
          }),
        );
        return {
          ok: true,
          rows: r.rows,
          rowCount: r.rowCount ?? 0,
          ...(req.exact ? { fields: r.fields.map((f) => f.name) } : {}),
        };
      }
      case "close":
        await client?.end().catch(() => {});
        setImmediate(() => process.exit(0));
        return { ok: true };
    }
  }
}

if (parentPort && (workerData as { holonPg?: Start } | null)?.holonPg) {
  start((workerData as { holonPg: Start }).holonPg);
}
