// The HTTP control plane. Routes are grouped by surface (public reads and ingress,
// control, webhooks, events); every error is JSON with a stable `kind`.
import { Hono } from "hono";
import { HolonError } from "../domain/errors.ts";
import type { RuntimeHost } from "../host/host.ts";
import type { AppContext, AppOptions } from "./context.ts";
import { errorResponse, requestAuth, storageRefusal, type AppEnv } from "./support.ts";
import { EventHub } from "./sse.ts";
import { publicRoutes } from "./routes-public.ts";
import { controlRoutes, modelRoutes, runRoute } from "./routes-control.ts";
import { agentRoutes } from "./routes-agents.ts";
import { eventRoutes } from "./routes-events.ts";
import { taskRoutes } from "./routes-tasks.ts";
import { waitingRoutes } from "./routes-waiting.ts";
import { workRoutes } from "./routes-work.ts";
import { workspaceRoutes } from "./routes-workspaces.ts";
import { usageRoutes } from "./routes-usage.ts";
import { budgetRoutes } from "./routes-budget.ts";
import { operatorRoutes } from "./routes-operator.ts";
import { memoryRoutes } from "./routes-memory.ts";
import { metricsRoutes } from "./routes-metrics.ts";
import { mcpServerRoutes } from "./routes-mcp-servers.ts";
import { askRoutes } from "./routes-asks.ts";
import { briefRoutes } from "./routes-briefs.ts";
import { mcpRoutes } from "./routes-mcp.ts";
import { openApiRoute } from "./openapi.ts";
import { uiRoutes } from "./routes-ui.ts";
import { ConsoleSessions } from "./console-sessions.ts";
import { join } from "node:path";

export type { AppContext, AppOptions } from "./context.ts";

export function createApp(host: RuntimeHost, opts: AppOptions = {}) {
  const app = new Hono<AppEnv>();
  const hub = new EventHub(host.store);
  const ctx: AppContext = { host, hub, opts };
  const consoleConfig = host.services.config.current().values.console;
  const consoleSessions = new ConsoleSessions({
    now: () => host.store.clock.now().getTime(),
    sessionMs: consoleConfig.session_hours * 3_600_000,
    persist: consoleConfig.persist_sessions,
    persistPath: join(host.paths.runDir, "console-sessions.json"),
  });

  app.use("*", async (c, next) => {
    // server.ts runs the pre-routing guard (guard.ts) and hands its verdict in `c.env`.
    c.set("auth", requestAuth(c.env, c.req.header("authorization"), opts.token));
    await next();
  });

  const tracing = host.services.tracing;
  if (tracing.enabled) {
    // A W3C traceparent rides along to the message the request admits (telemetry/tracing.ts).
    app.use("*", (c, next) =>
      tracing.withRequest(c.req.header("traceparent"), c.req.header("tracestate"), next),
    );
  }

  app.onError((err, c) => {
    const refused = storageRefusal(c, host.store.health, err);
    if (refused) return refused;
    if (err instanceof HolonError) return errorResponse(c, err);
    return errorResponse(
      c,
      new HolonError("internal_error", err instanceof Error ? err.message : String(err), {
        status: 500,
      }),
    );
  });
  app.notFound((c) =>
    errorResponse(
      c,
      new HolonError("not_found", `no route for ${c.req.method} ${c.req.path}`, {
        status: 404,
        hint: "see docs/http-api.md for the routes",
      }),
    ),
  );

  publicRoutes(app, ctx);
  eventRoutes(app, ctx);
  controlRoutes(app, ctx);
  agentRoutes(app, ctx); // the agent plane: home, AgentGet, archive, delete
  runRoute(app, ctx);
  modelRoutes(app, ctx);
  taskRoutes(app, ctx);
  waitingRoutes(app, ctx);
  workRoutes(app, ctx);
  workspaceRoutes(app, ctx);
  usageRoutes(app, ctx);
  budgetRoutes(app, ctx);
  operatorRoutes(app, ctx);
  memoryRoutes(app, ctx);
  metricsRoutes(app, ctx);
  askRoutes(app, ctx); // the operator's inbox: asks across agents, and their decisions
  briefRoutes(app, ctx); // wait for an agent's next brief
  mcpRoutes(app, ctx); // Holon's MCP server over streamable HTTP
  mcpServerRoutes(app, ctx); // MCP servers agents use: state, tool names, test
  uiRoutes(app, ctx, consoleSessions); // the web console: pages, login, its overview read
  openApiRoute(app);
  return { app, hub, consoleSessions };
}
