// Provider failures: one error class the retry loop understands, the classification of
// vendor SDK errors into it, and the scrubbing that keeps secrets out of anything stored.
import type { ProviderFailureKind, TransportDiagnostics } from "../domain/provider.ts";
import type { ModelCandidate } from "./types.ts";

/** Retryable kinds per the retry policy; everything else fails the candidate at once. */
const RETRYABLE_KINDS: ReadonlySet<ProviderFailureKind> = new Set([
  "timeout",
  "connection_failure",
  "http_429",
  "http_5xx",
]);

/** 5xx statuses that say nothing about the request itself and may pass on retry. */
const RETRYABLE_5XX: ReadonlySet<number> = new Set([500, 502, 503, 504, 520, 522, 524, 529]);

export type ProviderErrorInit = {
  kind: ProviderFailureKind;
  summary: string;
  status?: number | undefined;
  /** Overrides the default retryability of `kind`. */
  retryable?: boolean | undefined;
  retry_after_ms?: number | undefined;
  diagnostics?: TransportDiagnostics | undefined;
  cause?: unknown;
};

/** A classified provider failure. `message` is already scrubbed of secrets. */
export class ProviderError extends Error {
  readonly kind: ProviderFailureKind;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly diagnostics: TransportDiagnostics | undefined;

  constructor(init: ProviderErrorInit) {
    super(init.summary, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "ProviderError";
    this.kind = init.kind;
    this.status = init.status;
    this.retryable = init.retryable ?? RETRYABLE_KINDS.has(init.kind);
    this.retryAfterMs = init.retry_after_ms;
    this.diagnostics = init.diagnostics;
  }
}

// ---------------------------------------------------------------------------
// Secret scrubbing

/** The strings that must never leave the process for a candidate: its credential value. */
export function secretsOf(candidate: ModelCandidate): string[] {
  const out: string[] = [];
  const value = candidate.credential?.value;
  if (value && value.length >= 4) out.push(value);
  return out;
}

/** Removes credential values, auth header values and key-like tokens from a text. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  }
  out = out.replace(
    /\b(authorization|x-api-key|api-key|proxy-authorization)(["']?\s*[:=]\s*["']?)[^\s"',}]+(\s+[^\s"',}]+)?/gi,
    "$1$2[redacted]",
  );
  out = out.replace(/\bBearer\s+[A-Za-z0-9._~+/=-]+/g, "Bearer [redacted]");
  out = out.replace(/\bsk-[A-Za-z0-9_-]{8,}/g, "sk-[redacted]");
  return out;
}

/** URL without user info, query or fragment (the place a key might hide). */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "[unparseable url]";
  }
}

/** Joins a base URL and a path with exactly one slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

const MAX_CHAIN = 5;
const MAX_LINE = 500;

/** Scrubbed messages of an error and its causes. */
export function sourceChain(err: unknown, secrets: readonly string[]): string[] {
  const chain: string[] = [];
  let cur: unknown = err;
  const seen = new Set<unknown>();
  while (cur !== undefined && cur !== null && chain.length < MAX_CHAIN && !seen.has(cur)) {
    seen.add(cur);
    const name = cur instanceof Error ? cur.name : typeof cur;
    const msg = cur instanceof Error ? cur.message : String(cur);
    const code = (cur as { code?: unknown }).code;
    const line = `${name}${typeof code === "string" ? ` (${code})` : ""}: ${msg}`;
    chain.push(truncate(scrub(line, secrets), MAX_LINE));
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return chain;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

// ---------------------------------------------------------------------------
// Classification

export type ClassifyContext = {
  candidate: ModelCandidate;
  /** Request URL (scrubbed before it is stored). */
  url: string;
};

type ApiErrorLike = {
  status: number | undefined;
  headers: Headers | undefined;
  error: unknown;
  message: string;
};

type ErrorClass = abstract new (...args: never[]) => Error;

/** The error classes an official SDK throws (both SDKs name them alike). */
export type SdkErrors = {
  APIError: ErrorClass;
  APIConnectionError: ErrorClass;
  APIConnectionTimeoutError: ErrorClass;
  APIUserAbortError: ErrorClass;
};

/** The SDKs loaded so far (sdk.ts registers each as it loads): only they can have thrown. */
const sdks: SdkErrors[] = [];

export function registerSdkErrors(classes: SdkErrors): void {
  if (!sdks.includes(classes)) sdks.push(classes);
}

const isA = (err: unknown, kind: keyof SdkErrors) => sdks.some((s) => err instanceof s[kind]);

function isApiError(err: unknown): err is ApiErrorLike & Error {
  return isA(err, "APIError");
}

function isConnectionError(err: unknown): boolean {
  return isA(err, "APIConnectionError");
}

function isSdkTimeout(err: unknown): boolean {
  return isA(err, "APIConnectionTimeoutError");
}

/** True for an abort raised through an AbortSignal (by the SDK or by fetch). */
export function isAbortError(err: unknown): boolean {
  if (isA(err, "APIUserAbortError")) return true;
  return err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError");
}

/** Parses `retry-after-ms` / `retry-after` (seconds or HTTP date) into milliseconds. */
export function retryAfterMs(
  headers: Headers | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms)))
    return Math.max(0, Number(ms));
  const ra = headers.get("retry-after");
  if (ra === null || ra.trim() === "") return undefined;
  if (Number.isFinite(Number(ra))) return Math.max(0, Number(ra) * 1000);
  const date = Date.parse(ra);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

