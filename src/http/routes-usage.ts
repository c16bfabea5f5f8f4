// Usage and cost: `GET /agents/:id/usage` (one agent) and `GET /usage` (every agent,
// including the temporary agents of `holon run`), grouped by agent, model and day; with
// `view=work_items` also by work item, with `view=tree` also as a tree of agents (children
// rolled up under their parent, telemetry/cost.ts).
import type { Context, Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { parseSince } from "../host/usage.ts";
import { costByWorkItem, costTotal, costTree, subtreeRows } from "../telemetry/cost.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { intParam, requireControl, requireRead, type AppEnv } from "./support.ts";

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
  // One agent's figures: the public routes see public agents; their /control twins any agent,
  // a private child included (the console's usage page reads those).
  const oneAgent = (
    find: (id: string) => Promise<{ agent_id: string }>,
    auth: (c: Context<AppEnv>) => void,
  ) => ({
    usage: async (c: Context<AppEnv>) => {
      auth(c);
      const agent = await find(c.req.param("id")!);
      const { from, to } = window(c, host.store.clock.now());
      return c.json({
        ok: true,
        ...(await host.services.usage.report([agent.agent_id], from, to)),
      });
    },
    rounds: async (c: Context<AppEnv>) => {
      auth(c);
      const agent = await find(c.req.param("id")!);
      const { from, to } = window(c, host.store.clock.now());
      const limit = intParam(c, "limit", { min: 1, max: 1_000 }) ?? 50;
      return c.json({
        ok: true,
        agent_id: agent.agent_id,
        currency: "USD",
        rounds: await host.services.usage.rounds(agent.agent_id, from, to, limit),
      });
    },
  });
  const pub = oneAgent(async (id) => await host.agents.getPublic(id), requireRead);
  const any = oneAgent(async (id) => await host.agents.get(id), requireControl);
  app.get("/agents/:id/usage", pub.usage);
  app.get("/agents/:id/usage/rounds", pub.rounds);
  app.get("/control/agents/:id/usage", any.usage);
  app.get("/control/agents/:id/usage/rounds", any.rounds);
  app.get("/usage", async (c) => {
    requireRead(c);
    const only = c.req.query("agent");
    const view = c.req.query("view") ?? "groups";
    if (!USAGE_VIEWS.includes(view)) {
      throw new HolonError("invalid_request", `view must be one of ${USAGE_VIEWS.join(", ")}`);
    }
    const agentId = only ? (await host.agents.getPublic(only)).agent_id : undefined;
    const all = (await host.store.agents.list()).map((a) => a.agent_id);
    const ids = agentId ? [agentId] : all;
    const { from, to } = window(c, host.store.clock.now());
    const report = await host.services.usage.report(ids, from, to);
    if (view === "groups") return c.json({ ok: true, ...report });
    // Work items and trees take the agent's descendants in (a child's calls are its parent's).
    const rows = subtreeRows(await host.store.ledger.rows(all, from, to), agentId);
    const total = costTotal(rows); // the descendants' spend included
    if (view === "tree") return c.json({ ok: true, ...report, total, tree: costTree(rows) });
    const objectives = new Map<string, string | null>();
    for (const id of new Set(rows.flatMap((r) => [r.work_item_id, ...r.parent_work_item_ids]))) {
      if (id !== null)
        objectives.set(id, (await host.store.workItems.get(id))?.objective.slice(0, 200) ?? null);
    }
    const objective = (id: string) => objectives.get(id) ?? null;
    return c.json({ ok: true, ...report, total, work_items: costByWorkItem(rows, objective) });
  });
}

const USAGE_VIEWS = ["groups", "work_items", "tree"];

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
  /** `view=work_items`: spend by work item, own and with the children spawned for it. */
  work_items: z
    .array(
      z.object({
        work_item_id: z.string().nullable(),
        objective: z.string().nullable(),
        own: Totals,
        with_children: Totals,
      }),
    )
    .optional(),
  /** `view=tree`: agents as trees, each with its own spend and its subtree's. */
  tree: z.array(z.lazy((): z.ZodType => AgentCostNode)).optional(),
});

const AgentCostNode: z.ZodType = z.object({
  agent_id: z.string(),
  own: Totals,
  total: Totals,
  children: z.array(z.lazy(() => AgentCostNode)),
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
      /** A quarter-hour of calls rolled up by ledger retention: how many it stands for. */
      calls: z.number().int().optional(),
      rolled_up: z.boolean().optional(),
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
    query: [
      ...Window,
      {
        name: "agent",
        schema: z.string(),
        description: "only this agent (and, for the work_items and tree views, its descendants)",
      },
      {
        name: "view",
        schema: z.enum(["groups", "work_items", "tree"]),
        description: "groups (by agent, model and day; the default), work_items, or tree",
      },
    ],
    ok: { status: 200, schema: UsageResponse },
  },
];
