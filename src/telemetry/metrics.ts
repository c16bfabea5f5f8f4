// The host's metrics, in memory, for `GET /metrics` (Prometheus text format) and the OTLP
// metrics export (MetricExport, below): one registry, the one definition of every family.
// Counters and histograms are fed by the typed event catalog after each commit
// (store.onEvents), so the turn loop pays a few map updates per event and nothing else; gauges
// (agents by status, queue depth, running tasks, prompt-cache hit ratio) are read when scraped
// or exported.
//
// Each family is named once, the OpenTelemetry way (`gen_ai.client.token.usage`, unit `{token}`);
// its Prometheus name is derived from that (dots to underscores, a unit suffix, `_total` on a
// counter), as OpenTelemetry's own Prometheus exporter does. Label names follow the same rule
// (`gen_ai.request.model` is `gen_ai_request_model` at /metrics).
//
// The OTLP export (MetricExport, below) sends the same registry to a collector every interval;
// `otlp-metrics.ts`, which imports the SDK pieces, is loaded with `await import()` only when
// that export is on. One export at a time, each bounded by its timeout: a tick that finds the
// previous export still in flight sends nothing and counts it (`busy`), a failed or timed-out
// export is counted (`failed`). Cumulative values make a lost snapshot harmless: the next one
// carries the totals. Nothing of it runs on a turn's path; its timer is unref'd.
//
// Names and labels are a stable contract (docs/observability.md, checked by a test). Label
// cardinality is bounded twice: an `agent` label names public agents only, at most
// `telemetry.metrics.max_agents` of them (the rest are `_other`, private children `_private`),
// and no family ever holds more than MAX_SERIES series (further ones are dropped and counted
// in `holon_metrics_series_dropped_total`).
import type { CatalogEvent } from "../domain/events.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { TokenUsage } from "../domain/provider.ts";
import { triggerKindFor } from "../domain/message.ts";
import type {
  FamilyView,
  Labels,
  MetricExportSettings,
  MetricExportStats,
  MetricKind as Kind,
  MetricSender,
  RegistryView,
  Series,
} from "./metric-types.ts";
import { MIN_NODE_FOR_TRACES, nodeTooOld, parseKeyValues } from "./tracing.ts";

export type { MetricExportSettings, MetricExportStats };

/** Per family, at most this many series; more are dropped and counted. */
export const MAX_SERIES = 2000;

/** Seconds: from a fast tool call to a long turn. */
const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];
/** Tokens per provider call, as the GenAI conventions suggest (powers of four). */
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
];

/** The Prometheus name of an OpenTelemetry metric name and unit. */
export function promName(name: string, unit: string, kind: Kind): string {
  const suffix = unit === "s" ? "_seconds" : unit === "USD" ? "_usd" : "";
  return `${name.replace(/\./g, "_")}${suffix}${kind === "counter" ? "_total" : ""}`;
}

export class Family implements FamilyView {
  readonly series = new Map<string, Series>();
  /** The OpenTelemetry name (`holon.turn.duration`). */
  readonly name: string;
  /** The UCUM unit (`s`, `{token}`, `USD`, `1`). */
  readonly unit: string;
  /** The Prometheus name (`holon_turn_duration_seconds`). */
  readonly promName: string;
  readonly help: string;
  readonly kind: Kind;
  readonly buckets: readonly number[];
  constructor(
    name: string,
    unit: string,
    help: string,
    kind: Kind,
    buckets: readonly number[] = [],
  ) {
    this.name = name;
    this.unit = unit;
    this.promName = promName(name, unit, kind);
    this.help = help;
    this.kind = kind;
    this.buckets = buckets;
  }
}

