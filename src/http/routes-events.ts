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
  app.get("/agents/:id/events", (c) => {
    requireRead(c);
    const agent = host.agents.getPublic(c.req.param("id"));
    const projection = projectionOf(c);
    const order = c.req.query("order") ?? "desc";
    if (order !== "asc" && order !== "desc") {
      throw new HolonError("invalid_request", "order must be asc or desc");
    }
    const afterSeq = intParam(c, "after_seq", { min: 0 });
    const beforeSeq = intParam(c, "before_seq", { min: 0 });
    const limit = intParam(c, "limit", { min: 1, max: 10_000 }) ?? 128;
    const removedThrough = host.store.events.removedThrough(agent.agent_id);
    const events = host.store.events.query(agent.agent_id, {
      limit,
      order,
      ...(afterSeq !== undefined ? { afterSeq } : {}),
      ...(beforeSeq !== undefined ? { beforeSeq } : {}),
    });
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      newest_seq: host.store.events.newestSeq(agent.agent_id),
      // Retention removed everything up to removed_through_seq (0: nothing removed yet).
      removed_through_seq: removedThrough,
      oldest_available_seq: removedThrough + 1,
      events: events.map((e) => project(e, projection)),
    });
  });

  app.get("/agents/:id/events/stream", (c) => {
    requireRead(c);
    const agent = host.agents.getPublic(c.req.param("id"));
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
    const stream = hub.open(host.store, agent.agent_id, {
      afterSeq,
      projection,
      heartbeatMs: opts.heartbeatMs ?? 15_000,
      signal: c.req.raw.signal,
    });
    return new Response(stream, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      },
    });
  });
}
