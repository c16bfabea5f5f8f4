// TaskStop: end a managed task. TERM to its process group, KILL to whatever is left after a
// grace period, and a receipt with the updated snapshot.
import { z } from "zod";
import { taskSnapshot, type TaskSnapshot } from "../../tasks/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { lookupTask, snapshotLines, taskIdField } from "./common.ts";

const STOP_GRACE_MS = 2_000;

const Input = z.strictObject({ task_id: taskIdField });

type StopReceipt = { task: TaskSnapshot; stop_requested: boolean; escalated: boolean };

export const taskStopTool: ToolDefinition<typeof Input> = {
  name: "TaskStop",
  family: "task",
  description: describe(import.meta.url, "./task-stop.md"),
  input: Input,
  async execute(input, ctx) {
    const task = await lookupTask(ctx, input.task_id);
    const r =
      task.kind === "child_agent_task"
        ? { ...(await ctx.services.agents.stop(task)), escalated: false }
        : await ctx.tasks.stop(task.id, STOP_GRACE_MS);
    const receipt: StopReceipt = {
      task: taskSnapshot(r.task),
      stop_requested: r.stop_requested,
      escalated: r.escalated,
    };
    const summary = r.stop_requested
      ? `task ${task.id} stopped${r.escalated ? " (had to be killed)" : ""}`
      : `task ${task.id} had already ended (${r.task.status}); nothing to stop`;
    return { summary_text: summary, result: receipt };
  },
  render(c) {
    const r = c.result as StopReceipt;
    const head = r.stop_requested
      ? r.task.kind === "child_agent_task"
        ? "Stopped: the child agent was aborted and stopped; its result so far came back as a task result."
        : r.escalated
          ? "Stopped: the task ignored the termination signal and was killed, with its child processes."
          : "Stopped: the task ended after the termination signal."
      : "Nothing to stop: the task had already ended.";
    return [head, ...snapshotLines(r.task)].join("\n");
  },
};
