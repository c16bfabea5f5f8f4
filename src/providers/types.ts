// Shared provider-layer contracts: the seam between configuration (which provider,
// which credential) and the transports (how to speak to it).

/** The closed set of wire transports Holon can speak. */
export const PROVIDER_TRANSPORTS = [
  "openai_responses",
  "openai_chat_completions",
  "anthropic_messages",
  "openai_codex_responses",
] as const;
export type ProviderTransport = (typeof PROVIDER_TRANSPORTS)[number];

export const CREDENTIAL_SOURCES = ["env", "credential_profile", "external_cli", "none"] as const;
export type CredentialSource = (typeof CREDENTIAL_SOURCES)[number];

export const CREDENTIAL_KINDS = ["api_key", "bearer_token", "session_token", "none"] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

/** A resolved secret. `value` must never be logged, stored in events or printed. */
export type ResolvedCredential = {
  kind: CredentialKind;
  value: string;
  /** Extra request headers some credentials need (e.g. a Codex account id). */
  headers?: Record<string, string>;
  /** Where it came from, safe to show: "env:OPENAI_API_KEY", "profile:openai:default", "external_cli:codex". */
  source_label: string;
};

/**
 * One model a turn may call, fully resolved from config + credentials.
 * Built by the configuration layer, consumed by the transports and the fallback loop.
 */
export type ModelCandidate = {
  /** `<provider_id>/<model>` */
  model_ref: string;
  provider_id: string;
  model: string;
  transport: ProviderTransport;
  /** Base URL as configured (see the base URL convention in docs/configuration.md). */
  base_url: string;
  /** Null when the provider needs no credential (source/kind `none`). */
  credential: ResolvedCredential | null;
  /** Set when this candidate cannot be used (missing credential, unknown provider, ...). */
  unavailable_reason?: string;
  /** Max output tokens to request, when known. */
  max_output_tokens?: number;
  /**
   * False when the provider entry says `stream: false`: the transport sends the spec's
   * non-streaming request under a total timeout. Otherwise every transport streams (SSE)
   * under an idle timeout between chunks.
   */
  stream?: boolean;
  /** False when the provider entry says `images: false`: tool results' images are not sent. */
  images?: boolean;
};

/** Retry policy shared by the retry loop and `config providers doctor`. */
export const RETRY_POLICY = {
  max_retries: 2,
  initial_backoff_ms: 250,
  max_backoff_ms: 4_000,
  backoff_multiplier: 2,
  /** Total time for one non-streaming attempt (`stream: false`). */
  request_timeout_ms: 120_000,
  /** Longest a streaming attempt may go without receiving a byte (head or chunk). */
  idle_timeout_ms: 60_000,
  /** Longest `retry-after` / `retry-after-ms` wait honoured in place; longer ones end the turn as a wait. */
  retry_after_cap_ms: 60_000,
  retryable: ["timeout", "connection_failure", "http_429", "http_5xx"],
  fail_fast: ["http_401", "http_403", "http_4xx", "invalid_json", "unsupported_shape"],
} as const;
