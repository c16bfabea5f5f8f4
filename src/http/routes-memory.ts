// Memory and context inspection: `GET /control/agents/:id/debug/prompt`, the agent's next
// provider request section by section (control: the prompt holds the agent's instructions
// and memory).
import type { Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { promptPreview } from "../host/prompt-preview.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { requireControl, type AppEnv } from "./support.ts";

const MAX_TEXT = 4_000;

export function memoryRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  app.get("/control/agents/:id/debug/prompt", async (c) => {
    requireControl(c);
    const agent = await host.agents.getPublic(c.req.param("id"));
    const text = c.req.query("text");
    if (text !== undefined && (text.length === 0 || text.length > MAX_TEXT)) {
      throw new HolonError("invalid_request", `text is 1 to ${MAX_TEXT} characters`);
    }
    return c.json(await promptPreview(host, agent, text));
  });
}

export const PromptPreviewResponse = z.object({
  ok: z.literal(true),
  agent_id: z.string(),
  incoming: z.object({
    source: z.enum(["queued_message", "placeholder", "operator_text"]),
    message_id: z.string().nullable(),
    text: z.string(),
    estimated_tokens: z.number().int(),
  }),
  sections: z.array(
    z.object({
      contributor: z.string(),
      placement: z.enum(["system_prompt", "system", "context"]),
      stability: z.enum(["stable", "agent_scoped", "turn_scoped"]),
      cache_stable: z.boolean(),
      cache_breakpoint: z.boolean(),
      chars: z.number().int(),
      estimated_tokens: z.number().int(),
      text: z.string(),
    }),
  ),
  tools: z.object({
    count: z.number().int(),
    names: z.array(z.string()),
    estimated_tokens: z.number().int(),
  }),
  prompt_cache_key: z.string().nullable(),
  context_fingerprint: z.string().nullable(),
  working_memory_revision: z.number().int(),
  totals: z.object({
    estimated_tokens: z.number().int(),
    cache_stable_prefix_tokens: z.number().int(),
    budget_tokens: z.number().int(),
    window_tokens: z.number().int(),
    output_reserve_tokens: z.number().int(),
    compaction_soft_limit_tokens: z.number().int(),
    model_ref: z.string().nullable(),
    /** How tokens were counted: the model's own encoding, or the calibrated estimate. */
    counter: z.enum(["o200k_base", "estimate"]),
  }),
});

export const MEMORY_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/control/agents/:id/debug/prompt",
    summary: "The agent's next provider request, section by section, with token estimates",
    access: "control",
    query: [
      {
        name: "text",
        schema: z.string().min(1).max(MAX_TEXT),
        description: "preview the turn for this operator prompt instead of the next queued message",
      },
    ],
    ok: { status: 200, schema: PromptPreviewResponse },
  },
];
