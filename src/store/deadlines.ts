// Deadlines: due times owned by agents, read by the deadline scheduler (waiting/).
// A keyed deadline replaces the previous one with the same key.
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import type { Deadline } from "../domain/deadline.ts";

type Row = {
  id: string;
  agent_id: string;
  kind: string;
  key: string | null;
  due_at: string;
  payload: string;
  created_at: string;
};

export class DeadlinesRepo {
  private readonly putStmt: SqlStatement;
  private readonly dropKeyStmt: SqlStatement;
  private readonly byKeyStmt: SqlStatement;
  private readonly deleteStmt: SqlStatement;
  private readonly nextStmt: SqlStatement;
  private readonly dueStmt: SqlStatement;
  private readonly forAgentStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.putStmt = db.prepare(
      "INSERT INTO deadlines (id, agent_id, kind, key, due_at, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    this.dropKeyStmt = db.prepare("DELETE FROM deadlines WHERE key = ?");
    this.byKeyStmt = db.prepare("SELECT * FROM deadlines WHERE key = ?");
    this.deleteStmt = db.prepare("DELETE FROM deadlines WHERE id = ?");
    this.nextStmt = db.prepare("SELECT MIN(due_at) AS due FROM deadlines");
    this.dueStmt = db.prepare(
      "SELECT * FROM deadlines WHERE due_at <= ? ORDER BY due_at, id LIMIT ?",
    );
    this.forAgentStmt = db.prepare(
      "SELECT * FROM deadlines WHERE agent_id = ? ORDER BY due_at, id",
    );
  }

  /** Insert; a deadline with a key replaces any earlier one with that key. */
  put(d: Deadline): void {
    if (d.key !== undefined) this.dropKeyStmt.run(d.key);
    this.putStmt.run(
      d.id,
      d.agent_id,
      d.kind,
      d.key ?? null,
      d.due_at,
      JSON.stringify(d.payload),
      d.created_at,
    );
  }

  byKey(key: string): Deadline | undefined {
    const row = this.byKeyStmt.get(key) as Row | undefined;
    return row ? toDeadline(row) : undefined;
  }

  /** Remove by key; true when one was there. */
  dropKey(key: string): boolean {
    return Number(this.dropKeyStmt.run(key).changes) > 0;
  }

  delete(id: string): boolean {
    return Number(this.deleteStmt.run(id).changes) > 0;
  }

  /** The nearest due time of all deadlines, or undefined when there are none. */
  nextDue(): string | undefined {
    return (this.nextStmt.get() as { due: string | null }).due ?? undefined;
  }

  due(now: string, limit: number): Deadline[] {
    return (this.dueStmt.all(now, limit) as Row[]).map(toDeadline);
  }

  forAgent(agentId: string): Deadline[] {
    return (this.forAgentStmt.all(agentId) as Row[]).map(toDeadline);
  }
}

function toDeadline(r: Row): Deadline {
  const d: Deadline = {
    id: r.id,
    agent_id: r.agent_id,
    kind: r.kind,
    due_at: r.due_at,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    created_at: r.created_at,
  };
  if (r.key !== null) d.key = r.key;
  return d;
}
