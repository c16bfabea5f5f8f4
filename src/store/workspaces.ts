// Workspace records: the host registry (one row per anchor), each agent's attached set,
// managed worktrees, and skill activations. Bounds: attached workspaces and live worktrees
// are capped per agent by the workspace service; removed worktrees leave no row; skill
// activations are capped per agent here (oldest dropped).
import { isPostgres, type SqlDatabase, type SqlStatement } from "./sql.ts";
import {
  AttachedWorkspace,
  SkillActivation,
  WorkspaceRecord,
  WorktreeRecord,
} from "../domain/workspace.ts";
import { readRow } from "./json.ts";

export class WorkspacesRepo {
  private readonly putStmt: SqlStatement;
  private readonly getStmt: SqlStatement;
  private readonly byAnchorStmt: SqlStatement;
  private readonly attachStmt: SqlStatement;
  private readonly detachStmt: SqlStatement;
  private readonly attachedStmt: SqlStatement;
  private readonly attachedOneStmt: SqlStatement;
  private readonly putWorktreeStmt: SqlStatement;
  private readonly getWorktreeStmt: SqlStatement;
  private readonly dropWorktreeStmt: SqlStatement;
  private readonly worktreesStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.putStmt = db.prepare(
      "INSERT INTO workspaces (workspace_id, anchor, data) VALUES (?, ?, ?) ON CONFLICT (workspace_id) DO UPDATE SET data = excluded.data",
    );
    this.getStmt = db.prepare("SELECT data FROM workspaces WHERE workspace_id = ?");
    this.byAnchorStmt = db.prepare("SELECT data FROM workspaces WHERE anchor = ?");
    this.attachStmt = db.prepare(
      "INSERT INTO agent_workspaces (agent_id, workspace_id, attached_at, data) VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, workspace_id) DO NOTHING",
    );
    this.detachStmt = db.prepare(
      "DELETE FROM agent_workspaces WHERE agent_id = ? AND workspace_id = ?",
    );
    this.attachedStmt = db.prepare(
      "SELECT data FROM agent_workspaces WHERE agent_id = ? ORDER BY workspace_id",
    );
    this.attachedOneStmt = db.prepare(
      "SELECT data FROM agent_workspaces WHERE agent_id = ? AND workspace_id = ?",
    );
    this.putWorktreeStmt = db.prepare(
      "INSERT INTO worktrees (worktree_id, agent_id, status, data) VALUES (?, ?, ?, ?) ON CONFLICT (worktree_id) DO UPDATE SET status = excluded.status, data = excluded.data",
    );
    this.getWorktreeStmt = db.prepare("SELECT data FROM worktrees WHERE worktree_id = ?");
    this.dropWorktreeStmt = db.prepare("DELETE FROM worktrees WHERE worktree_id = ?");
    this.worktreesStmt = db.prepare(
      "SELECT data FROM worktrees WHERE agent_id = ? ORDER BY agent_id, worktree_id",
    );
  }

  put(w: WorkspaceRecord): void {
    this.putStmt.run(w.workspace_id, w.workspace_anchor, JSON.stringify(w));
  }

  get(workspaceId: string): WorkspaceRecord | undefined {
    const row = this.getStmt.get(workspaceId) as { data: string } | undefined;
    return row ? readRow(WorkspaceRecord, row.data, "workspace") : undefined;
  }

  byAnchor(anchor: string): WorkspaceRecord | undefined {
    const row = this.byAnchorStmt.get(anchor) as { data: string } | undefined;
    return row ? readRow(WorkspaceRecord, row.data, "workspace") : undefined;
  }

  /** Attach; attaching twice keeps the first binding. */
  attach(a: AttachedWorkspace): void {
    this.attachStmt.run(a.agent_id, a.workspace_id, a.attached_at, JSON.stringify(a));
  }

  detach(agentId: string, workspaceId: string): boolean {
    return Number(this.detachStmt.run(agentId, workspaceId).changes) > 0;
  }

  attached(agentId: string): AttachedWorkspace[] {
    return (this.attachedStmt.all(agentId) as { data: string }[]).map((r) =>
      readRow(AttachedWorkspace, r.data, "attached workspace"),
    );
  }

  attachment(agentId: string, workspaceId: string): AttachedWorkspace | undefined {
    const row = this.attachedOneStmt.get(agentId, workspaceId) as { data: string } | undefined;
    return row ? readRow(AttachedWorkspace, row.data, "attached workspace") : undefined;
  }

  putWorktree(w: WorktreeRecord): void {
    this.putWorktreeStmt.run(w.worktree_id, w.agent_id, w.status, JSON.stringify(w));
  }

  worktree(worktreeId: string): WorktreeRecord | undefined {
    const row = this.getWorktreeStmt.get(worktreeId) as { data: string } | undefined;
    return row ? readRow(WorktreeRecord, row.data, "worktree") : undefined;
  }

  dropWorktree(worktreeId: string): void {
    this.dropWorktreeStmt.run(worktreeId);
  }

  worktrees(agentId: string): WorktreeRecord[] {
    return (this.worktreesStmt.all(agentId) as { data: string }[]).map((r) =>
      readRow(WorktreeRecord, r.data, "worktree"),
    );
  }
}

