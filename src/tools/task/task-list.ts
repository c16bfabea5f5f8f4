// TaskList: the calling agent's managed tasks, compactly. Active ones unless asked otherwise.
import { z } from "zod";
import { TERMINAL_TASK_STATUSES } from "../../domain/task.ts";
import { inputTarget } from "../../tasks/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { exitText } from "./common.ts";

const Input = z.strictObject({
  include_terminal: z
    .boolean()
    .optional()
    .describe("Also list finished, failed and stopped tasks (default false: active tasks only)."),
  limit: z
    .number()
    .int()
    .min(1)
    .max(200)
    .optional()
    .describe("At most this many tasks, most recent first (default 50)."),
});

const CMD_PREVIEW = 100;

type Entry = {
  task_id: string;
  kind: string;
  status: string;
  summary: string | null;
  cmd_preview: string;
  created_at: string;
  finished_at: string | null;
  input_target: string | null;
  exit_status: { exit_code: number | null; signal: string | null } | null;
};

export const taskListTool: ToolDefinition<typeof Input> = {
  name: "TaskList",
  family: "task",
  description: describe(import.meta.url, "./task-list.md"),
  input: Input,
  async execute(input, ctx) {
    const includeTerminal = input.include_terminal ?? false;
    const tasks = await ctx.tasks.list(ctx.agent.agent_id, {
      includeTerminal,
      limit: input.limit ?? 50,
    });
    const entries: Entry[] = tasks.map((t) => ({
      task_id: t.id,
      kind: t.kind,
      status: t.status,
      summary: t.summary ?? null,
      cmd_preview: t.child
        ? `child agent ${t.child.child_agent_id}${t.child.needs_input ? " (needs input)" : ""}: ${t.child.label}`
        : t.cmd.length > CMD_PREVIEW
          ? t.cmd.slice(0, CMD_PREVIEW) + "…"
          : t.cmd,
      created_at: t.created_at,
      finished_at: t.finished_at ?? null,
      input_target: TERMINAL_TASK_STATUSES.has(t.status) ? null : inputTarget(t),
      exit_status: t.exit_status ?? null,
    }));
    const active = entries.filter((e) => e.status === "running" || e.status === "queued").length;
    return {
      summary_text: includeTerminal
        ? `${entries.length} task(s), ${active} active`
        : `${active} active task(s)`,
      result: { tasks: entries, include_terminal: includeTerminal, active_count: active },
    };
  },
  render(c) {
    const r = c.result as { tasks: Entry[]; include_terminal: boolean };
    if (r.tasks.length === 0) {
      return r.include_terminal
        ? "No tasks."
        : "No active tasks. (Pass include_terminal: true to see finished ones.)";
    }
    const lines = [r.include_terminal ? "Tasks (most recent first):" : "Active tasks:"];
    for (const t of r.tasks) {
      const extra = [
        t.input_target ? `input via ${t.input_target}` : null,
        t.exit_status ? exitText(t.exit_status) : null,
      ].filter(Boolean);
      lines.push(
        `- ${t.task_id} [${t.status}] ${t.cmd_preview}${extra.length ? ` (${extra.join("; ")})` : ""}`,
      );
    }
    return lines.join("\n");
  },
};
