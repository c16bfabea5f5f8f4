// The types both halves of tracing share: the SDK-free hub (tracing.ts) and the recorder
// that imports the SDK (otel.ts). Kept apart so neither imports the other's module.
import type { TurnRequest } from "../agent/runtime.ts";
import type { TurnOutcome } from "../domain/closure.ts";
import type { CatalogEvent } from "../domain/events.ts";
import type { FailureArtifact, ProviderAttemptTimeline, TokenUsage } from "../domain/provider.ts";
import type { ProviderRequest, ProviderResponse } from "../providers/model.ts";
import type { Store } from "../store/db.ts";

/** What a provider call (turn.ts `ModelCall`) is asked, as far as tracing reads it. */
export type ChatRequest = {
  candidates: readonly { model_ref: string }[];
  request: ProviderRequest;
  signal: AbortSignal;
};
/** What it answers (turn.ts `ModelCallResult`), as far as tracing reads it. */
export type ChatResult =
  | {
      ok: true;
      response: ProviderResponse;
      timeline: ProviderAttemptTimeline;
      model_ref: string;
    }
  | { ok: false; failure: FailureArtifact; timeline: ProviderAttemptTimeline };

export type TraceSettings = {
  enabled: boolean;
  /** The full OTLP/HTTP traces URL (…/v1/traces). */
  endpoint: string;
  headers: Record<string, string>;
  timeoutMs: number;
  captureContent: boolean;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  maxQueueSpans: number;
  maxBatchSpans: number;
  scheduledDelayMs: number;
  /** Why traces are off although config asked for them (one line), or null. */
  refused: string | null;
};

/**
 * The W3C trace context an HTTP request came with, for the message it admits. A request
 * admits one message: the first admission seen in its context claims it (so a batched
 * commit that runs in another request's context never hands that context to a stranger).
 */
export type IncomingTrace = { traceparent: string; tracestate?: string; claimed: boolean };

/** Counts of the span pipeline, for `/metrics` and tests. */
export type SpanStats = {
  exported: number;
  dropped_queue_full: number;
  dropped_export_failed: number;
  queued: number;
};

/** What the SDK side (otel.ts) implements; every call is cheap and never throws out. */
export interface TraceRecorder {
  onEvents(events: CatalogEvent[]): Promise<void>;
  beginTurn(req: TurnRequest): void;
  endTurn(req: TurnRequest, outcome: TurnOutcome | undefined, error: unknown): void;
  chat(req: ChatRequest, result: ChatResult, startMs: number, endMs: number): void;
  hookStart(signal: AbortSignal): void;
  hookEnd(signal: AbortSignal): void;
  /** A message admitted inside an HTTP request that carried a `traceparent`. */
  admitted(messageId: string, admission: string | undefined, incoming: IncomingTrace): void;
  stats(): SpanStats;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export type RecorderDeps = {
  store: Store;
  settings: TraceSettings;
  /** Dollars of one call's usage, or null without a price (the spend ledger's pricing). */
  price(modelRef: string, usage: TokenUsage | null): number | null;
};
