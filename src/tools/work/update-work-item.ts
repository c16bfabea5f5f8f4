// UpdateWorkItem: change an open item's objective, plan status, todo list or blocker.
import { z } from "zod";
import type { WorkItemView } from "../../work/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { itemLines, planStatusField, todoListField, workItemIdField } from "./common.ts";

const Input = z.strictObject({
  work_item_id: workItemIdField,
  objective: z.string().max(2_000).optional().describe("A refined short objective."),
  plan_status: planStatusField.optional(),
  todo_list: todoListField.optional(),
  blocked_by: z
    .string()
    .max(2_000)
    .nullable()
    .optional()
    .describe("Why the whole item cannot advance now; null clears the blocker."),
  recheck_after: z
    .number()
    .int()
    .positive()
    .max(30 * 24 * 3600 * 1000)
    .optional()
    .describe(
      "With blocked_by: milliseconds until the runtime reminds you to recheck (default one hour).",
    ),
});

export const updateWorkItemTool: ToolDefinition<typeof Input> = {
  name: "UpdateWorkItem",
  family: "work",
  description: describe(import.meta.url, "./update-work-item.md"),
  input: Input,
  async execute(input, ctx) {
    const work = ctx.services.work;
    const { work_item_id, ...patch } = input;
    const item = await work.update(ctx.agent.agent_id, work_item_id, patch);
    return {
      summary_text: `updated work item ${item.id}`,
      result: { work_item: await work.view(item) },
    };
  },
  render(c) {
    return ["Updated.", ...itemLines((c.result as { work_item: WorkItemView }).work_item)].join(
      "\n",
    );
  },
};
