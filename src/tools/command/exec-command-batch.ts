// ExecCommandBatch: sequential bounded commands with one grouped receipt. No promotion:
// an item past its yield time is stopped and reported as timed out.
import { z } from "zod";
import { toolErrorOf } from "../envelope.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { previewChars } from "../budget.ts";
import { TaskService } from "../../tasks/service.ts";
import { stopProcess } from "../../tasks/process.ts";
import { confinedWorkdir } from "../../workspace/roots.ts";
import {
  CommandFields,
  DEFAULT_YIELD_MS,
  completedResult,
  droppedNote,
  runCommand,
} from "./exec-command.ts";

export const MAX_BATCH_ITEMS = 16;

const Item = z.strictObject(CommandFields);
const Input = z.strictObject({
  items: z.array(Item).min(1).max(MAX_BATCH_ITEMS).describe("Commands to run, in order."),
  stop_on_error: z
    .boolean()
    .optional()
    .describe("Skip the remaining items after the first failure."),
});

type ItemResult = Record<string, unknown> & {
  index: number;
  cmd: string;
  status: "completed" | "failed" | "skipped";
};

export const execCommandBatchTool: ToolDefinition<typeof Input> = {
  name: "ExecCommandBatch",
  family: "command",
  description: describe(import.meta.url, "./exec-command-batch.md"),
  input: Input,
  async execute(input, ctx) {
    const items: ItemResult[] = [];
    const stopOnError = input.stop_on_error ?? false;
    // Split one call's output budget across its items.
    const chars = Math.max(512, Math.floor(previewChars(ctx.budget) / input.items.length));
    let failed = false;
    for (const [i, item] of input.items.entries()) {
      const index = i + 1;
      if (failed && stopOnError) {
        items.push({ index, cmd: item.cmd, status: "skipped" });
        continue;
      }
      const itemChars = item.max_output_tokens
        ? Math.min(chars, previewChars(ctx.budget, item.max_output_tokens))
        : chars;
      try {
        const workdir = confinedWorkdir(ctx.execution_root, ctx.cwd, item.workdir);
        const run = await runCommand(ctx, {
          cmd: item.cmd,
          workdir,
          shell: TaskService.shellOr(item.shell),
          login: item.login ?? false,
          tty: false,
          accepts_input: false,
          yield_time_ms: item.yield_time_ms ?? DEFAULT_YIELD_MS,
          promotable: false,
        });
        if (run.state === "running") {
          await stopProcess(run.handle, { graceMs: 500 });
          items.push({
            index,
            cmd: item.cmd,
            status: "failed",
            error: {
              kind: "item_timeout",
              message: `still running after ${run.duration_ms} ms; stopped (batch items never become tasks)`,
            },
            duration_ms: run.duration_ms,
          });
          failed = true;
          continue;
        }
        const r = completedResult(run, itemChars);
        const ok = run.exit.exit_code === 0;
        items.push({ index, cmd: item.cmd, status: ok ? "completed" : "failed", ...r });
        if (!ok) failed = true;
      } catch (err) {
        const error = toolErrorOf(err);
        if (!error) throw err;
        items.push({ index, cmd: item.cmd, status: "failed", error });
        failed = true;
      }
    }
    const completed = items.filter((i) => i.status === "completed").length;
    const failedCount = items.filter((i) => i.status === "failed").length;
    const skipped = items.filter((i) => i.status === "skipped").length;
    return {
      summary_text: `ExecCommandBatch completed ${completed}/${items.length} items`,
      result: {
        item_count: items.length,
        completed_count: completed,
        failed_count: failedCount,
        skipped_count: skipped,
        stop_on_error: stopOnError,
        items,
      },
    };
  },
  render(c) {
    const items = (c.result?.items ?? []) as ItemResult[];
    const parts = [c.summary_text];
    for (const it of items) {
      const lines = [`[${it.index}] ${it.cmd}`];
      if (it.status === "skipped") lines.push("skipped");
      else if (it.error)
        lines.push(
          `error (${(it.error as { kind: string }).kind}): ${(it.error as { message: string }).message}`,
        );
      else {
        lines.push(
          it.signal && (it.exit_status === null || (it.exit_status as number) > 128)
            ? `signal=${it.signal}`
            : `exit=${it.exit_status}`,
        );
        if (it.output_dropped_bytes) lines.push(droppedNote(it.output_dropped_bytes as number));
        if (it.stdout_preview) lines.push("stdout:", it.stdout_preview as string);
        if (it.stderr_preview) lines.push("stderr:", it.stderr_preview as string);
      }
      parts.push(lines.join("\n"));
    }
    return parts.join("\n\n");
  },
};
