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

export const TaskKind = z.enum(["command_task"]);
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
});
export type TaskRecord = z.infer<typeof TaskRecord>;

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
  command: z.object({
    cmd: z.string(),
    cmd_digest: z.string(),
    workdir: z.string(),
    shell: z.string(),
    login: z.boolean(),
    tty: z.boolean(),
    accepts_input: z.boolean(),
    output_path: z.string(),
    terminal_reentry: z.boolean(),
  }),
  input_target: z.enum(["tty", "stdin"]).nullable(),
  can_stop: z.boolean(),
  output_ready: z.boolean(),
  exit_status: TaskRecord.shape.exit_status.unwrap().nullable(),
  failure: z.object({ kind: z.string(), summary: z.string() }).nullable(),
  /** Bytes the output cap cut from the middle of the task's output on disk. */
  output_dropped_bytes: z.number().int(),
});
export type TaskSnapshot = z.infer<typeof TaskSnapshot>;
