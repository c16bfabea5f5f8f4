// An OTLP/HTTP receiver inside the test: a real HTTP server on 127.0.0.1 that decodes every
// trace export (/v1/traces) and metrics export (/v1/metrics) with the official OpenTelemetry
// protobuf definitions (copied unchanged under
// test/fixtures/third_party/open-telemetry-opentelemetry-proto) and keeps the spans and metric
// exports. It can also play a collector that never answers (black hole).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { join } from "node:path";
import protobuf from "protobufjs";

const PROTO_ROOT = join(
  import.meta.dirname,
  "../fixtures/third_party/open-telemetry-opentelemetry-proto",
);

let requestType: protobuf.Type | undefined;
function exportRequestType(): protobuf.Type {
  if (requestType) return requestType;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
  root.loadSync("opentelemetry/proto/collector/trace/v1/trace_service.proto", { keepCase: true });
  requestType = root.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
  return requestType;
}

let metricsRequestType: protobuf.Type | undefined;
function metricsExportRequestType(): protobuf.Type {
  if (metricsRequestType) return metricsRequestType;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
  root.loadSync("opentelemetry/proto/collector/metrics/v1/metrics_service.proto", {
    keepCase: true,
  });
  metricsRequestType = root.lookupType(
    "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest",
  );
  return metricsRequestType;
}

/** One data point of any kind; which fields are set depends on the metric's kind. */
export type ReceivedPoint = {
  attributes: Record<string, unknown>;
  startMs: number;
  timeMs: number;
  /** A sum's or a gauge's value. */
  value?: number;
  /** A histogram's. */
  count?: number;
  sum?: number;
  bucketCounts?: number[];
  bounds?: number[];
};
export type ReceivedMetric = {
  name: string;
  unit: string;
  description: string;
  kind: "sum" | "gauge" | "histogram" | "other";
  /** 1 delta, 2 cumulative (AggregationTemporality), for sums and histograms. */
  temporality?: number;
  monotonic?: boolean;
  points: ReceivedPoint[];
  resource: Record<string, unknown>;
  scope: string;
};
/** One metrics export request, as received. */
export type ReceivedMetricExport = { metrics: ReceivedMetric[] };

function nanosToMs(v: unknown): number {
  return Number(BigInt((v as string | undefined) ?? 0) / 1_000_000n);
}

function point(p: any): ReceivedPoint {
  const out: ReceivedPoint = {
    attributes: attrs(p.attributes),
    startMs: nanosToMs(p.start_time_unix_nano),
    timeMs: nanosToMs(p.time_unix_nano),
  };
  if (p.as_double !== undefined) out.value = p.as_double;
  else if (p.as_int !== undefined) out.value = Number(p.as_int);
  if (p.count !== undefined) out.count = Number(p.count);
  if (p.sum !== undefined) out.sum = p.sum;
  if (p.bucket_counts) out.bucketCounts = p.bucket_counts.map(Number);
  if (p.explicit_bounds) out.bounds = p.explicit_bounds;
  return out;
}

/** Decode one OTLP/HTTP protobuf metrics export body. */
export function decodeMetricsExport(body: Buffer): ReceivedMetricExport {
  const T = metricsExportRequestType();
  const msg = T.toObject(T.decode(body), { longs: String, oneofs: false }) as any;
  const metrics: ReceivedMetric[] = [];
  for (const rm of msg.resource_metrics ?? []) {
    const resource = attrs(rm.resource?.attributes);
    for (const sm of rm.scope_metrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const data = m.sum ?? m.gauge ?? m.histogram;
        metrics.push({
          name: m.name,
          unit: m.unit ?? "",
          description: m.description ?? "",
          kind: m.sum ? "sum" : m.gauge ? "gauge" : m.histogram ? "histogram" : "other",
          ...(data?.aggregation_temporality !== undefined
            ? { temporality: data.aggregation_temporality }
            : {}),
          ...(m.sum ? { monotonic: m.sum.is_monotonic === true } : {}),
          points: (data?.data_points ?? []).map(point),
          resource,
          scope: sm.scope?.name ?? "",
        });
      }
    }
  }
  return { metrics };
}

