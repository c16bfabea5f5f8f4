// ExecCommand: run a shell command; return its result, or promote it to a managed
// command task when it is still running after `yield_time_ms`.
import { z } from "zod";
import { ToolFailure } from "../envelope.ts";
import { describe, type ToolContext, type ToolDefinition } from "../registry.ts";
import { filePreview, previewChars } from "../budget.ts";
import { cmdDigest, taskSnapshot, TaskService } from "../../tasks/service.ts";
import {
  confinedSpareSoon,
  discardProcessDir,
  outputDroppedBytes,
  ProcessStartError,
  startProcess,
  stopProcess,
  waitForExit,
  type ExitStatus,
  type ProcessHandle,
  type ProcessSpec,
} from "../../tasks/process.ts";
import { confinedWorkdir } from "../../workspace/roots.ts";
import type { TaskRecord } from "../../domain/task.ts";

export const DEFAULT_YIELD_MS = 10_000;
export const MAX_YIELD_MS = 300_000;

export const CommandFields = {
  cmd: z.string().min(1).describe("Shell command to run."),
  workdir: z
    .string()
    .optional()
    .describe(
      "Working directory, relative to the current one; must stay inside the execution root.",
    ),
  shell: z
    .string()
    .optional()
    .describe("Shell program to run the command with (default /bin/bash)."),
  login: z.boolean().optional().describe("Run the shell as a login shell."),
  yield_time_ms: z
    .number()
    .int()
    .min(0)
    .max(MAX_YIELD_MS)
    .optional()
    .describe(
      "How long to wait for the command before it continues as a background task (default 10000).",
    ),
  max_output_tokens: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("Output budget for this call, in tokens."),
};

const Input = z.strictObject({
  ...CommandFields,
  tty: z.boolean().optional().describe("Run under a pseudo-terminal."),
  accepts_input: z.boolean().optional().describe("Allow sending input later with TaskInput."),
  duplicate_policy: z
    .enum(["reuse_running", "start_new"])
    .optional()
    .describe(
      "What to do when the same command is already running as a task (default reuse_running).",
    ),
});

export type CommandRun =
  | { state: "exited"; handle: ProcessHandle; exit: ExitStatus; duration_ms: number }
  | { state: "running"; handle: ProcessHandle; duration_ms: number };

/** Start a command and wait up to its yield time. Shared with ExecCommandBatch. */
export async function runCommand(
  ctx: ToolContext,
  input: {
    cmd: string;
    workdir: string;
    shell: string;
    login: boolean;
    tty: boolean;
    accepts_input: boolean;
    yield_time_ms: number;
    /** It may become a task: its directory is then named by the task's id. */
    promotable: boolean;
  },
): Promise<CommandRun> {
  const started = performance.now();
  let handle: ProcessHandle;
  try {
    const spec: ProcessSpec = {
      cmd: input.cmd,
      cwd: input.workdir,
      dir: ctx.tasks.processDir(ctx.agent.agent_home, input.promotable ? "task" : "proc"),
      shell: input.shell,
      login: input.login,
      tty: input.tty,
      acceptsInput: input.accepts_input,
      policy: ctx.tasks.policy,
      // Confined like every command of this agent (a refusal under `required` throws here).
      sandbox: ctx.tasks.sandboxFor(ctx.agent, ctx.execution_root),
    };
    // Rounds come faster than a used spare is replaced: wait for the replacement rather than
    // fork a cold sandbox from the host.
    const soon = await confinedSpareSoon(spec);
    if (soon !== null) await soon;
    handle = await startProcess(spec);
  } catch (err) {
    if (err instanceof ProcessStartError) {
      throw new ToolFailure(
        "command_spawn_failed",
        `the command could not be started: ${err.message}`,
        {
          details: { cmd: input.cmd, shell: input.shell },
          recovery_hint: "check the shell and working directory",
          retryable: true,
        },
      );
    }
    throw err;
  }
  let exit: ExitStatus | "timeout";
  try {
    exit = await waitForExit(handle, { timeoutMs: input.yield_time_ms, signal: ctx.signal });
  } catch (err) {
    // the run was aborted: the command goes with it
    await stopProcess(handle, { graceMs: 500 }).catch(() => {});
    throw err;
  }
  const duration_ms = Math.round(performance.now() - started);
  return exit === "timeout"
    ? { state: "running", handle, duration_ms }
    : { state: "exited", handle, exit, duration_ms };
}

/**
 * Bounded previews of a finished command's streams, with path-only artifacts for what was
 * cut. When the previews hold the whole output, nothing refers to the process directory any
 * more and it is removed, so a long-lived agent does not pile up one directory per command.
 */
