// Troubleshooting routes: `GET /control/agents/:id/debug/prompt`, the prompt a turn would send
// now (policy, instructions, context sections, the incoming message as rendered, the tool
// names), built by the turn executor's own contributors and recording nothing. Control
// access: the prompt holds the agent's instructions and recent conversation.
import type { Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { promptPreview } from "../host/inspect.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { requireControl, type AppEnv } from "./support.ts";

const MAX_TEXT = 4_000;
const DEFAULT_TEXT = "(an operator prompt)";

export const PromptPreviewResponse = z.object({
  ok: z.literal(true),
  agent_id: z.string(),
  system_prompt: z.string(),
  sections: z.array(
    z.object({
      contributor: z.string(),
      placement: z.string(),
      stability: z.string(),
      text: z.string(),
    }),
  ),
  incoming: z.string(),
  tools: z.array(z.string()),
  prompt_cache_key: z.string().nullable(),
});

export function debugRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  app.get("/control/agents/:id/debug/prompt", (c) => {
    requireControl(c);
    const agent = host.agents.getPublic(c.req.param("id"));
    const text = c.req.query("text") || DEFAULT_TEXT;
    if (text.length > MAX_TEXT) {
      throw new HolonError("invalid_request", `text is at most ${MAX_TEXT} characters`);
    }
    const preview = promptPreview(host, agent, text);
    return c.json({ ok: true, agent_id: agent.agent_id, ...preview });
  });
}

export const DEBUG_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/control/agents/:id/debug/prompt",
    summary: "The prompt a turn would send now (nothing is recorded)",
    access: "control",
    query: [
      {
        name: "text",
        schema: z.string().max(MAX_TEXT),
        description: "the operator prompt to preview the turn for",
      },
    ],
    ok: { status: 200, schema: PromptPreviewResponse },
  },
];
