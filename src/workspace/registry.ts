// The workspace service: the host's workspace registry, each agent's attached set, the one
// active workspace entry per agent (stored on the agent record, read by executionBinding),
// and managed worktrees. Invariants: an agent always has exactly one active workspace
// (`agent_home` when nothing else is active); detaching never deletes files; the runtime
// never commits, and it removes a worktree only when git reports it clean.
import { accessSync, constants, existsSync, mkdirSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { AgentRecord } from "../domain/agent.ts";
import type { SandboxSummary } from "../domain/sandbox.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import {
  AGENT_HOME_WORKSPACE_ID,
  type ActiveWorkspaceEntry,
  type AttachedWorkspace,
  type ExecutionSnapshot,
  type WorkspaceKind,
  type WorkspaceMode,
  type WorkspaceRecord,
  type WorktreeRecord,
} from "../domain/workspace.ts";
import type { Store } from "../store/db.ts";
import {
  executionBinding,
  executionPolicy,
  executionSnapshot,
  isInside,
  relativeInside,
} from "./roots.ts";
import {
  absoluteFrom,
  addWorktree,
  branchExists,
  currentBranch,
  gitLocation,
  headCommit,
  removeWorktree,
  slugLabel,
  worktreeChanges,
  type WorktreeChanges,
} from "./worktrees.ts";

export type AttachPolicy = "any_readable" | "operator_attached";

/** Most workspaces one agent may have attached, and live managed worktrees per agent. */
export const MAX_ATTACHED_PER_AGENT = 256;
export const MAX_WORKTREES_PER_AGENT = 32;

export type WorkspaceDeps = {
  store: Store;
  /** `<holon_home>`: nothing under it may become a project workspace. */
  holonHome: string;
  /** Where managed worktrees live (`<holon_home>/execution-roots`). */
  worktreeArea: string;
  /** Read per call, so a config change applies to the next attach. */
  attachPolicy(): AttachPolicy;
  /** What the sandbox holds for this agent's commands (src/sandbox/), for the snapshot. */
  sandbox?: (agent: AgentRecord) => SandboxSummary;
};

export type UseRequest = {
  path?: string | undefined;
  workspace_id?: string | undefined;
  mode?: WorkspaceMode | undefined;
  isolation_label?: string | undefined;
};

export type DetectedKind =
  | "agent_home"
  | "canonical_repo"
  | "repo_subdir"
  | "existing_git_worktree"
  | "plain_directory"
  | "attached_workspace"
  | "managed_worktree";

export type LeaveReport = {
  worktree_id: string;
  path: string;
  branch: string;
  disposition: "removed" | "retained";
  branch_deleted: boolean;
  changed_files: string[];
  commits_ahead: number;
};

export type UseResult = {
  workspace_id: string;
  workspace_anchor: string;
  execution_root: string;
  execution_root_id: string;
  cwd: string;
  mode: WorkspaceMode;
  projection_kind: ActiveWorkspaceEntry["projection_kind"];
  ownership: ActiveWorkspaceEntry["ownership"];
  detected_kind: DetectedKind;
  attached_now: boolean;
  worktree?: { worktree_id: string; path: string; branch: string; base_branch: string };
  left?: LeaveReport;
  guidance?: string;
};

export type WorktreeView = WorktreeRecord & WorktreeChanges;

type Target = {
  workspace: WorkspaceRecord | null;
  /** Absolute directory the caller named (cwd lands here when it is inside the root). */
  dir: string;
  detected: DetectedKind;
  /** An existing linked worktree adopted as an external execution root. */
  adoptedRoot?: string;
  /** A retained managed worktree being re-entered. */
  worktree?: WorktreeRecord;
  guidance?: string;
};

export class WorkspaceService {
  private readonly deps: WorkspaceDeps;

  constructor(deps: WorkspaceDeps) {
    this.deps = deps;
  }

