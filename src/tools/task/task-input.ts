// TaskInput: continue an interactive task. Text goes to the task's stdin (tasks started with
// accepts_input) or to its terminal (tty tasks). Refusals are receipts, not errors.
import { z } from "zod";
import { inputTarget, taskSnapshot, type TaskSnapshot } from "../../tasks/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { lookupTask, taskIdField } from "./common.ts";

const MAX_INPUT_CHARS = 64 * 1024;

const Input = z.strictObject({
  task_id: taskIdField,
  input: z
    .string()
    .max(MAX_INPUT_CHARS)
    .describe('Text to send, exactly as given; end a line with "\\n" to submit it.'),
  close_input: z
    .boolean()
    .optional()
    .describe("After sending, close the input (end of file; Ctrl-D on a terminal)."),
});

const REASONS: Record<string, string> = {
  input_not_enabled:
    "the task was not started with accepts_input or tty, so it takes no input; start it again with accepts_input: true",
  task_not_running: "the task has already ended",
  process_exited: "the task's process has exited",
  input_closed: "the task's input was already closed",
  input_blocked: "the task is not reading its input (the pipe is full); part or none was delivered",
  input_unavailable: "the task's input could not be opened",
  empty_input: "a follow-up for a child agent needs some text",
  child_gone: "the child agent no longer exists",
  child_stopped: "the child agent is stopped",
};

type InputReceipt = {
  task: TaskSnapshot;
  accepted_input: boolean;
  input_target: "stdin" | "tty" | "child_agent" | null;
  bytes_written: number;
  input_closed: boolean;
  reason: string | null;
  summary_text: string;
};

export const taskInputTool: ToolDefinition<typeof Input> = {
  name: "TaskInput",
  family: "task",
  description: describe(import.meta.url, "./task-input.md"),
  input: Input,
  async execute(input, ctx) {
    const task = await lookupTask(ctx, input.task_id);
    if (task.kind === "child_agent_task") {
      const r = await ctx.services.agents.input(task, input.input);
      const summary = r.accepted
        ? `sent a follow-up message to child ${task.child!.child_agent_id}`
        : `input not delivered to child ${task.child!.child_agent_id}: ${REASONS[r.reason ?? ""] ?? r.reason}`;
      const receipt: InputReceipt = {
        task: taskSnapshot(await ctx.tasks.get(ctx.agent.agent_id, task.id)),
        accepted_input: r.accepted,
        input_target: "child_agent",
        bytes_written: r.accepted ? Buffer.byteLength(input.input) : 0,
        input_closed: false,
        reason: r.reason ?? null,
        summary_text: summary,
      };
      return { summary_text: summary, result: receipt };
    }
    const close = input.close_input ?? false;
    const r = await ctx.tasks.input(task.id, input.input, close);
    const target = inputTarget(task);
    const reason = r.reason ?? null;
    const summary =
      r.accepted && !reason
        ? `sent ${r.bytes_written} byte(s) to task ${task.id} via ${target}${close ? " and closed its input" : ""}`
        : `input not ${r.accepted ? "fully " : ""}delivered to task ${task.id}: ${REASONS[reason ?? ""] ?? reason}`;
    const receipt: InputReceipt = {
      task: taskSnapshot(await ctx.tasks.get(ctx.agent.agent_id, task.id)),
      accepted_input: r.accepted,
      input_target: target,
      bytes_written: r.bytes_written,
      input_closed: close && r.accepted && !reason,
      reason,
      summary_text: summary,
    };
    return { summary_text: summary, result: receipt };
  },
  render(c) {
    const r = c.result as InputReceipt;
    const lines = [r.accepted_input ? "Input delivered." : "Input not delivered.", r.summary_text];
    if (r.accepted_input) lines.push(`Read the reply with TaskOutput (task_id ${r.task.task_id}).`);
    lines.push(`Task status: ${r.task.status}`);
    return lines.join("\n");
  },
};
