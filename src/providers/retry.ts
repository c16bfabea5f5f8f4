// The per-candidate retry loop: send, classify, back off, try again — at most
// `max_retries` times — recording every attempt. Time is injected so tests never wait.
import type { Clock } from "../domain/clock.ts";
import type { ProviderAttemptRecord } from "../domain/provider.ts";
import { ProviderError, classifyError, joinUrl, safeUrl, scrub, secretsOf } from "./errors.ts";
import { withActivity } from "./http-fetch.ts";
import type { ProviderRequest, ProviderResponse, TransportClient } from "./model.ts";
import { RETRY_POLICY, type ModelCandidate, type ProviderTransport } from "./types.ts";

/** The subset of `RETRY_POLICY` the loop reads (tests may shrink it). */
export type RetryPolicy = {
  max_retries: number;
  initial_backoff_ms: number;
  max_backoff_ms: number;
  backoff_multiplier: number;
  /** Total time of one non-streaming attempt. */
  request_timeout_ms: number;
  /** Longest silence (no head, no chunk) a streaming attempt is allowed. */
  idle_timeout_ms: number;
  /** Longest provider-asked wait (`retry-after`) honoured in place. */
  retry_after_cap_ms: number;
  /** Uniform in [0, 1): the jitter source (tests pin it). */
  random?: () => number;
};

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  max_retries: RETRY_POLICY.max_retries,
  initial_backoff_ms: RETRY_POLICY.initial_backoff_ms,
  max_backoff_ms: RETRY_POLICY.max_backoff_ms,
  backoff_multiplier: RETRY_POLICY.backoff_multiplier,
  request_timeout_ms: RETRY_POLICY.request_timeout_ms,
  idle_timeout_ms: RETRY_POLICY.idle_timeout_ms,
  retry_after_cap_ms: RETRY_POLICY.retry_after_cap_ms,
};

/** What the retry loop needs of time: `now()` for timestamps, `sleep()` for backoff. */
export type RetryClock = Pick<Clock, "now" | "sleep">;

/**
 * Wait before retry number `retryIndex` (0 for the first retry). Without a provider hint:
 * full jitter, uniform in [0, min(max_backoff_ms, initial_backoff_ms × multiplier^n)], so
 * many agents that failed together do not retry together. A provider `retry-after` /
 * `retry-after-ms` is honoured as given, up to `retry_after_cap_ms` (the caller checks
 * the cap first: a longer hint is not waited out in place).
 */
export function backoffMs(
  retryIndex: number,
  retryAfter: number | undefined,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): number {
  if (retryAfter !== undefined && Number.isFinite(retryAfter)) {
    return Math.round(Math.min(Math.max(retryAfter, 0), policy.retry_after_cap_ms));
  }
  const ceiling = Math.min(
    policy.initial_backoff_ms * policy.backoff_multiplier ** retryIndex,
    policy.max_backoff_ms,
  );
  return Math.round(ceiling * (policy.random ?? Math.random)());
}

/** Path each transport posts to, relative to the candidate's base URL. */
export const ENDPOINT_PATHS: Record<ProviderTransport, string> = {
  openai_responses: "responses",
  openai_codex_responses: "responses",
  openai_chat_completions: "chat/completions",
  anthropic_messages: "v1/messages",
};

/** Raised (and recorded) when the caller's AbortSignal fires. */
export class OperatorAbortError extends Error {
  constructor() {
    super("provider call aborted by operator");
    this.name = "OperatorAbortError";
  }
}

export type CandidateRunResult =
  | { ok: true; response: ProviderResponse }
  | {
      ok: false;
      error: ProviderError;
      /** `context_length_exceeded`: the round ends, no fallback. */
      terminal: boolean;
      aborted: boolean;
      /** The provider asked for a wait longer than `retry_after_cap_ms`: retry no sooner than this. */
      retry_at?: Date;
    };

export type CandidateRunArgs = {
  candidate: ModelCandidate;
  candidateIndex: number;
  transport: TransportClient;
  request: ProviderRequest;
  clock: RetryClock;
  policy: RetryPolicy;
  /** The operator's signal. */
  signal: AbortSignal | undefined;
  /** Called with each finished attempt, in order. */
  record: (attempt: ProviderAttemptRecord) => void;
};

function operatorAbortError(candidate: ModelCandidate): ProviderError {
  return new ProviderError({
    kind: "operator_abort",
    retryable: false,
    summary: "provider call aborted by operator",
    diagnostics: {
      stage: "request",
      provider: candidate.provider_id,
      model_ref: candidate.model_ref,
    },
  });
}

/** Runs one attempt with its own timeout, resolving at once if the operator aborts. */
async function attemptOnce(
  args: CandidateRunArgs,
): Promise<
  { ok: true; response: ProviderResponse } | { ok: false; error: ProviderError; aborted: boolean }
