// Usage and cost: `GET /agents/:id/usage` (one agent) and `GET /usage` (every agent,
// including the temporary agents of `holon run`), grouped by agent, model and day.
import type { Context, Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { parseSince } from "../host/usage.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { intParam, requireRead, type AppEnv } from "./support.ts";

function window(c: Context<AppEnv>, now: Date): { from: Date; to: Date } {
  const since = c.req.query("since");
  const until = c.req.query("until");
  if ((since?.length ?? 0) > 64 || (until?.length ?? 0) > 64) {
    throw new HolonError("invalid_request", "since and until are at most 64 characters");
  }
  const from = since ? parseSince(since, now) : new Date(0);
  const to = until ? parseSince(until, now) : new Date(now.getTime() + 1);
  return { from, to };
}

export function usageRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  app.get("/agents/:id/usage", (c) => {
    requireRead(c);
    const agent = host.agents.getPublic(c.req.param("id"));
    const { from, to } = window(c, host.store.clock.now());
    return c.json({ ok: true, ...host.services.usage.report([agent.agent_id], from, to) });
  });
  app.get("/agents/:id/usage/rounds", (c) => {
    requireRead(c);
    const agent = host.agents.getPublic(c.req.param("id"));
    const { from, to } = window(c, host.store.clock.now());
    const limit = intParam(c, "limit", { min: 1, max: 1_000 }) ?? 50;
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      currency: "USD",
      rounds: host.services.usage.rounds(agent.agent_id, from, to, limit),
    });
  });
  app.get("/usage", (c) => {
    requireRead(c);
    const only = c.req.query("agent");
    const ids = only
      ? [host.agents.getPublic(only).agent_id]
      : host.store.agents.list().map((a) => a.agent_id);
    const { from, to } = window(c, host.store.clock.now());
    return c.json({ ok: true, ...host.services.usage.report(ids, from, to) });
  });
}

const Totals = z.object({
  rounds: z.number().int(),
  input_tokens: z.number().int(),
  cached_input_tokens: z.number().int(),
  cache_write_tokens: z.number().int(),
  output_tokens: z.number().int(),
  reasoning_tokens: z.number().int(),
  cost_usd: z.number().nullable(),
});

export const UsageResponse = z.object({
  ok: z.literal(true),
  from: z.string(),
  to: z.string(),
  currency: z.literal("USD"),
  groups: z.array(Totals.extend({ agent_id: z.string(), model_ref: z.string(), day: z.string() })),
  by_agent: z.record(z.string(), Totals),
  total: Totals,
  unpriced_models: z.array(z.string()),
});

const TokenUsageShape = z.looseObject({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
});

export const UsageRoundsResponse = z.object({
  ok: z.literal(true),
  agent_id: z.string(),
  currency: z.literal("USD"),
  rounds: z.array(
    z.object({
      agent_id: z.string(),
      ts: z.string(),
      run_id: z.string(),
      round: z.number().int(),
      model_ref: z.string(),
      token_usage: TokenUsageShape.nullable(),
      cost_usd: z.number().nullable(),
      kind: z.enum(["round", "compaction"]),
      work_item_id: z.string().nullable(),
      parent_agent_ids: z.array(z.string()),
      parent_work_item_ids: z.array(z.string()),
      input_tokens: z.number().int(),
      cached_input_tokens: z.number().int(),
      cache_write_tokens: z.number().int(),
      output_tokens: z.number().int(),
      reasoning_tokens: z.number().int(),
      elapsed_ms: z.number().int(),
      estimated: z.boolean(),
    }),
  ),
});

const Window = [
  { name: "since", schema: z.string(), description: "7d, 24h, 30m or an ISO time (default: all)" },
  { name: "until", schema: z.string(), description: "same forms (default: now)" },
];

export const USAGE_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/agents/:id/usage",
    summary: "Tokens and cost of one agent by model and day",
    access: "read",
    query: Window,
    ok: { status: 200, schema: UsageResponse },
  },
  {
    method: "get",
    path: "/agents/:id/usage/rounds",
    summary: "One agent's recent model rounds, each with its tokens and cost",
    access: "read",
    query: [
      ...Window,
      {
        name: "limit",
        schema: z.number().int().min(1).max(1_000),
        description: "the newest N rounds (default 50)",
      },
    ],
    ok: { status: 200, schema: UsageRoundsResponse },
  },
  {
    method: "get",
    path: "/usage",
    summary: "Tokens and cost of every agent by agent, model and day",
    access: "read",
    query: [...Window, { name: "agent", schema: z.string(), description: "only this agent" }],
    ok: { status: 200, schema: UsageResponse },
  },
];
