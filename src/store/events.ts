// The append-only audit log. `event_seq` is per agent, strictly increasing and gap-free:
// it is assigned inside the writing transaction from the current maximum.
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { EventEnvelope } from "../domain/event.ts";

type Row = {
  agent_id: string;
  event_seq: number;
  id: string;
  ts: string;
  type: string;
  provenance: string;
  payload: string;
};

export type EventQuery = {
  afterSeq?: number;
  beforeSeq?: number;
  limit: number;
  order: "asc" | "desc";
};

export class EventsRepo {
  private readonly db: DatabaseSync;
  private readonly maxStmt: StatementSync;
  private readonly insertStmt: StatementSync;
  private readonly afterStmt: StatementSync;
  /** Newest event_seq per agent, kept in memory; cleared when a transaction rolls back. */
  private readonly newest = new Map<string, number>();

  constructor(db: DatabaseSync) {
    this.db = db;
    this.maxStmt = db.prepare("SELECT MAX(event_seq) AS m FROM events WHERE agent_id = ?");
    this.insertStmt = db.prepare(
      "INSERT INTO events (agent_id, event_seq, id, ts, type, provenance, payload) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    this.afterStmt = db.prepare(
      "SELECT * FROM events WHERE agent_id = ? AND event_seq > ? ORDER BY event_seq ASC LIMIT ?",
    );
  }

  newestSeq(agentId: string): number {
    let n = this.newest.get(agentId);
    if (n === undefined) {
      n = (this.maxStmt.get(agentId) as { m: number | null }).m ?? 0;
      this.newest.set(agentId, n);
    }
    return n;
  }

  invalidate(): void {
    this.newest.clear();
  }

  nextSeq(agentId: string): number {
    return this.newestSeq(agentId) + 1;
  }

  insert(e: EventEnvelope): void {
    this.newest.set(e.agent_id, e.event_seq);
    this.insertStmt.run(
      e.agent_id,
      e.event_seq,
      e.id,
      e.ts,
      e.type,
      JSON.stringify(e.provenance),
      JSON.stringify(e.payload),
    );
  }

  /** Events strictly after `afterSeq`, ascending: the replay path. */
  after(agentId: string, afterSeq: number, limit: number): EventEnvelope[] {
    return (this.afterStmt.all(agentId, afterSeq, limit) as Row[]).map(toEnvelope);
  }

  query(agentId: string, q: EventQuery): EventEnvelope[] {
    const where = ["agent_id = ?"];
    const args: (string | number)[] = [agentId];
    if (q.afterSeq !== undefined) {
      where.push("event_seq > ?");
      args.push(q.afterSeq);
    }
    if (q.beforeSeq !== undefined) {
      where.push("event_seq < ?");
      args.push(q.beforeSeq);
    }
    const order = q.order === "asc" ? "ASC" : "DESC";
    const sql = `SELECT * FROM events WHERE ${where.join(" AND ")} ORDER BY event_seq ${order} LIMIT ?`;
    args.push(q.limit);
    return (this.db.prepare(sql).all(...args) as Row[]).map(toEnvelope);
  }
}

function toEnvelope(row: Row): EventEnvelope {
  return {
    id: row.id,
    event_seq: row.event_seq,
    ts: row.ts,
    agent_id: row.agent_id,
    type: row.type,
    provenance: JSON.parse(row.provenance),
    payload: JSON.parse(row.payload),
  };
}