  /**
   * Records written before the active entry existed carry `workspace_root`/`cwd`: at start
   * they become a registered, attached, active workspace, so there is one truth. One whose
   * directory is gone stays as it is (the resolver still reads it, tools report it missing).
   */
  async foldLegacy(): Promise<void> {
    for (const agent of await this.store.agents.withLegacyWorkspace()) {
      if (agent.active_workspace || !agent.workspace_root) continue;
      const root = agent.workspace_root;
      if (!isDirectory(root)) continue;
      const cwd =
        agent.cwd && isInside(root, agent.cwd) && isDirectory(agent.cwd) ? agent.cwd : root;
      await this.store.tx(async () => {
        const workspace = await this.register(root, gitLocation(root) ? "git" : "plain");
        await this.bind(agent.agent_id, workspace, "operator");
        await this.store.agents.put({
          ...withoutLegacy(agent),
          active_workspace: {
            workspace_id: workspace.workspace_id,
            workspace_anchor: workspace.workspace_anchor,
            execution_root: root,
            execution_root_id: workspace.workspace_id,
            cwd,
            projection_kind: "canonical_root",
            mode: "direct",
            ownership: "external",
          },
        });
      });
    }
  }

  private get store(): Store {
    return this.deps.store;
  }

  private async agent(agentId: string): Promise<AgentRecord> {
    const a = await this.store.agents.get(agentId);
    if (!a) throw unknownAgent(agentId);
    return a;
  }

  /** The execution snapshot of the agent's current binding, with the effective policy. */
  snapshot(agent: AgentRecord): ExecutionSnapshot {
    return executionSnapshot(
      agent,
      executionPolicy(this.deps.attachPolicy(), this.deps.sandbox?.(agent)),
    );
  }

  // -- operator surfaces ---------------------------------------------------------------

  /** Register (if new) and attach a directory to the agent. Does not make it active. */
  async attach(agentId: string, path: string, by: "operator" | "agent" = "operator") {
    await this.agent(agentId);
    if (!isAbsolute(path)) {
      throw new HolonError("invalid_workspace_path", `attach needs an absolute path, got ${path}`, {
        hint: "holon workspace attach resolves a relative path against your current directory",
      });
    }
    const dir = this.resolveDirectory(path, "/", []);
    const { anchor, kind } = this.anchorOf(dir);
    return await this.store.tx(async () => {
      const workspace = await this.register(anchor, kind);
      const attachedNow = await this.bind(agentId, workspace, by);
      return { workspace, attached_now: attachedNow };
    });
  }

  /** Remove a binding. Refuses agent_home and the active workspace; never touches files. */
  async detach(agentId: string, workspaceId: string) {
    if (workspaceId === AGENT_HOME_WORKSPACE_ID) {
      throw new HolonError(
        "workspace_not_detachable",
        "agent_home is built in and cannot be detached",
        {
          status: 409,
        },
      );
    }
    return await this.store.tx(async () => {
      const agent = await this.agent(agentId);
      if (executionBinding(agent).workspace_id === workspaceId) {
        throw new HolonError(
          "workspace_active",
          `workspace ${workspaceId} is the active workspace`,
          {
            status: 409,
            hint: `switch away first: holon workspace exit ${agentId} (returns to agent_home), then detach`,
          },
        );
      }
      if (!(await this.store.workspaces.attachment(agentId, workspaceId))) {
        throw notAttached(agentId, workspaceId);
      }
      const ws = await this.store.workspaces.get(workspaceId);
      await this.store.workspaces.detach(agentId, workspaceId);
      await this.store.appendEvent(agentId, {
        type: "workspace_detached",
        payload: { workspace_id: workspaceId, workspace_anchor: ws?.workspace_anchor ?? "" },
      });
      return { workspace_id: workspaceId, detached: true, files_deleted: false };
    });
  }

  /** Back to agent_home (leaving a clean managed worktree removes it, a dirty one is retained). */
  exit(agentId: string): Promise<UseResult> {
    return this.use(agentId, { workspace_id: AGENT_HOME_WORKSPACE_ID }, "operator");
  }

  /** The attached set, the active entry and this agent's managed worktrees. */
  async list(agentId: string) {
    const agent = await this.agent(agentId);
    const b = executionBinding(agent);
    const attached = [];
    for (const a of await this.store.workspaces.attached(agentId)) {
      const ws = await this.store.workspaces.get(a.workspace_id);
      attached.push({
        workspace_id: a.workspace_id,
        workspace_anchor: ws?.workspace_anchor ?? null,
        kind: ws?.kind ?? null,
        attached_at: a.attached_at,
        attached_by: a.attached_by,
        available: ws ? isDirectory(ws.workspace_anchor) : false,
        active: a.workspace_id === b.workspace_id,
      });
    }
    return {
      agent_id: agentId,
      active: {
        workspace_id: b.workspace_id,
        workspace_anchor: b.workspace_anchor,
        execution_root: b.execution_root,
        execution_root_id: b.execution_root_id,
        cwd: b.cwd,
        projection_kind: b.projection_kind,
        mode: agent.active_workspace?.mode ?? "direct",
        ownership: agent.active_workspace?.ownership ?? "builtin",
      },
      attached: [
        {
          workspace_id: AGENT_HOME_WORKSPACE_ID,
          workspace_anchor: agent.agent_home,
          kind: "agent_home",
          attached_at: agent.created_at,
          attached_by: "runtime",
          available: true,
          active: b.workspace_id === AGENT_HOME_WORKSPACE_ID,
        },
        ...attached,
      ],
      worktree_session: agent.worktree_session ?? null,
      worktrees: await this.worktrees(agentId),
      execution_snapshot: this.snapshot(agent),
    };
  }

