// The durable queue. Dequeue order: priority band first, then admission order (FIFO).
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import {
  MessageEnvelope,
  PRIORITY_RANK,
  type MessageStatus,
  type Priority,
  type QueuedMessage,
} from "../domain/message.ts";
import { encodeMessageBody } from "./codec.ts";
import { DecodedRows, readBody } from "./json.ts";

type Row = {
  id: string;
  seq: number;
  status: string;
  processed_at: string | null;
  envelope: string | Uint8Array;
};

export class MessagesRepo {
  private readonly insertStmt: SqlStatement;
  private readonly nextStmt: SqlStatement;
  private readonly getStmt: SqlStatement;
  private readonly setStatusStmt: SqlStatement;
  private readonly countStmt: SqlStatement;
  private readonly byStatusStmt: SqlStatement;
  private readonly queuedAtStmt: SqlStatement;
  private readonly recentStmt: SqlStatement;
  private readonly recentStatusStmt: SqlStatement;
  /** Envelopes never change once admitted; the prompt reads the recent ones every turn. */
  private readonly decoded = new DecodedRows<MessageEnvelope>(1024);

  constructor(db: SqlDatabase) {
    this.insertStmt = db.prepare(
      "INSERT INTO messages (id, agent_id, priority_rank, status, created_at, envelope) VALUES (?, ?, ?, 'queued', ?, ?)",
    );
    this.nextStmt = db.prepare(
      "SELECT id, seq, status, processed_at, envelope FROM messages WHERE agent_id = ? AND status = 'queued' ORDER BY priority_rank, seq LIMIT 1",
    );
    this.getStmt = db.prepare(
      "SELECT id, seq, status, processed_at, envelope FROM messages WHERE id = ?",
    );
    this.setStatusStmt = db.prepare(
      "UPDATE messages SET status = ?, processed_at = ? WHERE id = ?",
    );
    this.countStmt = db.prepare(
      "SELECT COUNT(*) AS n FROM messages WHERE agent_id = ? AND status = 'queued'",
    );
    this.byStatusStmt = db.prepare(
      "SELECT id, seq, status, processed_at, envelope FROM messages WHERE agent_id = ? AND status = ? ORDER BY priority_rank, seq",
    );
    this.queuedAtStmt = db.prepare(
      "SELECT id, seq, status, processed_at, envelope FROM messages WHERE agent_id = ? AND status = 'queued' AND priority_rank = ? ORDER BY seq",
    );
    this.recentStmt = db.prepare(
      "SELECT id, seq, status, processed_at, envelope FROM messages WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
    );
    this.recentStatusStmt = db.prepare(
      "SELECT id, status FROM messages WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
    );
  }

  insert(message: MessageEnvelope): number {
    const result = this.insertStmt.run(
      message.id,
      message.agent_id,
      PRIORITY_RANK[message.priority],
      message.created_at,
      encodeMessageBody(message),
    );
    return Number(result.lastInsertRowid);
  }

  /** The next message to run, without changing it. */
  peekNext(agentId: string): QueuedMessage | undefined {
    const row = this.nextStmt.get(agentId) as Row | undefined;
    return row ? this.toQueued(row) : undefined;
  }

  get(id: string): QueuedMessage | undefined {
    const row = this.getStmt.get(id) as Row | undefined;
    return row ? this.toQueued(row) : undefined;
  }

  setStatus(id: string, status: MessageStatus, at?: string): void {
    this.setStatusStmt.run(status, at ?? null, id);
  }

  pendingCount(agentId: string): number {
    return (this.countStmt.get(agentId) as { n: number }).n;
  }

  withStatus(agentId: string, status: MessageStatus): QueuedMessage[] {
    return (this.byStatusStmt.all(agentId, status) as Row[]).map((r) => this.toQueued(r));
  }

  /** Queued messages of one priority band, oldest first (the turn's interjection check). */
  queuedAt(agentId: string, priority: Priority): QueuedMessage[] {
    return (this.queuedAtStmt.all(agentId, PRIORITY_RANK[priority]) as Row[]).map((r) =>
      this.toQueued(r),
    );
  }

  recent(agentId: string, limit: number): QueuedMessage[] {
    return (this.recentStmt.all(agentId, limit) as Row[]).map((r) => this.toQueued(r));
  }

  /**
   * The newest messages' ids and statuses, newest first: what `recent` says without reading
   * or copying an envelope (the prompt's recent history renders each message once).
   */
  recentStatus(agentId: string, limit: number): { id: string; status: MessageStatus }[] {
    return this.recentStatusStmt.all(agentId, limit) as { id: string; status: MessageStatus }[];
  }

  private toQueued(row: Row): QueuedMessage {
    const envelope = this.decoded.get(row.id, () =>
      readBody(MessageEnvelope, row.envelope, "message"),
    );
    const queued: QueuedMessage = {
      ...envelope,
      seq: row.seq,
      status: row.status as MessageStatus,
    };
    if (row.processed_at) queued.processed_at = row.processed_at;
    return queued;
  }
}
