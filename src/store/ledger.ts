// The spend ledger's rows: one per provider call (a model round or a remote compaction),
// written in the round's own transaction and priced when written, so a later price edit
// never rewrites the past and event retention never erases spend. Its own retention
// (`retention.ledger`, host/retention.ts) removes rows past their age (400 days by default)
// and, over its size cap, rolls the oldest per-call rows into summary rows, one per
// quarter-hour and agent lineage, work item, model, kind and priced-or-not (`calls` says how
// many calls a row stands for). Every sum below counts `calls`, and every budget window
// starts on a quarter-hour, so a roll-up changes neither a budget's total nor a usage
// report's day.
// Sums per scope are read here once (at start, per scope); src/budget/ keeps the running
// totals after.
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import { emptyTotals, type LedgerRow, type SpendTotals } from "../domain/budget.ts";

/** A scope's rows: an agent with its descendants, a work item with its children's, a run. */
export type LedgerScope =
  | { kind: "agent_tree"; agent_id: string }
  | { kind: "agent"; agent_id: string }
  | { kind: "work_item_tree"; work_item_id: string }
  | { kind: "run"; run_id: string };

type Raw = {
  ts: number;
  agent_id: string;
  run_id: string | null;
  round: number | null;
  kind: string;
  work_item_id: string | null;
  agent_path: string;
  item_path: string;
  model_ref: string;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  cost_usd: number | null;
  elapsed_ms: number;
  estimated: number;
  calls: number;
  rollup: number;
};

const SUMS = `COALESCE(SUM(calls), 0) AS rounds,
  COALESCE(SUM(input_tokens), 0) AS input_tokens,
  COALESCE(SUM(cached_input_tokens), 0) AS cached_input_tokens,
  COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens,
  COALESCE(SUM(output_tokens), 0) AS output_tokens,
  COALESCE(SUM(reasoning_tokens), 0) AS reasoning_tokens,
  COALESCE(SUM(cost_usd), 0) AS usd,
  COALESCE(SUM(CASE WHEN cost_usd IS NULL THEN calls ELSE 0 END), 0) AS unpriced_rounds,
  COALESCE(SUM(elapsed_ms), 0) AS time_ms`;

/**
 * The span one rolled-up row covers: a quarter-hour, on which every time zone's midnight
 * falls (zone offsets are whole quarter-hours), so no budget window ever splits one.
 */
export const LEDGER_BUCKET_MS = 15 * 60_000;

/** A row's bytes as retention counts them: its text fields and a fixed share for the rest. */
const LEDGER_BYTES = `octet_length(agent_id) + COALESCE(octet_length(run_id), 0) +
  octet_length(kind) + COALESCE(octet_length(work_item_id), 0) + octet_length(agent_path) +
  octet_length(item_path) + octet_length(model_ref) + 112`;

/** '/a/b/' for [a, b]: a path a LIKE '%/x/%' finds x in. */
export function pathOf(ids: string[]): string {
  return ids.length === 0 ? "/" : `/${ids.join("/")}/`;
}

export class LedgerRepo {
  private readonly db: SqlDatabase;
  private readonly insertStmt: SqlStatement;
  private readonly stmts = new Map<string, SqlStatement>();