  /** This agent's managed worktrees with what changed in each. */
  async worktrees(agentId: string): Promise<WorktreeView[]> {
    return (await this.store.workspaces.worktrees(agentId)).map((w) => ({
      ...w,
      ...worktreeChanges(w.path, w.base_commit, w.branch, w.workspace_anchor),
    }));
  }

  /**
   * Remove the retained worktrees that are clean (their branch too when it holds no commits
   * of its own). Dirty ones are kept and reported; the active one is never touched.
   */
  async cleanWorktrees(agentId: string) {
    const agent = await this.agent(agentId);
    const activeId = agent.active_workspace?.worktree_id;
    const removed: LeaveReport[] = [];
    const kept: LeaveReport[] = [];
    for (const w of await this.store.workspaces.worktrees(agentId)) {
      // The agent's own active root, and a running task's worktree, are not for cleaning.
      if (w.worktree_id === activeId) continue;
      if (w.ownership === "task_owned" && w.status === "active") continue;
      const r = await this.release(w, "operator_clean");
      (r.disposition === "removed" ? removed : kept).push(r);
    }
    return { removed, retained: kept };
  }

  /** Where commands run, moved inside the current execution root (`holon run --cwd`). */
  async setCwd(agentId: string, cwd: string): Promise<void> {
    await this.store.tx(async () => {
      const agent = await this.agent(agentId);
      const b = executionBinding(agent);
      if (!isInside(b.execution_root, cwd)) {
        throw new HolonError("execution_root_violation", `${cwd} is outside ${b.execution_root}`);
      }
      const entry = this.entryOf(agent);
      await this.store.agents.put({
        ...withoutLegacy(agent),
        active_workspace: { ...entry, cwd },
        updated_at: this.store.clock.now().toISOString(),
      });
    });
  }

  // -- UseWorkspace ----------------------------------------------------------------------

  /**
   * Make a workspace active. `by` is who asked: an agent attaching a new path needs the
   * attach policy's consent, an operator does not.
   */
  async use(
    agentId: string,
    req: UseRequest,
    by: "operator" | "agent" = "agent",
  ): Promise<UseResult> {
    if ((req.path === undefined) === (req.workspace_id === undefined)) {
      throw new HolonError(
        "invalid_workspace_selector",
        "pass exactly one of path or workspace_id",
        {
          hint: 'UseWorkspace(path="/abs/dir") or UseWorkspace(workspace_id="agent_home")',
          operatorHint: "give either a path or a workspace id",
        },
      );
    }
    const agent = await this.agent(agentId);
    const mode = req.mode ?? "direct";
    const target =
      req.workspace_id !== undefined
        ? await this.targetById(agent, req.workspace_id)
        : await this.targetByPath(agent, req.path!);

    // Policy: a path outside the attached set needs consent.
    let attachNeeded = false;
    if (
      target.workspace &&
      !(await this.store.workspaces.attachment(agentId, target.workspace.workspace_id))
    ) {
      attachNeeded = true;
    } else if (!target.workspace && target.detected !== "agent_home") {
      attachNeeded = true;
    }
    if (attachNeeded && by === "agent" && this.deps.attachPolicy() === "operator_attached") {
      throw new HolonError(
        "workspace_not_attached",
        `${target.dir} is not inside a workspace attached to this agent, and the attach policy lets only the operator attach new ones`,
        {
          hint: `ask the operator to run: holon workspace attach ${agentId} ${target.dir}`,
          details: { path: target.dir, attach_policy: "operator_attached" },
        },
      );
    }

    if (mode === "isolated" && target.detected === "agent_home") {
      throw new HolonError("isolation_unavailable", "agent_home has no isolated mode", {
        hint: "use mode=direct for agent_home",
      });
    }

    // Isolated mode makes a worktree before anything else is recorded; undone if that fails.
    let created: WorktreeRecord | undefined;
    if (mode === "isolated" && !target.worktree) {
      if (!target.workspace) {
        const { anchor, kind } = this.anchorOf(target.dir);
        target.workspace = await this.store.tx(async () => await this.register(anchor, kind));
      }
      created = await this.createWorktree(agent, target, req.isolation_label, "session_owned");
    }
    const prevWorktreeId = agent.active_workspace?.worktree_id;
    let result: UseResult;
    try {
      result = await this.store.tx(
        async () => await this.activate(agentId, target, attachNeeded, by, created),
      );
    } catch (err) {
      if (created) safeRemove(created);
      throw err;
    }
    // Leaving a managed worktree: remove it when clean, keep and report it when not. Git runs
    // after the switch committed, outside the transaction; a crash in between leaves a
    // worktree that `worktrees --clean` still handles.
    if (prevWorktreeId && prevWorktreeId !== result.execution_root_id) {
      const prev = await this.store.workspaces.worktree(prevWorktreeId);
      if (prev) result.left = await this.release(prev, "switched_away");
    }
    return result;
  }

