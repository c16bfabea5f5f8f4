// Trace links (migration 18): the span context that caused a message, task, timer, callback
// trigger or child agent, kept so a turn that starts later (after a restart too) can link to
// it. Only tracing (src/telemetry/) writes or reads these rows; a key is `<kind>:<id>`.
import type { DatabaseSync, StatementSync } from "node:sqlite";

/** How long a row is kept: work that re-enters later than this starts without its link. */
export const TRACE_LINK_MAX_AGE_MS = 30 * 24 * 3600 * 1000;

export class TraceLinksRepo {
  private readonly putStmt: StatementSync;
  private readonly getStmt: StatementSync;
  private readonly pruneStmt: StatementSync;

  constructor(db: DatabaseSync) {
    this.putStmt = db.prepare(
      "INSERT INTO trace_links (key, value, created_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at",
    );
    this.getStmt = db.prepare("SELECT value FROM trace_links WHERE key = ?");
    this.pruneStmt = db.prepare(
      "DELETE FROM trace_links WHERE key IN (SELECT key FROM trace_links WHERE created_at < ? ORDER BY created_at LIMIT 5000)",
    );
  }

  put(key: string, value: string, at: number): void {
    this.putStmt.run(key, value, at);
  }

  get(key: string): string | undefined {
    return (this.getStmt.get(key) as { value: string } | undefined)?.value;
  }

  /** Remove rows older than `before` (epoch ms), a bounded batch at a time; returns how many. */
  prune(before: number): number {
    return Number(this.pruneStmt.run(before).changes);
  }
}
