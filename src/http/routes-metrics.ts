// `GET /metrics`: the host's metrics in the Prometheus text format (telemetry/metrics.ts),
// behind the same read rule as every other read. Off unless `telemetry.metrics.enabled`.
import type { Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { requireRead, type AppEnv } from "./support.ts";

export function metricsRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  app.get("/metrics", async (c) => {
    requireRead(c);
    const metrics = host.services.metrics;
    if (!metrics) {
      throw new HolonError("metrics_disabled", "metrics are off on this host", {
        status: 404,
        hint: "holon config set telemetry.metrics.enabled true, then restart the host",
      });
    }
    return c.body(await metrics.registry.render(), 200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
    });
  });
}

export const METRICS_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/metrics",
    summary: "The host's metrics in the Prometheus text format (404 metrics_disabled when off)",
    access: "read",
    ok: {
      status: 200,
      schema: z.string(),
      contentType: "text/plain",
      description: "Prometheus text exposition format 0.0.4; names in docs/observability.md",
    },
  },
];
