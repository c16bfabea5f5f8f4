// Asks (domain/ask.ts): one row per ask, the JSON record plus the columns its queries use.
// A holding ask (pending, or an expired budget ask) is found by agent and by work item
// through small indexes, so the loop's gate check and the work plane's lookups stay cheap.
// Bounded: an agent holds at most ASKS_PER_AGENT_KEPT closed asks; older ones are pruned
// whenever an ask closes (`pruneClosed`).
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import { AskRecord } from "../domain/ask.ts";
import { readRow } from "./json.ts";

export const ASKS_PER_AGENT_KEPT = 200;

export class AsksRepo {
  private readonly getStmt: SqlStatement;
  private readonly putStmt: SqlStatement;
  private readonly gateStmt: SqlStatement;
  private readonly holdingForItemStmt: SqlStatement;
  private readonly holdingForAgentStmt: SqlStatement;
  private readonly byStateStmt: SqlStatement;
  private readonly recentStmt: SqlStatement;
  private readonly recentForAgentStmt: SqlStatement;
  private readonly pruneStmt: SqlStatement;
  private readonly pruneCallsStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.getStmt = db.prepare("SELECT data FROM asks WHERE id = ?");
    this.putStmt = db.prepare(
      `INSERT INTO asks (id, agent_id, state, holding, gates_agent, work_item_id, created_at, data)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, holding = excluded.holding,
         gates_agent = excluded.gates_agent, data = excluded.data`,
    );
    this.gateStmt = db.prepare(
      "SELECT id FROM asks WHERE agent_id = ? AND holding = 1 AND gates_agent = 1 ORDER BY created_at LIMIT 1",
    );
    this.holdingForItemStmt = db.prepare(
      "SELECT data FROM asks WHERE work_item_id = ? AND holding = 1 ORDER BY created_at",
    );
    this.holdingForAgentStmt = db.prepare(
      "SELECT data FROM asks WHERE agent_id = ? AND holding = 1 ORDER BY created_at",
    );
    this.byStateStmt = db.prepare(
      "SELECT data FROM asks WHERE state = ? ORDER BY created_at LIMIT ?",
    );
    this.recentStmt = db.prepare("SELECT data FROM asks ORDER BY created_at DESC LIMIT ?");
    this.recentForAgentStmt = db.prepare(
      "SELECT data FROM asks WHERE agent_id = ? ORDER BY created_at DESC LIMIT ?",
    );
    const pruned = `SELECT id FROM asks WHERE agent_id = ? AND holding = 0 AND state != 'pending'
         ORDER BY created_at DESC LIMIT -1 OFFSET ?`;
    // The calls an approval ask held go with it once they are settled (an approved call that
    // has not run yet stays: it is still owed a run).
    this.pruneCallsStmt = db.prepare(
      `DELETE FROM approval_calls WHERE ask_id IN (${pruned})
         AND state IN ('completed', 'interrupted', 'denied', 'void')`,
    );
    this.pruneStmt = db.prepare(`DELETE FROM asks WHERE id IN (${pruned})`);
  }

  get(id: string): AskRecord | undefined {
    const row = this.getStmt.get(id) as { data: string } | undefined;
    return row ? readRow(AskRecord, row.data, "ask") : undefined;
  }

  /** Insert or replace; `holding` says whether it still holds up its agent or item. */
  put(ask: AskRecord, holding: boolean): void {
    this.putStmt.run(
      ask.id,
      ask.agent_id,
      ask.state,
      holding ? 1 : 0,
      ask.scope === "agent" && ask.gates_agent !== false ? 1 : 0,
      ask.work_item_id ?? null,
      ask.created_at,
      JSON.stringify(ask),
    );
  }

  /** The oldest agent-scope ask holding this agent, if any (the gate). */
  gate(agentId: string): string | undefined {
    return (this.gateStmt.get(agentId) as { id: string } | undefined)?.id;
  }

  holdingForItem(workItemId: string): AskRecord[] {
    return (this.holdingForItemStmt.all(workItemId) as { data: string }[]).map((r) =>
      readRow(AskRecord, r.data, "ask"),
    );
  }

  holdingForAgent(agentId: string): AskRecord[] {
    return (this.holdingForAgentStmt.all(agentId) as { data: string }[]).map((r) =>
      readRow(AskRecord, r.data, "ask"),
    );
  }

  /** Oldest first. */
  withState(state: string, limit: number): AskRecord[] {
    return (this.byStateStmt.all(state, limit) as { data: string }[]).map((r) =>
      readRow(AskRecord, r.data, "ask"),
    );
  }

  /** Newest first, optionally of one agent. */
  recent(limit: number, agentId?: string): AskRecord[] {
    const rows = (
      agentId === undefined
        ? this.recentStmt.all(limit)
        : this.recentForAgentStmt.all(agentId, limit)
    ) as { data: string }[];
    return rows.map((r) => readRow(AskRecord, r.data, "ask"));
  }

  /** Drop the agent's closed asks beyond the newest `keep`. */
  pruneClosed(agentId: string, keep: number): number {
    this.pruneCallsStmt.run(agentId, keep);
    return Number(this.pruneStmt.run(agentId, keep).changes);
  }
}