  private async activate(
    agentId: string,
    target: Target,
    attachNeeded: boolean,
    by: "operator" | "agent",
    created: WorktreeRecord | undefined,
  ): Promise<UseResult> {
    const store = this.store;
    const agent = await this.agent(agentId);
    const previous = executionBinding(agent);
    let workspace = target.workspace;
    let attachedNow = false;
    if (target.detected !== "agent_home") {
      if (!workspace) {
        const { anchor, kind } = this.anchorOf(target.dir);
        workspace = await this.register(anchor, kind);
      }
      if (attachNeeded) attachedNow = await this.bind(agentId, workspace, by);
    }

    let entry: ActiveWorkspaceEntry;
    let result: Partial<UseResult> = {};
    const worktree = created ?? target.worktree;
    if (target.detected === "agent_home") {
      entry = homeEntry(agent);
    } else if (worktree) {
      const sub = relativeInside(workspace!.workspace_anchor, target.dir);
      const inTree = sub ? join(worktree.path, sub) : worktree.path;
      const cwd =
        target.worktree && isInside(worktree.path, target.dir)
          ? target.dir
          : isDirectory(inTree)
            ? inTree
            : worktree.path;
      entry = {
        workspace_id: worktree.workspace_id,
        workspace_anchor: worktree.workspace_anchor,
        execution_root: worktree.path,
        execution_root_id: worktree.worktree_id,
        cwd,
        projection_kind: "git_worktree_root",
        mode: "isolated",
        ownership: worktree.ownership,
        worktree_id: worktree.worktree_id,
      };
      if (created) {
        await store.workspaces.putWorktree(created);
        await store.appendEvent(agentId, {
          type: "worktree_created",
          payload: {
            worktree_id: created.worktree_id,
            workspace_id: created.workspace_id,
            path: created.path,
            branch: created.branch,
            base_branch: created.base_branch,
            ownership: created.ownership,
          },
        });
      } else {
        await store.workspaces.putWorktree({
          ...worktree,
          status: "active",
          updated_at: store.clock.now().toISOString(),
        });
      }
      result.worktree = {
        worktree_id: worktree.worktree_id,
        path: worktree.path,
        branch: worktree.branch,
        base_branch: worktree.base_branch,
      };
    } else {
      const root = target.adoptedRoot ?? workspace!.workspace_anchor;
      entry = {
        workspace_id: workspace!.workspace_id,
        workspace_anchor: workspace!.workspace_anchor,
        execution_root: root,
        execution_root_id: target.adoptedRoot
          ? `external:${target.adoptedRoot}`
          : workspace!.workspace_id,
        cwd: isInside(root, target.dir) ? target.dir : root,
        projection_kind: target.adoptedRoot ? "git_worktree_root" : "canonical_root",
        mode: "direct",
        ownership: "external",
      };
    }

    const next: AgentRecord = {
      ...withoutLegacy(agent),
      active_workspace: entry,
      updated_at: store.clock.now().toISOString(),
    };
    delete next.worktree_session;
    if (worktree) {
      next.worktree_session = {
        worktree_id: worktree.worktree_id,
        original_working_directory: workspace?.workspace_anchor ?? worktree.workspace_anchor,
        original_branch: worktree.base_branch,
        worktree_path: worktree.path,
        worktree_branch: worktree.branch,
      };
    }
    await store.agents.put(next);
    await store.appendEvent(agentId, {
      type: "workspace_activated",
      payload: {
        workspace_id: entry.workspace_id,
        workspace_anchor: entry.workspace_anchor,
        execution_root: entry.execution_root,
        execution_root_id: entry.execution_root_id,
        cwd: entry.cwd,
        projection_kind: entry.projection_kind,
        mode: entry.mode,
        ownership: entry.ownership,
        previous_workspace_id: previous.workspace_id,
      },
    });
    const out: UseResult = {
      workspace_id: entry.workspace_id,
      workspace_anchor: entry.workspace_anchor,
      execution_root: entry.execution_root,
      execution_root_id: entry.execution_root_id,
      cwd: entry.cwd,
      mode: entry.mode,
      projection_kind: entry.projection_kind,
      ownership: entry.ownership,
      detected_kind: target.detected,
      attached_now: attachedNow,
      ...result,
    };
    if (target.guidance) out.guidance = target.guidance;
    return out;
  }

