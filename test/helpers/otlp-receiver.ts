// An OTLP/HTTP trace receiver inside the test: a real HTTP server on 127.0.0.1 that decodes
// every export with the official OpenTelemetry protobuf definitions (copied unchanged under
// test/fixtures/third_party/open-telemetry-opentelemetry-proto) and keeps the spans. It can
// also play a collector that never answers (black hole).
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
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      state.headers.push(req.headers);
      try {
        state.spans.push(...decodeExport(Buffer.concat(chunks)));
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
  state.close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return state;
}