/** Escape a label value for the text format. */
function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A series' key in its family (label order is the caller's, fixed per call site). */
function seriesKey(labels: Labels): string {
  let key = "";
  for (const k in labels) key += `${k}\u0000${labels[k]}\u0001`;
  return key;
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k.replace(/\./g, "_")}="${escapeLabel(v)}"`,
  );
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function num(v: number): string {
  if (v === Infinity) return "+Inf";
  return Number.isFinite(v) ? String(v) : "NaN";
}

/** A small registry: counters and histograms by label set, and gauges collected on read. */
export class MetricsRegistry implements RegistryView {
  private readonly families = new Map<string, Family>();
  private readonly collectors: {
    family: Family;
    collect: () => [Labels, number][] | Promise<[Labels, number][]>;
  }[] = [];
  private dropped = 0;
  /** When counting began (epoch ms): the start of every cumulative series. */
  readonly startedAt = Date.now();

  counter(name: string, unit: string, help: string): (labels: Labels, by?: number) => void {
    const f = this.family(name, unit, help, "counter");
    return (labels, by = 1) => {
      const s = this.seriesOf(f, labels);
      if (s) s.value += by;
    };
  }

  histogram(
    name: string,
    unit: string,
    help: string,
    buckets: readonly number[],
  ): (labels: Labels, value: number) => void {
    const f = this.family(name, unit, help, "histogram", buckets);
    return (labels, value) => {
      const s = this.seriesOf(f, labels);
      if (!s) return;
      s.value++;
      s.sum = (s.sum ?? 0) + value;
      s.buckets ??= new Array<number>(f.buckets.length).fill(0);
      for (let i = 0; i < f.buckets.length; i++) if (value <= f.buckets[i]!) s.buckets[i]!++;
    };
  }

  /** A gauge whose series are read when the registry is collected. */
  gauge(
    name: string,
    unit: string,
    help: string,
    collect: () => [Labels, number][] | Promise<[Labels, number][]>,
  ): void {
    this.collectors.push({ family: this.family(name, unit, help, "gauge"), collect });
  }

  /** A counter kept elsewhere (monotonic), read when the registry is collected. */
  collectedCounter(
    name: string,
    unit: string,
    help: string,
    collect: () => [Labels, number][],
  ): void {
    this.collectors.push({ family: this.family(name, unit, help, "counter"), collect });
  }

  /**
   * Every family with its series as of now (gauges and collected counters read afresh). The
   * series are the registry's own objects: read them before the next event changes them.
   */
  async collect(): Promise<Family[]> {
    for (const { family, collect } of this.collectors) {
      const series = await collect();
      family.series.clear();
      for (const [labels, value] of series) {
        const s = this.seriesOf(family, labels);
        if (s) s.value = value;
      }
    }
    return [...this.families.values(), this.droppedFamily()];
  }

  /** The Prometheus text exposition (format 0.0.4) of every family. */
  async render(): Promise<string> {
    const out: string[] = [];
    for (const f of await this.collect()) {
      const name = f.promName;
      out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.kind}`);
      for (const s of f.series.values()) {
        if (f.kind !== "histogram") {
          out.push(`${name}${labelText(s.labels)} ${num(s.value)}`);
          continue;
        }
        f.buckets.forEach((le, i) =>
          out.push(`${name}_bucket${labelText(s.labels, ["le", num(le)])} ${s.buckets![i]}`),
        );
        out.push(`${name}_bucket${labelText(s.labels, ["le", "+Inf"])} ${s.value}`);
        out.push(`${name}_sum${labelText(s.labels)} ${num(s.sum ?? 0)}`);
        out.push(`${name}_count${labelText(s.labels)} ${s.value}`);
      }
    }
    return out.join("\n") + "\n";
  }

  private droppedFamily(): Family {
    const f = new Family(
      "holon.metrics.series_dropped",
      "{series}",
      "Series not recorded because a metric family reached its series cap",
      "counter",
    );
    f.series.set("", { labels: {}, value: this.dropped });
    return f;
  }

  private family(
    name: string,
    unit: string,
    help: string,
    kind: Kind,
    buckets?: readonly number[],
  ): Family {
    if (this.families.has(name)) throw new Error(`metric ${name} is registered twice`);
    const f = new Family(name, unit, help, kind, buckets);
    this.families.set(name, f);
    return f;
  }

  private seriesOf(f: Family, labels: Labels): Series | undefined {
    const key = seriesKey(labels);
    let s = f.series.get(key);
    if (!s) {
      if (f.series.size >= MAX_SERIES) {
        this.dropped++;
        return undefined;
      }
      s = { labels, value: 0 };
      f.series.set(key, s);
    }
    return s;
  }
}

/** What the host metrics read when scraped. */
export type MetricsSources = {
  agents(): Promise<AgentRecord[]>;
  agent(agentId: string): Promise<AgentRecord | undefined>;
  pendingCount(agentId: string): Promise<number>;
  activeTaskCount(agentId: string): Promise<number>;
  /** `telemetry.metrics.max_agents`: how many public agents get a label of their own. */
  maxAgents(): number;
  /** Asks still waiting for a decision, by the agent they belong to. */
  pendingAsks(): Promise<{ agent_id: string }[]>;
  /** Dollars of one provider call (the spend ledger's pricing), or null without a price. */
  price(modelRef: string, usage: TokenUsage | null): number | null;
  /** The trace pipeline's counts, when traces are on. */
  spans?:
    | (() => { exported: number; dropped_queue_full: number; dropped_export_failed: number })
    | undefined;
  /** The OTLP metrics export's counts, when it is on (MetricExport, below). */
  metricExports?: (() => MetricExportStats) | undefined;
};

