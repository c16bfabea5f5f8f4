// Authenticated control routes: operator prompts, lifecycle, agent creation, runtime.
import type { Context, Hono } from "hono";
import { z } from "zod";
import { isRunAgent } from "../domain/agent.ts";
import { BudgetLimits } from "../domain/budget.ts";
import { HolonError } from "../domain/errors.ts";
import { Priority, TrustLevel } from "../domain/message.ts";
import { agentSummary, runtimeStatus } from "../host/inspect.ts";
import { checkWorkspaceRoot } from "../host/run-once.ts";
import type { AppContext } from "./context.ts";
import { readJson, requireControl, validate, type AppEnv } from "./support.ts";

export const PromptBody = z.strictObject({
  text: z.string().min(1, "text must not be empty"),
  priority: Priority.optional(),
  actor_id: z.string().max(200).optional(),
  trust: TrustLevel.optional(),
  correlation_id: z.string().max(200).optional(),
  /**
   * The CLI marks its prompts so audit shows they came from `holon prompt`; the MCP server
   * (src/mcpserver/) marks its own as `mcp_server`.
   */
  surface: z.enum(["http_control_prompt", "cli_prompt", "mcp_server"]).optional(),
});

export const ControlBody = z.strictObject({
  action: z.enum(["pause", "resume", "start", "stop", "wake"]),
  trust: TrustLevel.optional(),
});

export const WakeBody = z.strictObject({
  reason: z.string().max(500).optional(),
  source: z.string().max(200).optional(),
});

export const CreateBody = z.strictObject({
  template: z.string().max(2048).nullable().optional(),
  trust: TrustLevel.optional(),
  workspace_root: z.string().optional(),
});

export const AbortBody = z.strictObject({
  mode: z.enum(["stop_after_abort", "pause_after_abort"]).optional(),
  run_id: z.string().optional(),
});

export function controlRoutes(app: Hono<AppEnv>, { host, opts }: AppContext): void {
  // The operator's input goes to public agents only. A private one (a child, a finished
  // run's agent) is still refused as unknown, but the operator, already authenticated, is
  // told what it is and what to do instead of being sent to create an agent that exists.
  const inputTarget = async (agentId: string) => {
    const agent = await host.store.agents.get(agentId);
    if (agent && agent.visibility !== "public") {
      throw new HolonError(
        "unknown_agent",
        `agent '${agentId}' is private (${isRunAgent(agent) ? "the temporary agent of a holon run" : `a child of ${agent.supervisor_agent_id ?? agent.lineage_parent_agent_id ?? "another agent"}`}) and takes no operator input`,
        {
          status: 404,
          hint: isRunAgent(agent)
            ? `continue it with: holon run --resume ${agentId} "<prompt>"; inspect it with: holon status ${agentId}`
            : `it takes its input from its parent; inspect it with: holon status ${agentId}`,
        },
      );
    }
    return await host.agents.getPublic(agentId);
  };

  // Over TCP a control request carries the token; over the Unix socket it is the local user.
  const admissionOf = (c: Context<AppEnv>) =>
    c.get("auth").token_ok ? ("control_authenticated" as const) : ("local_process" as const);

  app.post("/control/agents/:id/prompt", async (c) => {
    requireControl(c);
    const body = validate(PromptBody, await readJson(c));
    const agentId = c.req.param("id");
    await inputTarget(agentId);
    const origin = body.actor_id
      ? { kind: "operator" as const, actor_id: body.actor_id }
      : { kind: "operator" as const };
    // A run that is being aborted has no safe point left to take an interjection: the
    // prompt is queued as the next message instead of being dropped with the run.
    const demoted = body.priority === "interject" && host.lifecycle.isAborting(agentId);
    const envelope = await host.ingress.admitBatched({
      agent_id: agentId,
      kind: "operator_prompt",
      origin,
      body: { type: "text", text: body.text },
      priority: demoted ? "next" : body.priority,
      trust: body.trust,
      // The web console's credential is its session; the surface follows from it, never
      // from what the caller claims.
      surface: c.get("auth").console_session
        ? "web_console"
        : (body.surface ?? "http_control_prompt"),
      admission: admissionOf(c),
      correlation_id: body.correlation_id,
    });
    return c.json(
      {
        ok: true,
        agent_id: agentId,
        message_id: envelope.id,
        priority: envelope.priority,
        ...(demoted
          ? {
              delivery: "queued",
              note: "the current run is being aborted, so this interjection was queued as the next message instead",
            }
          : {}),
      },
      202,
    );
  });

  app.post("/control/agents/:id/control", async (c) => {
    requireControl(c);
    const body = validate(ControlBody, await readJson(c));
    const agentId = c.req.param("id");
    await inputTarget(agentId);
    return c.json({ ok: true, ...(await host.lifecycle.control(agentId, body.action)) });
  });

  app.post("/control/agents/:id/wake", async (c) => {
    requireControl(c);
    const body = validate(WakeBody, await readJson(c, { optional: true }));
    const agentId = c.req.param("id");
    await inputTarget(agentId);
    const result = await host.lifecycle.control(agentId, "wake", body.source ?? "operator", {
      reason: body.reason,
      admission: admissionOf(c),
    });
    return c.json({
      ok: true,
      agent_id: agentId,
      disposition: result.disposition,
      status: result.status,
      message_id: result.message_id ?? null,
    });
  });

  app.post("/control/agents/:id/create", async (c) => {
    requireControl(c);
    const body = validate(CreateBody, await readJson(c, { optional: true }));
    const agent = await host.agents.create(c.req.param("id"), {
      ...(body.workspace_root ? { workspace_root: checkWorkspaceRoot(body.workspace_root) } : {}),
      ...(body.template ? { template: body.template } : {}),
    });
    return c.json({ ok: true, agent: await agentSummary(host, agent) }, 201);
  });

  app.post("/control/agents/:id/current-run/abort", async (c) => {
    requireControl(c);
    const body = validate(AbortBody, await readJson(c, { optional: true }));
    const agentId = c.req.param("id");
    await inputTarget(agentId);
    const result = await host.lifecycle.abortCurrentRun(agentId, body.run_id);
    return c.json({ ok: true, ...result, mode: "stop_after_abort" }, 202);
  });

  app.get("/control/runtime/status", async (c) => {
    requireControl(c);
    return c.json({
      ok: true,
      ...(await runtimeStatus(host)),
      http_addr: opts.listen?.http_addr ?? null,
      socket_path: opts.listen?.socket_path ?? null,
      control_token_configured: Boolean(opts.token),
    });
  });

  app.post("/control/runtime/shutdown", async (c) => {
    requireControl(c);
    await host.services.audit.shutdownRequested("control");
    setImmediate(() => opts.onShutdown?.());
    return c.json({ ok: true, shutting_down: true }, 202);
  });
}

