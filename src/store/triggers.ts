// External trigger capabilities: one row per capability, found by the agent (its active
// one) or by the hash of the presented token (never by the token itself). Revoked rows are
// kept for audit, pruned to the newest few per agent whenever one is revoked.
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import { ExternalTriggerRecord } from "../domain/waiting.ts";
import { readRow } from "./json.ts";

export class TriggersRepo {
  private readonly putStmt: SqlStatement;
  private readonly activeStmt: SqlStatement;
  private readonly byHashStmt: SqlStatement;
  private readonly revokedStmt: SqlStatement;
  private readonly pruneStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.putStmt = db.prepare(
      `INSERT INTO external_triggers (id, agent_id, status, token_hash, created_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data`,
    );
    this.activeStmt = db.prepare(
      "SELECT data FROM external_triggers WHERE agent_id = ? AND status = 'active' ORDER BY created_at DESC LIMIT 1",
    );
    this.byHashStmt = db.prepare("SELECT data FROM external_triggers WHERE token_hash = ?");
    this.revokedStmt = db.prepare(
      "SELECT data FROM external_triggers WHERE agent_id = ? AND status = 'revoked' ORDER BY created_at DESC LIMIT ?",
    );
    this.pruneStmt = db.prepare(
      `DELETE FROM external_triggers WHERE id IN (
         SELECT id FROM external_triggers WHERE agent_id = ? AND status = 'revoked'
         ORDER BY created_at DESC LIMIT -1 OFFSET ?)`,
    );
  }

  put(t: ExternalTriggerRecord): void {
    this.putStmt.run(
      t.external_trigger_id,
      t.agent_id,
      t.status,
      t.token_hash,
      t.created_at,
      JSON.stringify(t),
    );
  }

  active(agentId: string): ExternalTriggerRecord | undefined {
    const row = this.activeStmt.get(agentId) as { data: string } | undefined;
    return row ? readRow(ExternalTriggerRecord, row.data, "external trigger") : undefined;
  }

  byTokenHash(hash: string): ExternalTriggerRecord | undefined {
    const row = this.byHashStmt.get(hash) as { data: string } | undefined;
    return row ? readRow(ExternalTriggerRecord, row.data, "external trigger") : undefined;
  }

  revoked(agentId: string, limit: number): ExternalTriggerRecord[] {
    return (this.revokedStmt.all(agentId, limit) as { data: string }[]).map((r) =>
      readRow(ExternalTriggerRecord, r.data, "external trigger"),
    );
  }

  pruneRevoked(agentId: string, keep: number): number {
    return Number(this.pruneStmt.run(agentId, keep).changes);
  }
}
