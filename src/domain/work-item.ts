// Work items: the durable unit of an objective that outlives turns. The lifecycle is only
// `open` / `completed`; everything else (queued, blocked, waiting for the operator,
// runnable) is derived here from the record and the agent's focus pointer, never stored.
// The plan body lives in a file under the agent's home; the record keeps its descriptor.
import { z } from "zod";
import { AuthorityClass } from "./message.ts";
import { BudgetHold, BudgetLimits } from "./budget.ts";

export const WorkItemState = z.enum(["open", "completed"]);
export type WorkItemState = z.infer<typeof WorkItemState>;

export const PlanStatus = z.enum(["draft", "ready", "needs_input"]);
export type PlanStatus = z.infer<typeof PlanStatus>;

export const TodoState = z.enum(["pending", "in_progress", "completed"]);
export type TodoState = z.infer<typeof TodoState>;

export const TodoItem = z.object({ text: z.string(), state: TodoState });
export type TodoItem = z.infer<typeof TodoItem>;

/** Where the plan file is and what it held when the runtime last looked. A cache, not truth. */
export const PlanArtifact = z.object({
  path: z.string(),
  hash: z.string(),
  bytes: z.number().int(),
  updated_at: z.string(),
  preview: z.string(),
  preview_complete: z.boolean(),
});
export type PlanArtifact = z.infer<typeof PlanArtifact>;

export const WorkItemRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  /** `agent_home` until workspaces are bound for real. */
  workspace_id: z.string(),
  objective: z.string(),
  state: WorkItemState,
  plan_status: PlanStatus,
  plan_artifact: PlanArtifact,
  todo_list: z.array(TodoItem),
  blocked_by: z.string().optional(),
  recheck_at: z.string().optional(),
  recheck_consumed_at: z.string().optional(),
  result_summary: z.string().optional(),
  /** Who created it: the agent through a tool, or the operator through the control plane. */
  created_by: z.enum(["agent", "operator"]),
  /** Every stored change increments it (the work-item-local generation). */
  revision: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
  completed_at: z.string().optional(),
  /**
   * Taint: the policy authority of the turn that created the item, when below operator
   * instruction; the turns its ticks trigger inherit it until an operator re-confirms it.
   */
  policy_authority: AuthorityClass.optional(),
  /** The item's budget (set by the operator when adding it). */
  budget: BudgetLimits.optional(),
  /** Set while the item's budget is exhausted: only this item is blocked. */
  budget_hold: BudgetHold.optional(),
});
export type WorkItemRecord = z.infer<typeof WorkItemRecord>;

/** A promoted completion report (same-round assistant text, or an operator's note). */
export const DeliverySummaryRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  work_item_id: z.string(),
  text: z.string(),
  source: z.enum(["same_round_report", "operator_note"]),
  run_id: z.string().optional(),
  message_id: z.string().optional(),
  created_at: z.string(),
});
export type DeliverySummaryRecord = z.infer<typeof DeliverySummaryRecord>;

/** The runtime's internal readiness of an item (runtime-spec "Work-Item Persistence"). */
export type SchedulingState =
  "runnable" | "waiting_operator" | "waiting_task" | "waiting_external" | "blocked" | "completed";

/** The readiness labels read surfaces show. */
export type Readiness = "runnable" | "waiting_for_operator" | "blocked" | "completed";

export function schedulingState(
  item: WorkItemRecord,
  facts: { waiting_task?: boolean; waiting_external?: boolean } = {},
): SchedulingState {
  if (item.state === "completed") return "completed";
  if (item.blocked_by !== undefined || item.budget_hold !== undefined) return "blocked";
  if (item.plan_status === "needs_input") return "waiting_operator";
  if (facts.waiting_task) return "waiting_task";
  if (facts.waiting_external) return "waiting_external";
  return "runnable";
}

export function readiness(state: SchedulingState): Readiness {
  switch (state) {
    case "runnable":
      return "runnable";
    case "waiting_operator":
      return "waiting_for_operator";
    case "completed":
      return "completed";
    default:
      return "blocked";
  }
}

export const isRunnable = (item: WorkItemRecord) => schedulingState(item) === "runnable";

/** The derived view an item belongs to for the agent whose focus is `currentId`. */
export type WorkView = "current" | "queued" | "waiting_for_operator" | "blocked" | "completed";

export function viewOf(item: WorkItemRecord, currentId: string | undefined): WorkView {
  if (item.state === "completed") return "completed";
  if (item.id === currentId) return "current";
  if (item.blocked_by !== undefined || item.budget_hold !== undefined) return "blocked";
  if (item.plan_status === "needs_input") return "waiting_for_operator";
  return "queued";
}

export const WORK_VIEWS: readonly WorkView[] = [
  "current",
  "queued",
  "waiting_for_operator",
  "blocked",
  "completed",
];

export function todoProgress(todos: TodoItem[]): { done: number; total: number } {
  return { done: todos.filter((t) => t.state === "completed").length, total: todos.length };
}

/** Limits on what a work item may hold (inputs are capped; the store is bounded). */
export const WORK_LIMITS = {
  objective_chars: 2_000,
  blocker_chars: 2_000,
  todo_items: 50,
  todo_text_chars: 500,
  plan_bytes: 256 * 1024,
  note_chars: 16_000,
  preview_chars: 1_200,
  /** Open items an agent may hold at once. */
  open_items: 200,
  /** Completed items kept per agent; older ones are removed with their reports and plans. */
  completed_kept: 500,
} as const;

/** The fallback recheck of a blocked item when none was asked for (one hour). */
export const DEFAULT_RECHECK_MS = 60 * 60 * 1000;

/** An item as read surfaces show it (tools, HTTP, CLI): the record plus derived views. */
export const WorkItemView = WorkItemRecord.omit({ todo_list: true }).extend({
  todo_list: z.array(TodoItem).optional(),
  view: z.enum(["current", "queued", "waiting_for_operator", "blocked", "completed"]),
  readiness: z.enum(["runnable", "waiting_for_operator", "blocked", "completed"]),
  is_current: z.boolean(),
  todo_progress: z.object({ done: z.number().int(), total: z.number().int() }),
  completion_report: z
    .object({
      text: z.string(),
      source: DeliverySummaryRecord.shape.source,
      delivery_summary_id: z.string(),
      created_at: z.string(),
    })
    .nullable(),
  /** Asks that hold the item (a question, a runaway halt, a budget stop), when any. */
  held_by_asks: z
    .array(
      z.object({
        ask_id: z.string(),
        kind: z.string(),
        source: z.string(),
        state: z.string(),
        about: z.string(),
        options: z.array(z.string()),
      }),
    )
    .optional(),
});
export type WorkItemView = z.infer<typeof WorkItemView>;

/** The current item in an agent summary (`/status`). */
export const CurrentWorkItemSummary = z.object({
  id: z.string(),
  objective: z.string(),
  plan_status: PlanStatus,
  readiness: WorkItemView.shape.readiness,
  todo_progress: WorkItemView.shape.todo_progress,
  blocked_by: z.string().nullable(),
  recheck_at: z.string().nullable(),
});

/** The current item's plan and todos (`/state` work_plan). */
export const WorkPlanView = z.object({
  work_item_id: z.string(),
  plan_status: PlanStatus,
  plan_artifact: PlanArtifact,
  todo_list: z.array(TodoItem),
});
