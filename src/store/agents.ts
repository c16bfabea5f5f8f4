import { isPostgres, jsonField, type SqlDatabase, type SqlStatement } from "./sql.ts";
import { AgentRecord } from "../domain/agent.ts";
import { readRow } from "./json.ts";

export class AgentsRepo {
  private readonly getStmt: SqlStatement;
  private readonly putStmt: SqlStatement;
  private readonly listStmt: SqlStatement;
  private readonly removeStmts: SqlStatement[];
  private readonly tombstoneStmt: SqlStatement;
  private readonly tombstonesStmt: SqlStatement;
  private readonly dormantStmt: SqlStatement;
  private readonly legacyStmt: SqlStatement;
  private readonly mcpStmt: SqlStatement;
  private readonly reservedStmt: SqlStatement;
  private readonly groupsStmt: SqlStatement;
  private readonly inGroupsStmt: SqlStatement;
  /** The host is the only writer, so records are cached; a rolled-back transaction clears it. */
  private readonly cache = new Map<string, AgentRecord>();
  /** Rows decoded (parsed and validated) so far: what a start costs grows with this. */
  decoded = 0;
  /**
   * Records put inside the open transaction, written once when it commits (`flush`): a
   * turn's transaction changes the agent's record several times (its closure, its status,
   * its rest), and only the last of them is what commits.
   */
  private readonly dirty = new Map<string, AgentRecord>();
  private deferring = false;

  constructor(db: SqlDatabase) {
    this.getStmt = db.prepare("SELECT data FROM agents WHERE agent_id = ?");
    // The group column is written once, with the row: a group never changes (`put` refuses).
    this.putStmt = db.prepare(
      "INSERT INTO agents (agent_id, group_id, data) VALUES (?, ?, ?) ON CONFLICT (agent_id) DO UPDATE SET data = excluded.data",
    );
    this.listStmt = db.prepare("SELECT agent_id, data FROM agents ORDER BY agent_id");
    // The questions a host start asks of every agent, answered from the stored JSON without
    // decoding each record (every `holon run` leaves one more agent behind). Each is the SQL
    // form of a predicate on AgentRecord, named beside its method.
    // Queries into the records' JSON: SQLite's json functions, or Postgres's jsonb operators.
    const pg = isPostgres(db);
    const field = jsonField(db);
    this.dormantStmt = db.prepare(
      `SELECT agent_id FROM agents WHERE ${pg ? "agent_id LIKE 'run-%'" : "agent_id GLOB 'run-*'"}
         AND ${field("data", "visibility")} = 'private'
         AND ${field("data", "status")} = 'stopped'
         AND COALESCE(${field("data", "current_run_id")}, '') = ''
       ORDER BY agent_id`,
    );
    this.legacyStmt = db.prepare(
      `SELECT agent_id, data FROM agents
       WHERE COALESCE(${field("data", "workspace_root")}, '') != ''
         AND ${field("data", "active_workspace")} IS NULL
       ORDER BY agent_id`,
    );
    this.mcpStmt = db.prepare(
      pg
        ? `SELECT 1 FROM agents WHERE jsonb_typeof(data::jsonb #> '{mcp,servers}') = 'object'
             AND (data::jsonb #> '{mcp,servers}') != '{}'::jsonb LIMIT 1`
        : `SELECT 1 FROM agents WHERE json_type(data, '$.mcp.servers') = 'object'
             AND json_extract(data, '$.mcp.servers') != '{}' LIMIT 1`,
    );
    this.reservedStmt = db.prepare(
      `SELECT agent_id FROM agents
       WHERE ${field("data", "budget_reservation.from_agent_id")} = ?
         AND COALESCE(${field("data", "budget_reservation.returned_at")}, '') = ''
       ORDER BY agent_id`,
    );
    this.groupsStmt = db.prepare("SELECT DISTINCT group_id FROM agents ORDER BY group_id");
    // Each group's rows come from the index; they are put in agent order afterwards (a
    // start has always gone through the agents in that order).
    this.inGroupsStmt = db.prepare(
      isPostgres(db)
        ? "SELECT agent_id, data FROM agents WHERE group_id IN (SELECT jsonb_array_elements_text(?::jsonb))"
        : "SELECT agent_id, data FROM agents WHERE group_id IN (SELECT value FROM json_each(?))",
    );
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
    return this.decode(agentId, row.data);
  }

