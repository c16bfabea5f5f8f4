// TaskStatus: one task's lifecycle snapshot. Identity and state only; output is TaskOutput's job.
import { z } from "zod";
import { taskSnapshot, type TaskSnapshot } from "../../tasks/service.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { lookupTask, snapshotLines, taskIdField } from "./common.ts";

const Input = z.strictObject({ task_id: taskIdField });

export const taskStatusTool: ToolDefinition<typeof Input> = {
  name: "TaskStatus",
  family: "task",
  description: describe(import.meta.url, "./task-status.md"),
  input: Input,
  async execute(input, ctx) {
    const task = taskSnapshot(await lookupTask(ctx, input.task_id));
    return { summary_text: `task ${task.task_id} is ${task.status}`, result: { task } };
  },
  render(c) {
    const t = (c.result as { task: TaskSnapshot }).task;
    const lines = snapshotLines(t);
    if (t.status === "running" || t.status === "queued") {
      lines.push(
        t.input_target
          ? `Still running; it takes input through TaskInput (${t.input_target}).`
          : "Still running.",
      );
    }
    return lines.join("\n");
  },
};