const CONTEXT_LENGTH_PATTERN =
  /context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|too many (input )?tokens|input is too long/i;

/** Finds `code`/`type`/`message` in an OpenAI- or Anthropic-style error body. */
function errorFields(body: unknown): { code?: string; type?: string; message?: string } {
  const out: { code?: string; type?: string; message?: string } = {};
  const visit = (v: unknown, depth: number): void => {
    if (depth > 3 || v === null || typeof v !== "object") return;
    const o = v as Record<string, unknown>;
    if (typeof o["code"] === "string" && out.code === undefined) out.code = o["code"];
    if (typeof o["type"] === "string" && o["type"] !== "error" && out.type === undefined)
      out.type = o["type"];
    if (typeof o["message"] === "string" && out.message === undefined) out.message = o["message"];
    visit(o["error"], depth + 1);
  };
  visit(body, 0);
  return out;
}

/** True when an error body or message says the prompt does not fit the model's context. */
export function isContextLengthError(
  code: string | undefined,
  message: string | undefined,
): boolean {
  if (code === "context_length_exceeded") return true;
  return message !== undefined && CONTEXT_LENGTH_PATTERN.test(message);
}

function flags(partial: Partial<NonNullable<TransportDiagnostics["error_flags"]>>) {
  return {
    is_timeout: false,
    is_connect: false,
    is_request: false,
    is_body: false,
    is_decode: false,
    is_redirect: false,
    ...partial,
  };
}

/** Maps an HTTP status (plus error body hints) to a failure kind. */
export function kindForStatus(
  status: number,
  code?: string,
  message?: string,
): ProviderFailureKind {
  if (status === 429) return "http_429";
  if (status === 401) return "http_401";
  if (status === 403) return "http_403";
  if (status >= 500) return "http_5xx";
  if ((status === 400 || status === 413 || status === 422) && isContextLengthError(code, message))
    return "context_length_exceeded";
  return "http_4xx";
}

/**
 * Turns whatever a transport threw into a `ProviderError`. Aborts come out as `timeout`;
 * the retry loop, which knows whether the operator or the clock fired, re-labels them.
 */
