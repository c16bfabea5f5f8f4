// The waiting plane over HTTP: timers (create, list, cancel), the agent's external trigger
// capability (show, rotate, revoke) and the callback URLs that use it. Callback routes take
// no bearer token: the URL is the capability. They take any content type up to 256 KiB and
// answer an unknown or revoked capability with 404 (audited, rate-limited per address).
import type { Context, Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { TrustLevel } from "../domain/message.ts";
import { ExternalTriggerDescriptor, TimerRecord } from "../domain/waiting.ts";
import { hintBodyOf, type RequestedMode } from "../waiting/triggers.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import {
  MAX_BODY_BYTES,
  intParam,
  readJson,
  requireControl,
  requireRead,
  validate,
  type AppEnv,
} from "./support.ts";

/** The reference's body (`duration_ms`, `interval_ms`, `summary`) plus `at` and `cron` + `tz`. */
export const TimerBody = z.strictObject({
  summary: z.string().min(1, "summary must not be empty").max(4_000),
  duration_ms: z.number().int().nonnegative().optional(),
  interval_ms: z.number().int().positive().nullable().optional(),
  at: z.string().max(64).optional(),
  cron: z.string().min(1).max(200).optional(),
  tz: z.string().min(1).max(100).optional(),
  trust: TrustLevel.optional(),
});

export const RevokeTriggerBody = z.strictObject({
  external_trigger_id: z.string().max(200).optional(),
  reason: z.string().max(500).optional(),
});

/** Read a raw body of any type, at most MAX_BODY_BYTES (413 beyond, before it is all read). */
async function readRaw(c: Context<AppEnv>): Promise<Uint8Array> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const body = c.req.raw.body;
  if (!body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function tooLarge(): HolonError {
  return new HolonError("payload_too_large", `deliveries are limited to ${MAX_BODY_BYTES} bytes`, {
    status: 413,
    hint: "send a smaller payload (a pointer to the data rather than the data)",
  });
}

/** A caller's correlation id, when it sends a sane one. */
function correlationOf(c: Context<AppEnv>): string | undefined {
  const v = c.req.header("x-correlation-id") ?? c.req.header("x-request-id");
  return v && /^[\x21-\x7e]{1,200}$/.test(v) ? v : undefined;
}

function peerOf(c: Context<AppEnv>): string | null {
  if (c.get("auth").transport === "unix") return "unix";
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? null;
}

export function waitingRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const svc = () => host.services;

  app.post("/control/agents/:id/timers", async (c) => {
    requireControl(c);
    const body = validate(TimerBody, await readJson(c));
    const agentId = c.req.param("id");
    await host.agents.getPublic(agentId);
    const timer = await svc().timers.create(agentId, {
      summary: body.summary,
      duration_ms: body.duration_ms,
      interval_ms: body.interval_ms,
      at: body.at,
      cron: body.cron,
      tz: body.tz,
    });
    return c.json({ ok: true, timer }, 201);
  });

  // The public read sees public agents; its /control twin any agent, private children
  // included (the operator's view, as for the other reads).
  const timers =
    (resolve: (c: Context<AppEnv>) => Promise<string>) => async (c: Context<AppEnv>) => {
      const agentId = await resolve(c);
      const limit = intParam(c, "limit", { min: 1, max: 1_000 }) ?? 100;
      const { active, finished } = await svc().timers.list(agentId, limit);
      return c.json({
        ok: true,
        agent_id: agentId,
        active_count: await svc().timers.activeCount(agentId),
        timers: [...active, ...finished],
      });
    };
  app.get(
    "/agents/:id/timers",
    timers(async (c) => {
      requireRead(c);
      const agentId = c.req.param("id")!;
      await host.agents.getPublic(agentId);
      return agentId;
    }),
  );
  app.get(
    "/control/agents/:id/timers",
    timers(async (c) => {
      requireControl(c);
      return (await host.agents.get(c.req.param("id")!)).agent_id;
    }),
  );

  const cancel = async (c: Context<AppEnv>) => {
    requireControl(c);
    const agentId = c.req.param("id")!;
    await host.agents.getPublic(agentId);
    const timer = await svc().timers.cancel(agentId, c.req.param("timer_id")!);
    return c.json({ ok: true, timer });
  };
  app.post("/control/agents/:id/timers/:timer_id/cancel", cancel);

  // The agent's active capability, with its secret URL. A read provisions nothing: an agent
  // without one (its capability was revoked) gets one only from rotate.
  app.get("/control/agents/:id/external-trigger", async (c) => {
    requireControl(c);
    const agentId = c.req.param("id");
    await host.agents.getPublic(agentId);
    const d = await svc().triggers.descriptor(agentId, true);
    if (!d) {
      throw new HolonError(
        "no_external_trigger",
        `agent '${agentId}' has no active external trigger`,
        {
          status: 404,
          hint: `make a new one with: holon agent trigger ${agentId} --rotate`,
        },
      );
    }
    return c.json({ ok: true, external_trigger: d });
  });

  app.post("/control/agents/:id/external-trigger/rotate", async (c) => {
    requireControl(c);
    const agentId = c.req.param("id");
    await host.agents.getPublic(agentId);
    const t = await svc().triggers.rotate(agentId);
    return c.json({ ok: true, external_trigger: svc().triggers.describe(t, true) });
  });

  // CancelExternalTrigger, as an admin surface: the URL stops working at once.
  app.post("/control/agents/:id/external-trigger/revoke", async (c) => {
    requireControl(c);
    const body = validate(RevokeTriggerBody, await readJson(c, { optional: true }));
    const agentId = c.req.param("id");
    await host.agents.getPublic(agentId);
    const t = await svc().triggers.revoke(agentId, body.external_trigger_id, body.reason);
    return c.json({ ok: true, external_trigger: svc().triggers.describe(t, false) });
  });

  const callback = (mode: RequestedMode) => async (c: Context<AppEnv>) => {
    const result = await svc().triggers.deliver({
      token: c.req.param("token") ?? "",
      mode,
      readBody: async () => hintBodyOf(await readRaw(c), c.req.header("content-type")),
      correlation_id: correlationOf(c),
      peer: peerOf(c),
    });
    return c.json(
      {
        ok: true,
        external_trigger_id: result.external_trigger_id,
        delivery_mode: "wake_hint",
        disposition: result.disposition,
        ...(mode === "enqueue"
          ? { note: "the enqueue URL is deprecated; the delivery was handled as a wake hint" }
          : {}),
      },
      202,
    );
  };
  app.post("/callbacks/wake/:token", callback("wake"));
  app.post("/callbacks/enqueue/:token", callback("enqueue"));
}

