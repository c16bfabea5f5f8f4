// Shared pieces of the work-item tools: the input fields, and the readable lines every
// work-item receipt is built from (the canonical result carries the full view).
import { z } from "zod";
import { PlanStatus, TodoState } from "../../domain/work-item.ts";
import type { WorkItemView } from "../../work/service.ts";

export const workItemIdField = z
  .string()
  .min(1)
  .max(200)
  .describe("Work item id, as returned by CreateWorkItem or ListWorkItems.");

export const planStatusField = PlanStatus.describe(
  "draft: still shaping the plan; ready: clear enough to implement; needs_input: cannot go on without the operator or an outside decision.",
);

export const todoListField = z
  .array(
    z.strictObject({
      text: z.string().min(1).max(500),
      state: TodoState,
    }),
  )
  .max(50)
  .describe("The full checklist; it replaces the stored one. At most one item in_progress.");

export const includeTodoField = z
  .boolean()
  .optional()
  .describe("Include the todo list (default true).");

export function itemLines(v: WorkItemView): string[] {
  const lines = [
    `Work item ${v.id} [${v.view}${v.state === "open" ? `, ${v.readiness}` : ""}]: ${v.objective}`,
    `plan_status: ${v.plan_status}; revision ${v.revision}; todos ${v.todo_progress.done}/${v.todo_progress.total} done`,
    `plan: ${v.plan_artifact.path} (${v.plan_artifact.bytes} bytes${v.plan_artifact.preview_complete ? "" : ", preview truncated: read the file"})`,
  ];
  if (v.plan_artifact.preview.trim()) {
    lines.push("plan preview:", indent(v.plan_artifact.preview.trimEnd()));
  }
  if (v.todo_list?.length) {
    lines.push("todos:", ...v.todo_list.map((t) => `  - [${t.state}] ${t.text}`));
  }
  if (v.blocked_by) {
    lines.push(
      `blocked_by: ${v.blocked_by}` +
        (v.recheck_at
          ? ` (recheck at ${v.recheck_at}${v.recheck_consumed_at ? ", reminder delivered" : ""})`
          : ""),
    );
  }
  if (v.completion_report) lines.push("completion report:", indent(v.completion_report.text));
  return lines;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}