> {
  const { candidate, transport, request, policy, signal } = args;
  // Streaming: a timer re-armed by every byte received (idle timeout). `stream: false`:
  // one timer for the whole attempt, as the spec has it.
  const streaming = candidate.stream !== false;
  const limitMs = streaming ? policy.idle_timeout_ms : policy.request_timeout_ms;
  // The attempt's own signal, aborted by its timeout or by the operator's signal. Not
  // `AbortSignal.any`: Node keeps such a joined signal, and all its listeners reach (the SDK
  // puts one on it), alive until it aborts, so each finished attempt would stay reachable for
  // as long as the run's signal lives. The relay below is removed when the attempt ends.
  const timeout = new AbortController();
  const expire = () =>
    timeout.abort(new DOMException("provider request timed out", "TimeoutError"));
  const timer = setTimeout(expire, limitMs);
  // Every head and body chunk re-arms the same timer (no new one per chunk).
  const touch = streaming ? () => void timer.refresh() : () => undefined;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      timeout.abort(signal?.reason);
      reject(new OperatorAbortError());
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  try {
    const response = await Promise.race([
      withActivity(touch, () => transport.send(candidate, request, { signal: timeout.signal })),
      aborted,
    ]);
    return { ok: true, response };
  } catch (err) {
    if (signal?.aborted) return { ok: false, error: operatorAbortError(candidate), aborted: true };
    const url = joinUrl(candidate.base_url, ENDPOINT_PATHS[transport.transport]);
    if (timeout.signal.aborted) {
      return {
        ok: false,
        aborted: false,
        error: new ProviderError({
          kind: "timeout",
          summary: streaming
            ? `provider stream received nothing for ${limitMs} ms (idle timeout)`
            : `provider request timed out after ${limitMs} ms`,
          diagnostics: {
            stage: "request",
            provider: candidate.provider_id,
            model_ref: candidate.model_ref,
            url: safeUrl(url),
            error_flags: {
              is_timeout: true,
              is_connect: false,
              is_request: false,
              is_body: false,
              is_decode: false,
              is_redirect: false,
            },
          },
        }),
      };
    }
    return { ok: false, error: classifyError(err, { candidate, url }), aborted: false };
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  }
}

/** Tries one candidate up to `max_retries + 1` times. */
export async function runCandidate(args: CandidateRunArgs): Promise<CandidateRunResult> {
  const { candidate, candidateIndex, clock, policy, signal } = args;
  const maxAttempts = policy.max_retries + 1;
  const secrets = secretsOf(candidate);
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (signal?.aborted) {
      const error = operatorAbortError(candidate);
      args.record(baseRecord(attempt, undefined, undefined, error, "operator_abort"));
      return { ok: false, error, terminal: false, aborted: true };
    }
    const started = clock.now();
    const result = await attemptOnce(args);
    const completed = clock.now();

    function baseRecordFor(
      error: ProviderError | undefined,
      disposition: ProviderAttemptRecord["disposition"],
    ) {
      return baseRecord(attempt, started, completed, error, disposition);
    }

    if (result.ok) {
      const rec = baseRecordFor(undefined, "success");
      rec.outcome = "succeeded";
      if (result.response.token_usage) rec.token_usage = result.response.token_usage;
      args.record(rec);
      return { ok: true, response: result.response };
    }
    const error = result.error;
    if (result.aborted) {
      args.record(baseRecordFor(error, "operator_abort"));
      return { ok: false, error, terminal: false, aborted: true };
    }
    if (error.kind === "context_length_exceeded") {
      args.record(baseRecordFor(error, "turn_terminal"));
      return { ok: false, error, terminal: true, aborted: false };
    }
    if (!error.retryable) {
      args.record(baseRecordFor(error, "fail_fast"));
      return { ok: false, error, terminal: false, aborted: false };
    }
    if (attempt === maxAttempts) {
      const rec = baseRecordFor(error, "exhausted");
      rec.outcome = "retries_exhausted";
      args.record(rec);
      return { ok: false, error, terminal: false, aborted: false };
    }
    if (error.retryAfterMs !== undefined && error.retryAfterMs > policy.retry_after_cap_ms) {
      // Waiting that long in place would hold the turn (and a connection's worth of state)
      // hostage; say when to come back instead, and let the caller try the next candidate.
      const rec = baseRecordFor(error, "retry_after_exceeds_cap");
      rec.outcome = "rate_limited";
      rec.backoff_ms = Math.round(error.retryAfterMs);
      args.record(rec);
      const retry_at = new Date(completed.getTime() + error.retryAfterMs);
      return { ok: false, error, terminal: false, aborted: false, retry_at };
    }
    const wait = backoffMs(attempt - 1, error.retryAfterMs, policy);
    const rec = baseRecordFor(error, "retry");
    rec.outcome = "retrying";
    rec.backoff_ms = wait;
    args.record(rec);
    try {
      await clock.sleep(wait, signal);
    } catch {
      // Only an abort interrupts the backoff; the next loop turn records it.
    }
  }
  // Unreachable: the loop always returns on the last attempt.
  throw new Error("retry loop exited without a result");

  function baseRecord(
    attempt: number,
    started: Date | undefined,
    completed: Date | undefined,
    error: ProviderError | undefined,
    disposition: ProviderAttemptRecord["disposition"],
  ): ProviderAttemptRecord {
    const rec: ProviderAttemptRecord = {
      provider: candidate.provider_id,
      model_ref: candidate.model_ref,
      transport: candidate.transport,
      candidate_index: candidateIndex,
      attempt,
      max_attempts: maxAttempts,
      outcome: "fail_fast_aborted",
      advanced_to_fallback: false,
    };
    if (disposition !== undefined) rec.disposition = disposition;
    if (started) rec.started_at = started.toISOString();
    if (completed) rec.completed_at = completed.toISOString();
    if (started && completed)
      rec.duration_ms = Math.max(0, completed.getTime() - started.getTime());
    if (error) {
      rec.failure_kind = error.kind;
      rec.summary = scrub(error.message, secrets);
      if (error.status !== undefined) rec.status = error.status;
      if (error.diagnostics) rec.transport_diagnostics = error.diagnostics;
    }
    return rec;
  }
}
