// Operator transport bindings and operator ingress (remote-operator-transport-and-delivery):
// control routes for a chat bridge that authenticated its remote operator itself.
import type { Hono } from "hono";
import { z } from "zod";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { readJson, requireControl, validate, type AppEnv } from "./support.ts";

const Id = z.string().min(1).max(200);

export const BindingBody = z.strictObject({
  transport: Id,
  operator_actor_id: Id,
  delivery_callback_url: z.string().min(1).max(2048),
  /** The bearer token Holon sends to the callback. */
  delivery_token: z.string().min(16).max(4096),
  default_route_id: Id.optional(),
  provider: Id.optional(),
  provider_identity_ref: Id.optional(),
  markdown: z.boolean().optional(),
});

export const OperatorIngressBody = z.strictObject({
  text: z
    .string()
    .min(1, "text must not be empty")
    .max(64 * 1024),
  actor_id: Id,
  binding_id: Id,
  reply_route_id: Id.optional(),
  provider: Id.optional(),
  upstream_provider: Id.optional(),
  provider_message_ref: Id.optional(),
  correlation_id: Id.optional(),
  causation_id: Id.optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

const Binding = z.object({
  binding_id: z.string(),
  transport: z.string(),
  operator_actor_id: z.string(),
  target_agent_id: z.string(),
  default_route_id: z.string().nullable(),
  delivery_callback_url: z.string(),
  delivery_auth: z.object({ kind: z.literal("bearer") }),
  capabilities: z.object({ text: z.boolean(), markdown: z.boolean().optional() }),
  provider: z.string(),
  provider_identity_ref: z.string().nullable(),
  status: z.enum(["active", "revoked"]),
  created_at: z.string(),
  last_seen_at: z.string().optional(),
});
const BindingResponse = z.object({ ok: z.literal(true), binding: Binding });
const BindingsResponse = z.object({ ok: z.literal(true), bindings: z.array(Binding) });
const IngressResponse = z.object({
  ok: z.literal(true),
  agent_id: z.string(),
  message_id: z.string(),
  binding_id: z.string(),
});

export function operatorRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const svc = () => host.services.operatorTransport;
  app.post("/control/agents/:id/operator-bindings", async (c) => {
    requireControl(c);
    const body = validate(BindingBody, await readJson(c));
    const agent = await host.agents.getPublic(c.req.param("id"));
    return c.json({ ok: true, binding: await svc().create(agent.agent_id, body) }, 201);
  });
  app.get("/control/agents/:id/operator-bindings", async (c) => {
    requireControl(c);
    const agent = await host.agents.getPublic(c.req.param("id"));
    return c.json({ ok: true, bindings: svc().list(agent.agent_id) });
  });
  app.post("/control/agents/:id/operator-bindings/:binding_id/revoke", async (c) => {
    requireControl(c);
    const agent = await host.agents.getPublic(c.req.param("id"));
    return c.json({ ok: true, binding: svc().revoke(agent.agent_id, c.req.param("binding_id")) });
  });
  app.post("/control/agents/:id/operator-ingress", async (c) => {
    requireControl(c);
    const { metadata: _m, ...body } = validate(OperatorIngressBody, await readJson(c));
    const agent = await host.agents.getPublic(c.req.param("id"));
    const r = await svc().admit(agent.agent_id, body);
    return c.json({ ok: true, agent_id: agent.agent_id, ...r }, 202);
  });
}

export const OPERATOR_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "post",
    path: "/control/agents/:id/operator-bindings",
    summary: "Register an operator transport binding (briefs go to its callback)",
    access: "control",
    body: { schema: BindingBody },
    ok: { status: 201, schema: BindingResponse },
  },
  {
    method: "get",
    path: "/control/agents/:id/operator-bindings",
    summary: "The agent's operator transport bindings (tokens never shown)",
    access: "control",
    ok: { status: 200, schema: BindingsResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/operator-bindings/:binding_id/revoke",
    summary: "Revoke a binding: no more deliveries or ingress through it",
    access: "control",
    ok: { status: 200, schema: BindingResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/operator-ingress",
    summary: "A prompt a bridge relays from its authenticated remote operator",
    access: "control",
    body: { schema: OperatorIngressBody },
    ok: { status: 202, schema: IngressResponse },
  },
];
