// Managed background tasks (command tasks first). Records persist across restarts.
import { z } from "zod";
import { FailureArtifact } from "./provider.ts";
import { ExecutionSnapshot } from "./workspace.ts";

export const TaskStatus = z.enum(["queued", "running", "completed", "failed", "cancelled"]);
export type TaskStatus = z.infer<typeof TaskStatus>;
export const TERMINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set([
  "completed",
  "failed",
  "cancelled",
]);

export const TaskKind = z.enum(["command_task", "child_agent_task"]);
export type TaskKind = z.infer<typeof TaskKind>;

export const TaskRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  kind: TaskKind,
  status: TaskStatus,
  created_at: z.string(),
  updated_at: z.string(),
  parent_message_id: z.string().optional(),
  summary: z.string().optional(),
  cmd: z.string(),
  cmd_digest: z.string(),
  workdir: z.string(),
  shell: z.string(),
  login: z.boolean(),
  tty: z.boolean(),
  accepts_input: z.boolean(),
  output_path: z.string(),
  process_dir: z.string(),
  pid: z.number().int().optional(),
  /** Whether the terminal result re-enters the queue as a model-visible task_result. */
  terminal_reentry: z.boolean(),
  exit_status: z
    .object({ exit_code: z.number().int().nullable(), signal: z.string().nullable() })
    .optional(),
  output_snapshot: z
    .object({ preview: z.string(), total_bytes: z.number().int(), truncated: z.boolean() })
    .optional(),
  failure_artifact: FailureArtifact.optional(),
  finished_at: z.string().optional(),
  /** Where the task runs (workspace, root, cwd, policy), as it was when it started. */
  execution_snapshot: ExecutionSnapshot.optional(),
  /** child_agent_task only: the supervised child and how its result comes back. */
  child: z
    .object({
      child_agent_id: z.string(),
      parent_agent_id: z.string(),
      workspace_mode: z.enum(["inherit", "worktree"]),
      context_mode: z.enum(["fresh", "fork"]),
      /** The delegation record: which of the parent's work items the child's result serves. */
      delegation_id: z.string(),
      parent_work_item_id: z.string().optional(),
      needs_input: z.boolean(),
      worktree: z
        .object({ worktree_id: z.string(), path: z.string(), branch: z.string() })
        .optional(),
      /** The child's posture as of its last closure (kept here so snapshots need no lookup). */
      closure_outcome: z.string().optional(),
      waiting_reason: z.string().optional(),
      current_work_item_id: z.string().optional(),
      label: z.string(),
      /** The child's result, once its closure was terminal. */
      result: z
        .object({
          source: z.enum(["completion_report", "result_brief", "failure_brief", "none"]),
          text: z.string(),
        })
        .optional(),
    })
    .optional(),
});
export type TaskRecord = z.infer<typeof TaskRecord>;
export type ChildTaskInfo = NonNullable<TaskRecord["child"]>;

/** The parent-visible projection of a supervised child (SpawnAgent, TaskStatus, TaskOutput). */
export const ChildSupervision = z.object({
  child_agent_id: z.string(),
  supervision_task_id: z.string(),
  parent_agent_id: z.string(),
  delegation_id: z.string(),
  parent_work_item_id: z.string().nullable(),
  workspace_mode: z.enum(["inherit", "worktree"]),
  context_mode: z.enum(["fresh", "fork"]),
  label: z.string(),
  state: z.enum(["running", "needs_input", "completed", "failed", "cancelled"]),
  closure_outcome: z.string().nullable(),
  waiting_reason: z.string().nullable(),
  current_work_item_id: z.string().nullable(),
  worktree: z.object({ path: z.string(), branch: z.string() }).nullable(),
  cleanup_owner: z.literal("supervision_task"),
  followup_target: z.literal("parent_supervisor"),
});
export type ChildSupervision = z.infer<typeof ChildSupervision>;

/** The lifecycle snapshot task surfaces and task events expose: identity and state, no output. */
export const TaskSnapshot = z.object({
  task_id: z.string(),
  kind: TaskKind,
  status: TaskStatus,
  summary: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  finished_at: z.string().nullable(),
  wait_policy: z.literal("background"),
  /** Null for a child_agent_task (see child_supervision). */
  command: z
    .object({
      cmd: z.string(),
      cmd_digest: z.string(),
      workdir: z.string(),
      shell: z.string(),
      login: z.boolean(),
      tty: z.boolean(),
      accepts_input: z.boolean(),
      output_path: z.string(),
      terminal_reentry: z.boolean(),
    })
    .nullable(),
  child_supervision: ChildSupervision.nullable().optional(),
  input_target: z.enum(["tty", "stdin", "child_agent"]).nullable(),
  can_stop: z.boolean(),
  output_ready: z.boolean(),
  exit_status: TaskRecord.shape.exit_status.unwrap().nullable(),
  failure: z.object({ kind: z.string(), summary: z.string() }).nullable(),
  /** Bytes the output cap cut from the middle of the task's output on disk. */
  output_dropped_bytes: z.number().int(),
});
export type TaskSnapshot = z.infer<typeof TaskSnapshot>;