  private async targetById(agent: AgentRecord, workspaceId: string): Promise<Target> {
    if (workspaceId === AGENT_HOME_WORKSPACE_ID) {
      return { workspace: null, dir: agent.agent_home, detected: "agent_home" };
    }
    const wt = await this.store.workspaces.worktree(workspaceId);
    if (wt && wt.agent_id === agent.agent_id) {
      if (!isDirectory(wt.path)) throw unavailable(workspaceId, wt.path);
      return {
        workspace: (await this.store.workspaces.get(wt.workspace_id)) ?? null,
        dir: wt.path,
        detected: "managed_worktree",
        worktree: wt,
      };
    }
    if (!(await this.store.workspaces.attachment(agent.agent_id, workspaceId))) {
      throw notAttached(agent.agent_id, workspaceId);
    }
    const ws = await this.store.workspaces.get(workspaceId);
    if (!ws || !isDirectory(ws.workspace_anchor)) {
      throw unavailable(workspaceId, ws?.workspace_anchor ?? null);
    }
    return { workspace: ws, dir: ws.workspace_anchor, detected: "attached_workspace" };
  }

  private async targetByPath(agent: AgentRecord, path: string): Promise<Target> {
    const base = executionBinding(agent).cwd;
    const dir = this.resolveDirectory(path, base, [
      agent.agent_home,
      ...(await this.store.workspaces.worktrees(agent.agent_id)).map((w) => w.path),
    ]);
    if (dir === realOrSelf(agent.agent_home) || isInside(realOrSelf(agent.agent_home), dir)) {
      return { workspace: null, dir: agent.agent_home, detected: "agent_home" };
    }
    // A managed worktree of this agent: re-enter it.
    for (const w of await this.store.workspaces.worktrees(agent.agent_id)) {
      if (isInside(w.path, dir)) {
        return {
          workspace: (await this.store.workspaces.get(w.workspace_id)) ?? null,
          dir,
          detected: "managed_worktree",
          worktree: w,
        };
      }
    }
    const loc = gitLocation(dir);
    if (loc?.linked_worktree) {
      const parent = await this.store.workspaces.byAnchor(loc.main_root);
      if (parent && (await this.store.workspaces.attachment(agent.agent_id, parent.workspace_id))) {
        return {
          workspace: parent,
          dir,
          detected: "existing_git_worktree",
          adoptedRoot: loc.top_level,
          guidance:
            `This is a git worktree of the attached workspace ${parent.workspace_id}; it is used as an external ` +
            `execution root that Holon will never clean up. For a worktree whose lifecycle Holon manages, call ` +
            `UseWorkspace(workspace_id="${parent.workspace_id}", mode="isolated").`,
        };
      }
    }
    // Inside an attached workspace: that workspace, with cwd at the path.
    for (const a of await this.store.workspaces.attached(agent.agent_id)) {
      const ws = await this.store.workspaces.get(a.workspace_id);
      if (ws && isInside(ws.workspace_anchor, dir)) {
        return {
          workspace: ws,
          dir,
          detected: dir === ws.workspace_anchor ? "attached_workspace" : "repo_subdir",
        };
      }
    }
    const { anchor, kind } = this.anchorOf(dir, loc);
    const known = (await this.store.workspaces.byAnchor(anchor)) ?? null;
    const detected: DetectedKind =
      kind === "plain" ? "plain_directory" : anchor === dir ? "canonical_repo" : "repo_subdir";
    return { workspace: known, dir, detected };
  }

