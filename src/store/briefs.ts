import type { DatabaseSync, StatementSync } from "node:sqlite";
import { BriefRecord } from "../domain/brief.ts";
import { encodeBody } from "./codec.ts";
import { DecodedRows, readBody } from "./json.ts";

export class BriefsRepo {
  private readonly insertStmt: StatementSync;
  private readonly recentStmt: StatementSync;
  private readonly afterStmt: StatementSync;
  /** Briefs never change; the prompt reads an agent's recent ones on every turn. */
  private readonly decoded = new DecodedRows<BriefRecord>(1024);

  constructor(db: DatabaseSync) {
    this.insertStmt = db.prepare("INSERT INTO briefs (id, agent_id, data) VALUES (?, ?, ?)");
    this.recentStmt = db.prepare(
      "SELECT id, data FROM briefs WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
    );
    this.afterStmt = db.prepare(
      "SELECT seq, id, data FROM briefs WHERE agent_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    );
  }

  /** Briefs after a sequence number, oldest first, with their sequence (memory index sync). */
  after(agentId: string, afterSeq: number, limit: number): { seq: number; brief: BriefRecord }[] {
    return (
      this.afterStmt.all(agentId, afterSeq, limit) as {
        seq: number;
        id: string;
        data: string | Uint8Array;
      }[]
    ).map((r) => ({ seq: r.seq, brief: readBody(BriefRecord, r.data, "brief") }));
  }

  insert(brief: BriefRecord): void {
    this.insertStmt.run(brief.id, brief.agent_id, encodeBody(brief));
  }

  /** Most recent briefs, oldest first. */
  recent(agentId: string, limit: number): BriefRecord[] {
    return (this.recentStmt.all(agentId, limit) as { id: string; data: string | Uint8Array }[])
      .map((r) => this.decoded.get(r.id, () => readBody(BriefRecord, r.data, "brief")))
      .reverse();
  }
}