/** How many recent provider rounds of an agent the cache hit ratio covers. */
const CACHE_WINDOW = 10;

/** The host's metric families, fed from committed events and read from the store on scrape. */
export class HostMetrics {
  readonly registry = new MetricsRegistry();
  private readonly labelled = new Set<string>();
  /** Per agent label: recent rounds' [cached input, input] tokens. */
  private readonly cacheWindows = new Map<string, [number, number][]>();
  private readonly inc: Record<
    "admitted" | "turns" | "tools" | "errors" | "tokens" | "spend" | "rounds",
    (labels: Labels, by?: number) => void
  >;
  private readonly observe: Record<
    | "turnSeconds"
    | "toolSeconds"
    | "tokenUsage"
    | "operationSeconds"
    | "admissionSeconds"
    | "wakeSeconds",
    (labels: Labels, value: number) => void
  >;

  private readonly sources: MetricsSources;

  constructor(sources: MetricsSources) {
    this.sources = sources;
    const r = this.registry;
    this.inc = {
      admitted: r.counter(
        "holon.messages.admitted",
        "{message}",
        "Messages admitted to an agent's queue, by message kind",
      ),
      turns: r.counter("holon.turns", "{turn}", "Turns that ended, by how they ended"),
      tools: r.counter("holon.tool.calls", "{call}", "Tool calls, by tool and status"),
      errors: r.counter("holon.runtime.errors", "{error}", "Runtime failures recorded, by phase"),
      tokens: r.counter(
        "holon.tokens",
        "{token}",
        "Tokens reported by providers, by agent, model and type (input, cached_input, cache_write, output, reasoning)",
      ),
      spend: r.counter(
        "holon.spend",
        "USD",
        "Dollars of provider calls priced by the model catalog, by agent and model",
      ),
      rounds: r.counter(
        "holon.provider.calls",
        "{call}",
        "Provider calls (model rounds), by agent and model",
      ),
    };
    this.observe = {
      turnSeconds: r.histogram(
        "holon.turn.duration",
        "s",
        "Wall time of a turn, from its start to its terminal record",
        DURATION_BUCKETS,
      ),
      toolSeconds: r.histogram(
        "holon.tool.duration",
        "s",
        "Wall time of one tool call",
        DURATION_BUCKETS,
      ),
      tokenUsage: r.histogram(
        "gen_ai.client.token.usage",
        "{token}",
        "Tokens per provider call (OpenTelemetry GenAI gen_ai.client.token.usage)",
        TOKEN_BUCKETS,
      ),
      operationSeconds: r.histogram(
        "gen_ai.client.operation.duration",
        "s",
        "Duration of one provider call, retries included (OpenTelemetry GenAI gen_ai.client.operation.duration)",
        DURATION_BUCKETS,
      ),
      admissionSeconds: r.histogram(
        "holon.admission.latency",
        "s",
        "From a message's admission to the start of the turn that takes it, by trigger kind",
        DURATION_BUCKETS,
      ),
      wakeSeconds: r.histogram(
        "holon.wake.latency",
        "s",
        "From a timer's due time to its firing",
        DURATION_BUCKETS,
      ),
    };
    r.gauge("holon.asks.pending", "{ask}", "Asks waiting for a decision, by agent", async () => {
      const by = new Map<string, number>();
      for (const a of await this.sources.pendingAsks()) {
        const agent = await this.agentLabel(a.agent_id);
        by.set(agent, (by.get(agent) ?? 0) + 1);
      }
      return [...by].map(([agent, n]) => [{ agent }, n]);
    });
    // Always listed (zero while traces are off), so the family set is the same on every host.
    const none = { exported: 0, dropped_queue_full: 0, dropped_export_failed: 0 };
    const spans = sources.spans ?? (() => none);
    {
      r.collectedCounter(
        "holon.telemetry.spans.exported",
        "{span}",
        "Trace spans the OTLP collector accepted",
        () => [[{}, spans().exported]],
      );
      r.collectedCounter(
        "holon.telemetry.spans.dropped",
        "{span}",
        "Trace spans dropped: the export queue was full, or the export failed or timed out",
        () => {
          const s = spans();
          return [
            [{ reason: "queue_full" }, s.dropped_queue_full],
            [{ reason: "export_failed" }, s.dropped_export_failed],
          ];
        },
      );
    }
    const noExports: MetricExportStats = { exported: 0, failed: 0, busy: 0 };
    const exports = sources.metricExports ?? (() => noExports);
    r.collectedCounter(
      "holon.telemetry.metric_exports",
      "{export}",
      "Periodic OTLP metrics exports, by result (exported, failed: the export failed or timed out, busy: skipped because the previous one was still in flight)",
      () => {
        const e = exports();
        return [
          [{ result: "exported" }, e.exported],
          [{ result: "failed" }, e.failed],
          [{ result: "busy" }, e.busy],
        ];
      },
    );
    r.gauge("holon.agents", "{agent}", "Agents by status (archived agents excluded)", async () => {
      const by = new Map<string, number>();
      for (const a of await this.sources.agents()) {
        if (a.archived_at) continue;
        by.set(a.status, (by.get(a.status) ?? 0) + 1);
      }
      return [...by].map(([status, n]) => [{ status }, n]);
    });
    r.gauge(
      "holon.queue.depth",
      "{message}",
      "Messages queued and not yet processed, by agent",
      async () => await this.perAgent(async (a) => await this.sources.pendingCount(a.agent_id)),
    );
    r.gauge(
      "holon.tasks.running",
      "{task}",
      "Background tasks not yet in a terminal state, by agent",
      async () => await this.perAgent(async (a) => await this.sources.activeTaskCount(a.agent_id)),
    );
    r.gauge(
      "holon.prompt_cache.hit_ratio",
      "1",
      `Share of input tokens served from the provider's prompt cache over an agent's last ${CACHE_WINDOW} provider calls`,
      () =>
        [...this.cacheWindows].map(([agent, w]) => {
          const input = w.reduce((n, [, i]) => n + i, 0);
          const cached = w.reduce((n, [c]) => n + c, 0);
          return [{ agent }, input > 0 ? cached / input : 0];
        }),
    );
  }

