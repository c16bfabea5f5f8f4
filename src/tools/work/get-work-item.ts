// GetWorkItem: one of the agent's work items, with its plan descriptor and preview.
import { z } from "zod";
import type { WorkItemView } from "../../work/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { includeTodoField, itemLines, workItemIdField } from "./common.ts";

const Input = z.strictObject({
  work_item_id: workItemIdField,
  include_todo_list: includeTodoField,
});

export const getWorkItemTool: ToolDefinition<typeof Input> = {
  name: "GetWorkItem",
  family: "work",
  description: describe(import.meta.url, "./get-work-item.md"),
  input: Input,
  async execute(input, ctx) {
    const view = await ctx.services.work.get(ctx.agent.agent_id, input.work_item_id, {
      include_todo_list: input.include_todo_list ?? true,
    });
    return { summary_text: `work item ${view.id} (${view.view})`, result: { work_item: view } };
  },
  render(c) {
    return itemLines((c.result as { work_item: WorkItemView }).work_item).join("\n");
  },
};
