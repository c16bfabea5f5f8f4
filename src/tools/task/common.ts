// Shared pieces of the task tools: the task id field, looking a task up for the calling
// agent only, and the readable lines every task receipt starts with.
import { z } from "zod";
import { HolonError } from "../../domain/errors.ts";
import type { TaskRecord } from "../../domain/task.ts";
import type { TaskSnapshot } from "../../tasks/service.ts";
import { ToolFailure } from "../envelope.ts";
import type { ToolContext } from "../registry.ts";

export const taskIdField = z
  .string()
  .min(1)
  .describe("Task id, as returned by ExecCommand (task_handle.task_id) or TaskList.");

/** The calling agent's task; anything else (unknown, another agent's) is `unknown_task`. */
export async function lookupTask(ctx: ToolContext, taskId: string): Promise<TaskRecord> {
  try {
    return await ctx.tasks.get(ctx.agent.agent_id, taskId);
  } catch (err) {
    if (err instanceof HolonError) {
      throw new ToolFailure(err.kind, err.message, {
        details: { task_id: taskId, field: "task_id" },
        recovery_hint: "call TaskList (include_terminal: true) to see your task ids",
      });
    }
    throw err;
  }
}

export function exitText(exit: { exit_code: number | null; signal: string | null } | null): string {
  if (!exit) return "none yet";
  if (exit.signal && (exit.exit_code === null || exit.exit_code > 128))
    return `signal ${exit.signal}`;
  return `exit status ${exit.exit_code}`;
}

/** Human lines describing a task snapshot (no output bytes). */
export function snapshotLines(t: TaskSnapshot): string[] {
  if (!t.command) {
    const c = t.child_supervision!;
    const lines = [
      `Task ${t.task_id} (${t.kind}): ${t.status}${c.state === "needs_input" ? " (needs input)" : ""}`,
      `Child agent: ${c.child_agent_id} (${c.workspace_mode}, ${c.context_mode} context)`,
      `Job: ${c.label}`,
    ];
    if (c.closure_outcome)
      lines.push(
        `Child closure: ${c.closure_outcome}${c.waiting_reason ? ` (${c.waiting_reason})` : ""}`,
      );
    if (c.worktree) lines.push(`Worktree: ${c.worktree.path} (branch ${c.worktree.branch})`);
    lines.push(`Started: ${t.created_at}${t.finished_at ? `, finished: ${t.finished_at}` : ""}`);
    if (t.failure) lines.push(`Failure: ${t.failure.summary}`);
    return lines;
  }
  const lines = [
    `Task ${t.task_id} (${t.kind}): ${t.status}`,
    `Command: ${t.command.cmd}`,
    `Workdir: ${t.command.workdir}`,
  ];
  const mode = [
    t.command.tty ? "tty" : null,
    t.command.accepts_input ? "accepts input" : null,
    t.command.login ? "login shell" : null,
  ].filter(Boolean);
  lines.push(`Shell: ${t.command.shell}${mode.length ? ` (${mode.join(", ")})` : ""}`);
  lines.push(`Started: ${t.created_at}${t.finished_at ? `, finished: ${t.finished_at}` : ""}`);
  if (t.exit_status) lines.push(`Result: ${exitText(t.exit_status)}`);
  if (t.failure) lines.push(`Failure: ${t.failure.summary}`);
  if (t.output_dropped_bytes > 0)
    lines.push(
      `Output too large: ${t.output_dropped_bytes} bytes from the middle were dropped (the start and the end are kept).`,
    );
  lines.push(`Output file: ${t.command.output_path}`);
  return lines;
}
