import type { DatabaseSync, StatementSync } from "node:sqlite";
import { AgentRecord } from "../domain/agent.ts";
import { readRow } from "./json.ts";

export class AgentsRepo {
  private readonly getStmt: StatementSync;
  private readonly putStmt: StatementSync;
  private readonly listStmt: StatementSync;
  private readonly removeStmts: StatementSync[];
  private readonly tombstoneStmt: StatementSync;
  private readonly tombstonesStmt: StatementSync;
  /** The host is the only writer, so records are cached; a rolled-back transaction clears it. */
  private readonly cache = new Map<string, AgentRecord>();
  /**
   * Records put inside the open transaction, written once when it commits (`flush`): a
   * turn's transaction changes the agent's record several times (its closure, its status,
   * its rest), and only the last of them is what commits.
   */
  private readonly dirty = new Map<string, AgentRecord>();
  private deferring = false;

  constructor(db: DatabaseSync) {
    this.getStmt = db.prepare("SELECT data FROM agents WHERE agent_id = ?");
    this.putStmt = db.prepare(
      "INSERT INTO agents (agent_id, data) VALUES (?, ?) ON CONFLICT (agent_id) DO UPDATE SET data = excluded.data",
    );
    this.listStmt = db.prepare("SELECT data FROM agents ORDER BY agent_id");
    // Deletion removes the live rows and the agent's own state, which an agent created later
    // under the same id must not inherit (its working memory, work state, active skills,
    // attached workspaces, cancelled timers and revoked triggers); events, briefs,
    // transcript, tasks, work items and asks stay as audit, under their own retention.
    this.removeStmts = [
      "agents",
      "messages",
      "deadlines",
      "working_memory",
      "work_agent_state",
      "agent_skills",
      "agent_workspaces",
      "timers",
      "external_triggers",
    ].map((table) => db.prepare(`DELETE FROM ${table} WHERE agent_id = ?`));
    this.tombstoneStmt = db.prepare(
      "INSERT INTO agent_tombstones (agent_id, deleted_at, data) VALUES (?, ?, ?)",
    );
    this.tombstonesStmt = db.prepare(
      "SELECT data FROM agent_tombstones WHERE agent_id = ? ORDER BY rowid DESC",
    );
  }

  /** Delete the agent's live rows and leave a tombstone (run inside a transaction). */
  remove(agentId: string, deletedAt: string, tombstone: Record<string, unknown>): void {
    this.dirty.delete(agentId);
    for (const stmt of this.removeStmts) stmt.run(agentId);
    this.tombstoneStmt.run(agentId, deletedAt, JSON.stringify(tombstone));
    this.cache.delete(agentId);
  }

  tombstones(agentId: string): Record<string, unknown>[] {
    return (this.tombstonesStmt.all(agentId) as { data: string }[]).map(
      (r) => JSON.parse(r.data) as Record<string, unknown>,
    );
  }

  get(agentId: string): AgentRecord | undefined {
    const cached = this.cache.get(agentId);
    if (cached) return cached;
    const row = this.getStmt.get(agentId) as { data: string } | undefined;
    if (!row) return undefined;
    const record = readRow(AgentRecord, row.data, "agent");
    this.cache.set(agentId, record);
    return record;
  }

  put(record: AgentRecord): void {
    this.cache.set(record.agent_id, record);
    if (this.deferring) this.dirty.set(record.agent_id, record);
    else this.putStmt.run(record.agent_id, JSON.stringify(record));
  }

  // The store's own hooks around a transaction, as properties rather than methods: they are
  // not calls into the store, so `Store.countCalls` does not count them.
  /** The store opened a transaction: puts wait for `flush`, just before its commit. */
  readonly defer = (): void => {
    this.deferring = true;
  };

  /** Write the records put since `defer` (inside the transaction, before it commits). */
  readonly flush = (): void => {
    this.deferring = false;
    for (const record of this.dirty.values()) {
      this.putStmt.run(record.agent_id, JSON.stringify(record));
    }
    this.dirty.clear();
  };

  invalidate(): void {
    this.cache.clear();
    this.dirty.clear();
    this.deferring = false;
  }

  list(): AgentRecord[] {
    if (this.dirty.size > 0) {
      // Read through SQL: the transaction's puts so far go first, and deferring goes on.
      this.flush();
      this.deferring = true;
    }
    return (this.listStmt.all() as { data: string }[]).map((r) =>
      readRow(AgentRecord, r.data, "agent"),
    );
  }
}