/** Most skill activations kept per agent; the oldest beyond it are dropped. */
export const MAX_SKILL_ACTIVATIONS = 128;

export class SkillActivationsRepo {
  private readonly putStmt: SqlStatement;
  private readonly listStmt: SqlStatement;
  private readonly dropStmt: SqlStatement;
  private readonly promoteStmt: SqlStatement;
  private readonly restoreStmt: SqlStatement;
  private readonly dropTurnStmt: SqlStatement;

  constructor(db: SqlDatabase) {
    this.putStmt = db.prepare(
      "INSERT INTO agent_skills (agent_id, skill_id, state, updated_at, data) VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, skill_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, data = excluded.data",
    );
    this.listStmt = db.prepare(
      "SELECT data FROM agent_skills WHERE agent_id = ? ORDER BY agent_id, skill_id",
    );
    this.dropStmt = db.prepare("DELETE FROM agent_skills WHERE agent_id = ? AND skill_id = ?");
    // The record's copy of its state changes with the column (Postgres: a jsonb merge).
    const pg = isPostgres(db);
    this.promoteStmt = db.prepare(
      pg
        ? "UPDATE agent_skills SET state = 'session_active', data = (data::jsonb || jsonb_build_object('state', 'session_active', 'updated_at', ?::text))::text, updated_at = ? WHERE agent_id = ? AND state = 'turn_active'"
        : "UPDATE agent_skills SET state = 'session_active', data = json_set(data, '$.state', 'session_active', '$.updated_at', ?), updated_at = ? WHERE agent_id = ? AND state = 'turn_active'",
    );
    this.restoreStmt = db.prepare(
      pg
        ? `UPDATE agent_skills SET state = 'restored', data = (data::jsonb || '{"state": "restored"}'::jsonb)::text WHERE state = 'session_active'`
        : "UPDATE agent_skills SET state = 'restored', data = json_set(data, '$.state', 'restored') WHERE state = 'session_active'",
    );
    this.dropTurnStmt = db.prepare("DELETE FROM agent_skills WHERE state = 'turn_active'");
  }

  put(a: SkillActivation): void {
    this.putStmt.run(a.agent_id, a.skill_id, a.state, a.updated_at, JSON.stringify(a));
    const all = this.list(a.agent_id);
    if (all.length > MAX_SKILL_ACTIVATIONS) {
      const oldest = all
        .sort((x, y) => x.updated_at.localeCompare(y.updated_at))
        .slice(0, all.length - MAX_SKILL_ACTIVATIONS);
      for (const o of oldest) this.dropStmt.run(o.agent_id, o.skill_id);
    }
  }

  list(agentId: string): SkillActivation[] {
    return (this.listStmt.all(agentId) as { data: string }[]).map((r) =>
      readRow(SkillActivation, r.data, "skill activation"),
    );
  }

  /** A completed turn's activations become session-wide. */
  promote(agentId: string, at: string): void {
    this.promoteStmt.run(at, at, agentId);
  }

  /** At host start: session skills come back as `restored`; a crashed turn's activations do not. */
  restoreAll(): void {
    this.dropTurnStmt.run();
    this.restoreStmt.run();
  }
}
