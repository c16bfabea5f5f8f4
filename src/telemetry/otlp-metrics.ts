// The SDK side of the OTLP metrics export, loaded by metrics.ts (MetricExport) with `await import()`
// only when the export is on. It turns a snapshot of the metrics registry (metrics.ts, the
// one definition of every family) into the SDK's `ResourceMetrics` and sends it with the
// official protobuf serializer and OTLP/HTTP transport, the same pieces the official metrics
// exporter is made of (and the trace exporter already loads). There is no MeterProvider: the
// registry already aggregates, so nothing is recorded twice.
//
//   counter    -> Sum, monotonic, cumulative since the host started
//   gauge      -> Gauge
//   histogram  -> Histogram, cumulative, the registry's own bucket bounds
import { ValueType, type Attributes, type HrTime } from "@opentelemetry/api";
import { OTLPExporterBase } from "@opentelemetry/otlp-exporter-base";
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from "@opentelemetry/otlp-exporter-base/node-http";
import {
  MetricsExporterMetricsHelper,
  ProtobufMetricsSerializer,
} from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes, type Resource } from "@opentelemetry/resources";
import {
  AggregationTemporality,
  DataPointType,
  type DataPoint,
  type MetricData,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import { readFileSync } from "node:fs";
import type {
  FamilyView,
  MetricExportSettings,
  MetricSender,
  RegistryView,
  Series,
} from "./metric-types.ts";

function hrTime(ms: number): HrTime {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
}

/** A registry histogram's cumulative bucket counts as OTLP's per-bucket counts (n + 1). */
function perBucket(cumulative: readonly number[] | undefined, n: number, total: number): number[] {
  const out = new Array<number>(n + 1);
  let prev = 0;
  for (let i = 0; i < n; i++) {
    const c = cumulative?.[i] ?? 0;
    out[i] = c - prev;
    prev = c;
  }
  out[n] = total - prev;
  return out;
}

/**
 * One family as the SDK's metric data, or null when it has no series. Every kind maps each
 * series to a data point the same way (its labels as attributes, ending now); only where the
 * point starts and what its value is differ: a gauge's point is an instant, the cumulative
 * kinds count from the host's start.
 */
function metricData(f: FamilyView, start: HrTime, now: HrTime): MetricData | null {
  if (f.series.size === 0) return null;
  const points = <T>(startTime: HrTime, value: (s: Series) => T): DataPoint<T>[] =>
    [...f.series.values()].map((s) => ({
      startTime,
      endTime: now,
      attributes: { ...s.labels } as Attributes,
      value: value(s),
    }));
  const common = {
    descriptor: { name: f.name, description: f.help, unit: f.unit, valueType: ValueType.DOUBLE },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
  };
  switch (f.kind) {
    case "counter":
      return {
        ...common,
        dataPointType: DataPointType.SUM,
        isMonotonic: true,
        dataPoints: points(start, (s) => s.value),
      };
    case "gauge":
      return {
        ...common,
        dataPointType: DataPointType.GAUGE,
        dataPoints: points(now, (s) => s.value),
      };
    case "histogram":
      return {
        ...common,
        dataPointType: DataPointType.HISTOGRAM,
        dataPoints: points(start, (s) => ({
          buckets: {
            boundaries: [...f.buckets],
            counts: perBucket(s.buckets, f.buckets.length, s.value),
          },
          sum: s.sum ?? 0,
          count: s.value,
        })),
      };
  }
}

/** The registry's current values as one OTLP `ResourceMetrics`. */
export async function snapshot(
  registry: RegistryView,
  resource: Resource,
  scope: { name: string; version: string },
  nowMs = Date.now(),
): Promise<ResourceMetrics> {
  const start = hrTime(registry.startedAt);
  const now = hrTime(nowMs);
  const metrics: MetricData[] = [];
  for (const f of await registry.collect()) {
    const m = metricData(f, start, now);
    if (m) metrics.push(m);
  }
  return { resource, scopeMetrics: [{ scope, metrics }] };
}

function holonVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    return typeof pkg.version === "string" ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}

/** Builds the sender (metrics.ts calls this after loading this module). */
export function createMetricSender(settings: MetricExportSettings): MetricSender {
  const version = holonVersion();
  const resource = resourceFromAttributes({
    ...settings.resourceAttributes,
    "service.name": settings.serviceName,
    "service.version": version,
  });
  const scope = { name: "holon", version };
  const exporter = new OTLPExporterBase<ResourceMetrics>(
    createOtlpHttpExportDelegate(
      convertLegacyHttpOptions(
        {
          url: settings.endpoint,
          headers: settings.headers,
          timeoutMillis: settings.timeoutMs,
          concurrencyLimit: 1,
        },
        "METRICS",
        "v1/metrics",
        { "Content-Type": "application/x-protobuf" },
      ),
      ProtobufMetricsSerializer,
      "otlp_http_metric_exporter",
      MetricsExporterMetricsHelper,
      undefined,
    ),
  );
  return {
    send: async (registry) => {
      try {
        const metrics = await snapshot(registry, resource, scope);
        return await new Promise<boolean>((resolve) =>
          exporter.export(metrics, (r) => resolve(r.code === 0)),
        );
      } catch {
        return false;
      }
    },
    shutdown: () =>
      Promise.race([
        exporter.shutdown().catch(() => {}),
        new Promise<void>((r) => setTimeout(r, 1000).unref()),
      ]),
  };
}
