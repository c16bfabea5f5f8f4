// PickWorkItem: set the agent's focus (current_work_item_id) to one of its open items.
import { z } from "zod";
import type { WorkItemView } from "../../work/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { itemLines, workItemIdField } from "./common.ts";

const Input = z.strictObject({ work_item_id: workItemIdField });

type Receipt = { current: WorkItemView; previous: WorkItemView | null; binding_note: string };

export const pickWorkItemTool: ToolDefinition<typeof Input> = {
  name: "PickWorkItem",
  family: "work",
  description: describe(import.meta.url, "./pick-work-item.md"),
  input: Input,
  async execute(input, ctx) {
    const work = ctx.services.work;
    const r = await work.pick(ctx.agent.agent_id, input.work_item_id);
    const receipt: Receipt = {
      current: await work.view(r.current),
      previous: r.previous ? await work.view(r.previous) : null,
      binding_note: `From now on, work-item tool calls in this turn refer to ${r.current.id} unless you name another id; it stays your current item across turns until you pick another or complete it.`,
    };
    return { summary_text: `current work item is now ${r.current.id}`, result: receipt };
  },
  render(c) {
    const r = c.result as Receipt;
    const lines = ["Picked.", ...itemLines(r.current)];
    if (r.previous)
      lines.push(
        `Previous current item: ${r.previous.id} (${r.previous.objective}), now ${r.previous.view}.`,
      );
    lines.push(r.binding_note);
    return lines.join("\n");
  },
};