export function completedResult(run: Extract<CommandRun, { state: "exited" }>, chars: number) {
  const stdout = filePreview(run.handle.stdout_path, chars);
  const stderr = run.handle.stderr_path
    ? filePreview(run.handle.stderr_path, Math.max(256, Math.floor(chars / 2)))
    : null;
  const artifacts: { path: string }[] = [];
  const dropped = outputDroppedBytes(run.handle);
  const result: Record<string, unknown> = {
    disposition: "completed",
    exit_status: run.exit.exit_code,
    signal: run.exit.signal,
    stdout_preview: stdout.text,
    stderr_preview: stderr && stderr.total_bytes > 0 ? stderr.text : null,
    stdout_bytes: stdout.total_bytes,
    stderr_bytes: stderr?.total_bytes ?? 0,
    truncated: stdout.truncated || Boolean(stderr?.truncated) || dropped > 0,
    duration_ms: run.duration_ms,
  };
  // The output cap cut the middle out of the files on disk: say so, and how much.
  if (dropped > 0) result.output_dropped_bytes = dropped;
  if (stdout.truncated) {
    result.stdout_artifact = artifacts.length;
    artifacts.push({ path: run.handle.stdout_path });
  }
  if (stderr?.truncated && run.handle.stderr_path) {
    result.stderr_artifact = artifacts.length;
    artifacts.push({ path: run.handle.stderr_path });
  }
  if (artifacts.length > 0) result.artifacts = artifacts;
  // In the background: nobody reads the directory again, and a failure leaves only litter.
  else discardProcessDir(run.handle.dir);
  return result;
}

/**
 * The spec's TaskHandle (task-surface-narrowing): the receipt of a managed execution, never
 * its pid or process directory.
 */
export function taskHandle(task: TaskRecord, initialOutput: string | null) {
  return {
    task_id: task.id,
    task_kind: task.kind,
    status: task.status,
    initial_output: initialOutput === "" ? null : initialOutput,
  };
}

/** One line for a receipt whose output lost its middle to the output cap. */
export function droppedNote(bytes: number): string {
  return `Output too large: ${bytes} bytes from the middle were dropped (the start and the end are kept).`;
}

export function exitSummary(exit: { exit_code: number | null; signal: string | null }): string {
  return exit.signal && (exit.exit_code === null || exit.exit_code > 128)
    ? `command ended by signal ${exit.signal}`
    : `command exited with status ${exit.exit_code}`;
}

export const execCommandTool: ToolDefinition<typeof Input> = {
  name: "ExecCommand",
  family: "command",
  description: describe(import.meta.url, "./exec-command.md"),
  input: Input,
  async execute(input, ctx) {
    const workdir = confinedWorkdir(ctx.execution_root, ctx.cwd, input.workdir);
    const identity = {
      cmd: input.cmd,
      workdir,
      shell: TaskService.shellOr(input.shell),
      login: input.login ?? false,
      tty: input.tty ?? false,
    };
    if ((input.duplicate_policy ?? "reuse_running") === "reuse_running") {
      const running = await ctx.tasks.findRunning(ctx.agent.agent_id, cmdDigest(identity));
      if (running) {
        return {
          summary_text: `the same command is already running as task ${running.id}`,
          result: {
            disposition: "already_running",
            task_handle: taskHandle(running, null),
            task: taskSnapshot(running),
          },
        };
      }
    }
    const chars = previewChars(ctx.budget, input.max_output_tokens);
    const run = await runCommand(ctx, {
      ...identity,
      accepts_input: input.accepts_input ?? false,
      yield_time_ms: input.yield_time_ms ?? DEFAULT_YIELD_MS,
      promotable: true,
    });
    if (run.state === "exited") {
      return { summary_text: exitSummary(run.exit), result: completedResult(run, chars) };
    }
    const task = await ctx.tasks.adopt(
      {
        ...identity,
        agent_id: ctx.agent.agent_id,
        accepts_input: input.accepts_input ?? false,
        terminal_reentry: true,
        parent_message_id: ctx.message.id,
        summary: input.cmd.length > 120 ? input.cmd.slice(0, 120) + "…" : input.cmd,
      },
      run.handle,
    );
    const initial = filePreview(run.handle.output_path, Math.min(chars, 4_000));
    return {
      summary_text: `command still running after ${run.duration_ms} ms; promoted to task ${task.id}`,
      result: {
        disposition: "promoted_to_task",
        task_handle: taskHandle(task, initial.text),
        initial_output_truncated: initial.truncated,
        output_path: task.output_path,
      },
    };
  },
  render(c) {
    const r = c.result!;
    switch (r.disposition) {
      case "completed": {
        const lines = [
          r.signal && (r.exit_status === null || (r.exit_status as number) > 128)
            ? `Process ended by signal ${r.signal}`
            : `Process exited with code ${r.exit_status}`,
        ];
        if (r.output_dropped_bytes) lines.push(droppedNote(r.output_dropped_bytes as number));
        lines.push("", "stdout:", (r.stdout_preview as string) || "(empty)");
        if (r.stderr_preview) lines.push("", "stderr:", r.stderr_preview as string);
        return lines.join("\n");
      }
      case "promoted_to_task": {
        const handle = r.task_handle as ReturnType<typeof taskHandle>;
        return [
          "Command is still running and continues as a background task",
          `Task: ${handle.task_id}`,
          `Output file: ${r.output_path}`,
          "",
          "Initial output:",
          handle.initial_output || "(none yet)",
        ].join("\n");
      }
      default: {
        const handle = r.task_handle as { task_id: string };
        return `The same command is already running\nTask: ${handle.task_id}\nUse TaskStatus or TaskOutput to follow it, or pass duplicate_policy "start_new" to start another.`;
      }
    }
  },
};
