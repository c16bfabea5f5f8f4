// The provider round entry point: walk the candidate list, retry each per policy, fall
// back on failure, and return either the answer or ONE aggregated failure artifact — both
// with the full attempt timeline.
import { systemClock } from "../domain/clock.ts";
import {
  addTokenUsage,
  type FailureArtifact,
  type FailureCategory,
  type ProviderAttemptRecord,
  type ProviderAttemptTimeline,
  type ProviderFailureKind,
} from "../domain/provider.ts";
import { ProviderError, scrub, secretsOf } from "./errors.ts";
import { lazyTransports } from "./lazy-transports.ts";
import type { ProviderRequest, ProviderResponse, TransportClient } from "./model.ts";
import { DEFAULT_RETRY_POLICY, runCandidate, type RetryClock, type RetryPolicy } from "./retry.ts";
import type { ModelCandidate, ProviderTransport } from "./types.ts";

export type TransportSet = Partial<Record<ProviderTransport, TransportClient>>;

/**
 * One transport of each kind. Keep the set for the life of the host: the OpenAI Responses
 * transport remembers the last exchange per cache scope for `previous_response_id`.
 */
export function createDefaultTransports(): Record<ProviderTransport, TransportClient> {
  return lazyTransports(); // each family's module loads at its first send
}

export type CallProviderArgs = {
  /** In preference order; the first is the requested model. Must not be empty. */
  candidates: readonly ModelCandidate[];
  request: ProviderRequest;
  transports: TransportSet;
  /** Defaults to the system clock. Tests pass a fake whose `sleep` returns at once. */
  clock?: RetryClock;
  /** Operator abort: stops the round at once, between or during attempts. */
  signal?: AbortSignal;
  policy?: RetryPolicy;
};

/** How a failed round ended. */
export type ProviderFailureReason =
  | "exhausted"
  | "context_length_exceeded"
  | "operator_abort"
  /** Every candidate tried asked for a wait beyond the cap: see `retry_at`. */
  | "rate_limited";

export type ProviderCallResult =
  | {
      ok: true;
      response: ProviderResponse;
      /** Index in `candidates` of the candidate that answered (the candidate itself holds a secret). */
      candidate_index: number;
      model_ref: string;
      timeline: ProviderAttemptTimeline;
    }
  | {
      ok: false;
      reason: ProviderFailureReason;
      /** The one aggregated artifact; carries `attempt_timeline`. */
      failure: FailureArtifact;
      timeline: ProviderAttemptTimeline;
      /** With `rate_limited`: the earliest time any candidate said it would answer again. */
      retry_at?: string;
    };

function categoryOf(kind: ProviderFailureKind): FailureCategory {
  switch (kind) {
    case "invalid_json":
    case "unsupported_shape":
    case "unsupported_transport":
    case "response_failed":
      return "protocol";
    case "context_length_exceeded":
    case "operator_abort":
      return "runtime";
    case "unknown":
      return "unknown";
    default:
      return "transport";
  }
}

