import type { SqlDatabase, SqlStatement } from "./sql.ts";
import type { z } from "zod";
import { TaskRecord } from "../domain/task.ts";
import { readRow } from "./json.ts";

export class TasksRepo {
  private readonly getStmt: SqlStatement;
  private readonly putStmt: SqlStatement;
  private readonly byAgentStmt: SqlStatement;
  private readonly activeStmt: SqlStatement;
  private readonly activeForAgentStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.getStmt = db.prepare("SELECT data FROM tasks WHERE id = ?");
    this.putStmt = db.prepare(
      "INSERT INTO tasks (id, agent_id, status, data) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data",
    );
    this.byAgentStmt = db.prepare(
      "SELECT data FROM tasks WHERE agent_id = ? ORDER BY rowid DESC LIMIT ?",
    );
    this.activeForAgentStmt = db.prepare(
      "SELECT data FROM tasks WHERE agent_id = ? AND status IN ('queued', 'running') ORDER BY rowid",
    );
    this.activeStmt = db.prepare(
      "SELECT data FROM tasks WHERE status IN ('queued', 'running') ORDER BY rowid",
    );
  }

  get(id: string): TaskRecord | undefined {
    const row = this.getStmt.get(id) as { data: string } | undefined;
    return row ? readRow(TaskRecord, row.data, "task") : undefined;
  }

  put(task: z.input<typeof TaskRecord>): void {
    this.putStmt.run(task.id, task.agent_id, task.status, JSON.stringify(task));
  }

  /** Most recent first. */
  forAgent(agentId: string, limit = 100): TaskRecord[] {
    return (this.byAgentStmt.all(agentId, limit) as { data: string }[]).map((r) =>
      readRow(TaskRecord, r.data, "task"),
    );
  }

  /** This agent's tasks that are not terminal yet. */
  activeForAgent(agentId: string): TaskRecord[] {
    return (this.activeForAgentStmt.all(agentId) as { data: string }[]).map((r) =>
      readRow(TaskRecord, r.data, "task"),
    );
  }

  /** Every task not yet terminal, across agents: what restart recovery must look at. */
  active(): TaskRecord[] {
    return (this.activeStmt.all() as { data: string }[]).map((r) =>
      readRow(TaskRecord, r.data, "task"),
    );
  }
}
