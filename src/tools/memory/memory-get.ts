// MemoryGet: the exact text behind a MemorySearch result, bounded.
import { z } from "zod";
import {
  MEMORY_GET_DEFAULT_CHARS,
  MEMORY_GET_MAX_CHARS,
  type MemoryDocument,
} from "../../memory/search.ts";
import { describe, type ToolDefinition } from "../registry.ts";

const Input = z.strictObject({
  source_ref: z
    .string()
    .min(1)
    .max(200)
    .describe("A source_ref copied from a MemorySearch result."),
  max_chars: z
    .number()
    .int()
    .min(1)
    .max(MEMORY_GET_MAX_CHARS)
    .optional()
    .describe(`Most characters of content to return (default ${MEMORY_GET_DEFAULT_CHARS}).`),
});

export const memoryGetTool: ToolDefinition<typeof Input> = {
  name: "MemoryGet",
  family: "memory",
  description: describe(import.meta.url, "./memory-get.md"),
  input: Input,
  async execute(input, ctx) {
    const doc = await ctx.services.memory.get(
      ctx.agent,
      input.source_ref,
      input.max_chars ?? MEMORY_GET_DEFAULT_CHARS,
    );
    return {
      summary_text: `${doc.source_ref}: ${doc.content.length} characters${doc.truncated ? ` of ${doc.total_chars}` : ""}`,
      result: { ...doc },
    };
  },
  render(c) {
    const d = c.result as MemoryDocument;
    const head = `${d.source_ref} [${d.kind}, ${d.scope_kind}${d.workspace_id ? ` ${d.workspace_id}` : ""}, ${d.updated_at}] ${d.title}${d.source_path ? `\nfile: ${d.source_path}` : ""}`;
    const tail = d.truncated
      ? `\n[truncated: ${d.content.length} of ${d.total_chars} characters; ask for more with max_chars]`
      : "";
    return `${head}\n\n${d.content}${tail}`;
  },
};