  // -- worktree lifecycle (also the API SpawnAgent's worktree mode calls) -----------------

  /**
   * A task-owned worktree of an attached git workspace for a child or task, on its own
   * branch. The caller records it on the task and calls `releaseTaskWorktree` when the task ends.
   */
  async createTaskWorktree(opts: {
    agent_id: string;
    workspace_id: string;
    task_id: string;
    label?: string;
  }) {
    const agent = await this.agent(opts.agent_id);
    const target = await this.targetById(agent, opts.workspace_id);
    if (!target.workspace) {
      throw new HolonError("isolation_unavailable", "agent_home has no isolated mode");
    }
    const w = await this.createWorktree(
      agent,
      target,
      opts.label ?? opts.task_id,
      "task_owned",
      opts.task_id,
    );
    try {
      await this.store.tx(async () => {
        await this.store.workspaces.putWorktree(w);
        await this.store.appendEvent(opts.agent_id, {
          type: "worktree_created",
          payload: {
            worktree_id: w.worktree_id,
            workspace_id: w.workspace_id,
            path: w.path,
            branch: w.branch,
            base_branch: w.base_branch,
            ownership: "task_owned",
            task_id: opts.task_id,
          },
        });
      });
    } catch (err) {
      safeRemove(w);
      throw err;
    }
    return w;
  }

  /**
   * A child agent works in a worktree its supervising task owns (SpawnAgent worktree mode):
   * the worktree becomes the child's active execution root; the task stays its owner.
   */
  async holdTaskWorktree(agentId: string, worktreeId: string): Promise<UseResult> {
    const w = await this.store.workspaces.worktree(worktreeId);
    const workspace = w ? await this.store.workspaces.get(w.workspace_id) : undefined;
    if (!w || !workspace) {
      throw new HolonError("unknown_worktree", `no managed worktree '${worktreeId}'`, {
        status: 404,
      });
    }
    const target: Target = { workspace, dir: w.path, detected: "managed_worktree", worktree: w };
    const attachNeeded = !(await this.store.workspaces.attachment(agentId, w.workspace_id));
    return await this.store.tx(
      async () => await this.activate(agentId, target, attachNeeded, "operator", undefined),
    );
  }

  /** The task ended: remove its worktree (and branch) when clean, retain and report it when not. */
  async releaseTaskWorktree(worktreeId: string): Promise<LeaveReport | undefined> {
    const w = await this.store.workspaces.worktree(worktreeId);
    if (!w) return undefined;
    return await this.release(w, "task_finished");
  }

