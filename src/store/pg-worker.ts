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
  | { op: "connect" }
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

export type PgReply =
  | { ok: true; rows?: unknown[]; rowCount?: number; fields?: string[] }
  | {
      ok: false;
      error: { message: string; code?: string; detail?: string; severity?: string };
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

function start({ url, port, flag, applicationName }: Start): void {
  const signal = new Int32Array(flag);
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  // A dropped connection is reported on the next statement, not as an uncaught error here.
  let lost: Error | null = null;
  client.on("error", (err) => {
    lost = err;
  });
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
      },
    };
  };
  port.on("message", (req: PgRequest) => {
    void handle(req).then(reply, (err: unknown) => reply(fail(err)));
  });

  async function handle(req: PgRequest): Promise<PgReply> {
    if (lost && req.op !== "close") throw lost;
    switch (req.op) {
      case "connect":
        await client.connect();
        return { ok: true };
      case "exec":
        await client.query(req.text);
        return { ok: true };
      case "query": {
        const values = req.values.map((v) => (v instanceof Uint8Array ? Buffer.from(v) : v));
        const r = await client.query({
          ...(req.name ? { name: req.name } : {}),
          text: req.text,
          values,
          types: req.exact ? EXACT : NUMBERS,
          ...(req.exact ? { rowMode: "array" as const } : {}),
        });
        return {
          ok: true,
          rows: r.rows,
          rowCount: r.rowCount ?? 0,
          ...(req.exact ? { fields: r.fields.map((f) => f.name) } : {}),
        };
      }
      case "close":
        await client.end().catch(() => {});
        setImmediate(() => process.exit(0));
        return { ok: true };
    }
  }
}

if (parentPort && (workerData as { holonPg?: Start } | null)?.holonPg) {
  start((workerData as { holonPg: Start }).holonPg);
}