export type ReceivedLink = { traceId: string; spanId: string; attributes: Record<string, unknown> };
export type ReceivedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  links: ReceivedLink[];
  status: { code: number; message: string };
  resource: Record<string, unknown>;
  scope: string;
};

function hex(b: unknown): string {
  return b ? Buffer.from(b as Uint8Array).toString("hex") : "";
}

function anyValue(v: any): unknown {
  if (!v) return undefined;
  if ("stringValue" in v || "string_value" in v) return v.string_value ?? v.stringValue;
  if (v.bool_value !== undefined) return v.bool_value;
  if (v.int_value !== undefined) return Number(v.int_value);
  if (v.double_value !== undefined) return v.double_value;
  if (v.array_value !== undefined) return (v.array_value.values ?? []).map(anyValue);
  return undefined;
}

function attrs(list: any[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = anyValue(kv.value);
  return out;
}

/** Decode one OTLP/HTTP protobuf export body into spans. */
export function decodeExport(body: Buffer): ReceivedSpan[] {
  const T = exportRequestType();
  const msg = T.toObject(T.decode(body), { longs: String, oneofs: false }) as any;
  const out: ReceivedSpan[] = [];
  for (const rs of msg.resource_spans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scope_spans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: hex(s.trace_id),
          spanId: hex(s.span_id),
          parentSpanId: hex(s.parent_span_id),
          name: s.name,
          kind: s.kind ?? 0,
          startMs: Number(BigInt(s.start_time_unix_nano ?? 0) / 1_000_000n),
          endMs: Number(BigInt(s.end_time_unix_nano ?? 0) / 1_000_000n),
          attributes: attrs(s.attributes),
          links: (s.links ?? []).map((l: any) => ({
            traceId: hex(l.trace_id),
            spanId: hex(l.span_id),
            attributes: attrs(l.attributes),
          })),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
          resource,
          scope: ss.scope?.name ?? "",
        });
      }
    }
  }
  return out;
}

export type OtlpReceiver = {
  /** The traces URL to configure (…/v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** The metrics URL to configure (…/v1/metrics). */
  metricsUrl: string;
  /** Every metrics export, in the order received. */
  metricExports: ReceivedMetricExport[];
  /** Headers of every export request, lower-cased. */
  headers: Record<string, string | string[] | undefined>[];
  /** Export requests received (answered or not). */
  requests: number;
  /** `ok` answers every export; `blackhole` reads it and never answers. */
  mode: "ok" | "blackhole";
  close(): Promise<void>;
};

export async function startOtlpReceiver(mode: "ok" | "blackhole" = "ok"): Promise<OtlpReceiver> {
  const sockets = new Set<Socket>();
  const state: OtlpReceiver = {
    url: "",
    spans: [],
    metricsUrl: "",
    metricExports: [],
    headers: [],
    requests: 0,
    mode,
    close: async () => {},
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      state.requests++;
      if (state.mode === "blackhole") return; // never answers
      if (req.method !== "POST" || (req.url !== "/v1/traces" && req.url !== "/v1/metrics")) {
        res.writeHead(404).end();
        return;
      }
      state.headers.push(req.headers);
      try {
        if (req.url === "/v1/metrics")
          state.metricExports.push(decodeMetricsExport(Buffer.concat(chunks)));
        else state.spans.push(...decodeExport(Buffer.concat(chunks)));
      } catch (err) {
        res.writeHead(400, { "content-type": "text/plain" }).end(String(err));
        return;
      }
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  state.url = `http://127.0.0.1:${port}/v1/traces`;
  state.metricsUrl = `http://127.0.0.1:${port}/v1/metrics`;
  state.close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return state;
}
