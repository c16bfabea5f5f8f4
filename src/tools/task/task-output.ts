// TaskOutput: the output path for a managed task. A bounded head-and-tail preview of its output
// file (stdout then stderr for promoted commands), readiness per the persisted task record,
// path-only artifacts, and an optional bounded wait for the task to finish.
import { z } from "zod";
import { taskOutputView } from "../../tasks/service.ts";
import { previewChars } from "../budget.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { exitText, lookupTask, taskIdField } from "./common.ts";

export const MAX_TASK_OUTPUT_WAIT_MS = 60_000;
const DEFAULT_WAIT_MS = 30_000;

const Input = z.strictObject({
  task_id: taskIdField,
  block: z
    .boolean()
    .optional()
    .describe("Wait for the task to finish before answering (default false)."),
  timeout_ms: z
    .number()
    .int()
    .min(0)
    .max(MAX_TASK_OUTPUT_WAIT_MS)
    .optional()
    .describe(`With block: the longest wait, in ms (default ${DEFAULT_WAIT_MS}, at most 60000).`),
  max_output_tokens: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("Output budget for the preview, in tokens."),
});

type OutputTask = {
  task_id: string;
  status: string;
  output_preview: string;
  output_truncated: boolean;
  output_bytes: number;
  output_source: string;
  artifacts: { path: string; kind: string }[];
  result_summary: string | null;
  exit_status: { exit_code: number | null; signal: string | null } | null;
  failure_artifact: { kind: string; summary: string } | null;
};

export const taskOutputTool: ToolDefinition<typeof Input> = {
  name: "TaskOutput",
  family: "task",
  description: describe(import.meta.url, "./task-output.md"),
  input: Input,
  async execute(input, ctx) {
    let task = await lookupTask(ctx, input.task_id);
    let waited = false;
    if (input.block) {
      const timeout = input.timeout_ms ?? DEFAULT_WAIT_MS;
      task = await ctx.tasks.waitTerminal(task.id, timeout, ctx.signal);
      waited = true;
    }
    const chars = previewChars(ctx.budget, input.max_output_tokens);
    if (task.kind === "child_agent_task") {
      const view = await ctx.services.agents.output(task, chars, waited);
      return {
        summary_text:
          view.retrieval_status === "success"
            ? `child task ${task.id} ${task.status}; result ready`
            : `child task ${task.id} is still running${waited ? " (wait timed out)" : ""}`,
        result: view,
      };
    }
    const view = taskOutputView(task, chars, waited);
    const summary =
      view.retrieval_status === "success"
        ? `task ${task.id} ${task.status}; output ready`
        : view.retrieval_status === "unavailable"
          ? `task ${task.id} ${task.status}; no output snapshot is available`
          : `task ${task.id} is still running${waited ? " (wait timed out)" : ""}`;
    return { summary_text: summary, result: view };
  },
  render(c) {
    const r = c.result as { retrieval_status: string; task: OutputTask };
    const t = r.task;
    const lines: string[] = [];
    const child = (t as { child_supervision?: { child_agent_id: string; state: string } })
      .child_supervision;
    if (child) {
      lines.push(
        r.retrieval_status === "success"
          ? `Child agent ${child.child_agent_id} ${t.status}. Its result:`
          : `Child agent ${child.child_agent_id} is ${child.state}. Its reports so far:`,
      );
      if (t.failure_artifact) lines.push(`Failure: ${t.failure_artifact.summary}`);
      lines.push(t.output_preview || "(nothing reported yet)");
      return lines.join("\n");
    }
    switch (r.retrieval_status) {
      case "success":
        lines.push(`Task ${t.task_id} ${t.status} (${exitText(t.exit_status)}).`);
        break;
      case "unavailable":
        lines.push(`Task ${t.task_id} ${t.status}, but its output could not be read.`);
        break;
      case "timeout":
        lines.push(`Task ${t.task_id} is still running (the wait ended first). Output so far:`);
        break;
      default:
        lines.push(`Task ${t.task_id} is still running. Output so far:`);
    }
    if (t.failure_artifact) lines.push(`Failure: ${t.failure_artifact.summary}`);
    if (r.retrieval_status === "success") lines.push(`Output (${t.output_bytes} bytes):`);
    lines.push(t.output_preview || "(no output)");
    if (t.output_truncated || r.retrieval_status !== "success") {
      const paths = t.artifacts.map((a) => `${a.kind}: ${a.path}`);
      if (paths.length > 0) {
        lines.push(
          "",
          t.output_truncated ? "The preview was cut; full output in:" : "Output files:",
          ...paths.map((p) => `  ${p}`),
        );
      }
    }
    return lines.join("\n");
  },
};
