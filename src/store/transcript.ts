// Transcript entries: per agent, `seq` strictly increasing. The entry's identity and time (epoch
// milliseconds) are columns; its kind, message id and data are one encoded body (store/codec.ts). Retention
// removes an agent's oldest entries; `retention_floors` keeps numbering from restarting.
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import {
  StoredTranscriptEntry,
  type NewTranscriptEntry,
  type TranscriptEntry,
} from "../domain/transcript.ts";
import { decodeBody, encodeBody } from "./codec.ts";

type Row = {
  agent_id: string;
  seq: number;
  id: string;
  created_at: number;
  run_id: string | null;
  body: string | Uint8Array;
};

const COLUMNS = "agent_id, seq, id, created_at, run_id, body";

export class TranscriptRepo {
  private readonly maxStmt: SqlStatement;
  private readonly floorStmt: SqlStatement;
  private readonly insertStmt: SqlStatement;
  private readonly recentStmt: SqlStatement;
  private readonly byRunStmt: SqlStatement;
  /** Newest seq per agent; cleared when a transaction rolls back. */
  private readonly newest = new Map<string, number>();

  constructor(db: SqlDatabase) {
    this.maxStmt = db.prepare("SELECT MAX(seq) AS m FROM transcript WHERE agent_id = ?");
    this.floorStmt = db.prepare(
      "SELECT removed_through FROM retention_floors WHERE agent_id = ? AND family = 'transcript'",
    );
    this.insertStmt = db.prepare(`INSERT INTO transcript (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`);
    this.recentStmt = db.prepare(
      `SELECT ${COLUMNS} FROM transcript WHERE agent_id = ? ORDER BY seq DESC LIMIT ?`,
    );
    // Run ids are unique, so the index on run_id finds the run; agent_id only confirms it.
    this.byRunStmt = db.prepare(
      `SELECT ${COLUMNS} FROM transcript WHERE run_id = ? AND agent_id = ? ORDER BY seq`,
    );
  }

  private newestSeq(agentId: string): number {
    let n = this.newest.get(agentId);
    if (n === undefined) {
      const max = (this.maxStmt.get(agentId) as { m: number | null }).m ?? 0;
      const floor = this.floorStmt.get(agentId) as { removed_through: number } | undefined;
      n = Math.max(max, floor?.removed_through ?? 0);
      this.newest.set(agentId, n);
    }
    return n;
  }

  invalidate(): void {
    this.newest.clear();
  }

  /** Append an entry; its `seq` is assigned here. Run inside a store transaction. */
  append(entry: NewTranscriptEntry): TranscriptEntry {
    const seq = this.newestSeq(entry.agent_id) + 1;
    const full: TranscriptEntry = { ...entry, seq };
    const body: Record<string, unknown> = { kind: full.kind };
    if (full.message_id !== undefined) body.message_id = full.message_id;
    body.data = full.data;
    this.insertStmt.run(
      full.agent_id,
      seq,
      full.id,
      Date.parse(full.created_at),
      full.run_id ?? null,
      encodeBody(body),
    );
    this.newest.set(full.agent_id, seq);
    return full;
  }

  /** Most recent entries, oldest first. */
  recent(agentId: string, limit: number): StoredTranscriptEntry[] {
    return (this.recentStmt.all(agentId, limit) as Row[]).map(toEntry).reverse();
  }

  forRun(agentId: string, runId: string): StoredTranscriptEntry[] {
    return (this.byRunStmt.all(runId, agentId) as Row[]).map(toEntry);
  }
}

/** Read loosely: a kind or data shape from another version must not break a reader. */
function toEntry(row: Row): StoredTranscriptEntry {
  const body = decodeBody(row.body) as { kind: unknown; message_id?: unknown; data: unknown };
  const entry: Record<string, unknown> = {
    id: row.id,
    agent_id: row.agent_id,
    seq: row.seq,
    created_at: new Date(row.created_at).toISOString(),
    kind: body.kind,
    data: body.data,
  };
  if (row.run_id !== null) entry.run_id = row.run_id;
  if (body.message_id !== undefined && body.message_id !== null) entry.message_id = body.message_id;
  const parsed = StoredTranscriptEntry.safeParse(entry);
  if (!parsed.success) {
    throw new Error(`stored transcript entry does not match its schema: ${parsed.error.message}`);
  }
  return parsed.data;
}
