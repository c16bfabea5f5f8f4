// Tracing: the one seam between the runtime and the OpenTelemetry SDK. This module imports
// no SDK code. When `telemetry.traces.enabled` is off (the default) the composition root
// wraps nothing, registers no listener, and `admitted()` returns at once: no SDK module is
// ever loaded. When it is on, `otel.ts` (which does import the SDK) is loaded with
// `await import()` and every hook forwards to its recorder; a turn waits for that load once.
//
// The hooks are thin on purpose: the turn executor, the provider call and the
// pre-provider-call hook are wrapped here (services.ts), tool calls, tasks, timers and
// children are read from the typed event catalog, so src/turn knows nothing of tracing.
import { AsyncLocalStorage } from "node:async_hooks";
import type { TurnExecutor } from "../agent/runtime.ts";
import type { CatalogEvent } from "../domain/events.ts";
import type { TurnOutcome } from "../domain/closure.ts";
import type {
  ChatRequest,
  ChatResult,
  IncomingTrace,
  RecorderDeps,
  SpanStats,
  TraceRecorder,
  TraceSettings,
} from "./trace-types.ts";

export type {
  ChatRequest,
  ChatResult,
  IncomingTrace,
  RecorderDeps,
  SpanStats,
  TraceRecorder,
  TraceSettings,
};

/** The SDK's own floor (`engines` of @opentelemetry/sdk-trace); an older Node keeps traces off. */
export const MIN_NODE_FOR_TRACES: readonly [number, number] = [22, 15];

/** What config.json may say under `telemetry.traces`. */
export type TracesFileConfig = {
  enabled?: boolean | undefined;
  endpoint?: string | undefined;
  headers?: Record<string, string> | undefined;
  capture_content?: boolean | undefined;
  max_queue_spans?: number | undefined;
};

const DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces";

/** `k=v,k2=v2` (W3C baggage-like, values URL-encoded), as the OTEL_*_HEADERS variables are. */
export function parseKeyValues(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    try {
      out[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(
        part.slice(eq + 1).trim(),
      );
    } catch {
      // a malformed escape: skip the pair rather than refuse every header
    }
  }
  return out;
}

