// CreateWorkItem: a new open work item for a separate objective, with its plan file.
import { z } from "zod";
import type { WorkItemView } from "../../work/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { itemLines, planStatusField, todoListField } from "./common.ts";

const Input = z.strictObject({
  objective: z.string().max(2_000).describe("One short sentence: what this work achieves."),
  plan_status: planStatusField.optional(),
  plan: z
    .string()
    .max(64 * 1024)
    .optional()
    .describe("Initial plan text for the plan file (markdown). Edit the file later directly."),
  todo_list: todoListField.optional(),
});

export const createWorkItemTool: ToolDefinition<typeof Input> = {
  name: "CreateWorkItem",
  family: "work",
  description: describe(import.meta.url, "./create-work-item.md"),
  input: Input,
  async execute(input, ctx) {
    const work = ctx.services.work;
    const item = await work.create(ctx.agent.agent_id, input, "agent", ctx.policy_authority);
    const view = await work.view(item);
    return {
      summary_text: `created work item ${item.id}`,
      result: { work_item: view },
    };
  },
  render(c) {
    const v = (c.result as { work_item: WorkItemView }).work_item;
    return [
      `Created. It is queued, not current: call PickWorkItem to focus on it.`,
      ...itemLines(v),
    ].join("\n");
  },
};