  private async createWorktree(
    agent: AgentRecord,
    target: Target,
    label: string | undefined,
    ownership: WorktreeRecord["ownership"],
    taskId?: string,
  ): Promise<WorktreeRecord> {
    const ws = target.workspace;
    if (!ws) throw new HolonError("isolation_unavailable", "agent_home has no isolated mode");
    if (ws.kind !== "git") {
      throw new HolonError(
        "isolation_unavailable",
        `${ws.workspace_anchor} is not a git repository`,
        {
          hint: "isolated mode needs a git workspace; use mode=direct here",
        },
      );
    }
    if (!isDirectory(ws.workspace_anchor)) throw unavailable(ws.workspace_id, ws.workspace_anchor);
    const live = (await this.store.workspaces.worktrees(agent.agent_id)).length;
    if (live >= MAX_WORKTREES_PER_AGENT) {
      throw new HolonError("too_many_worktrees", `agent has ${live} managed worktrees`, {
        hint: `review and clean them: holon workspace worktrees ${agent.agent_id} --clean`,
      });
    }
    const base = headCommit(ws.workspace_anchor);
    if (!base) {
      throw new HolonError(
        "isolation_unavailable",
        `${ws.workspace_anchor} has no commit to branch from`,
        {
          hint: "make a first commit, or use mode=direct",
        },
      );
    }
    const slug = slugLabel(label);
    const id = this.store.ids.next("wt");
    const short = id.slice(-8).toLowerCase();
    let branch = `holon/${slug}-${short}`;
    for (let i = 2; branchExists(ws.workspace_anchor, branch); i++)
      branch = `holon/${slug}-${short}-${i}`;
    const dir = join(this.deps.worktreeArea, "git_worktree", ws.workspace_id);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, `${slug}-${short}`);
    addWorktree(ws.workspace_anchor, path, branch, base);
    const now = this.store.clock.now().toISOString();
    const record: WorktreeRecord = {
      worktree_id: id,
      agent_id: agent.agent_id,
      workspace_id: ws.workspace_id,
      workspace_anchor: ws.workspace_anchor,
      path: realOrSelf(path),
      branch,
      base_branch: currentBranch(ws.workspace_anchor),
      base_commit: base,
      ownership,
      status: "active",
      created_at: now,
      updated_at: now,
    };
    if (taskId) record.task_id = taskId;
    return record;
  }

  /** Remove a clean worktree, keep a dirty one (status retained); both audited. */
  private async release(w: WorktreeRecord, reason: string): Promise<LeaveReport> {
    const changes = worktreeChanges(w.path, w.base_commit, w.branch, w.workspace_anchor);
    const store = this.store;
    if (changes.changed_files.length === 0) {
      let branchDeleted = false;
      try {
        branchDeleted = removeWorktree(
          w.workspace_anchor,
          w.path,
          w.branch,
          changes.commits_ahead === 0,
        ).branch_deleted;
      } catch {
        return await this.retain(w, changes, `${reason}: git could not remove it`);
      }
      await store.tx(async () => {
        await store.workspaces.dropWorktree(w.worktree_id);
        await store.appendEvent(w.agent_id, {
          type: "worktree_removed",
          payload: {
            worktree_id: w.worktree_id,
            path: w.path,
            branch: w.branch,
            branch_deleted: branchDeleted,
            reason,
          },
        });
      });
      return {
        worktree_id: w.worktree_id,
        path: w.path,
        branch: w.branch,
        disposition: "removed",
        branch_deleted: branchDeleted,
        changed_files: [],
        commits_ahead: changes.commits_ahead,
      };
    }
    return await this.retain(w, changes, reason);
  }

  private async retain(
    w: WorktreeRecord,
    changes: WorktreeChanges,
    reason: string,
  ): Promise<LeaveReport> {
    const store = this.store;
    await store.tx(async () => {
      await store.workspaces.putWorktree({
        ...w,
        status: "retained",
        updated_at: store.clock.now().toISOString(),
      });
      await store.appendEvent(w.agent_id, {
        type: "worktree_retained",
        payload: {
          worktree_id: w.worktree_id,
          path: w.path,
          branch: w.branch,
          changed_files: changes.changed_files,
          commits_ahead: changes.commits_ahead,
          reason,
        },
      });
    });
    return {
      worktree_id: w.worktree_id,
      path: w.path,
      branch: w.branch,
      disposition: "retained",
      branch_deleted: false,
      changed_files: changes.changed_files,
      commits_ahead: changes.commits_ahead,
    };
  }

  // -- helpers ---------------------------------------------------------------------------

  /** An existing, readable directory outside HOLON_HOME, as its real path. */
  private resolveDirectory(path: string, base: string, ownUnderHome: string[]): string {
    if (path.length === 0 || path.length > 4096 || path.includes("\0")) {
      throw new HolonError("invalid_workspace_path", "the path is empty, too long or contains NUL");
    }
    const abs = absoluteFrom(base, path);
    let real: string;
    try {
      real = realpathSync.native(abs);
    } catch {
      throw new HolonError("workspace_path_not_found", `${abs} does not exist`, {
        details: { path },
        hint: "pass an existing directory",
      });
    }
    if (!statSync(real).isDirectory()) {
      throw new HolonError("workspace_path_not_directory", `${abs} is a file, not a directory`, {
        details: { path },
        hint: "pass the directory that contains it",
      });
    }
    try {
      accessSync(real, constants.R_OK | constants.X_OK);
    } catch {
      throw new HolonError("workspace_path_unreadable", `${abs} is not readable by this user`, {
        details: { path },
      });
    }
    // The runtime's own state (the database, run files, other agents' homes, worktrees of
    // other agents) never becomes a workspace; other directories under it may.
    const home = realOrSelf(this.deps.holonHome);
    const own = ownUnderHome.some((p) => isInside(realOrSelf(p), real));
    const internal =
      real === home ||
      ["agents", "run", "logs", "execution-roots"].some((d) => isInside(join(home, d), real));
    if (internal && !own) {
      throw new HolonError(
        "workspace_path_forbidden",
        `${abs} is part of the runtime's own state directory`,
        {
          details: { path },
          hint: 'use UseWorkspace(workspace_id="agent_home") for the agent\'s own home',
          operatorHint: `choose a directory outside ${home}`,
        },
      );
    }
    return real;
  }

  private anchorOf(dir: string, loc = gitLocation(dir)): { anchor: string; kind: WorkspaceKind } {
    if (loc) return { anchor: loc.top_level, kind: "git" };
    return { anchor: dir, kind: "plain" };
  }

  /** The registry entry for an anchor, created on first sight. Append-only (no forgetting yet). */
  private async register(anchor: string, kind: WorkspaceKind): Promise<WorkspaceRecord> {
    const known = await this.store.workspaces.byAnchor(anchor);
    if (known) {
      if (known.kind !== kind) {
        const updated = { ...known, kind };
        await this.store.workspaces.put(updated);
        return updated;
      }
      return known;
    }
    const ws: WorkspaceRecord = {
      workspace_id: this.store.ids.next("ws"),
      workspace_anchor: anchor,
      kind,
      created_at: this.store.clock.now().toISOString(),
    };
    await this.store.workspaces.put(ws);
    return ws;
  }

  /** Attach inside a transaction; false when it was attached already. */
  private async bind(
    agentId: string,
    ws: WorkspaceRecord,
    by: "operator" | "agent",
  ): Promise<boolean> {
    if (await this.store.workspaces.attachment(agentId, ws.workspace_id)) return false;
    if ((await this.store.workspaces.attached(agentId)).length >= MAX_ATTACHED_PER_AGENT) {
      throw new HolonError(
        "too_many_workspaces",
        `agent ${agentId} has ${MAX_ATTACHED_PER_AGENT} workspaces attached`,
        {
          hint: `detach unused ones: holon workspace detach ${agentId} <workspace_id>`,
        },
      );
    }
    const a: AttachedWorkspace = {
      agent_id: agentId,
      workspace_id: ws.workspace_id,
      attached_at: this.store.clock.now().toISOString(),
      attached_by: by,
    };
    await this.store.workspaces.attach(a);
    await this.store.appendEvent(agentId, {
      type: "workspace_attached",
      payload: {
        workspace_root: ws.workspace_anchor,
        workspace_id: ws.workspace_id,
        kind: ws.kind,
        attached_by: by,
      },
    });
    return true;
  }

  private entryOf(agent: AgentRecord): ActiveWorkspaceEntry {
    if (agent.active_workspace) return agent.active_workspace;
    const b = executionBinding(agent);
    if (b.workspace_id === AGENT_HOME_WORKSPACE_ID) return homeEntry(agent);
    return {
      workspace_id: b.workspace_id,
      workspace_anchor: b.workspace_anchor,
      execution_root: b.execution_root,
      execution_root_id: b.execution_root_id,
      cwd: b.cwd,
      projection_kind: "canonical_root",
      mode: "direct",
      ownership: "external",
    };
  }
}

