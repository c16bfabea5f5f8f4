import type { DatabaseSync, StatementSync } from "node:sqlite";
import { AgentRecord } from "../domain/agent.ts";
import { readRow, writeRow } from "./json.ts";

export class AgentsRepo {
  private readonly getStmt: StatementSync;
  private readonly putStmt: StatementSync;
  private readonly listStmt: StatementSync;

  constructor(db: DatabaseSync) {
    this.getStmt = db.prepare("SELECT data FROM agents WHERE agent_id = ?");
    this.putStmt = db.prepare(
      "INSERT INTO agents (agent_id, data) VALUES (?, ?) ON CONFLICT (agent_id) DO UPDATE SET data = excluded.data",
    );
    this.listStmt = db.prepare("SELECT data FROM agents ORDER BY agent_id");
  }

  get(agentId: string): AgentRecord | undefined {
    const row = this.getStmt.get(agentId) as { data: string } | undefined;
    return row ? readRow(AgentRecord, row.data, "agent") : undefined;
  }

  put(record: AgentRecord): void {
    this.putStmt.run(record.agent_id, writeRow(record));
  }

  list(): AgentRecord[] {
    return (this.listStmt.all() as { data: string }[]).map((r) =>
      readRow(AgentRecord, r.data, "agent"),
    );
  }
}
