// Work items, their promoted completion reports (delivery summaries) and the per-agent work
// state. Bounded: an agent holds at most WORK_LIMITS.open_items open items (the service
// refuses more) and keeps its newest WORK_LIMITS.completed_kept completed ones; older
// completed items go with their reports (`pruneCompleted`, run when an item completes).
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import { z } from "zod";
import { DeliverySummaryRecord, WorkItemRecord, type WorkItemState } from "../domain/work-item.ts";
import { readRow } from "./json.ts";

/** What the work plane keeps per agent besides its items (the runaway guard's counter). */
export const WorkAgentState = z.object({
  /** Self-continuations admitted since the last progress. */
  continuations_without_progress: z.number().int(),
  last_progress_at: z.string().optional(),
  last_progress: z.string().optional(),
  /** Set when the guard stopped continuing; cleared by the next progress. */
  halted_at: z.string().optional(),
  /**
   * The operator's `continue N` on a runaway ask: the guard halts after N continuations
   * without progress instead of its configured limit; cleared by the next progress.
   */
  allowance: z.number().int().positive().optional(),
  /** The newest runs bound to a work item (for the prompt's process trace), oldest first. */
  bound_runs: z.array(z.object({ run_id: z.string(), work_item_id: z.string() })).optional(),
});
export type WorkAgentState = z.infer<typeof WorkAgentState>;

export class WorkItemsRepo {
  private readonly getStmt: SqlStatement;
  private readonly putStmt: SqlStatement;
  private readonly byStateStmt: SqlStatement;
  private readonly recentByStateStmt: SqlStatement;
  private readonly countStmt: SqlStatement;
  private readonly anyStmt: SqlStatement;
  private readonly oldCompletedStmt: SqlStatement;
  private readonly deleteStmt: SqlStatement;
  private readonly summaryInsertStmt: SqlStatement;
  private readonly summaryGetStmt: SqlStatement;
  private readonly summaryNewestStmt: SqlStatement;
  private readonly summaryDeleteStmt: SqlStatement;
  private readonly stateGetStmt: SqlStatement;
  private readonly statePutStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.getStmt = db.prepare("SELECT data FROM work_items WHERE id = ?");
    this.putStmt = db.prepare(
      "INSERT INTO work_items (id, agent_id, state, data) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state, data = excluded.data",
    );
    this.byStateStmt = db.prepare(
      "SELECT data FROM work_items WHERE agent_id = ? AND state = ? ORDER BY seq LIMIT ?",
    );
    this.recentByStateStmt = db.prepare(
      "SELECT data FROM work_items WHERE agent_id = ? AND state = ? ORDER BY seq DESC LIMIT ?",
    );
    this.countStmt = db.prepare(
      "SELECT COUNT(*) AS n FROM work_items WHERE agent_id = ? AND state = ?",
    );
    this.anyStmt = db.prepare("SELECT 1 AS x FROM work_items WHERE agent_id = ? LIMIT 1");
    this.oldCompletedStmt = db.prepare(
      "SELECT id FROM work_items WHERE agent_id = ? AND state = 'completed' ORDER BY seq DESC LIMIT -1 OFFSET ?",
    );
    this.deleteStmt = db.prepare("DELETE FROM work_items WHERE id = ?");
    this.summaryInsertStmt = db.prepare(
      "INSERT INTO delivery_summaries (id, agent_id, work_item_id, data) VALUES (?, ?, ?, ?)",
    );
    this.summaryGetStmt = db.prepare("SELECT data FROM delivery_summaries WHERE id = ?");
    this.summaryNewestStmt = db.prepare(
      "SELECT data FROM delivery_summaries WHERE work_item_id = ? ORDER BY seq DESC LIMIT 1",
    );
    this.summaryDeleteStmt = db.prepare("DELETE FROM delivery_summaries WHERE work_item_id = ?");
    this.stateGetStmt = db.prepare("SELECT data FROM work_agent_state WHERE agent_id = ?");
    this.statePutStmt = db.prepare(
      "INSERT INTO work_agent_state (agent_id, data) VALUES (?, ?) ON CONFLICT (agent_id) DO UPDATE SET data = excluded.data",
    );
  }

  get(id: string): WorkItemRecord | undefined {
    const row = this.getStmt.get(id) as { data: string } | undefined;
    return row ? readRow(WorkItemRecord, row.data, "work item") : undefined;
  }

  put(item: WorkItemRecord): void {
    this.putStmt.run(item.id, item.agent_id, item.state, JSON.stringify(item));
  }

  /** Oldest first. */
  withState(agentId: string, state: WorkItemState, limit = 1_000): WorkItemRecord[] {
    return (this.byStateStmt.all(agentId, state, limit) as { data: string }[]).map((r) =>
      readRow(WorkItemRecord, r.data, "work item"),
    );
  }

  /** Newest first. */
  recentWithState(agentId: string, state: WorkItemState, limit: number): WorkItemRecord[] {
    return (this.recentByStateStmt.all(agentId, state, limit) as { data: string }[]).map((r) =>
      readRow(WorkItemRecord, r.data, "work item"),
    );
  }

  count(agentId: string, state: WorkItemState): number {
    return (this.countStmt.get(agentId, state) as { n: number }).n;
  }

  hasAny(agentId: string): boolean {
    return this.anyStmt.get(agentId) !== undefined;
  }

  /** Remove completed items beyond the newest `keep`, with their reports; returns their ids. */
  pruneCompleted(agentId: string, keep: number): string[] {
    const ids = (this.oldCompletedStmt.all(agentId, keep) as { id: string }[]).map((r) => r.id);
    for (const id of ids) {
      this.summaryDeleteStmt.run(id);
      this.deleteStmt.run(id);
    }
    return ids;
  }

  insertSummary(s: DeliverySummaryRecord): void {
    this.summaryInsertStmt.run(s.id, s.agent_id, s.work_item_id, JSON.stringify(s));
  }

  summary(id: string): DeliverySummaryRecord | undefined {
    const row = this.summaryGetStmt.get(id) as { data: string } | undefined;
    return row ? readRow(DeliverySummaryRecord, row.data, "delivery summary") : undefined;
  }

  newestSummary(workItemId: string): DeliverySummaryRecord | undefined {
    const row = this.summaryNewestStmt.get(workItemId) as { data: string } | undefined;
    return row ? readRow(DeliverySummaryRecord, row.data, "delivery summary") : undefined;
  }

  agentState(agentId: string): WorkAgentState {
    const row = this.stateGetStmt.get(agentId) as { data: string } | undefined;
    return row
      ? readRow(WorkAgentState, row.data, "work agent state")
      : { continuations_without_progress: 0 };
  }

  putAgentState(agentId: string, state: WorkAgentState): void {
    this.statePutStmt.run(agentId, JSON.stringify(state));
  }
}
