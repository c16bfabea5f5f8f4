// Sleep: end the turn after this round and rest; optionally wake after a delay. The tool
// only returns the request; the turn ends and the waiting plane arms the wake deadline.
import { z } from "zod";
import { describe, type ToolDefinition } from "../registry.ts";

const Input = z.strictObject({
  duration_ms: z
    .number()
    .int()
    .min(0)
    .max(24 * 60 * 60 * 1000)
    .optional()
    .describe("Wake again after this many milliseconds. Omit it for an ordinary rest."),
});

export const sleepTool: ToolDefinition<typeof Input> = {
  name: "Sleep",
  family: "agent",
  description: describe(import.meta.url, "./sleep.md"),
  input: Input,
  async execute(input) {
    // 0 is tolerated as "omitted" for models that always fill every field.
    const duration = input.duration_ms && input.duration_ms > 0 ? input.duration_ms : undefined;
    return {
      request: { kind: "sleep", duration_ms: duration },
      summary_text: duration
        ? `resting; will wake in ${duration} ms`
        : "resting until new input arrives",
      result: { sleeping: true, duration_ms: duration ?? null },
    };
  },
  render: (c) => c.summary_text,
};