  /** The store's listener: one batch of committed events. */
  readonly onEvents = async (events: CatalogEvent[]): Promise<void> => {
    for (const e of events) await this.onEvent(e);
  };

  private async onEvent(e: CatalogEvent): Promise<void> {
    switch (e.type) {
      case "message_admitted":
        this.inc.admitted({ agent: await this.agentLabel(e.agent_id), kind: e.payload.kind });
        return;
      case "turn_terminal": {
        const agent = await this.agentLabel(e.agent_id);
        this.inc.turns({ agent, kind: e.payload.kind });
        this.observe.turnSeconds({ agent }, e.payload.duration_ms / 1000);
        return;
      }
      case "tool_executed":
      case "tool_execution_failed":
        this.inc.tools({ tool: e.payload.tool_name, status: e.payload.status });
        this.observe.toolSeconds({ tool: e.payload.tool_name }, e.payload.duration_ms / 1000);
        return;
      case "message_processing_started":
        this.observe.admissionSeconds(
          { trigger_kind: triggerKindFor(e.payload.kind) },
          e.payload.queue_wait_ms / 1000,
        );
        return;
      case "timer_fired": {
        const late = Date.parse(e.ts) - Date.parse(e.payload.scheduled_for);
        if (Number.isFinite(late)) this.observe.wakeSeconds({}, Math.max(0, late) / 1000);
        return;
      }
      case "runtime_error":
        this.inc.errors({ agent: await this.agentLabel(e.agent_id), phase: e.payload.phase });
        return;
      case "provider_round_completed":
        await this.onRound(
          e.agent_id,
          e.payload.model_ref,
          e.payload.token_usage,
          e.payload.provider_round_ms,
        );
        return;
      default:
        return;
    }
  }

