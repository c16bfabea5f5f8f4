// Work-item routes: the operator enqueues work (no transcript message, the current item is
// left alone), reads an agent's items, and closes, parks or releases one. Reads follow the
// read auth rule; every change is a control route. All of it goes through the work service.
import type { Context, Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { WORK_LIMITS } from "../domain/work-item.ts";
import { checkLimits, hasLimits, type BudgetLimits } from "../domain/budget.ts";
import type { AppContext } from "./context.ts";
import {
  intParam,
  readJson,
  requireControl,
  requireRead,
  validate,
  type AppEnv,
} from "./support.ts";

export const EnqueueWorkBody = z.strictObject({
  objective: z.string().max(WORK_LIMITS.objective_chars),
  /** The item's budget (tokens, usd, rounds, time_ms); checked whole before the item exists. */
  budget: z.record(z.string(), z.unknown()).optional(),
  /** Who asked, for audit (the MCP server names its client: `mcp:<name>`). */
  actor_id: z.string().max(200).optional(),
  /** The door it came through, for audit, as on operator prompts. */
  surface: z.enum(["http_control_prompt", "cli_prompt", "mcp_server"]).optional(),
});
export const CompleteWorkBody = z.strictObject({
  note: z.string().max(WORK_LIMITS.note_chars).optional(),
});
export const BlockWorkBody = z.strictObject({
  reason: z.string().max(WORK_LIMITS.blocker_chars),
  recheck_after_ms: z
    .number()
    .int()
    .positive()
    .max(30 * 24 * 3600 * 1000)
    .optional(),
});

const FILTERS = [
  "current",
  "open",
  "queued",
  "blocked",
  "waiting_for_operator",
  "completed",
  "all",
] as const;
type Filter = (typeof FILTERS)[number];

export function workRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const work = () => host.services.work;
  const agentOf = async (id: string) => (await host.agents.getPublic(id)).agent_id;

  app.post("/control/agents/:id/work-items", async (c) => {
    requireControl(c);
    const body = validate(EnqueueWorkBody, await readJson(c));
    const agentId = await agentOf(c.req.param("id"));
    let budget: BudgetLimits | undefined;
    if (body.budget !== undefined) {
      budget = checkLimits(body.budget, "work item budget");
      if (!hasLimits(budget)) {
        throw new HolonError("invalid_budget", "a work item budget names at least one limit");
      }
      host.services.budgets.checkPriced(await host.agents.get(agentId), budget);
    }
    const item = await work().enqueue(agentId, body.objective, budget, {
      origin: body.actor_id ? { kind: "operator", actor_id: body.actor_id } : { kind: "operator" },
      // Over TCP a control request carries the token; over the Unix socket it is the local user.
      admission_context: c.get("auth").token_ok ? "control_authenticated" : "local_process",
      ...(body.surface ? { delivery_surface: body.surface } : {}),
    });
    return c.json({ ok: true, agent_id: agentId, work_item: await work().view(item) }, 201);
  });

  // Reads: the public routes see public agents; their /control twins (behind the control
  // token or a console session) see any agent, private children included, as the other
  // operator reads do (routes-public.ts).
  type Resolve = (c: Context<AppEnv>) => Promise<string>;
  const publicAgent: Resolve = async (c) => {
    requireRead(c);
    return await agentOf(c.req.param("id")!);
  };
  const anyAgent: Resolve = async (c) => {
    requireControl(c);
    return (await host.agents.get(c.req.param("id")!)).agent_id;
  };
  const list = (resolve: Resolve) => async (c: Context<AppEnv>) => {
    const agentId = await resolve(c);
    const state = c.req.query("state") ?? "all";
    if (!(FILTERS as readonly string[]).includes(state)) {
      throw new HolonError("invalid_request", `unknown state filter '${state}'`, {
        status: 400,
        hint: `use one of: ${FILTERS.join(", ")}`,
      });
    }
    const limit = intParam(c, "limit", { min: 1, max: 200 }) ?? 50;
    const items = await work().list(agentId, state as Filter, { limit });
    return c.json({ ok: true, agent_id: agentId, state, work_items: items });
  };
  const one = (resolve: Resolve) => async (c: Context<AppEnv>) => {
    const agentId = await resolve(c);
    const item = await work().get(agentId, c.req.param("work_item_id")!);
    return c.json({
      ok: true,
      work_item: item,
      budget: await host.services.budgets.workItemView(item),
    });
  };
  app.get("/agents/:id/work-items", list(publicAgent));
  app.get("/agents/:id/work-items/:work_item_id", one(publicAgent));
  app.get("/control/agents/:id/work-items", list(anyAgent));
  app.get("/control/agents/:id/work-items/:work_item_id", one(anyAgent));

  app.post("/control/agents/:id/work-items/:work_item_id/complete", async (c) => {
    requireControl(c);
    const body = validate(CompleteWorkBody, (await readJson(c, { optional: true })) ?? {});
    const agentId = await agentOf(c.req.param("id"));
    const r = await work().complete(agentId, c.req.param("work_item_id"), {
      by: "operator",
      note: body.note,
    });
    return c.json({ ok: true, work_item: await work().view(r.item) });
  });

  app.post("/control/agents/:id/work-items/:work_item_id/block", async (c) => {
    requireControl(c);
    const body = validate(BlockWorkBody, await readJson(c));
    const agentId = await agentOf(c.req.param("id"));
    const item = await work().operatorBlock(
      agentId,
      c.req.param("work_item_id"),
      body.reason,
      body.recheck_after_ms,
    );
    return c.json({ ok: true, work_item: await work().view(item) });
  });

  app.post("/control/agents/:id/work-items/:work_item_id/unblock", async (c) => {
    requireControl(c);
    await readJson(c, { optional: true });
    const agentId = await agentOf(c.req.param("id"));
    const item = await work().operatorUnblock(agentId, c.req.param("work_item_id"));
    return c.json({ ok: true, work_item: await work().view(item) });
  });
}
