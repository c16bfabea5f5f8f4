// Trace links (migration 18): the span context that caused a message, task, timer, callback
// trigger or child agent, kept so a turn that starts later (after a restart too) can link to
// it. Only tracing (src/telemetry/) writes or reads these rows; a key is `<kind>:<id>`.
// Retention (`retention.trace_links`, host/retention.ts) removes them by age and by total
// size, oldest first; work that re-enters after its link is gone starts without the link.
import type { SqlDatabase, SqlStatement } from "./sql.ts";

/** Bytes a row counts for under `retention.trace_links.max_mb`: key, value and its time. */
const ROW_BYTES = "octet_length(key) + octet_length(value) + 16";

/** One row at the old end of the table. */
export type TraceLinkRow = { key: string; created_at: number; bytes: number };

export class TraceLinksRepo {
  private readonly putStmt: SqlStatement;
  private readonly getStmt: SqlStatement;
  private readonly bytesStmt: SqlStatement;
  private readonly oldestStmt: SqlStatement;
  private readonly deleteStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.putStmt = db.prepare(
      "INSERT INTO trace_links (key, value, created_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at",
    );
    this.getStmt = db.prepare("SELECT value FROM trace_links WHERE key = ?");
    this.bytesStmt = db.prepare(`SELECT COALESCE(SUM(${ROW_BYTES}), 0) AS b FROM trace_links`);
    this.oldestStmt = db.prepare(
      `SELECT key, created_at, ${ROW_BYTES} AS bytes FROM trace_links ORDER BY created_at, key LIMIT ?`,
    );
    this.deleteStmt = db.prepare("DELETE FROM trace_links WHERE key = ?");
  }

  put(key: string, value: string, at: number): void {
    this.putStmt.run(key, value, at);
  }

  get(key: string): string | undefined {
    return (this.getStmt.get(key) as { value: string } | undefined)?.value;
  }

  /**
   * Bytes the rows take. There is no trigger-kept tally: a retention pass sums them once (the
   * table is held under its cap, so the scan is bounded).
   */
  bytes(): number {
    return (this.bytesStmt.get() as { b: number }).b;
  }

  /** The `limit` oldest rows (the `created_at` index serves the order). */
  oldest(limit: number): TraceLinkRow[] {
    return this.oldestStmt.all(limit) as TraceLinkRow[];
  }

  remove(rows: readonly TraceLinkRow[]): void {
    for (const r of rows) this.deleteStmt.run(r.key);
  }
}