/** Calls the candidates in order with retries and fallback. Never throws for provider failures. */
export async function callProvider(args: CallProviderArgs): Promise<ProviderCallResult> {
  const { candidates, request, transports, signal } = args;
  if (candidates.length === 0) throw new Error("callProvider needs at least one model candidate");
  const clock = args.clock ?? systemClock;
  const policy = args.policy ?? DEFAULT_RETRY_POLICY;
  const attempts: ProviderAttemptRecord[] = [];
  const allSecrets = candidates.flatMap(secretsOf);
  const firstCandidate = candidates[0] as ModelCandidate;

  const timeline = (): ProviderAttemptTimeline => {
    const t: ProviderAttemptTimeline = { attempts, requested_model_ref: firstCandidate.model_ref };
    const last = attempts.at(-1);
    if (last) t.active_model_ref = last.model_ref;
    const total = attempts.reduce<ProviderAttemptRecord["token_usage"]>(
      (sum, a) => addTokenUsage(sum, a.token_usage),
      undefined,
    );
    if (total) t.aggregated_token_usage = total;
    return t;
  };

  let lastError: { error: ProviderError; candidate: ModelCandidate } | undefined;
  // Candidates actually called, and the earliest retry time among those that answered
  // "not before" with a wait beyond the cap (all of them must, for the round to wait).
  let called = 0;
  let rateLimited = 0;
  let retryAt: Date | undefined;
  for (let index = 0; index < candidates.length; index++) {
    const candidate = candidates[index] as ModelCandidate;
    const hasNext = index < candidates.length - 1;
    const firstOfCandidate = attempts.length;

    if (signal?.aborted) break;
    const transport = transports[candidate.transport];
    if (candidate.unavailable_reason !== undefined || !transport) {
      const kind: ProviderFailureKind =
        candidate.unavailable_reason !== undefined
          ? "candidate_unavailable"
          : "unsupported_transport";
      const summary =
        candidate.unavailable_reason !== undefined
          ? scrub(`candidate unavailable: ${candidate.unavailable_reason}`, allSecrets)
          : `no transport implements contract "${candidate.transport}"`;
      attempts.push({
        provider: candidate.provider_id,
        model_ref: candidate.model_ref,
        transport: candidate.transport,
        candidate_index: index,
        attempt: 1,
        max_attempts: policy.max_retries + 1,
        failure_kind: kind,
        summary,
        disposition:
          kind === "candidate_unavailable" ? "skipped_unavailable" : "unsupported_transport",
        outcome: "fail_fast_aborted",
        advanced_to_fallback: hasNext,
        transport_diagnostics: {
          stage: "candidate_selection",
          provider: candidate.provider_id,
          model_ref: candidate.model_ref,
        },
      });
      lastError = { candidate, error: new ProviderError({ kind, summary, retryable: false }) };
      continue;
    }

    called++;
    const result = await runCandidate({
      candidate,
      candidateIndex: index,
      transport,
      request,
      clock,
      policy,
      signal,
      record: (a) => attempts.push(a),
    });
    if (result.ok) {
      const t = timeline();
      t.winning_model_ref = candidate.model_ref;
      return {
        ok: true,
        response: result.response,
        candidate_index: index,
        model_ref: candidate.model_ref,
        timeline: scrubDeep(t, allSecrets),
      };
    }
    lastError = { candidate, error: result.error };
    if (result.retry_at) {
      rateLimited++;
      if (!retryAt || result.retry_at < retryAt) retryAt = result.retry_at;
    }
    if (result.aborted || result.terminal) {
      const reason: ProviderFailureReason = result.aborted
        ? "operator_abort"
        : "context_length_exceeded";
      return fail(reason);
    }
    if (hasNext && attempts.length > firstOfCandidate) {
      (attempts.at(-1) as ProviderAttemptRecord).advanced_to_fallback = true;
    }
  }
  if (signal?.aborted) {
    const candidate = lastError?.candidate ?? firstCandidate;
    lastError = {
      candidate,
      error: new ProviderError({
        kind: "operator_abort",
        summary: "provider call aborted by operator",
        retryable: false,
      }),
    };
    return fail("operator_abort");
  }
  if (retryAt && called > 0 && rateLimited === called) return fail("rate_limited");
  return fail("exhausted");

  function fail(reason: ProviderFailureReason): ProviderCallResult {
    const t = timeline();
    const last = lastError as { error: ProviderError; candidate: ModelCandidate };
    const tried = new Set(attempts.map((a) => a.model_ref));
    const retriesExhausted = attempts.some((a) => a.outcome === "retries_exhausted");
    const lead =
      reason === "operator_abort"
        ? "provider round aborted by operator"
        : reason === "context_length_exceeded"
          ? `prompt exceeds the context window of ${last.candidate.model_ref}`
          : reason === "rate_limited"
            ? `every model is rate-limited; the provider asked to retry at ${retryAt?.toISOString()}`
            : `provider round failed: ${attempts.length} attempt(s) on ${tried.size} candidate(s)`;
    const failure: FailureArtifact = {
      category: categoryOf(last.error.kind),
      kind: last.error.kind,
      summary: scrub(
        `${lead}; last error from ${last.candidate.model_ref}: ${last.error.message}`,
        allSecrets,
      ),
      provider: last.candidate.provider_id,
      model_ref: last.candidate.model_ref,
      metadata: {
        reason,
        attempts: String(attempts.length),
        candidates_tried: String(tried.size),
        retries_exhausted: String(retriesExhausted),
        requested_model_ref: firstCandidate.model_ref,
      },
      attempt_timeline: t,
    };
    if (last.error.status !== undefined) failure.status = last.error.status;
    const chain = last.error.diagnostics?.source_chain;
    if (chain && chain.length > 0) failure.source_chain = chain;
    const out: ProviderCallResult = {
      ok: false,
      reason,
      failure: scrubDeep(failure, allSecrets),
      timeline: scrubDeep(t, allSecrets),
    };
    if (reason === "rate_limited" && retryAt) {
      out.retry_at = retryAt.toISOString();
      out.failure.metadata = { ...out.failure.metadata, retry_at: out.retry_at };
    }
    return out;
  }
}

/** Belt and braces: scrubs every string inside a JSON-like value. */
function scrubDeep<T>(value: T, secrets: readonly string[]): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return scrub(v, secrets);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object")
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
