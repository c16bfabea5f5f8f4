// The types the metrics registry (metrics.ts) and the OTLP metrics sender that imports the SDK
// (otlp-metrics.ts) share. Kept apart so neither imports the other's module.

export type Labels = Record<string, string>;
export type MetricKind = "counter" | "gauge" | "histogram";

/** One series. A histogram's `buckets` are cumulative (≤ each bound), as Prometheus shows them. */
export type Series = { labels: Labels; value: number; buckets?: number[]; sum?: number };

/** One metric family as the registry holds it. */
export interface FamilyView {
  /** The OpenTelemetry name (`holon.turn.duration`). */
  readonly name: string;
  /** The UCUM unit (`s`, `{token}`, `USD`, `1`). */
  readonly unit: string;
  readonly help: string;
  readonly kind: MetricKind;
  readonly buckets: readonly number[];
  readonly series: ReadonlyMap<string, Series>;
}

/** What a sender reads: every family as of now, and when counting began. */
export interface RegistryView {
  /** Epoch ms: the start of every cumulative series. */
  readonly startedAt: number;
  collect(): Promise<FamilyView[]>;
}

/** Counts of the OTLP metrics export: each is one periodic snapshot. */
export type MetricExportStats = {
  /** Snapshots the collector accepted. */
  exported: number;
  /** Snapshots lost: the export failed or timed out. */
  failed: number;
  /** Snapshots not sent because the previous export was still in flight. */
  busy: number;
};

export type MetricExportSettings = {
  enabled: boolean;
  /** The full OTLP/HTTP metrics URL (…/v1/metrics). */
  endpoint: string;
  headers: Record<string, string>;
  intervalMs: number;
  timeoutMs: number;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  /** Why the export is off although config or the environment asked for it, or null. */
  refused: string | null;
};

/** What the SDK side (otlp-metrics.ts) implements. */
export interface MetricSender {
  /** Sends one snapshot; resolves true when the collector accepted it. Never rejects. */
  send(registry: RegistryView): Promise<boolean>;
  shutdown(): Promise<void>;
}