// ---------------------------------------------------------------------------------------
// The routes as /openapi.json describes them (openapi.ts lists these with the others).

const Ok = z.literal(true);
const TimerResponse = z.object({ ok: Ok, timer: TimerRecord });
const TriggerResponse = z.object({ ok: Ok, external_trigger: ExternalTriggerDescriptor });

const TIMERS_DOC: RouteDoc = {
  method: "get",
  path: "/agents/:id/timers",
  summary: "Active timers (soonest first), then recently finished ones",
  access: "read",
  query: [
    {
      name: "limit",
      schema: z.number().int().min(1).max(1_000),
      description: "how many active timers (default 100)",
    },
  ],
  ok: {
    status: 200,
    schema: z.object({
      ok: Ok,
      agent_id: z.string(),
      active_count: z.number().int(),
      timers: z.array(TimerRecord),
    }),
  },
};

export const WAITING_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "post",
    path: "/control/agents/:id/timers",
    summary: "Create a timer: once (duration_ms or at), every interval_ms, or on a cron in tz",
    access: "control",
    body: { schema: TimerBody },
    ok: { status: 201, schema: TimerResponse },
  },
  TIMERS_DOC,
  {
    ...TIMERS_DOC,
    path: "/control/agents/:id/timers",
    summary: `${TIMERS_DOC.summary} (any agent, private ones included)`,
    access: "control",
  },
  {
    method: "post",
    path: "/control/agents/:id/timers/:timer_id/cancel",
    summary: "Cancel an active timer",
    access: "control",
    ok: { status: 200, schema: TimerResponse },
  },
  {
    method: "get",
    path: "/control/agents/:id/external-trigger",
    summary:
      "The agent's active external trigger capability with its secret URL (404 when it has none)",
    access: "control",
    ok: { status: 200, schema: TriggerResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/external-trigger/rotate",
    summary: "Revoke the trigger URL and make a new one",
    access: "control",
    ok: { status: 200, schema: TriggerResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/external-trigger/revoke",
    summary: "CancelExternalTrigger: the URL stops working",
    access: "control",
    body: { schema: RevokeTriggerBody, optional: true },
    ok: { status: 200, schema: TriggerResponse },
  },
  ...(["wake", "enqueue"] as const).map((mode): RouteDoc => ({
    method: "post",
    path: `/callbacks/${mode}/:token`,
    summary:
      mode === "wake"
        ? "External trigger delivery: any body up to 256 KiB becomes a wake hint (the URL is the capability)"
        : "Deprecated enqueue URL: handled exactly like the wake URL",
    access: "none",
    ok: {
      status: 202,
      schema: z.object({
        ok: Ok,
        external_trigger_id: z.string(),
        delivery_mode: z.literal("wake_hint"),
        disposition: z.enum(["woken", "pending"]),
        note: z.string().optional(),
      }),
    },
  })),
];
