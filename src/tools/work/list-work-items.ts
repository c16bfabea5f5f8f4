// ListWorkItems: the agent's work items by view (current, queued, blocked, …).
import { z } from "zod";
import type { WorkItemView } from "../../work/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { includeTodoField, itemLines } from "./common.ts";

const Input = z.strictObject({
  filter: z
    .enum(["current", "open", "queued", "blocked", "waiting_for_operator", "completed", "all"])
    .optional()
    .describe("Which items (default: open)."),
  limit: z.number().int().min(1).max(100).optional().describe("At most this many (default 20)."),
  include_todo_list: includeTodoField,
});

export const listWorkItemsTool: ToolDefinition<typeof Input> = {
  name: "ListWorkItems",
  family: "work",
  description: describe(import.meta.url, "./list-work-items.md"),
  input: Input,
  async execute(input, ctx) {
    const items = await ctx.services.work.list(ctx.agent.agent_id, input.filter ?? "open", {
      limit: input.limit ?? 20,
      include_todo_list: input.include_todo_list ?? true,
    });
    return {
      summary_text: `${items.length} work item(s)`,
      result: { filter: input.filter ?? "open", work_items: items },
    };
  },
  render(c) {
    const r = c.result as { filter: string; work_items: WorkItemView[] };
    if (r.work_items.length === 0) return `No work items (${r.filter}).`;
    return r.work_items.map((v) => itemLines(v).join("\n")).join("\n\n");
  },
};
