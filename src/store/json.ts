// Rows hold JSON documents; reading one back validates it against its schema.
import type { SqlStatement } from "./sql.ts";
import type { z } from "zod";
import { bodyText } from "./codec.ts";

export function readRow<S extends z.ZodType>(schema: S, text: string, what: string): z.infer<S> {
  return parseRow(schema, JSON.parse(text), what);
}

/** A body column as the codec stored it (JSON text or a compressed blob), validated. */
export function readBody<S extends z.ZodType>(
  schema: S,
  stored: unknown,
  what: string,
): z.infer<S> {
  return parseRow(schema, JSON.parse(bodyText(stored)), what);
}

function parseRow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new Error(`stored ${what} does not match its schema: ${parsed.error.message}`);
  }
  return parsed.data;
}

/**
 * Decoded rows of an immutable record family, by id: reading a row back (inflate, parse,
 * validate) costs far more than the query, and hot paths read the same recent rows on
 * every turn. Entries are deep-frozen, so a caller cannot change what the next one reads;
 * the oldest entry goes first once `max` is reached. Only rows a query just returned are
 * looked up, so a removed or rolled-back row is never served from here.
 */
export class DecodedRows<T> {
  private readonly rows = new Map<string, T>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  get(id: string, decode: () => T): T {
    let value = this.rows.get(id);
    if (value === undefined) {
      value = deepFreeze(decode());
      this.rows.set(id, value);
      if (this.rows.size > this.max) this.rows.delete(this.rows.keys().next().value!);
    }
    return value;
  }

  /** The rows of `ids` (newest first, as listed) oldest first, each decoded at most once. */
  oldestFirst(ids: readonly string[], decode: (id: string) => T): T[] {
    const out: T[] = [];
    for (let i = ids.length - 1; i >= 0; i--) {
      const id = ids[i]!;
      out.push(this.get(id, () => decode(id)));
    }
    return out;
  }
}

/**
 * The decoded value of a mutable row (one per key, such as an agent's working memory),
 * reused while the stored text is the same: the query still runs on every read, so a
 * changed or rolled-back row is always seen; only an unchanged one skips the parse and
 * validation. Values are deep-frozen like DecodedRows'.
 */
export class DecodedByText<T> {
  private readonly rows = new Map<string, { text: string; value: T }>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  get(key: string, text: string, decode: () => T): T {
    const hit = this.rows.get(key);
    if (hit !== undefined && hit.text === text) return hit.value;
    const value = deepFreeze(decode());
    this.rows.delete(key);
    this.rows.set(key, { text, value });
    if (this.rows.size > this.max) this.rows.delete(this.rows.keys().next().value!);
    return value;
  }
}

/**
 * The lowest and highest sequence number of an agent's rows in an append-only table with an
 * index on (agent_id, seq), as two rows: two index seeks (one SELECT with both MIN and MAX
 * would scan the agent's whole range).
 */
export const BOUNDS_SQL = (table: string) =>
  `SELECT MIN(seq) AS s FROM ${table} WHERE agent_id = ? UNION ALL SELECT MAX(seq) FROM ${table} WHERE agent_id = ?`;

/**
 * The newest ids of each agent in an append-only table (newest first), as last listed, kept
 * while the agent's lowest and highest sequence numbers are those they were listed at. Rows
 * are only appended (a higher seq) or removed oldest first by retention (a higher lowest
 * seq), so the same bounds mean the same rows: the prompt lists an agent's few dozen newest
 * briefs and episodes on every turn, and two index seeks replace reading them all by id. A
 * rolled-back transaction clears it (a seq it used may be used again).
 */
export class RecentIds {
  private readonly lists = new Map<
    string,
    { lo: number; hi: number; ids: string[]; full: boolean }
  >();

  get(agentId: string, limit: number, bounds: SqlStatement, list: SqlStatement): string[] {
    const [low, high] = bounds.all(agentId, agentId) as { s: number | null }[];
    const b = { lo: low?.s ?? null, hi: high?.s ?? null };
    if (b.lo === null || b.hi === null) return [];
    const hit = this.lists.get(agentId);
    // A list read with a smaller limit than asked holds every row only if it came up short.
    if (hit && hit.lo === b.lo && hit.hi === b.hi && (hit.ids.length >= limit || hit.full)) {
      return hit.ids.length > limit ? hit.ids.slice(0, limit) : hit.ids;
    }
    const ids = (list.all(agentId, limit) as { id: string }[]).map((r) => r.id);
    this.lists.delete(agentId);
    this.lists.set(agentId, { lo: b.lo, hi: b.hi, ids, full: ids.length < limit });
    if (this.lists.size > RECENT_AGENTS) this.lists.delete(this.lists.keys().next().value!);
    return ids;
  }

  /**
   * A row the repository just appended: a kept list takes it in front (and, unless it held
   * every row, drops its oldest), so the next turn's listing finds the bounds it expects
   * instead of listing again after every write.
   */
  added(agentId: string, seq: number, id: string): void {
    const hit = this.lists.get(agentId);
    if (!hit) return;
    if (seq <= hit.hi) {
      this.lists.delete(agentId);
      return;
    }
    hit.ids.unshift(id);
    hit.hi = seq;
    if (!hit.full) hit.ids.pop();
  }

  clear(): void {
    this.lists.clear();
  }
}

/** Agents whose recent ids are kept (a host's busy agents). */
const RECENT_AGENTS = 256;

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
