// The host's metrics, in memory, for `GET /metrics` (Prometheus text format). Counters and
// histograms are fed by the typed event catalog after each commit (store.onEvents), so the
// turn loop pays a few map updates per event and nothing else; gauges (agents by status,
// queue depth, running tasks, prompt-cache hit ratio) are read when scraped.
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

type Labels = Record<string, string>;
type Kind = "counter" | "gauge" | "histogram";

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

type Series = { labels: Labels; value: number; buckets?: number[]; sum?: number };

class Family {
  readonly series = new Map<string, Series>();
  readonly name: string;
  readonly help: string;
  readonly kind: Kind;
  readonly buckets: readonly number[];
  constructor(name: string, help: string, kind: Kind, buckets: readonly number[] = []) {
    this.name = name;
    this.help = help;
    this.kind = kind;
    this.buckets = buckets;
  }
}

/** Escape a label value for the text format. */
function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function num(v: number): string {
  if (v === Infinity) return "+Inf";
  return Number.isFinite(v) ? String(v) : "NaN";
}

/** A small registry: counters and histograms by label set, and gauges collected on scrape. */
export class MetricsRegistry {
  private readonly families = new Map<string, Family>();
  private readonly collectors: {
    family: Family;
    collect: () => [Labels, number][];
  }[] = [];
  private dropped = 0;

  counter(name: string, help: string): (labels: Labels, by?: number) => void {
    const f = this.family(name, help, "counter");
    return (labels, by = 1) => {
      const s = this.seriesOf(f, labels);
      if (s) s.value += by;
    };
  }

  histogram(
    name: string,
    help: string,
    buckets: readonly number[],
  ): (labels: Labels, value: number) => void {
    const f = this.family(name, help, "histogram", buckets);
    return (labels, value) => {
      const s = this.seriesOf(f, labels);
      if (!s) return;
      s.value++;
      s.sum = (s.sum ?? 0) + value;
      s.buckets ??= new Array<number>(f.buckets.length).fill(0);
      for (let i = 0; i < f.buckets.length; i++) if (value <= f.buckets[i]!) s.buckets[i]!++;
    };
  }

  /** A gauge whose series are read when the registry is rendered. */
  gauge(name: string, help: string, collect: () => [Labels, number][]): void {
    this.collectors.push({ family: this.family(name, help, "gauge"), collect });
  }

  /** A counter kept elsewhere (monotonic), read when the registry is rendered. */
  collectedCounter(name: string, help: string, collect: () => [Labels, number][]): void {
    this.collectors.push({ family: this.family(name, help, "counter"), collect });
  }