  private async onRound(
    agentId: string,
    modelRef: string,
    usage: TokenUsage | null,
    ms: number,
  ): Promise<void> {
    const slash = modelRef.indexOf("/");
    const gen = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": slash > 0 ? modelRef.slice(0, slash) : "unknown",
      "gen_ai.request.model": slash > 0 ? modelRef.slice(slash + 1) : modelRef,
    };
    this.observe.operationSeconds(gen, ms / 1000);
    if (!usage) return;
    this.observe.tokenUsage({ ...gen, "gen_ai.token.type": "input" }, usage.input_tokens);
    this.observe.tokenUsage({ ...gen, "gen_ai.token.type": "output" }, usage.output_tokens);
    const agent = await this.agentLabel(agentId);
    const cached = usage.cache_read_input_tokens ?? 0;
    const parts: [string, number][] = [
      ["input", usage.input_tokens],
      ["cached_input", cached],
      ["cache_write", usage.cache_creation_input_tokens ?? 0],
      ["output", usage.output_tokens],
      ["reasoning", usage.reasoning_tokens ?? 0],
    ];
    for (const [type, n] of parts) this.inc.tokens({ agent, model: modelRef, type }, n);
    this.inc.rounds({ agent, model: modelRef });
    const usd = this.sources.price(modelRef, usage);
    if (usd !== null) this.inc.spend({ agent, model: modelRef }, usd);
    let w = this.cacheWindows.get(agent);
    if (!w) this.cacheWindows.set(agent, (w = []));
    w.push([cached, usage.input_tokens]);
    if (w.length > CACHE_WINDOW) w.shift();
  }

  /** One series per labelled agent (the rest summed under `_other` / `_private`). */
  private async perAgent(value: (a: AgentRecord) => Promise<number>): Promise<[Labels, number][]> {
    const by = new Map<string, number>();
    for (const a of await this.sources.agents()) {
      if (a.archived_at) continue;
      const agent = await this.agentLabel(a.agent_id, a);
      by.set(agent, (by.get(agent) ?? 0) + (await value(a)));
    }
    return [...by].map(([agent, n]) => [{ agent }, n]);
  }

  /** The `agent` label: a public agent's id while under the cap, else a bucket. */
  private async agentLabel(agentId: string, record?: AgentRecord): Promise<string> {
    if (this.labelled.has(agentId)) return agentId;
    const a = record ?? (await this.sources.agent(agentId));
    if (!a || a.visibility !== "public") return "_private";
    if (this.labelled.size >= this.sources.maxAgents()) return "_other";
    this.labelled.add(agentId);
    return agentId;
  }
}

// ---------------------------------------------------------------------------------------
// The OTLP export

/** What config.json may say under `telemetry.metrics` about the OTLP export. */
export type MetricsExportFileConfig = {
  otlp_enabled?: boolean | undefined;
  otlp_endpoint?: string | undefined;
  otlp_headers?: Record<string, string> | undefined;
  otlp_interval_ms?: number | undefined;
};

const DEFAULT_ENDPOINT = "http://localhost:4318/v1/metrics";
/** OTEL_METRIC_EXPORT_INTERVAL's default in the OpenTelemetry specification. */
export const DEFAULT_INTERVAL_MS = 60_000;
/** The shortest interval accepted: more often than this is a misconfiguration. */
const MIN_INTERVAL_MS = 100;

