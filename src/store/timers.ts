// Timers: one row per timer, the record as JSON beside the columns its reads need. Active
// timers are bounded per agent by the waiting plane; finished ones (fired one-shots,
// cancelled) are pruned to the newest few per agent whenever one finishes.
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import { TimerRecord } from "../domain/waiting.ts";
import { readRow } from "./json.ts";

export class TimersRepo {
  private readonly putStmt: SqlStatement;
  private readonly getStmt: SqlStatement;
  private readonly activeStmt: SqlStatement;
  private readonly finishedStmt: SqlStatement;
  private readonly activeCountStmt: SqlStatement;
  private readonly pruneStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.putStmt = db.prepare(
      `INSERT INTO timers (id, agent_id, status, next_fire_at, updated_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_fire_at = excluded.next_fire_at,
         updated_at = excluded.updated_at, data = excluded.data`,
    );
    this.getStmt = db.prepare("SELECT data FROM timers WHERE id = ?");
    this.activeStmt = db.prepare(
      "SELECT data FROM timers WHERE agent_id = ? AND status = 'active' ORDER BY next_fire_at, id LIMIT ?",
    );
    this.finishedStmt = db.prepare(
      "SELECT data FROM timers WHERE agent_id = ? AND status != 'active' ORDER BY updated_at DESC, id DESC LIMIT ?",
    );
    this.activeCountStmt = db.prepare(
      "SELECT COUNT(*) AS n FROM timers WHERE agent_id = ? AND status = 'active'",
    );
    this.pruneStmt = db.prepare(
      `DELETE FROM timers WHERE id IN (
         SELECT id FROM timers WHERE agent_id = ? AND status != 'active'
         ORDER BY updated_at DESC, id DESC LIMIT -1 OFFSET ?)`,
    );
  }

  put(t: TimerRecord): void {
    this.putStmt.run(
      t.timer_id,
      t.agent_id,
      t.status,
      t.next_fire_at,
      t.updated_at,
      JSON.stringify(t),
    );
  }

  get(id: string): TimerRecord | undefined {
    const row = this.getStmt.get(id) as { data: string } | undefined;
    return row ? readRow(TimerRecord, row.data, "timer") : undefined;
  }

  /** Active timers, soonest first. */
  active(agentId: string, limit: number): TimerRecord[] {
    return (this.activeStmt.all(agentId, limit) as { data: string }[]).map((r) =>
      readRow(TimerRecord, r.data, "timer"),
    );
  }

  /** Finished timers, newest first. */
  finished(agentId: string, limit: number): TimerRecord[] {
    return (this.finishedStmt.all(agentId, limit) as { data: string }[]).map((r) =>
      readRow(TimerRecord, r.data, "timer"),
    );
  }

  activeCount(agentId: string): number {
    return (this.activeCountStmt.get(agentId) as { n: number }).n;
  }

  /** Keep only the newest `keep` finished timers of the agent; returns how many went. */
  pruneFinished(agentId: string, keep: number): number {
    return Number(this.pruneStmt.run(agentId, keep).changes);
  }
}
