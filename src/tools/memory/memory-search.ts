// MemorySearch: full-text recall over the agent's own memory (notes, briefs, episodes,
// work items), scoped to the active workspace plus agent-wide memory.
import { z } from "zod";
import { MEMORY_KINDS, type MemoryHit } from "../../memory/search.ts";
import { describe, type ToolDefinition } from "../registry.ts";

const Input = z.strictObject({
  query: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .describe("Words to look for; any language, mixed is fine."),
  limit: z.number().int().min(1).max(20).optional().describe("Most results to return (default 8)."),
  kinds: z
    .array(z.enum(MEMORY_KINDS))
    .max(4)
    .optional()
    .describe("Only these source kinds (default: all)."),
  include_all_workspaces: z
    .boolean()
    .optional()
    .describe("Also search memory recorded in other workspaces (default false)."),
});

export const memorySearchTool: ToolDefinition<typeof Input> = {
  name: "MemorySearch",
  family: "memory",
  description: describe(import.meta.url, "./memory-search.md"),
  input: Input,
  async execute(input, ctx) {
    const opts: Parameters<typeof ctx.services.memory.search>[2] = {};
    if (input.limit !== undefined) opts.limit = input.limit;
    if (input.kinds) opts.kinds = input.kinds;
    if (input.include_all_workspaces !== undefined) {
      opts.include_all_workspaces = input.include_all_workspaces;
    }
    const found = await ctx.services.memory.search(ctx.agent, input.query, opts);
    return {
      summary_text: `${found.results.length} memory results for "${input.query.slice(0, 80)}"`,
      result: { ...found },
    };
  },
  render(c) {
    const r = c.result as { results: MemoryHit[]; workspace_id: string | null };
    if (r.results.length === 0)
      return "No memory matched. Try other words, or include_all_workspaces.";
    return r.results
      .map(
        (h) =>
          `- ${h.source_ref} [${h.kind}, ${h.scope_kind}${h.workspace_id ? ` ${h.workspace_id}` : ""}, ${h.updated_at}] ${h.title}\n  ${h.snippet}`,
      )
      .join("\n");
  },
};