function positive(v: string | undefined): number | undefined {
  const n = Number(v);
  return v !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * The effective trace settings: config.json's `telemetry.traces`, with the standard OTEL_*
 * variables winning where set (they are the operator's override, as in every SDK).
 */
export function traceSettings(
  file: TracesFileConfig | undefined,
  env: Readonly<Record<string, string | undefined>>,
): TraceSettings {
  const traceEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const endpoint = traceEndpoint
    ? traceEndpoint
    : base
      ? `${base.replace(/\/+$/, "")}/v1/traces`
      : (file?.endpoint ?? DEFAULT_ENDPOINT);
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  let refused: string | null = null;
  let enabled = file?.enabled === true;
  if (enabled && env.OTEL_SDK_DISABLED?.toLowerCase() === "true") {
    enabled = false;
    refused = "OTEL_SDK_DISABLED is true";
  } else if (enabled && env.OTEL_TRACES_EXPORTER?.toLowerCase() === "none") {
    enabled = false;
    refused = "OTEL_TRACES_EXPORTER is none";
  } else if (enabled && protocol && protocol !== "http/protobuf") {
    enabled = false;
    refused = `OTLP protocol ${protocol} is not supported (only http/protobuf)`;
  }
  const maxQueue = positive(env.OTEL_BSP_MAX_QUEUE_SIZE) ?? file?.max_queue_spans ?? 2048;
  return {
    enabled,
    endpoint,
    headers: {
      ...file?.headers,
      ...parseKeyValues(env.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseKeyValues(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    timeoutMs:
      positive(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT) ??
      positive(env.OTEL_EXPORTER_OTLP_TIMEOUT) ??
      10_000,
    captureContent: file?.capture_content === true,
    serviceName: env.OTEL_SERVICE_NAME || "holon",
    resourceAttributes: parseKeyValues(env.OTEL_RESOURCE_ATTRIBUTES),
    maxQueueSpans: maxQueue,
    maxBatchSpans: Math.min(positive(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE) ?? 512, maxQueue),
    scheduledDelayMs: positive(env.OTEL_BSP_SCHEDULE_DELAY) ?? 2000,
    refused,
  };
}

/** Events that arrive while the SDK loads wait here (bounded); the first turn waits for the load. */
const MAX_EARLY_EVENTS = 1000;

export function nodeTooOld(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  const [wantMajor, wantMinor] = MIN_NODE_FOR_TRACES;
  return major < wantMajor || (major === wantMajor && minor < wantMinor);
}

export class Tracing {
  readonly settings: TraceSettings;
  readonly enabled: boolean;
  /** Settles when the SDK is loaded (or refused); never rejects. */
  readonly ready: Promise<void>;
  private recorder: TraceRecorder | null = null;
  private early: { events: CatalogEvent[]; incoming: IncomingTrace | undefined }[] | null = [];
  private earlyCount = 0;
  private earlyDropped = 0;

  constructor(
    deps: RecorderDeps & {
      /** Where the one-line refusal goes (default: stderr). */
      warn?: (line: string) => void;
      nodeVersion?: string;
    },
  ) {
    this.settings = deps.settings;
    const warn = deps.warn ?? ((line: string) => process.stderr.write(`holon: ${line}\n`));
    if (deps.settings.refused) warn(`traces stay off: ${deps.settings.refused}`);
    const nodeVersion = deps.nodeVersion ?? process.versions.node;
    if (deps.settings.enabled && nodeTooOld(nodeVersion)) {
      warn(
        `traces need Node.js ${MIN_NODE_FOR_TRACES.join(".")} or newer (this is ${nodeVersion}); telemetry.traces stays off`,
      );
      this.enabled = false;
    } else {
      this.enabled = deps.settings.enabled;
    }
    this.ready = this.enabled ? this.load(deps, warn) : Promise.resolve();
  }

  private async load(deps: RecorderDeps, warn: (line: string) => void): Promise<void> {
    try {
      const { createRecorder } = await import("./otel.ts");
      this.recorder = createRecorder(deps, () => this.incoming.getStore());
      const early = this.early ?? [];
      this.early = null;
      const r = this.recorder;
      for (const { events, incoming } of early) {
        if (incoming) this.incoming.run(incoming, async () => await r.onEvents(events));
        else await r.onEvents(events);
      }
    } catch (err) {
      this.early = null;
      warn(`traces stay off: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** The store's listener (registered only when tracing is on). */
  readonly onEvents = async (events: CatalogEvent[]): Promise<void> => {
    if (this.recorder) return await this.recorder.onEvents(events);
    if (!this.early) return;
    if (this.earlyCount + events.length > MAX_EARLY_EVENTS) {
      this.earlyDropped += events.length;
      return;
    }
    this.earlyCount += events.length;
    this.early.push({ events, incoming: this.incoming.getStore() });
  };

  /** An `invoke_agent` span around every turn. */
  wrapExecutor(inner: TurnExecutor): TurnExecutor {
    return {
      run: async (req) => {
        await this.ready;
        const r = this.recorder;
        if (!r) return inner.run(req);
        r.beginTurn(req);
        let outcome: TurnOutcome | undefined;
        let error: unknown;
        try {
          // A turn never runs in the context of the request that happened to wake its loop.
          outcome = await this.incoming.exit(() => inner.run(req));
          return outcome;
        } catch (err) {
          error = err;
          throw err;
        } finally {
          r.endTurn(req, outcome, error);
        }
      },
    };
  }

  /** `chat` spans for every provider attempt of a round. */
  wrapModelCall<Req extends ChatRequest, Res extends ChatResult>(
    inner: (req: Req) => Promise<Res>,
  ): (req: Req) => Promise<Res> {
    return async (req) => {
      const r = this.recorder;
      if (!r) return inner(req);
      const start = Date.now();
      const result = await inner(req);
      r.chat(req, result, start, Date.now());
      return result;
    };
  }

  /** The pre-provider-call hook (compaction lives there): a span when it compacted. */
  wrapHook<Req, Ctx extends { signal: AbortSignal }, Out>(
    inner: (request: Req, ctx: Ctx) => Out | Promise<Out>,
  ): (request: Req, ctx: Ctx) => Promise<Out> {
    return async (request, ctx) => {
      const r = this.recorder;
      if (!r) return inner(request, ctx);
      r.hookStart(ctx.signal);
      try {
        return await inner(request, ctx);
      } finally {
        r.hookEnd(ctx.signal);
      }
    };
  }

  /** Where an HTTP request's trace context waits for the message it admits (when on). */
  private readonly incoming = new AsyncLocalStorage<IncomingTrace>();

  /**
   * Runs an HTTP request's handler with its W3C `traceparent` (if any) in reach, so the
   * message it admits is remembered with it: the turn that handles the message is its
   * child (operator or capability) or links to it marked untrusted (public ingress).
   */
  withRequest<T>(traceparent: string | undefined, tracestate: string | undefined, fn: () => T): T {
    if (!traceparent || traceparent.length > 256) return fn();
    const store: IncomingTrace = { traceparent, claimed: false };
    if (tracestate && tracestate.length <= 512) store.tracestate = tracestate;
    return this.incoming.run(store, fn);
  }

  /** The request context of the code running now (the recorder reads it on admission). */
  currentRequest(): IncomingTrace | undefined {
    return this.incoming.getStore();
  }

  stats(): SpanStats & { early_dropped: number } {
    const s = this.recorder?.stats() ?? {
      exported: 0,
      dropped_queue_full: 0,
      dropped_export_failed: 0,
      queued: 0,
    };
    return { ...s, early_dropped: this.earlyDropped };
  }

  /** Export what is queued now (bounded by the export timeout). */
  async flush(): Promise<void> {
    await this.ready;
    await this.recorder?.flush();
  }

  /** Ends open spans and exports what is queued, within a bounded time. */
  async shutdown(): Promise<void> {
    await this.ready;
    const r = this.recorder;
    this.recorder = null;
    await r?.shutdown();
  }
}