export const RunBody = z.strictObject({
  text: z.string().min(1, "text must not be empty"),
  agent_id: z.string().optional(),
  create_agent: z.boolean().optional(),
  workspace_root: z.string().optional(),
  cwd: z.string().optional(),
  max_turns: z.number().int().positive().optional(),
  /** The run's budget (`--max-tokens`, `--max-budget-usd`): exhausted, the run fails (exit 3). */
  budget: BudgetLimits.optional(),
  trust: TrustLevel.optional(),
  keep: z.boolean().optional(),
  resume: z.string().max(128).optional(),
  /** Also stream every event of the run's agent as `{"type":"event",…}` lines. */
  stream_events: z.boolean().optional(),
});

/**
 * `POST /control/run`: the running-host path of `holon run`. Answers with NDJSON: progress
 * lines `{"type":"progress",…}` while the turn runs, then one `{"type":"result",…}` line
 * carrying the RunOnceResponse (or `{"type":"error","error":…}`).
 */
export function runRoute(app: Hono<AppEnv>, { host }: AppContext): void {
  app.post("/control/run", async (c) => {
    requireControl(c);
    const body = validate(RunBody, await readJson(c));
    const { runOnce } = await import("../host/run-once.ts");
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const send = (v: unknown) => {
          try {
            controller.enqueue(encoder.encode(JSON.stringify(v) + "\n"));
          } catch {
            // client went away; runOnce sees the request's signal and aborts the run
          }
        };
        // A client that goes away (Ctrl-C on `holon run`) aborts the run and its commands.
        const { stream_events, ...opts } = body;
        runOnce(
          host,
          opts,
          (p) => send({ type: "progress", ...p }),
          c.req.raw.signal,
          stream_events ? (event) => send({ type: "event", event }) : undefined,
        )
          .then((result) => send({ type: "result", result }))
          .catch((err: unknown) =>
            send({
              type: "error",
              error:
                err instanceof HolonError
                  ? err.toBody()
                  : {
                      kind: "internal_error",
                      message: err instanceof Error ? err.message : String(err),
                    },
            }),
          )
          .finally(() => {
            try {
              controller.close();
            } catch {
              // already closed
            }
          });
      },
    });
    return new Response(stream, { headers: { "content-type": "application/x-ndjson" } });
  });
}

export const ModelBody = z.strictObject({ model: z.string().min(1), trust: TrustLevel.optional() });
export const ClearBody = z.strictObject({ trust: TrustLevel.optional() });
/** An agent-level setting (`sandbox.mode`, …); `value: null` returns it to the host's value. */
export const SettingBody = z.strictObject({
  key: z.string().min(1).max(200),
  value: z.unknown(),
  trust: TrustLevel.optional(),
});

export function modelRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  app.post("/control/agents/:id/model", async (c) => {
    requireControl(c);
    const body = validate(ModelBody, await readJson(c));
    const agent = await host.agents.setModelOverride(
      (await host.agents.getPublic(c.req.param("id"))).agent_id,
      body.model,
    );
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      model: host.services.config.modelState(agent.model_override ?? null),
    });
  });
  // The agent's own settings (sandbox.*, permissions.*, hooks, mcp.servers.<name>): only the operator, each change
  // recorded as an event; each key family validates its own values.
  app.post("/control/agents/:id/settings", async (c) => {
    requireControl(c);
    const body = validate(SettingBody, await readJson(c));
    const id = (await host.agents.getPublic(c.req.param("id"))).agent_id;
    const agent = body.key.startsWith("sandbox.")
      ? await host.agents.setSetting(id, body.key, body.value ?? undefined)
      : body.key.startsWith("mcp.")
        ? await host.services.mcp.setAgentSetting(id, body.key, body.value ?? null)
        : await host.services.leash.setAgentSetting(id, body.key, body.value ?? null);
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      key: body.key,
      settings: { sandbox: agent.sandbox ?? {} },
      sandbox: host.services.sandbox.summary(agent),
      permissions: agent.permissions ?? null,
      hooks: agent.hooks ?? null,
      leash: await host.services.leash.status(agent),
      mcp: (await host.services.mcp.status(agent)).map((v) => ({
        name: v.name,
        source: v.source,
        definition: v.definition,
      })),
    });
  });
  app.post("/control/agents/:id/model/clear", async (c) => {
    requireControl(c);
    validate(ClearBody, await readJson(c, { optional: true }));
    const agent = await host.agents.setModelOverride(
      (await host.agents.getPublic(c.req.param("id"))).agent_id,
      undefined,
    );
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      model: host.services.config.modelState(agent.model_override ?? null),
    });
  });
}
