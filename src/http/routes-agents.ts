// The agent plane over HTTP (issue 15): an agent's home path, the AgentGetResult view,
// archive and delete. Every route here is a control route: it may name private children,
// which public routes never do.
import type { Hono } from "hono";
import { z } from "zod";
import {
  AgentId,
  AgentKind,
  AgentOwnership,
  AgentStatus,
  AgentVisibility,
  ProfilePreset,
} from "../domain/agent.ts";
import { HolonError } from "../domain/errors.ts";
import { TaskKind, TaskStatus } from "../domain/task.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { ChildrenSummary } from "./schemas.ts";
import { readJson, requireControl, validate, type AppEnv } from "./support.ts";

export const DeleteBody = z.strictObject({ force: z.boolean().optional() });

const Ok = z.literal(true);

/** tasks/children.ts AgentPlane.get: the AgentGetResult envelope. */
export const AgentGetResult = z.object({
  agent: z.object({
    identity: z.object({
      agent_id: z.string(),
      kind: AgentKind,
      visibility: AgentVisibility,
      ownership: AgentOwnership,
      profile_preset: ProfilePreset,
      lineage_parent_agent_id: z.string().nullable(),
      supervisor_agent_id: z.string().nullable(),
      group_id: z.string(),
      agent_home: z.string(),
      is_default: z.boolean(),
      archived: z.boolean(),
    }),
    status: AgentStatus,
    closure: z
      .object({
        outcome: z.string(),
        waiting_reason: z.string().nullable(),
        decided_at: z.string(),
      })
      .nullable(),
    current_work_item: z
      .object({ work_item_id: z.string(), objective: z.string(), state: z.string() })
      .nullable(),
    active_tasks: z.array(
      z.object({
        task_id: z.string(),
        kind: TaskKind,
        status: TaskStatus,
        summary: z.string().nullable(),
        child_agent_id: z.string().nullable(),
      }),
    ),
    children: ChildrenSummary,
    created_at: z.string(),
    updated_at: z.string(),
  }),
});

const DeleteResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  deleted: z.literal(true),
  forced: z.boolean(),
  stopped_task_ids: z.array(z.string()),
  cancelled_timer_ids: z.array(z.string()),
  revoked_trigger_ids: z.array(z.string()),
  retained_worktrees: z.array(z.string()),
  deleted_children: z.array(z.string()),
});

export function agentRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const idOf = (raw: string | undefined): string => {
    const r = AgentId.safeParse(raw);
    if (!r.success) throw new HolonError("invalid_agent_id", "bad agent id", { status: 400 });
    return r.data;
  };

  app.get("/control/agents/:id/home", async (c) => {
    requireControl(c);
    const agent = await host.agents.get(idOf(c.req.param("id")));
    return c.json({ ok: true, agent_id: agent.agent_id, agent_home: agent.agent_home });
  });

  app.get("/control/agents/:id/agent", async (c) => {
    requireControl(c);
    return c.json({ ok: true, ...(await host.services.agentPlane.get(idOf(c.req.param("id")))) });
  });

  app.post("/control/agents/:id/archive", async (c) => {
    requireControl(c);
    await readJson(c, { optional: true });
    const r = await host.services.agentPlane.archive(idOf(c.req.param("id")));
    return c.json({ ok: true, ...r });
  });

  app.post("/control/agents/:id/delete", async (c) => {
    requireControl(c);
    const body = validate(DeleteBody, (await readJson(c, { optional: true })) ?? {});
    const r = await host.services.agentPlane.remove(idOf(c.req.param("id")), {
      force: body.force ?? false,
    });
    return c.json({ ok: true, ...r });
  });
}

export const AGENT_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/control/agents/:id/home",
    summary: "The agent's home directory (any agent, private children included)",
    access: "control",
    ok: {
      status: 200,
      schema: z.object({ ok: Ok, agent_id: z.string(), agent_home: z.string() }),
    },
  },
  {
    method: "get",
    path: "/control/agents/:id/agent",
    summary: "AgentGetResult: identity, status, closure, work focus, tasks, children",
    access: "control",
    ok: { status: 200, schema: AgentGetResult.extend({ ok: Ok }) },
  },
  {
    method: "post",
    path: "/control/agents/:id/archive",
    summary: "Archive: stop the agent and its children, keep its data, hide it from lists",
    access: "control",
    body: { schema: z.strictObject({}), optional: true },
    ok: {
      status: 200,
      schema: z.object({
        ok: Ok,
        agent_id: z.string(),
        archived: z.literal(true),
        stopped_task_ids: z.array(z.string()),
      }),
    },
  },
  {
    method: "post",
    path: "/control/agents/:id/delete",
    summary:
      "Delete: refused while tasks or children run unless force; leaves a tombstone and the audit events",
    access: "control",
    body: { schema: DeleteBody, optional: true },
    ok: { status: 200, schema: DeleteResponse },
  },
];
