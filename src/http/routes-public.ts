// Discovery, agent inspection, public enqueue and the generic webhook.
import type { Context, Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { MessageBody, MessageKind, Priority } from "../domain/message.ts";
import { agentState, agentSummary } from "../host/inspect.ts";
import { taskSnapshot } from "../tasks/service.ts";
import type { AppContext } from "./context.ts";
import {
  handshakeAuth,
  intParam,
  readJson,
  requireControl,
  requireIngress,
  requireRead,
  validate,
  type AppEnv,
} from "./support.ts";

export const PublicOrigin = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("channel"),
    channel_id: z.string().min(1).max(200),
    sender_id: z.string().max(200).optional(),
  }),
  z.strictObject({
    kind: z.literal("webhook"),
    source: z.string().min(1).max(200),
    event_type: z.string().max(200).optional(),
  }),
]);

/** Closed schema: anything else is an `unknown_field` error. */
export const EnqueueBody = z.strictObject({
  kind: MessageKind.optional(),
  priority: Priority.optional(),
  text: z.string().optional(),
  json: z.unknown().optional(),
  body: MessageBody.optional(),
  origin: z.unknown().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  correlation_id: z.string().max(200).optional(),
  causation_id: z.string().max(200).optional(),
  // Accepted by the parser only so they can be refused with a precise error.
  trust: z.unknown().optional(),
  authority_class: z.unknown().optional(),
  work_item_id: z.unknown().optional(),
  task_id: z.unknown().optional(),
});