function homeEntry(agent: AgentRecord): ActiveWorkspaceEntry {
  return {
    workspace_id: AGENT_HOME_WORKSPACE_ID,
    workspace_anchor: agent.agent_home,
    execution_root: agent.agent_home,
    execution_root_id: AGENT_HOME_WORKSPACE_ID,
    cwd: agent.agent_home,
    projection_kind: "canonical_root",
    mode: "direct",
    ownership: "builtin",
  };
}

/** The legacy fields are folded into the active entry on the first write. */
function withoutLegacy(agent: AgentRecord): AgentRecord {
  const next = { ...agent };
  delete next.workspace_root;
  delete next.cwd;
  return next;
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function realOrSelf(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

function safeRemove(w: WorktreeRecord): void {
  try {
    if (existsSync(w.path)) removeWorktree(w.workspace_anchor, w.path, w.branch, true);
  } catch {
    // Left for `holon workspace worktrees --clean`; nothing was recorded.
  }
}

function notAttached(agentId: string, workspaceId: string): HolonError {
  return new HolonError(
    "workspace_not_attached",
    `workspace ${workspaceId} is not attached to ${agentId}`,
    {
      status: 404,
      hint: `see the attached set: holon workspace list ${agentId}`,
      details: { workspace_id: workspaceId },
    },
  );
}

function unavailable(workspaceId: string, anchor: string | null): HolonError {
  return new HolonError(
    "workspace_unavailable",
    `workspace ${workspaceId} is unavailable: ${anchor ?? "(unknown)"} no longer exists`,
    {
      status: 409,
      hint: `switch to another workspace; detach the stale binding with: holon workspace detach <agent> ${workspaceId}`,
      details: { workspace_id: workspaceId, workspace_anchor: anchor },
    },
  );
}