  private decode(agentId: string, data: string): AgentRecord {
    let record = this.cache.get(agentId);
    if (record === undefined) {
      this.decoded++;
      record = readRow(AgentRecord, data, "agent");
      this.cache.set(agentId, record);
    }
    return record;
  }

  put(record: AgentRecord): void {
    const known = this.cache.get(record.agent_id);
    if (known !== undefined && known.group_id !== record.group_id) {
      throw new Error(
        `agent ${record.agent_id} is in group ${known.group_id}; a group never changes (got ${record.group_id})`,
      );
    }
    this.cache.set(record.agent_id, record);
    if (this.deferring) this.dirty.set(record.agent_id, record);
    else this.putStmt.run(record.agent_id, record.group_id, JSON.stringify(record));
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
      this.putStmt.run(record.agent_id, record.group_id, JSON.stringify(record));
    }
    this.dirty.clear();
  };

  invalidate(): void {
    this.cache.clear();
    this.dirty.clear();
    this.deferring = false;
  }

  /**
   * Before a query that reads the agents' rows in SQL: writes the records put so far in the
   * open transaction (later puts keep waiting for the commit), so the query sees them.
   */
  private settled(): void {
    if (this.dirty.size === 0) return;
    this.flush();
    this.deferring = true;
  }

  /**
   * Every agent (but those named in `skip`, whose rows are not decoded), decoded through the
   * same cache as `get`: a host start lists the agents several times.
   */
  list(skip?: ReadonlySet<string>): AgentRecord[] {
    this.settled();
    const out: AgentRecord[] = [];
    for (const r of this.listStmt.all() as { agent_id: string; data: string }[]) {
      if (skip?.has(r.agent_id)) continue;
      out.push(this.decode(r.agent_id, r.data));
    }
    return out;
  }

  /** Finished `holon run` agents, by id: `isDormantRunAgent` (domain/agent.ts) in SQL. */
  dormantRunIds(): string[] {
    this.settled();
    return (this.dormantStmt.all() as { agent_id: string }[]).map((r) => r.agent_id);
  }

  /** Agents whose record still has a `workspace_root` and no active workspace entry. */
  withLegacyWorkspace(): AgentRecord[] {
    this.settled();
    return (this.legacyStmt.all() as { agent_id: string; data: string }[]).map((r) =>
      this.decode(r.agent_id, r.data),
    );
  }

  /** Whether any agent's own settings name an MCP server (`mcp.servers` not empty). */
  anyOwnMcpServers(): boolean {
    this.settled();
    return this.mcpStmt.get() !== undefined;
  }

  /** Agents holding a budget reservation carved from `parentId` and not given back, by id. */
  reservedFrom(parentId: string): string[] {
    this.settled();
    return (this.reservedStmt.all(parentId) as { agent_id: string }[]).map((r) => r.agent_id);
  }

  /** Every agent group (the roots of the supervision chains), from the index alone. */
  groupIds(): string[] {
    this.settled();
    return (this.groupsStmt.all() as { group_id: string }[]).map((r) => r.group_id);
  }

  /**
   * The agents of these groups: every member's id, and the records of those `skip` does not
   * name (decoded through the cache as `get` does; skipped rows are not decoded).
   */
  inGroups(
    groupIds: readonly string[],
    skip?: ReadonlySet<string>,
  ): { ids: string[]; records: AgentRecord[] } {
    this.settled();
    const ids: string[] = [];
    const records: AgentRecord[] = [];
    const rows = this.inGroupsStmt.all(JSON.stringify(groupIds)) as {
      agent_id: string;
      data: string;
    }[];
    rows.sort((a, b) => (a.agent_id < b.agent_id ? -1 : a.agent_id > b.agent_id ? 1 : 0));
    for (const r of rows) {
      ids.push(r.agent_id);
      if (!skip?.has(r.agent_id)) records.push(this.decode(r.agent_id, r.data));
    }
    return { ids, records };
  }
}
