// The catalog bridge: each tool an MCP server listed becomes a tool definition of the `mcp`
// family, named `mcp__<server>__<tool>` (sanitized, src/mcp/names.ts), with the server's own
// input schema as what the model sees (lowered per provider transport like every other
// schema). A call goes through the MCP service; its result is rendered as external evidence.
// The definitions are rebuilt only when the agent's catalog changed, so a turn gets the same
// array (and the provider the same tool list) while nothing did.
import { z } from "zod";
import { HolonError } from "../../domain/errors.ts";
import type { AgentRecord } from "../../domain/agent.ts";
import type { CatalogEntry, McpService } from "../../mcp/service.ts";
import { renderForModel } from "../../mcp/results.ts";
import { previewChars } from "../budget.ts";
import { ToolFailure } from "../envelope.ts";
import { describe, type ToolDefinition } from "../registry.ts";

const PREAMBLE = describe(import.meta.url, "./mcp-tool.md");
const Args = z.record(z.string(), z.unknown());
const MAX_DESCRIPTION = 4_000;

function definition(entry: CatalogEntry): ToolDefinition<typeof Args> {
  const intro = PREAMBLE.replace("{server}", entry.server).replace("{tool}", entry.tool);
  return {
    name: entry.name,
    family: "mcp",
    description: `${intro}\n${entry.description.slice(0, MAX_DESCRIPTION) || "(no description)"}`,
    input: Args,
    parameters: entry.input_schema,
    async execute(input, ctx) {
      const mcp = ctx.services.mcp;
      if (!mcp) throw new ToolFailure("mcp_unavailable", "MCP is not available in this runtime");
      try {
        const out = await mcp.call(ctx.agent, entry.server, entry.tool, input, {
          signal: ctx.signal,
          chars: previewChars(ctx.budget),
          call_id: ctx.call_id,
        });
        if (out.is_error) {
          throw new ToolFailure("mcp_tool_error", out.summary_text, {
            details: out.result,
            recovery_hint: "read the server's message; fix the arguments or work without this tool",
          });
        }
        return out.images.length
          ? { summary_text: out.summary_text, result: out.result, images: out.images }
          : { summary_text: out.summary_text, result: out.result };
      } catch (err) {
        // The service's failures say whether trying again can help.
        if (err instanceof HolonError && typeof err.details?.retryable === "boolean") {
          const opts: { recovery_hint?: string; retryable: boolean } = {
            retryable: err.details.retryable,
          };
          if (err.hint) opts.recovery_hint = err.hint;
          throw new ToolFailure(err.kind, err.message, opts);
        }
        throw err;
      }
    },
    render: (canonical) => renderForModel(canonical.result ?? {}),
  };
}

/** Kept per agent: the definitions of its current catalog, rebuilt when the catalog changed. */
export class McpToolBridge {
  readonly #service: Pick<McpService, "catalog">;
  readonly #kept = new Map<string, { key: string; defs: readonly ToolDefinition[] }>();

  constructor(service: Pick<McpService, "catalog">) {
    this.#service = service;
  }

  async toolsFor(agent: AgentRecord): Promise<readonly ToolDefinition[]> {
    const catalog = await this.#service.catalog(agent);
    const kept = this.#kept.get(agent.agent_id);
    if (kept && kept.key === catalog.key) return kept.defs;
    const defs = Object.freeze(catalog.entries.map(definition)) as readonly ToolDefinition[];
    if (this.#kept.size > 1_000) this.#kept.clear();
    this.#kept.set(agent.agent_id, { key: catalog.key, defs });
    return defs;
  }
}