export function classifyError(err: unknown, ctx: ClassifyContext): ProviderError {
  if (err instanceof ProviderError) return err;
  const secrets = secretsOf(ctx.candidate);
  const base = {
    provider: ctx.candidate.provider_id,
    model_ref: ctx.candidate.model_ref,
    url: safeUrl(ctx.url),
  };
  const chain = sourceChain(err, secrets);

  if (isAbortError(err) || isSdkTimeout(err)) {
    return new ProviderError({
      kind: "timeout",
      summary: "provider request timed out",
      diagnostics: {
        stage: "request",
        ...base,
        error_flags: flags({ is_timeout: true }),
        source_chain: chain,
      },
    });
  }
  if (isConnectionError(err)) {
    return new ProviderError({
      kind: "connection_failure",
      summary: scrub(`provider connection failed: ${chain.at(-1) ?? "unknown cause"}`, secrets),
      diagnostics: {
        stage: "connect",
        ...base,
        error_flags: flags({ is_connect: true }),
        source_chain: chain,
      },
    });
  }
  if (isApiError(err)) {
    const fields = errorFields(err.error);
    const message = fields.message ?? err.message;
    if (err.status === undefined) {
      // An error event inside a stream: no HTTP status, only the provider's code.
      return streamErrorToProviderError(fields.code ?? fields.type, message, ctx);
    }
    const status = err.status;
    const kind = kindForStatus(status, fields.code ?? fields.type, message);
    return new ProviderError({
      kind,
      status,
      retryable: kind === "http_5xx" ? RETRYABLE_5XX.has(status) : undefined,
      retry_after_ms: retryAfterMs(err.headers),
      summary: scrub(
        `provider returned HTTP ${status}${fields.code ? ` (${fields.code})` : ""}: ${truncate(message, 300)}`,
        secrets,
      ),
      diagnostics: {
        stage: "response_status",
        ...base,
        status,
        error_flags: flags({ status }),
        source_chain: chain,
      },
    });
  }
  if (err instanceof SyntaxError) {
    return new ProviderError({
      kind: "invalid_json",
      summary: "provider response was not valid JSON",
      diagnostics: {
        stage: "decode",
        ...base,
        error_flags: flags({ is_decode: true }),
        source_chain: chain,
      },
    });
  }
  // Fetch failures that the SDK did not wrap (for example a reset mid-body).
  const text = chain.join(" | ");
  if (
    /ECONNRESET|ECONNREFUSED|EPIPE|socket hang up|terminated|fetch failed|other side closed/i.test(
      text,
    )
  ) {
    return new ProviderError({
      kind: "connection_failure",
      summary: "provider connection failed while reading the response",
      diagnostics: {
        stage: "response_body",
        ...base,
        error_flags: flags({ is_body: true }),
        source_chain: chain,
      },
    });
  }
  return new ProviderError({
    kind: "unknown",
    retryable: false,
    summary: scrub(
      `provider call failed: ${truncate(err instanceof Error ? err.message : String(err), 300)}`,
      secrets,
    ),
    diagnostics: {
      stage: "request",
      ...base,
      error_flags: flags({ is_request: true }),
      source_chain: chain,
    },
  });
}

/** Classifies an in-band failure (Responses `response.failed` / `error` event) by its code. */
export function streamErrorToProviderError(
  code: string | undefined,
  message: string,
  ctx: ClassifyContext,
): ProviderError {
  const secrets = secretsOf(ctx.candidate);
  const diagnostics: TransportDiagnostics = {
    stage: "stream",
    provider: ctx.candidate.provider_id,
    model_ref: ctx.candidate.model_ref,
    url: safeUrl(ctx.url),
  };
  const summary = scrub(
    `provider reported failure${code ? ` (${code})` : ""}: ${truncate(message, 300)}`,
    secrets,
  );
  let kind: ProviderFailureKind = "response_failed";
  if (isContextLengthError(code, message)) kind = "context_length_exceeded";
  else if (code === "rate_limit_exceeded" || code === "rate_limit_error") kind = "http_429";
  else if (code === "server_error" || code === "overloaded_error" || code === "api_error")
    kind = "http_5xx";
  return new ProviderError({
    kind,
    summary,
    diagnostics,
    retryable: kind === "http_429" || kind === "http_5xx",
  });
}

/** A reply that parsed as JSON but is not the shape the transport speaks. */
export function unsupportedShape(detail: string, ctx: ClassifyContext): ProviderError {
  return new ProviderError({
    kind: "unsupported_shape",
    summary: `provider response has an unsupported shape: ${detail}`,
    diagnostics: {
      stage: "decode",
      provider: ctx.candidate.provider_id,
      model_ref: ctx.candidate.model_ref,
      url: safeUrl(ctx.url),
      error_flags: flags({ is_decode: true }),
    },
  });
}
