import type { SqlDatabase, SqlStatement } from "./sql.ts";
import { BriefRecord } from "../domain/brief.ts";
import { encodeBody } from "./codec.ts";
import { BOUNDS_SQL, DecodedRows, readBody, RecentIds } from "./json.ts";

export class BriefsRepo {
  private readonly insertStmt: SqlStatement;
  private readonly recentStmt: SqlStatement;
  private readonly dataStmt: SqlStatement;
  private readonly afterStmt: SqlStatement;
  private readonly seqStmt: SqlStatement;
  private readonly newestStmt: SqlStatement;
  /** Briefs never change; the prompt reads an agent's recent ones on every turn. */
  private readonly decoded = new DecodedRows<BriefRecord>(1024);
  private readonly boundsStmt: SqlStatement;
  /** The newest ids of an agent as last listed (see `recent`). */
  private readonly recentIds = new RecentIds();

  constructor(db: SqlDatabase) {
    this.insertStmt = db.prepare("INSERT INTO briefs (id, agent_id, data) VALUES (?, ?, ?)");
    this.recentStmt = db.prepare(
      "SELECT id FROM briefs WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
    );
    this.dataStmt = db.prepare("SELECT data FROM briefs WHERE id = ?");
    this.afterStmt = db.prepare(
      "SELECT seq, id, data FROM briefs WHERE agent_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    );
    this.seqStmt = db.prepare("SELECT seq FROM briefs WHERE agent_id = ? AND id = ?");
    this.newestStmt = db.prepare("SELECT MAX(seq) AS seq FROM briefs WHERE agent_id = ?");
    this.boundsStmt = db.prepare(BOUNDS_SQL("briefs"));
  }

  /** The sequence number of one of the agent's briefs, or undefined when it has none by that id. */
  seqOf(agentId: string, id: string): number | undefined {
    const row = this.seqStmt.get(agentId, id) as { seq: number } | undefined;
    return row?.seq;
  }

  /** The sequence number of the agent's newest brief (0 when it has none). */
  newestSeq(agentId: string): number {
    const row = this.newestStmt.get(agentId) as { seq: number | null } | undefined;
    return row?.seq ?? 0;
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
    const { lastInsertRowid } = this.insertStmt.run(brief.id, brief.agent_id, encodeBody(brief));
    this.recentIds.added(brief.agent_id, Number(lastInsertRowid), brief.id);
    // The turn boundary and the next prompt read it right away: kept as written (a copy, so
    // the caller's object stays its own), not decoded back. A rolled-back brief's id is never
    // listed, so its entry is only dropped in time.
    this.decoded.get(brief.id, () => structuredClone(brief));
  }

  /**
   * Most recent briefs, oldest first. Ids first: a brief already decoded is not read again
   * (the prompt's recent history asks for the same few dozen on every turn).
   */
  recent(agentId: string, limit: number): BriefRecord[] {
    const ids = this.recentIds.get(agentId, limit, this.boundsStmt, this.recentStmt);
    return this.decoded.oldestFirst(ids, (id) => {
      const row = this.dataStmt.get(id) as { data: string | Uint8Array };
      return readBody(BriefRecord, row.data, "brief");
    });
  }

  /** A rolled-back transaction may have listed a brief it inserted: list again. */
  invalidate(): void {
    this.recentIds.clear();
  }
}
