// Workspace shapes: the host's workspace registry entries, the agent's active workspace
// entry, managed worktree records, the execution snapshot recorded on turns and tasks, and
// skill activation records. `agent_home` is the built-in workspace every agent falls back to.
import { z } from "zod";
import { SandboxSnapshot } from "./sandbox.ts";

/** The fixed id of the built-in fallback workspace. It is never registered, exited or detached. */
export const AGENT_HOME_WORKSPACE_ID = "agent_home";

export const WorkspaceKind = z.enum(["git", "plain"]);
export type WorkspaceKind = z.infer<typeof WorkspaceKind>;

/** A host-owned workspace: stable identity and anchor, shared by every agent that attaches it. */
export const WorkspaceRecord = z.object({
  workspace_id: z.string(),
  workspace_anchor: z.string(),
  kind: WorkspaceKind,
  created_at: z.string(),
});
export type WorkspaceRecord = z.infer<typeof WorkspaceRecord>;

/** One agent's binding to a registered workspace (its `attached_workspaces` set). */
export const AttachedWorkspace = z.object({
  agent_id: z.string(),
  workspace_id: z.string(),
  attached_at: z.string(),
  attached_by: z.enum(["operator", "agent"]),
});
export type AttachedWorkspace = z.infer<typeof AttachedWorkspace>;

export const ProjectionKind = z.enum(["canonical_root", "git_worktree_root"]);
export type ProjectionKind = z.infer<typeof ProjectionKind>;
export const WorkspaceMode = z.enum(["direct", "isolated"]);
export type WorkspaceMode = z.infer<typeof WorkspaceMode>;
export const RootOwnership = z.enum(["builtin", "external", "session_owned", "task_owned"]);
export type RootOwnership = z.infer<typeof RootOwnership>;

/** Where the agent works right now. Stored on the agent record; restart-safe. */
export const ActiveWorkspaceEntry = z.object({
  workspace_id: z.string(),
  workspace_anchor: z.string(),
  execution_root: z.string(),
  execution_root_id: z.string(),
  cwd: z.string(),
  projection_kind: ProjectionKind,
  mode: WorkspaceMode,
  ownership: RootOwnership,
  /** The managed worktree backing an isolated entry. */
  worktree_id: z.string().optional(),
});
export type ActiveWorkspaceEntry = z.infer<typeof ActiveWorkspaceEntry>;

/** The spec's WorktreeSession, present on the agent while a managed worktree is active. */
export const WorktreeSession = z.object({
  worktree_id: z.string(),
  original_working_directory: z.string(),
  original_branch: z.string(),
  worktree_path: z.string(),
  worktree_branch: z.string(),
});
export type WorktreeSession = z.infer<typeof WorktreeSession>;

export const WorktreeStatus = z.enum(["active", "retained"]);
export type WorktreeStatus = z.infer<typeof WorktreeStatus>;

/** A runtime-created git worktree. Removed worktrees leave no record (the event stays). */
export const WorktreeRecord = z.object({
  worktree_id: z.string(),
  agent_id: z.string(),
  workspace_id: z.string(),
  workspace_anchor: z.string(),
  path: z.string(),
  branch: z.string(),
  base_branch: z.string(),
  base_commit: z.string(),
  ownership: z.enum(["session_owned", "task_owned"]),
  task_id: z.string().optional(),
  status: WorktreeStatus,
  created_at: z.string(),
  updated_at: z.string(),
});
export type WorktreeRecord = z.infer<typeof WorktreeRecord>;

/** What a confinement rule does under the current backend. */
export const Enforcement = z.enum(["enforced", "not_enforced"]);

/**
 * The execution policy as it actually holds: `host_local` runs commands on this machine,
 * confines the paths the runtime itself resolves, and does not confine what a command does;
 * `host_bwrap` runs them on this machine inside bubblewrap (src/sandbox/), a separate
 * contract whose `enforcement` says field by field what it confines, and `sandbox` why.
 */
export const ExecutionPolicySnapshot = z.object({
  backend: z.enum(["host_local", "host_bwrap"]),
  process_execution: z.literal("exposed"),
  background_tasks: z.literal("available"),
  managed_worktrees: z.enum(["available", "unavailable"]),
  attach_policy: z.enum(["any_readable", "operator_attached"]),
  enforcement: z.object({
    /** workdir, ApplyPatch paths and UseWorkspace paths are checked against the root. */
    runtime_resolved_paths: Enforcement,
    /** What a shell command reads or writes once it runs. */
    shell_filesystem: Enforcement,
    network: Enforcement,
    secrets: Enforcement,
    child_processes: Enforcement,
  }),
  note: z.string(),
  /** The sandbox's mode, state and reasons (absent in snapshots older than the sandbox). */
  sandbox: SandboxSnapshot.optional(),
});
export type ExecutionPolicySnapshot = z.infer<typeof ExecutionPolicySnapshot>;

export const ExecutionSnapshot = z.object({
  profile: z.string(),
  policy: ExecutionPolicySnapshot,
  workspace_id: z.string(),
  workspace_anchor: z.string(),
  execution_root: z.string(),
  execution_root_id: z.string(),
  cwd: z.string(),
  projection_kind: ProjectionKind,
});
export type ExecutionSnapshot = z.infer<typeof ExecutionSnapshot>;

export const SkillScope = z.enum(["user", "agent", "workspace"]);
export type SkillScope = z.infer<typeof SkillScope>;
export const SkillLoadReason = z.enum(["read_skill_md", "run_skill_script", "prompt_injection"]);
export type SkillLoadReason = z.infer<typeof SkillLoadReason>;
export const SkillActivationState = z.enum(["turn_active", "session_active", "restored"]);

/** A skill the agent activated; survives restart (as `restored`). */
export const SkillActivation = z.object({
  agent_id: z.string(),
  skill_id: z.string(),
  name: z.string(),
  scope: SkillScope,
  entrypoint_path: z.string(),
  state: SkillActivationState,
  load_reason: SkillLoadReason,
  activated_at: z.string(),
  updated_at: z.string(),
});
export type SkillActivation = z.infer<typeof SkillActivation>;
