// Model rounds for usage and cost reports. They are read from the `provider_round_completed`
// events (each recorded model round, with its model and token usage), per agent; the
// events' own retention bounds them. A report is on demand, never on a turn's path.
import { isPostgres, type SqlDatabase, type SqlStatement } from "./sql.ts";
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
  private readonly roundsStmt: SqlStatement;
  /** Whether times are epoch milliseconds (the compact layout) rather than ISO text. */
  private readonly epochTimes: boolean;

  constructor(db: SqlDatabase) {
    // The events' physical layout is the events repository's: a type name or an id into
    // `event_types`, ISO or epoch-millisecond times. Read whichever this database has.
    const columns = new Set(
      (
        db
          .prepare(
            isPostgres(db)
              ? "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'events'"
              : "PRAGMA table_info(events)",
          )
          .all() as { name: string }[]
      ).map((c) => c.name),
    );
    const byId = columns.has("type_id");
    this.epochTimes = byId;
    const typeMatch = byId
      ? "type_id = (SELECT id FROM event_types WHERE name = 'provider_round_completed')"
      : "type = 'provider_round_completed'";
    // The agent's rows through its (agent_id, event_seq) index; only model rounds decoded.
    this.roundsStmt = db.prepare(
      `SELECT agent_id, ts, body FROM events
        WHERE agent_id = ? AND ${typeMatch} AND ts >= ? AND ts < ?
        ORDER BY event_seq`,
    );
  }

  /** The agent's model rounds recorded in [from, to), oldest first. */
  rounds(agentId: string, from: Date, to: Date): ModelRoundUsage[] {
    const bound = (d: Date) => (this.epochTimes ? d.getTime() : d.toISOString());
    const rows = this.roundsStmt.all(agentId, bound(from), bound(to)) as {
      agent_id: string;
      ts: string | number;
      body: string | Uint8Array;
    }[];
    return rows.map((r) => {
      const [, payload] = decodeBody(r.body) as [unknown, Record<string, unknown>];
      return {
        agent_id: r.agent_id,
        ts: typeof r.ts === "number" ? new Date(r.ts).toISOString() : r.ts,
        run_id: String(payload.run_id ?? ""),
        round: Number(payload.round ?? 0),
        model_ref: String(payload.model_ref ?? "unknown"),
        token_usage: (payload.token_usage as TokenUsage | null | undefined) ?? null,
      };
    });
  }
}