function positive(v: string | undefined): number | undefined {
  const n = Number(v);
  return v !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * The effective export settings: config.json's `telemetry.metrics.otlp_*`, with the standard
 * OTEL_* variables winning where set. `OTEL_METRICS_EXPORTER=otlp` turns the export on,
 * `none` keeps it off whatever the config says.
 */
export function metricExportSettings(
  file: MetricsExportFileConfig | undefined,
  env: Readonly<Record<string, string | undefined>>,
): MetricExportSettings {
  const own = env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const endpoint = own
    ? own
    : base
      ? `${base.replace(/\/+$/, "")}/v1/metrics`
      : (file?.otlp_endpoint ?? DEFAULT_ENDPOINT);
  const exporter = env.OTEL_METRICS_EXPORTER?.trim().toLowerCase();
  const protocol = env.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  const wanted = exporter === "otlp" || (file?.otlp_enabled === true && exporter !== "none");
  let refused: string | null = null;
  if (wanted && env.OTEL_SDK_DISABLED?.toLowerCase() === "true")
    refused = "OTEL_SDK_DISABLED is true";
  else if (file?.otlp_enabled === true && exporter && exporter !== "otlp" && exporter !== "none")
    refused = `OTEL_METRICS_EXPORTER ${exporter} is not supported (only otlp or none)`;
  else if (wanted && protocol && protocol !== "http/protobuf")
    refused = `OTLP protocol ${protocol} is not supported (only http/protobuf)`;
  const intervalMs = Math.max(
    MIN_INTERVAL_MS,
    positive(env.OTEL_METRIC_EXPORT_INTERVAL) ?? file?.otlp_interval_ms ?? DEFAULT_INTERVAL_MS,
  );
  const timeoutMs =
    positive(env.OTEL_METRIC_EXPORT_TIMEOUT) ??
    positive(env.OTEL_EXPORTER_OTLP_METRICS_TIMEOUT) ??
    positive(env.OTEL_EXPORTER_OTLP_TIMEOUT) ??
    10_000;
  return {
    enabled: wanted && refused === null,
    endpoint,
    headers: {
      ...file?.otlp_headers,
      ...parseKeyValues(env.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseKeyValues(env.OTEL_EXPORTER_OTLP_METRICS_HEADERS),
    },
    intervalMs,
    // An export never outlives the next tick: at most one is ever in flight.
    timeoutMs: Math.min(timeoutMs, intervalMs),
    serviceName: env.OTEL_SERVICE_NAME || "holon",
    resourceAttributes: parseKeyValues(env.OTEL_RESOURCE_ATTRIBUTES),
    refused,
  };
}

export class MetricExport {
  readonly settings: MetricExportSettings;
  readonly enabled: boolean;
  /** Settles when the exporter is loaded (or refused); never rejects. */
  readonly ready: Promise<void>;
  private sender: MetricSender | null = null;
  private inFlight: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly counts: MetricExportStats = { exported: 0, failed: 0, busy: 0 };
  private readonly registry: RegistryView;

  constructor(opts: {
    settings: MetricExportSettings;
    registry: RegistryView;
    /** Where a one-line warning goes (default: stderr). */
    warn?: (line: string) => void;
    nodeVersion?: string;
  }) {
    this.settings = opts.settings;
    this.registry = opts.registry;
    const warn = opts.warn ?? ((line: string) => process.stderr.write(`holon: ${line}\n`));
    const nodeVersion = opts.nodeVersion ?? process.versions.node;
    if (opts.settings.enabled && nodeTooOld(nodeVersion)) {
      warn(
        `OTLP metrics need Node.js ${MIN_NODE_FOR_TRACES.join(".")} or newer (this is ${nodeVersion}); they stay off`,
      );
      this.enabled = false;
    } else {
      this.enabled = opts.settings.enabled;
    }
    this.ready = this.enabled ? this.load(warn) : Promise.resolve();
  }

  private async load(warn: (line: string) => void): Promise<void> {
    try {
      const { createMetricSender } = await import("./otlp-metrics.ts");
      if (this.closed) return;
      this.sender = createMetricSender(this.settings);
      this.timer = setInterval(() => void this.tick(), this.settings.intervalMs);
      this.timer.unref();
    } catch (err) {
      warn(`OTLP metrics stay off: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** One periodic export; skipped (and counted) while the previous one is in flight. */
  tick(): Promise<void> {
    const sender = this.sender;
    if (!sender || this.closed) return Promise.resolve();
    if (this.inFlight) {
      this.counts.busy++;
      return this.inFlight;
    }
    const run = async () => {
      let ok = false;
      let guard: NodeJS.Timeout | undefined;
      try {
        // The exporter has its own timeout; this one only guards against an answer never coming.
        ok = await Promise.race([
          sender.send(this.registry),
          new Promise<boolean>((r) => {
            guard = setTimeout(() => r(false), this.settings.timeoutMs + 1000);
            guard.unref();
          }),
        ]);
      } catch {
        ok = false;
      } finally {
        clearTimeout(guard);
      }
      if (ok) this.counts.exported++;
      else this.counts.failed++;
    };
    const p = run().finally(() => {
      this.inFlight = null;
    });
    this.inFlight = p;
    return p;
  }

  stats(): MetricExportStats {
    return { ...this.counts };
  }

  /** Export the current values now (a test, or a stop), waiting for at most the timeout. */
  async flush(): Promise<void> {
    await this.ready;
    if (this.inFlight) await this.inFlight;
    await this.tick();
  }

  /** A last export of the final values (bounded), then stop. */
  async shutdown(): Promise<void> {
    await this.ready;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const sender = this.sender;
    if (!sender || this.closed) {
      this.closed = true;
      return;
    }
    let t: NodeJS.Timeout | undefined;
    const cap = new Promise<void>((r) => {
      t = setTimeout(r, Math.min(this.settings.timeoutMs, 3000));
      t.unref();
    });
    await Promise.race([(this.inFlight ?? Promise.resolve()).then(() => this.tick()), cap]);
    clearTimeout(t);
    this.closed = true;
    this.sender = null;
    await sender.shutdown();
  }
}
