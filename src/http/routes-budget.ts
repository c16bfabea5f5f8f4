// Budget routes: read an agent's spent / reserved / limit per scope; set and raise its
// budgets; the kill switch (freeze every agent before its next provider call) and its
// undo. Every change is a control route, recorded as events by the budget service; a
// budget is never read from anything an agent can write.
import type { Hono } from "hono";
import { z } from "zod";
import { BudgetPeriod } from "../domain/budget.ts";
import { HolonError } from "../domain/errors.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { AgentBudgetView } from "./schemas.ts";
import { readJson, requireControl, requireRead, validate, type AppEnv } from "./support.ts";

/** Limits as sent: checked whole by the budget service (clear `invalid_budget` errors). */
const LooseLimits = z.record(z.string(), z.unknown());

export const SetBudgetBody = z.strictObject({
  period: BudgetPeriod.optional(),
  limits: LooseLimits,
  time_zone: z.string().max(64).optional(),
});
export const RaiseBudgetBody = z.strictObject({
  /** `total`, `day`, `week`, `month`, `reservation`, `work_item:<id>`, or a full scope name. */
  scope: z.string().max(200).optional(),
  added: LooseLimits,
});
export const FreezeBody = z.strictObject({
  all: z.boolean().optional(),
  agent_ids: z.array(z.string().max(64)).max(1000).optional(),
});

const BudgetResponse = z.object({ ok: z.literal(true), budget: AgentBudgetView });
const FreezeResponse = z.object({ ok: z.literal(true), agent_ids: z.array(z.string()) });

export function budgetRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const budgets = () => host.services.budgets;
  // Any agent the operator names, children included (a child's reservation is raised here).
  const agentOf = async (id: string) => (await host.agents.get(id)).agent_id;
  const targets = async (body: z.infer<typeof FreezeBody>): Promise<string[]> => {
    if (body.all && body.agent_ids?.length) {
      throw new HolonError("invalid_request", "give all or agent_ids, not both");
    }
    if (body.all) return (await host.store.agents.list()).map((a) => a.agent_id);
    if (!body.agent_ids?.length) {
      throw new HolonError("invalid_request", "name the agents (agent_ids) or pass all: true");
    }
    return await Promise.all(body.agent_ids.map(agentOf));
  };

  app.get("/agents/:id/budget", async (c) => {
    requireRead(c);
    return c.json({ ok: true, budget: await budgets().view(await agentOf(c.req.param("id"))) });
  });

  app.post("/control/agents/:id/budget", async (c) => {
    requireControl(c);
    const body = validate(SetBudgetBody, await readJson(c));
    const view = await budgets().set(await agentOf(c.req.param("id")), {
      period: body.period ?? "total",
      limits: body.limits,
      time_zone: body.time_zone,
    });
    return c.json({ ok: true, budget: view });
  });

  app.post("/control/agents/:id/budget/raise", async (c) => {
    requireControl(c);
    const body = validate(RaiseBudgetBody, await readJson(c));
    const view = await budgets().raise(await agentOf(c.req.param("id")), body);
    return c.json({ ok: true, budget: view });
  });

  app.post("/control/budget/freeze", async (c) => {
    requireControl(c);
    const body = validate(FreezeBody, await readJson(c));
    return c.json({ ok: true, agent_ids: await budgets().freeze(await targets(body)) });
  });

  app.post("/control/budget/unfreeze", async (c) => {
    requireControl(c);
    const body = validate(FreezeBody, await readJson(c));
    return c.json({ ok: true, agent_ids: await budgets().unfreeze(await targets(body)) });
  });
}

export const BUDGET_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/agents/:id/budget",
    summary: "An agent's budgets: spent, reserved and limit per scope, and any hold",
    access: "read",
    ok: { status: 200, schema: BudgetResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/budget",
    summary: "Set an agent's limits for one period (total, day, week, month)",
    access: "control",
    body: { schema: SetBudgetBody },
    ok: { status: 200, schema: BudgetResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/budget/raise",
    summary: "Add to the limits of the scope holding the agent (or a named one) and lift the hold",
    access: "control",
    body: { schema: RaiseBudgetBody },
    ok: { status: 200, schema: BudgetResponse },
  },
  {
    method: "post",
    path: "/control/budget/freeze",
    summary: "Kill switch: the agents stop before their next provider call",
    access: "control",
    body: { schema: FreezeBody },
    ok: { status: 200, schema: FreezeResponse },
  },
  {
    method: "post",
    path: "/control/budget/unfreeze",
    summary: "Lift a freeze",
    access: "control",
    body: { schema: FreezeBody },
    ok: { status: 200, schema: FreezeResponse },
  },
];
