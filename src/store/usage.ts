// Model rounds for usage and cost reports. They are read from the `provider_round_completed`
// events (each recorded model round, with its model and token usage) through a partial index
// holding only those rows (migration 8); the events' own retention bounds them.
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { TokenUsage } from "../domain/provider.ts";
import { decodeBody } from "./codec.ts";

export type ModelRoundUsage = {
  agent_id: string;
  ts: string;
  run_id: string;
  round: number;
  model_ref: string;
  token_usage: TokenUsage | null;
};

export class UsageRepo {
  private readonly roundsStmt: StatementSync;

  constructor(db: DatabaseSync) {
    this.roundsStmt = db.prepare(
      `SELECT agent_id, ts, body FROM events INDEXED BY events_model_rounds
        WHERE type = 'provider_round_completed' AND agent_id = ? AND ts >= ? AND ts < ?
        ORDER BY agent_id, ts`,
    );
  }

  /** The agent's model rounds recorded in [from, to) (ISO times), oldest first. */
  rounds(agentId: string, from: string, to: string): ModelRoundUsage[] {
    const rows = this.roundsStmt.all(agentId, from, to) as {
      agent_id: string;
      ts: string;
      body: string | Uint8Array;
    }[];
    return rows.map((r) => {
      const [, payload] = decodeBody(r.body) as [unknown, Record<string, unknown>];
      return {
        agent_id: r.agent_id,
        ts: r.ts,
        run_id: String(payload.run_id ?? ""),
        round: Number(payload.round ?? 0),
        model_ref: String(payload.model_ref ?? "unknown"),
        token_usage: (payload.token_usage as TokenUsage | null | undefined) ?? null,
      };
    });
  }
}