  /** The Prometheus text exposition (format 0.0.4) of every family. */
  render(): string {
    for (const { family, collect } of this.collectors) {
      family.series.clear();
      for (const [labels, value] of collect()) {
        const s = this.seriesOf(family, labels);
        if (s) s.value = value;
      }
    }
    const out: string[] = [];
    for (const f of [...this.families.values(), this.droppedFamily()]) {
      out.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.kind}`);
      for (const s of f.series.values()) {
        if (f.kind !== "histogram") {
          out.push(`${f.name}${labelText(s.labels)} ${num(s.value)}`);
          continue;
        }
        f.buckets.forEach((le, i) =>
          out.push(`${f.name}_bucket${labelText(s.labels, ["le", num(le)])} ${s.buckets![i]}`),
        );
        out.push(`${f.name}_bucket${labelText(s.labels, ["le", "+Inf"])} ${s.value}`);
        out.push(`${f.name}_sum${labelText(s.labels)} ${num(s.sum ?? 0)}`);
        out.push(`${f.name}_count${labelText(s.labels)} ${s.value}`);
      }
    }
    return out.join("\n") + "\n";
  }

  private droppedFamily(): Family {
    const f = new Family(
      "holon_metrics_series_dropped_total",
      "Series not recorded because a metric family reached its series cap",
      "counter",
    );
    f.series.set("", { labels: {}, value: this.dropped });
    return f;
  }

  private family(name: string, help: string, kind: Kind, buckets?: readonly number[]): Family {
    if (this.families.has(name)) throw new Error(`metric ${name} is registered twice`);
    const f = new Family(name, help, kind, buckets);
    this.families.set(name, f);
    return f;
  }

  private seriesOf(f: Family, labels: Labels): Series | undefined {
    const key = labelText(labels);
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
  agents(): AgentRecord[];
  agent(agentId: string): AgentRecord | undefined;
  pendingCount(agentId: string): number;
  activeTaskCount(agentId: string): number;
  /** `telemetry.metrics.max_agents`: how many public agents get a label of their own. */
  maxAgents(): number;
  /** Asks still waiting for a decision, by the agent they belong to. */
  pendingAsks(): { agent_id: string }[];
  /** Dollars of one provider call (the spend ledger's pricing), or null without a price. */
  price(modelRef: string, usage: TokenUsage | null): number | null;
  /** The trace pipeline's counts, when traces are on. */
  spans?:
    | (() => { exported: number; dropped_queue_full: number; dropped_export_failed: number })
    | undefined;
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
        "holon_messages_admitted_total",
        "Messages admitted to an agent's queue, by message kind",
      ),
      turns: r.counter("holon_turns_total", "Turns that ended, by how they ended"),
      tools: r.counter("holon_tool_calls_total", "Tool calls, by tool and status"),
      errors: r.counter("holon_runtime_errors_total", "Runtime failures recorded, by phase"),
      tokens: r.counter(
        "holon_tokens_total",
        "Tokens reported by providers, by agent, model and type (input, cached_input, cache_write, output, reasoning)",
      ),
      spend: r.counter(
        "holon_spend_usd_total",
        "Dollars of provider calls priced by the model catalog, by agent and model",
      ),
      rounds: r.counter(
        "holon_provider_calls_total",
        "Provider calls (model rounds), by agent and model",
      ),
    };
    this.observe = {
      turnSeconds: r.histogram(
        "holon_turn_duration_seconds",
        "Wall time of a turn, from its start to its terminal record",
        DURATION_BUCKETS,
      ),
      toolSeconds: r.histogram(
        "holon_tool_duration_seconds",
        "Wall time of one tool call",
        DURATION_BUCKETS,
      ),
      tokenUsage: r.histogram(
        "gen_ai_client_token_usage",
        "Tokens per provider call (OpenTelemetry GenAI gen_ai.client.token.usage)",
        TOKEN_BUCKETS,
      ),
      operationSeconds: r.histogram(
        "gen_ai_client_operation_duration_seconds",
        "Duration of one provider call, retries included (OpenTelemetry GenAI gen_ai.client.operation.duration)",
        DURATION_BUCKETS,
      ),
      admissionSeconds: r.histogram(
        "holon_admission_latency_seconds",
        "From a message's admission to the start of the turn that takes it, by trigger kind",
        DURATION_BUCKETS,
      ),
      wakeSeconds: r.histogram(
        "holon_wake_latency_seconds",
        "From a timer's due time to its firing",
        DURATION_BUCKETS,
      ),
    };
    r.gauge("holon_asks_pending", "Asks waiting for a decision, by agent", () => {
      const by = new Map<string, number>();
      for (const a of this.sources.pendingAsks()) {
        const agent = this.agentLabel(a.agent_id);
        by.set(agent, (by.get(agent) ?? 0) + 1);
      }
      return [...by].map(([agent, n]) => [{ agent }, n]);
    });
    // Always listed (zero while traces are off), so the family set is the same on every host.
    const none = { exported: 0, dropped_queue_full: 0, dropped_export_failed: 0 };
    const spans = sources.spans ?? (() => none);
    {
      r.collectedCounter(
        "holon_telemetry_spans_exported_total",
        "Trace spans the OTLP collector accepted",
        () => [[{}, spans().exported]],
      );
      r.collectedCounter(
        "holon_telemetry_spans_dropped_total",
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
    r.gauge("holon_agents", "Agents by status (archived agents excluded)", () => {
      const by = new Map<string, number>();
      for (const a of this.sources.agents()) {
        if (a.archived_at) continue;
        by.set(a.status, (by.get(a.status) ?? 0) + 1);
      }
      return [...by].map(([status, n]) => [{ status }, n]);
    });
    r.gauge("holon_queue_depth", "Messages queued and not yet processed, by agent", () =>
      this.perAgent((a) => this.sources.pendingCount(a.agent_id)),
    );
    r.gauge("holon_tasks_running", "Background tasks not yet in a terminal state, by agent", () =>
      this.perAgent((a) => this.sources.activeTaskCount(a.agent_id)),
    );
    r.gauge(
      "holon_prompt_cache_hit_ratio",
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
  readonly onEvents = (events: CatalogEvent[]): void => {
    for (const e of events) this.onEvent(e);
  };

  private onEvent(e: CatalogEvent): void {
    switch (e.type) {
      case "message_admitted":
        this.inc.admitted({ agent: this.agentLabel(e.agent_id), kind: e.payload.kind });
        return;
      case "turn_terminal": {
        const agent = this.agentLabel(e.agent_id);
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
        this.inc.errors({ agent: this.agentLabel(e.agent_id), phase: e.payload.phase });
        return;
      case "provider_round_completed":
        this.onRound(
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

  private onRound(agentId: string, modelRef: string, usage: TokenUsage | null, ms: number): void {
    const slash = modelRef.indexOf("/");
    const gen = {
      gen_ai_operation_name: "chat",
      gen_ai_provider_name: slash > 0 ? modelRef.slice(0, slash) : "unknown",
      gen_ai_request_model: slash > 0 ? modelRef.slice(slash + 1) : modelRef,
    };
    this.observe.operationSeconds(gen, ms / 1000);
    if (!usage) return;
    this.observe.tokenUsage({ ...gen, gen_ai_token_type: "input" }, usage.input_tokens);
    this.observe.tokenUsage({ ...gen, gen_ai_token_type: "output" }, usage.output_tokens);
    const agent = this.agentLabel(agentId);
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
  private perAgent(value: (a: AgentRecord) => number): [Labels, number][] {
    const by = new Map<string, number>();
    for (const a of this.sources.agents()) {
      if (a.archived_at) continue;
      const agent = this.agentLabel(a.agent_id, a);
      by.set(agent, (by.get(agent) ?? 0) + value(a));
    }
    return [...by].map(([agent, n]) => [{ agent }, n]);
  }

  /** The `agent` label: a public agent's id while under the cap, else a bucket. */
  private agentLabel(agentId: string, record?: AgentRecord): string {
    if (this.labelled.has(agentId)) return agentId;
    const a = record ?? this.sources.agent(agentId);
    if (!a || a.visibility !== "public") return "_private";
    if (this.labelled.size >= this.sources.maxAgents()) return "_other";
    this.labelled.add(agentId);
    return agentId;
  }
}
