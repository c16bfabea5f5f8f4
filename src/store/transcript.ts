import type { DatabaseSync, StatementSync } from "node:sqlite";
import { TranscriptEntry } from "../domain/transcript.ts";
import { readRow } from "./json.ts";

export class TranscriptRepo {
  private readonly maxStmt: StatementSync;
  private readonly insertStmt: StatementSync;
  private readonly recentStmt: StatementSync;
  private readonly byRunStmt: StatementSync;

  constructor(db: DatabaseSync) {
    this.maxStmt = db.prepare("SELECT MAX(seq) AS m FROM transcript WHERE agent_id = ?");
    this.insertStmt = db.prepare(
      "INSERT INTO transcript (agent_id, seq, id, data) VALUES (?, ?, ?, ?)",
    );
    this.recentStmt = db.prepare(
      "SELECT data FROM transcript WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
    );
    this.byRunStmt = db.prepare(
      "SELECT data FROM transcript WHERE agent_id = ? AND json_extract(data, '$.run_id') = ? ORDER BY seq",
    );
  }

  /** Append an entry; its `seq` is assigned here. Run inside a store transaction. */
  append(entry: Omit<TranscriptEntry, "seq">): TranscriptEntry {
    const seq = ((this.maxStmt.get(entry.agent_id) as { m: number | null }).m ?? 0) + 1;
    const full: TranscriptEntry = { ...entry, seq };
    this.insertStmt.run(full.agent_id, seq, full.id, JSON.stringify(full));
    return full;
  }

  /** Most recent entries, oldest first. */
  recent(agentId: string, limit: number): TranscriptEntry[] {
    return (this.recentStmt.all(agentId, limit) as { data: string }[])
      .map((r) => readRow(TranscriptEntry, r.data, "transcript entry"))
      .reverse();
  }

  forRun(agentId: string, runId: string): TranscriptEntry[] {
    return (this.byRunStmt.all(agentId, runId) as { data: string }[]).map((r) =>
      readRow(TranscriptEntry, r.data, "transcript entry"),
    );
  }
}
