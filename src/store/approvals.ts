// Approvals of the action leash (domain/approval.ts): the calls an approval ask holds, with
// their execution state, and the operator's consent grants for workspace-level definitions.
// A call row changes state only through `transition`, a compare-and-set: the step from
// `approved` to `executing` happens once, whatever else runs.
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import {
  ApprovalCallRecord,
  ConsentGrant,
  type ApprovalCallState,
  type ConsentSubject,
} from "../domain/approval.ts";
import { readRow } from "./json.ts";

export class ApprovalsRepo {
  private readonly putCallStmt: SqlStatement;
  private readonly casStmt: SqlStatement;
  private readonly getCallStmt: SqlStatement;
  private readonly ofAskStmt: SqlStatement;
  private readonly agentStateStmt: SqlStatement;
  private readonly stateStmt: SqlStatement;
  private readonly putGrantStmt: SqlStatement;
  private readonly getGrantStmt: SqlStatement;
  private readonly grantsByAskStmt: SqlStatement;
  private readonly grantsInStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.putCallStmt = db.prepare(
      `INSERT INTO approval_calls (ask_id, call_id, agent_id, state, created_at, data)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.casStmt = db.prepare(
      "UPDATE approval_calls SET state = ?, data = ? WHERE ask_id = ? AND call_id = ? AND state = ?",
    );
    this.getCallStmt = db.prepare(
      "SELECT data FROM approval_calls WHERE ask_id = ? AND call_id = ?",
    );
    this.ofAskStmt = db.prepare("SELECT data FROM approval_calls WHERE ask_id = ? ORDER BY rowid");
    this.agentStateStmt = db.prepare(
      "SELECT data FROM approval_calls WHERE agent_id = ? AND state = ? ORDER BY created_at, rowid",
    );
    this.stateStmt = db.prepare(
      "SELECT data FROM approval_calls WHERE state = ? ORDER BY created_at, rowid",
    );
    this.putGrantStmt = db.prepare(
      `INSERT INTO consent_grants (subject, workspace, name, digest, state, ask_id, data)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (subject, workspace, name, digest) DO UPDATE SET state = excluded.state,
         ask_id = excluded.ask_id, data = excluded.data`,
    );
    this.getGrantStmt = db.prepare(
      "SELECT data FROM consent_grants WHERE subject = ? AND workspace = ? AND name = ? AND digest = ?",
    );
    this.grantsByAskStmt = db.prepare("SELECT data FROM consent_grants WHERE ask_id = ?");
    this.grantsInStmt = db.prepare(
      "SELECT data FROM consent_grants WHERE subject = ? AND state = ? LIMIT ?",
    );
  }

  addCall(call: ApprovalCallRecord): void {
    this.putCallStmt.run(
      call.ask_id,
      call.call_id,
      call.agent_id,
      call.state,
      call.created_at,
      JSON.stringify(call),
    );
  }

  /** Move a call from `from` to `next.state`; false (nothing written) if it was not in `from`. */
  transition(next: ApprovalCallRecord, from: ApprovalCallState): boolean {
    const r = this.casStmt.run(next.state, JSON.stringify(next), next.ask_id, next.call_id, from);
    return Number(r.changes) === 1;
  }

  getCall(askId: string, callId: string): ApprovalCallRecord | undefined {
    const row = this.getCallStmt.get(askId, callId) as { data: string } | undefined;
    return row ? readRow(ApprovalCallRecord, row.data, "approval call") : undefined;
  }

  callsOfAsk(askId: string): ApprovalCallRecord[] {
    return rows(this.ofAskStmt.all(askId));
  }

  callsOf(agentId: string, state: ApprovalCallState): ApprovalCallRecord[] {
    return rows(this.agentStateStmt.all(agentId, state));
  }

  callsIn(state: ApprovalCallState): ApprovalCallRecord[] {
    return rows(this.stateStmt.all(state));
  }

  putGrant(grant: ConsentGrant): void {
    this.putGrantStmt.run(
      grant.subject,
      grant.workspace,
      grant.name,
      grant.digest,
      grant.state,
      grant.ask_id,
      JSON.stringify(grant),
    );
  }

  getGrant(
    subject: ConsentSubject,
    workspace: string,
    name: string,
    digest: string,
  ): ConsentGrant | undefined {
    const row = this.getGrantStmt.get(subject, workspace, name, digest) as
      { data: string } | undefined;
    return row ? readRow(ConsentGrant, row.data, "consent grant") : undefined;
  }

  grantsIn(subject: ConsentSubject, state: ConsentGrant["state"], limit: number): ConsentGrant[] {
    return (this.grantsInStmt.all(subject, state, limit) as { data: string }[]).map((r) =>
      readRow(ConsentGrant, r.data, "consent grant"),
    );
  }

  grantsOfAsk(askId: string): ConsentGrant[] {
    return (this.grantsByAskStmt.all(askId) as { data: string }[]).map((r) =>
      readRow(ConsentGrant, r.data, "consent grant"),
    );
  }
}

function rows(all: unknown[]): ApprovalCallRecord[] {
  return (all as { data: string }[]).map((r) =>
    readRow(ApprovalCallRecord, r.data, "approval call"),
  );
}
