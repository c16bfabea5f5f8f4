// Event log paging and the resumable SSE stream.
import type { Context, Hono } from "hono";
import { HolonError } from "../domain/errors.ts";
import type { EventProjectionName } from "../domain/events.ts";
import type { AppContext } from "./context.ts";
import { project } from "./sse.ts";
import { intParam, requireControl, requireRead, type AppEnv } from "./support.ts";

function projectionOf(c: Context<AppEnv>): EventProjectionName {
  const p = c.req.query("projection") ?? "operator";
  if (p !== "operator" && p !== "local_debug") {
    throw new HolonError("invalid_request", "projection must be operator or local_debug");
  }
  if (p === "local_debug") requireControl(c);
  return p;
}

export function eventRoutes(app: Hono<AppEnv>, { host, hub, opts }: AppContext): void {
  // Public reads name public agents only; the /control twins name any agent (private
  // children, finished run agents) for the operator, behind the control token.
  const publicAgent = async (c: Context<AppEnv>) => {
    requireRead(c);
    return await host.agents.getPublic(c.req.param("id")!);
  };
  const anyAgent = async (c: Context<AppEnv>) => {
    requireControl(c);
    return await host.agents.get(c.req.param("id")!);
  };

  const page = (resolve: typeof publicAgent) => async (c: Context<AppEnv>) => {
    const agent = await resolve(c);
    const projection = projectionOf(c);
    const order = c.req.query("order") ?? "desc";
    if (order !== "asc" && order !== "desc") {
      throw new HolonError("invalid_request", "order must be asc or desc");
    }
    const afterSeq = intParam(c, "after_seq", { min: 0 });
    const beforeSeq = intParam(c, "before_seq", { min: 0 });
    const limit = intParam(c, "limit", { min: 1, max: 10_000 }) ?? 128;
    const removedThrough = await host.store.events.removedThrough(agent.agent_id);
    const events = await host.store.events.query(agent.agent_id, {
      limit,
      order,
      ...(afterSeq !== undefined ? { afterSeq } : {}),
      ...(beforeSeq !== undefined ? { beforeSeq } : {}),
    });
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      newest_seq: await host.store.events.newestSeq(agent.agent_id),
      // Retention removed everything up to removed_through_seq (0: nothing removed yet).
      removed_through_seq: removedThrough,
      oldest_available_seq: removedThrough + 1,
      events: events.map((e) => project(e, projection)),
    });
  };

  const stream = (resolve: typeof publicAgent) => async (c: Context<AppEnv>) => {
    const agent = await resolve(c);
    const projection = projectionOf(c);
    const fromQuery = intParam(c, "after_seq", { min: 0 });
    const lastEventId = c.req.header("last-event-id");
    let afterSeq = fromQuery;
    if (lastEventId !== undefined && lastEventId.trim() !== "") {
      if (!/^\d+$/.test(lastEventId.trim())) {
        throw new HolonError("invalid_request", "Last-Event-ID must be an event_seq");
      }
      afterSeq = Number.parseInt(lastEventId.trim(), 10);
    }
    const body = await hub.open(host.store, agent.agent_id, {
      afterSeq,
      projection,
      heartbeatMs: opts.heartbeatMs ?? 15_000,
      signal: c.req.raw.signal,
    });
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      },
    });
  };

  app.get("/agents/:id/events", page(publicAgent));
  app.get("/agents/:id/events/stream", stream(publicAgent));
  app.get("/control/agents/:id/events", page(anyAgent));
  app.get("/control/agents/:id/events/stream", stream(anyAgent));
}