  constructor(db: SqlDatabase) {
    this.db = db;
    this.insertStmt = db.prepare(
      `INSERT INTO spend_ledger (ts, agent_id, run_id, round, kind, work_item_id, agent_path,
         item_path, model_ref, input_tokens, cached_input_tokens, cache_write_tokens,
         output_tokens, reasoning_tokens, cost_usd, elapsed_ms, estimated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  private stmt(sql: string): SqlStatement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  /** Must run inside the round's transaction. Throws on a second row for the same round. */
  insert(row: LedgerRow, orIgnore = false): boolean {
    const stmt = orIgnore
      ? this.stmt(this.insertSql().replace("INSERT INTO", "INSERT OR IGNORE INTO"))
      : this.insertStmt;
    const r = stmt.run(
      Date.parse(row.ts),
      row.agent_id,
      row.run_id,
      row.round,
      row.kind,
      row.work_item_id,
      pathOf([row.agent_id, ...row.parent_agent_ids]),
      pathOf(
        row.work_item_id
          ? [row.work_item_id, ...row.parent_work_item_ids]
          : row.parent_work_item_ids,
      ),
      row.model_ref,
      row.input_tokens,
      row.cached_input_tokens,
      row.cache_write_tokens,
      row.output_tokens,
      row.reasoning_tokens,
      row.cost_usd,
      Math.max(0, Math.round(row.elapsed_ms)),
      row.estimated ? 1 : 0,
    );
    return Number(r.changes) > 0;
  }

  private insertSql(): string {
    return `INSERT INTO spend_ledger (ts, agent_id, run_id, round, kind, work_item_id, agent_path,
         item_path, model_ref, input_tokens, cached_input_tokens, cache_write_tokens,
         output_tokens, reasoning_tokens, cost_usd, elapsed_ms, estimated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
  }

  /** The scope's spend in [from, to) (whole history without bounds). */
  sum(scope: LedgerScope, from?: Date, to?: Date): SpendTotals {
    const [where, arg] = scopeWhere(scope);
    const lo = from?.getTime() ?? 0;
    const hi = to?.getTime() ?? Number.MAX_SAFE_INTEGER;
    const row = this.stmt(
      `SELECT ${SUMS} FROM spend_ledger WHERE ${where} AND ts >= ? AND ts < ?`,
    ).get(arg, lo, hi) as Record<string, number>;
    const t = emptyTotals();
    for (const k of Object.keys(t) as (keyof SpendTotals)[]) t[k] = Number(row[k] ?? 0);
    t.tokens = t.input_tokens + t.output_tokens;
    return t;
  }

  /** Rows of the listed agents in [from, to), oldest first (usage reports). */
  rows(agentIds: string[], from: Date, to: Date, limit = 1_000_000): LedgerRow[] {
    const out: LedgerRow[] = [];
    const stmt = this.stmt(
      "SELECT * FROM spend_ledger WHERE agent_id = ? AND ts >= ? AND ts < ? ORDER BY ts, seq LIMIT ?",
    );
    for (const id of agentIds) {
      for (const r of stmt.all(id, from.getTime(), to.getTime(), limit) as Raw[])
        out.push(toRow(r));
    }
    return out.sort((a, b) => a.ts.localeCompare(b.ts));
  }

  /** The agent's newest `limit` rows in [from, to), oldest first. */
  newest(agentId: string, from: Date, to: Date, limit: number): LedgerRow[] {
    const rows = this.stmt(
      "SELECT * FROM spend_ledger WHERE agent_id = ? AND ts >= ? AND ts < ? ORDER BY ts DESC, seq DESC LIMIT ?",
    ).all(agentId, from.getTime(), to.getTime(), limit) as Raw[];
    return rows.reverse().map(toRow);
  }

  count(): number {
    return Number((this.stmt("SELECT COUNT(*) AS n FROM spend_ledger").get() as { n: number }).n);
  }

  /** Remove rows older than `before` (the ledger's retention); returns how many. */
  deleteBefore(before: Date, batch = 5000): number {
    const r = this.stmt(
      "DELETE FROM spend_ledger WHERE seq IN (SELECT seq FROM spend_ledger WHERE ts < ? ORDER BY ts LIMIT ?)",
    ).run(before.getTime(), batch);
    return Number(r.changes);
  }

  /** Bytes the rows take (an estimate from their fields, as the retention caps count). */
  bytes(): number {
    return Number(
      (
        this.stmt(`SELECT COALESCE(SUM(${LEDGER_BYTES}), 0) AS b FROM spend_ledger`).get() as {
          b: number;
        }
      ).b,
    );
  }

  /** The agents with per-call rows in [lo, hi). */
  detailAgents(lo: number, hi: number): string[] {
    return (
      this.stmt(
        "SELECT DISTINCT agent_id FROM spend_ledger WHERE rollup = 0 AND ts >= ? AND ts < ?",
      ).all(lo, hi) as { agent_id: string }[]
    ).map((r) => r.agent_id);
  }

  /** The time (epoch ms) of the oldest per-call row at or after `from`, if any. */
  oldestDetail(from = 0): number | null {
    const r = this.stmt(
      "SELECT ts FROM spend_ledger WHERE ts >= ? AND rollup = 0 ORDER BY ts LIMIT 1",
    ).get(from) as { ts: number } | undefined;
    return r?.ts ?? null;
  }

  /**
   * Roll the agent's per-call rows in [lo, hi) into summary rows, one per quarter-hour (UTC)
   * and (agent lineage, work item, model, kind, estimated, priced or not), dated at the start
   * of their quarter-hour. Every time zone's offset is a whole number of quarter-hours, so
   * every calendar window (day, week, month, in any zone) starts on one: a window's sum, a
   * sum by agent, agent tree or work item, and usage per day are the same after. A run's
   * sum is not (a summary keeps no run id). Run inside a transaction; returns the rows
   * removed and added and the bytes freed.
   */
  rollUp(
    lo: number,
    hi: number,
    agentId: string,
  ): { removed: number; added: number; bytes: number } {
    const before = this.stmt(
      `SELECT COUNT(*) AS n, COALESCE(SUM(${LEDGER_BYTES}), 0) AS b
       FROM spend_ledger WHERE agent_id = ? AND rollup = 0 AND ts >= ? AND ts < ?`,
    ).get(agentId, lo, hi) as { n: number; b: number };
    if (before.n === 0) return { removed: 0, added: 0, bytes: 0 };
    const maxSeq = (
      this.stmt("SELECT COALESCE(MAX(seq), 0) AS m FROM spend_ledger").get() as { m: number }
    ).m;
    const bucket = `(ts - ts % ${LEDGER_BUCKET_MS})`;
    this.stmt(
      `INSERT INTO spend_ledger (ts, agent_id, run_id, round, kind, work_item_id, agent_path,
         item_path, model_ref, input_tokens, cached_input_tokens, cache_write_tokens,
         output_tokens, reasoning_tokens, cost_usd, elapsed_ms, estimated, calls, rollup)
       SELECT ${bucket}, agent_id, NULL, NULL, kind, work_item_id, agent_path, item_path,
         model_ref, SUM(input_tokens), SUM(cached_input_tokens), SUM(cache_write_tokens),
         SUM(output_tokens), SUM(reasoning_tokens), SUM(cost_usd), SUM(elapsed_ms), estimated,
         SUM(calls), 1
       FROM spend_ledger WHERE rollup = 0 AND ts >= ? AND ts < ?
       GROUP BY ${bucket}, agent_id, agent_path, item_path, work_item_id, model_ref, kind,
         estimated, cost_usd IS NULL`,
    ).run(lo, hi);
    this.stmt("DELETE FROM spend_ledger WHERE rollup = 0 AND ts >= ? AND ts < ? AND seq <= ?").run(
      lo,
      hi,
      maxSeq,
    );
    const after = this.stmt(
      `SELECT COUNT(*) AS n, COALESCE(SUM(${LEDGER_BYTES}), 0) AS b FROM spend_ledger
       WHERE seq > ?`,
    ).get(maxSeq) as { n: number; b: number };
    return { removed: before.n, added: after.n, bytes: before.b - after.b };
  }

  backfillPending(): boolean {
    const r = this.stmt("SELECT value FROM spend_ledger_meta WHERE key = 'backfill'").get() as
      { value: string } | undefined;
    return r?.value === "pending";
  }

  markBackfilled(at: string): void {
    this.stmt("UPDATE spend_ledger_meta SET value = ? WHERE key = 'backfill'").run(`done ${at}`);
  }
}

function scopeWhere(scope: LedgerScope): [string, string] {
  switch (scope.kind) {
    case "agent":
      return ["agent_id = ?", scope.agent_id];
    case "agent_tree":
      return ["agent_path LIKE ? ESCAPE '\\'", `%/${likeEscape(scope.agent_id)}/%`];
    case "work_item_tree":
      return ["item_path LIKE ? ESCAPE '\\'", `%/${likeEscape(scope.work_item_id)}/%`];
    case "run":
      return ["run_id = ?", scope.run_id];
  }
}

function likeEscape(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function toRow(r: Raw): LedgerRow {
  const agents = r.agent_path.split("/").filter(Boolean);
  const items = r.item_path.split("/").filter(Boolean);
  const ownItem = r.work_item_id !== null;
  return {
    ts: new Date(r.ts).toISOString(),
    agent_id: r.agent_id,
    run_id: r.run_id,
    round: r.round,
    kind: r.kind === "compaction" ? "compaction" : "round",
    work_item_id: r.work_item_id,
    parent_agent_ids: agents.slice(1),
    parent_work_item_ids: ownItem ? items.slice(1) : items,
    model_ref: r.model_ref,
    input_tokens: r.input_tokens,
    cached_input_tokens: r.cached_input_tokens,
    cache_write_tokens: r.cache_write_tokens,
    output_tokens: r.output_tokens,
    reasoning_tokens: r.reasoning_tokens,
    cost_usd: r.cost_usd,
    elapsed_ms: r.elapsed_ms,
    estimated: r.estimated === 1,
    ...(r.calls !== 1 || r.rollup === 1 ? { calls: r.calls, rolled_up: true } : {}),
  };
}