export function publicRoutes(app: Hono<AppEnv>, { host, opts }: AppContext): void {
  const resolveAgent = async (c: Context<AppEnv>) => {
    requireRead(c);
    return await host.agents.getPublic(c.req.param("id") ?? host.defaultAgentId);
  };

  app.get("/", (c) => {
    requireRead(c);
    return c.json({ ok: true, default_agent: host.defaultAgentId });
  });

  app.get("/handshake", (c) => {
    const auth = c.get("auth");
    return c.json({
      ok: true,
      protocol: { name: "holon-control", version: 1 },
      auth: handshakeAuth(auth),
      capabilities: ["agents.list", "agents.state", "agents.events", "agents.control"],
      runtime: {
        default_agent: host.defaultAgentId,
        home_dir: host.home,
        listen: opts.listen?.http_addr ?? null,
        socket_path: opts.listen?.socket_path ?? null,
        advertise_url: opts.advertiseUrl ?? null,
        pid: process.pid,
      },
    });
  });

  app.get("/models", (c) => {
    requireRead(c);
    const catalog = host.services.config.models();
    return c.json({ ok: true, ...catalog });
  });

  app.get("/agents/list", async (c) => {
    requireRead(c);
    const all = c.req.query("all") === "true";
    if (all) requireControl(c); // private children are an operator's view
    return c.json({ ok: true, agents: await host.agents.list({ all }) });
  });

  // The operator's view of any agent `agent list --all` shows (private children, finished
  // run agents): the same reads under /control, behind the control token. The public
  // routes keep private agents hidden, as the spec's visibility rules say.
  const resolveAny = async (c: Context<AppEnv>) => {
    requireControl(c);
    return await host.agents.get(c.req.param("id") ?? host.defaultAgentId);
  };
  type Resolve = (c: Context<AppEnv>) => ReturnType<typeof resolveAgent>;

  const status = (resolve: Resolve) => async (c: Context<AppEnv>) =>
    c.json(await agentSummary(host, await resolve(c)));
  const state = (resolve: Resolve) => async (c: Context<AppEnv>) =>
    c.json(await agentState(host, await resolve(c)));
  const briefs = (resolve: Resolve) => async (c: Context<AppEnv>) => {
    const agent = await resolve(c);
    const limit = intParam(c, "limit", { min: 1, max: 1000 }) ?? 50;
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      briefs: await host.store.briefs.recent(agent.agent_id, limit),
    });
  };
  const transcript = (resolve: Resolve) => async (c: Context<AppEnv>) => {
    const agent = await resolve(c);
    const limit = intParam(c, "limit", { min: 1, max: 1000 }) ?? 100;
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      entries: await host.store.transcript.recent(agent.agent_id, limit),
    });
  };
  const tasks = (resolve: Resolve) => async (c: Context<AppEnv>) => {
    const agent = await resolve(c);
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      // Snapshots, not raw records: no pid or process directory leaves the host.
      tasks: (await host.store.tasks.forAgent(agent.agent_id)).map(taskSnapshot),
    });
  };

  for (const [path, handler] of [
    ["status", status],
    ["state", state],
    ["briefs", briefs],
    ["transcript", transcript],
    ["tasks", tasks],
  ] as const) {
    app.get(`/agents/:id/${path}`, handler(resolveAgent));
    app.get(`/${path}`, handler(resolveAgent));
    app.get(`/control/agents/:id/${path}`, handler(resolveAny));
  }

  const enqueue = async (c: Context<AppEnv>) => {
    // `/enqueue` (the default agent) is not public ingress: the guard asks for the token.
    if (c.req.param("id") === undefined) requireRead(c);
    else requireIngress(c);
    const agentId = c.req.param("id") ?? host.defaultAgentId;
    const raw = await readJson(c);
    const body = validate(EnqueueBody, raw);
    await host.agents.getPublic(agentId);
    if (body.trust !== undefined || body.authority_class !== undefined) {
      throw new HolonError(
        "forbidden_trust_override",
        "trust and authority are derived by the runtime; public callers cannot set them",
        { status: 403 },
      );
    }
    if (body.work_item_id !== undefined || body.task_id !== undefined) {
      throw new HolonError(
        "forbidden_binding",
        "public ingress cannot bind messages to work items or tasks",
        { status: 403 },
      );
    }
    const kind = body.kind ?? "channel_event";
    if (kind !== "channel_event" && kind !== "webhook_event") {
      throw new HolonError(
        "forbidden_kind",
        `public enqueue accepts channel_event or webhook_event, not ${kind}`,
        {
          status: 403,
          hint:
            kind === "operator_prompt"
              ? "operator prompts go through POST /control/agents/:id/prompt"
              : "runtime-owned kinds cannot be enqueued from outside",
        },
      );
    }
    if (body.priority === "interject") {
      throw new HolonError(
        "forbidden_priority",
        "interject priority is reserved for the operator control plane",
        {
          status: 403,
          hint: "use next, normal or background",
        },
      );
    }
    const given = [
      body.text !== undefined,
      body.json !== undefined,
      body.body !== undefined,
    ].filter(Boolean).length;
    if (given !== 1) {
      throw new HolonError("invalid_request", "give exactly one of text, json or body");
    }
    const messageBody: MessageBody =
      body.body ??
      (body.text !== undefined
        ? { type: "text", text: body.text }
        : { type: "json", value: body.json });
    const origin =
      body.origin === undefined
        ? kind === "webhook_event"
          ? { kind: "webhook" as const, source: "http" }
          : { kind: "channel" as const, channel_id: "http" }
        : validate(PublicOrigin, body.origin);
    const envelope = await host.ingress.admitBatched({
      agent_id: agentId,
      kind,
      origin,
      body: messageBody,
      priority: body.priority,
      surface: "http_public_enqueue",
      admission: c.get("auth").token_ok ? "control_authenticated" : "public_unauthenticated",
      metadata: body.metadata,
      correlation_id: body.correlation_id,
      causation_id: body.causation_id,
    });
    return c.json({ ok: true, agent_id: agentId, message_id: envelope.id }, 202);
  };
  app.post("/agents/:id/enqueue", enqueue);
  app.post("/enqueue", enqueue);

  app.post("/webhooks/generic/:agent_id", async (c) => {
    requireIngress(c);
    const agentId = c.req.param("agent_id");
    const payload = await readJson(c);
    await host.agents.getPublic(agentId);
    const eventType =
      c.req.header("x-github-event") ?? c.req.header("x-event-type") ?? c.req.query("event_type");
    const source = c.req.query("source") ?? (c.req.header("x-github-event") ? "github" : "generic");
    const refs: Record<string, string> = {};
    const delivery = c.req.header("x-github-delivery") ?? c.req.header("x-request-id");
    if (delivery) refs.delivery_id = delivery.slice(0, 200);
    const envelope = await host.ingress.admitBatched({
      agent_id: agentId,
      kind: "webhook_event",
      origin: eventType
        ? { kind: "webhook", source, event_type: eventType.slice(0, 200) }
        : { kind: "webhook", source },
      body: { type: "json", value: payload },
      surface: "http_webhook",
      admission: c.get("auth").token_ok ? "control_authenticated" : "public_unauthenticated",
      source_refs: refs,
    });
    return c.json({ ok: true, agent_id: agentId, message_id: envelope.id }, 202);
  });
}
