// CompleteWorkItem: mark an item completed. The report is this round's own assistant text
// (the service reads it from the run's transcript); the tool takes no report argument.
import { z } from "zod";
import type { WorkItemView } from "../../work/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { itemLines, workItemIdField } from "./common.ts";

const Input = z.strictObject({ work_item_id: workItemIdField });

type Receipt = {
  work_item: WorkItemView;
  report_promoted: boolean;
  warning: {
    kind: "missing_completion_report" | "ambiguous_completion_report";
    message: string;
  } | null;
};

export const completeWorkItemTool: ToolDefinition<typeof Input> = {
  name: "CompleteWorkItem",
  family: "work",
  description: describe(import.meta.url, "./complete-work-item.md"),
  input: Input,
  async execute(input, ctx) {
    const work = ctx.services.work;
    const r = await work.complete(ctx.agent.agent_id, input.work_item_id, {
      by: "agent",
      run_id: ctx.run_id,
      message_id: ctx.message.id,
    });
    const receipt: Receipt = {
      work_item: await work.view(r.item),
      report_promoted: r.report !== undefined,
      warning: r.warning
        ? {
            kind: r.warning.startsWith("several")
              ? "ambiguous_completion_report"
              : "missing_completion_report",
            message: r.warning,
          }
        : null,
    };
    return {
      summary_text: `completed work item ${r.item.id}${r.report ? " with a report" : " without a report"}`,
      result: receipt,
    };
  },
  render(c) {
    const r = c.result as Receipt;
    const lines = [
      r.report_promoted ? "Completed; your text in this round is its report." : "Completed.",
    ];
    if (r.warning) lines.push(`Warning (${r.warning.kind}): ${r.warning.message}`);
    lines.push(...itemLines(r.work_item));
    return lines.join("\n");
  },
};
