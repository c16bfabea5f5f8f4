// Provider-round shapes that leave the provider layer: token usage, the per-attempt
// timeline of a provider round, and the normalized failure artifact. Wire names follow
// the runtime spec ("Provider Transport Contract", "Failure Artifact Envelope").
import { z } from "zod";

/**
 * Token usage reported by a provider for one request (or summed over several).
 * Cache counters are present only when the provider reports them.
 */
export const TokenUsage = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
  /** Input tokens served from the provider's prompt cache (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`). */
  cache_read_input_tokens: z.number().int().nonnegative().optional(),
  /** Input tokens written to the prompt cache (Anthropic `cache_creation_input_tokens`, OpenAI `cache_write_tokens`). */
  cache_creation_input_tokens: z.number().int().nonnegative().optional(),
  /** Output tokens spent on reasoning, when reported. */
  reasoning_tokens: z.number().int().nonnegative().optional(),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

/** Closed set from the spec: what became of one attempt. */
export const ProviderAttemptOutcome = z.enum([
  "retrying",
  "retries_exhausted",
  "fail_fast_aborted",
  "succeeded",
  /** The provider asked for a wait beyond the cap: the candidate is left for now. */
  "rate_limited",
]);
export type ProviderAttemptOutcome = z.infer<typeof ProviderAttemptOutcome>;

/**
 * Why the retry loop did what it did after an attempt. Finer than `outcome`:
 * - `success`: the attempt answered
 * - `retry`: transient failure, same candidate tried again after `backoff_ms`
 * - `exhausted`: transient failure with no retries left
 * - `fail_fast`: deterministic failure, candidate abandoned at once
 * - `skipped_unavailable`: candidate not attempted (`unavailable_reason` set)
 * - `unsupported_transport`: candidate not attempted (no transport for its contract)
 * - `turn_terminal`: failure that ends the round without fallback (`context_length_exceeded`)
 * - `operator_abort`: the caller's AbortSignal fired
 * - `retry_after_exceeds_cap`: a 429/503 whose `retry-after` is longer than the cap; the
 *   candidate is left (next candidate, or the turn waits until then)
 */
export const ProviderAttemptDisposition = z.enum([
  "success",
  "retry",
  "exhausted",
  "fail_fast",
  "skipped_unavailable",
  "unsupported_transport",
  "turn_terminal",
  "operator_abort",
  "retry_after_exceeds_cap",
]);
export type ProviderAttemptDisposition = z.infer<typeof ProviderAttemptDisposition>;

/**
 * Stable failure kinds recorded per attempt. `http_*` carry the status separately.
 */
export const ProviderFailureKind = z.enum([
  "timeout",
  "connection_failure",
  "http_429",
  "http_5xx",
  "http_401",
  "http_403",
  "http_4xx",
  "invalid_json",
  "unsupported_shape",
  "context_length_exceeded",
  "response_failed",
  "operator_abort",
  "candidate_unavailable",
  "unsupported_transport",
  "unknown",
]);
export type ProviderFailureKind = z.infer<typeof ProviderFailureKind>;

/**
 * Structured, secret-free detail about a transport-level failure, so artifacts can tell
 * a timeout from a refused connection from a body that would not decode.
 * (The spec's `reqwest` flags are carried here as `error_flags`.)
 */
export const TransportDiagnostics = z.object({
  /** Where it failed: `connect`, `request`, `response_status`, `response_body`, `decode`, `stream`, `candidate_selection`. */
  stage: z.string(),
  provider: z.string().optional(),
  model_ref: z.string().optional(),
  /** Request URL without query string or user info. */
  url: z.string().optional(),
  status: z.number().int().optional(),
  error_flags: z
    .object({
      is_timeout: z.boolean(),
      is_connect: z.boolean(),
      is_request: z.boolean(),
      is_body: z.boolean(),
      is_decode: z.boolean(),
      is_redirect: z.boolean(),
      status: z.number().int().optional(),
    })
    .optional(),
  /** Scrubbed messages of the error and its causes, outermost first. */
  source_chain: z.array(z.string()).optional(),
});
export type TransportDiagnostics = z.infer<typeof TransportDiagnostics>;

export const ProviderAttemptRecord = z.object({
  /** Provider id (the part of `model_ref` before the slash). */
  provider: z.string(),
  model_ref: z.string(),
  transport: z.string().optional(),
  /** Position of the candidate in the fallback list, from 0. */
  candidate_index: z.number().int().nonnegative(),
  /** Attempt number on this candidate, from 1. */
  attempt: z.number().int().positive(),
  /** `max_retries + 1`. */
  max_attempts: z.number().int().positive(),
  started_at: z.string().optional(),
  completed_at: z.string().optional(),
  /** Wall-clock time of this attempt from dispatch to complete response or error. */
  duration_ms: z.number().int().nonnegative().optional(),
  failure_kind: ProviderFailureKind.optional(),
  /** HTTP status when the provider answered with one. */
  status: z.number().int().optional(),
  /** Scrubbed one-line description of the failure. */
  summary: z.string().optional(),
  disposition: ProviderAttemptDisposition.optional(),
  outcome: ProviderAttemptOutcome,
  /** True when, after this attempt, the loop moved on to the next candidate. */
  advanced_to_fallback: z.boolean(),
  /** Wait before the next attempt on the same candidate (only when `outcome` is `retrying`). */
  backoff_ms: z.number().int().nonnegative().optional(),
  token_usage: TokenUsage.optional(),
  transport_diagnostics: TransportDiagnostics.optional(),
});
export type ProviderAttemptRecord = z.infer<typeof ProviderAttemptRecord>;

export const ProviderAttemptTimeline = z.object({
  attempts: z.array(ProviderAttemptRecord),
  /** First candidate of the list: the model the turn asked for. */
  requested_model_ref: z.string(),
  /** Candidate the last attempt went to. */
  active_model_ref: z.string().optional(),
  /** Candidate that answered, on success. */
  winning_model_ref: z.string().optional(),
  /** Sum of the per-attempt usage, when any attempt reported usage. */
  aggregated_token_usage: TokenUsage.optional(),
});
export type ProviderAttemptTimeline = z.infer<typeof ProviderAttemptTimeline>;

export const FailureCategory = z.enum(["transport", "protocol", "runtime", "task", "unknown"]);
export type FailureCategory = z.infer<typeof FailureCategory>;

/** The operator-facing failure envelope (spec: "Failure Artifact Envelope"). */
export const FailureArtifact = z.object({
  category: FailureCategory,
  kind: z.string(),
  summary: z.string(),
  provider: z.string().optional(),
  model_ref: z.string().optional(),
  status: z.number().int().optional(),
  task_id: z.string().optional(),
  exit_status: z.number().int().optional(),
  source_chain: z.array(z.string()).optional(),
  /** Bounded, flat detail. */
  metadata: z.record(z.string(), z.string()).optional(),
  /** Provider failures: every attempt of the round, retries and fallbacks included. */
  attempt_timeline: ProviderAttemptTimeline.optional(),
});
export type FailureArtifact = z.infer<typeof FailureArtifact>;

/** Adds two usages; absent cache counters stay absent unless one side has them. */
export function addTokenUsage(
  a: TokenUsage | undefined,
  b: TokenUsage | undefined,
): TokenUsage | undefined {
  if (!a) return b;
  if (!b) return a;
  const sum: TokenUsage = {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
  for (const key of [
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "reasoning_tokens",
  ] as const) {
    const x = a[key];
    const y = b[key];
    if (x !== undefined || y !== undefined) sum[key] = (x ?? 0) + (y ?? 0);
  }
  return sum;
}
