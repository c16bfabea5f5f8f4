// From configuration to the ordered list of models a turn may call. Pure functions over
// a snapshot (config values, credential store, environment, Codex login); the host's
// ConfigSource produces fresh snapshots, tests build them by hand.
import { parseModelRef, type ProviderConfig as EffectiveConfig } from "./config.ts";
import { modelMetadata, providerDefinition, type ProviderDefinition } from "./builtin.ts";
import { readCodexAuth, type CodexAuth } from "./codex-auth.ts";
import type { CredentialsSnapshot } from "./credentials.ts";
import { PROVIDER_TRANSPORTS, type ModelCandidate, type ResolvedCredential } from "./types.ts";

export { parseModelRef, type ModelRef } from "./config.ts";

/** Everything resolution reads, captured at one moment. */
export type ResolutionInputs = {
  config: EffectiveConfig;
  credentials: CredentialsSnapshot;
  env: Record<string, string | undefined>;
  /** Reads the Codex login; called only when a provider needs it. */
  codexAuth?: () => CodexAuth;
};

export type CredentialStatus = "configured" | "missing" | "not_required" | "error";

export type CredentialResolution = {
  status: CredentialStatus;
  credential: ResolvedCredential | null;
  /** Safe to show: where the credential came from, or where Holon looked. */
  source_label: string | null;
  /** Why no credential is available (status missing/error). */
  reason: string | null;
};

/** Resolve one provider's credential. Never throws; never returns secret text anywhere but `credential.value`. */
export function resolveCredential(
  def: ProviderDefinition,
  inputs: ResolutionInputs,
): CredentialResolution {
  const auth = def.auth;
  const none = (
    status: CredentialStatus,
    reason: string | null,
    label: string | null = null,
  ): CredentialResolution => ({ status, credential: null, source_label: label, reason });

  if (auth.source === "none") return none("not_required", null, "none");

  if (auth.source === "external_cli") {
    if (auth.external !== "codex") {
      return none("error", `unsupported external credential source "${auth.external}"`);
    }
    const codex = (inputs.codexAuth ?? (() => readCodexAuth(inputs.env)))();
    if (codex.credential) {
      return {
        status: "configured",
        credential: codex.credential,
        source_label: codex.credential.source_label,
        reason: null,
      };
    }
    return none(
      codex.status === "missing" ? "missing" : "error",
      codex.reason,
      "external_cli:codex",
    );
  }

  const tried: string[] = [];
  let storeError: string | null = null;
  if (auth.source === "credential_profile") {
    for (const profile of auth.profiles) {
      const stored = inputs.credentials.profiles[profile];
      if (stored) {
        const kind = auth.kind_explicit && auth.kind !== "none" ? auth.kind : stored.kind;
        return {
          status: "configured",
          credential: { kind, value: stored.material, source_label: `profile:${profile}` },
          source_label: `profile:${profile}`,
          reason: null,
        };
      }
    }
    if (inputs.credentials.error) {
      storeError = `${inputs.credentials.error.message} (${inputs.credentials.error.hint})`;
    }
    if (auth.profiles.length > 0) {
      tried.push(`credential profile ${auth.profiles[0]} is not stored`);
    }
  }
  if (auth.source === "env" || auth.env_fallback) {
    for (const v of auth.env) {
      const value = inputs.env[v.name]?.trim();
      if (value) {
        return {
          status: "configured",
          credential: { kind: v.kind, value, source_label: `env:${v.name}` },
          source_label: `env:${v.name}`,
          reason: null,
        };
      }
    }
    if (auth.env.length > 0) tried.push(`${auth.env.map((v) => v.name).join(" / ")} not set`);
  }
  const fix =
    auth.source === "credential_profile" && auth.profiles[0]
      ? `; store one with: holon config credentials set ${auth.profiles[0]} --kind ${auth.kind === "none" ? "api_key" : auth.kind} --stdin`
      : "";
  if (storeError) {
    return none("error", `no credential for provider "${def.id}": ${storeError}`);
  }
  return none(
    "missing",
    `no credential for provider "${def.id}": ${tried.join(", ") || "nothing configured"}${fix}`,
  );
}

/**
 * The ordered, deduplicated list of model refs to try: the agent override (or the runtime
 * default) first, then — unless provider fallback is disabled — the runtime default (when
 * an override displaced it) and `model.fallbacks`.
 */
export function modelChain(config: EffectiveConfig, override?: string | null): string[] {
  const first = override || config.model.default;
  if (!first) return [];
  if (config.runtime.disable_provider_fallback) return [first];
  const chain = [first];
  if (override && config.model.default) chain.push(config.model.default);
  chain.push(...config.model.fallbacks);
  return [...new Set(chain)];
}

/** Fallback transport reported on unusable candidates; never used to make a call. */
const PLACEHOLDER_TRANSPORT = PROVIDER_TRANSPORTS[0];

/** One model ref turned into a candidate (available, or with `unavailable_reason`). */
export function resolveCandidate(ref: string, inputs: ResolutionInputs): ModelCandidate {
  const parsed = parseModelRef(ref);
  const unusable = (reason: string, partial: Partial<ModelCandidate> = {}): ModelCandidate => ({
    model_ref: ref,
    provider_id: parsed?.provider_id ?? "",
    model: parsed?.model ?? "",
    transport: PLACEHOLDER_TRANSPORT,
    base_url: "",
    credential: null,
    ...partial,
    unavailable_reason: reason,
  });
  if (!parsed) return unusable(`invalid model ref "${ref}": expected <provider>/<model>`);
  const def = providerDefinition(parsed.provider_id, inputs.config);
  if (!def) {
    return unusable(
      `unknown provider "${parsed.provider_id}"; add it with: holon config providers set ${parsed.provider_id} --transport <transport> --base-url <url> ...`,
    );
  }
  if (!def.transport_supported) {
    return unusable(
      `provider "${def.id}" uses transport "${def.transport}", which Holon does not support (supported: ${PROVIDER_TRANSPORTS.join(", ")})`,
      { base_url: def.base_url },
    );
  }
  const transport = def.transport as ModelCandidate["transport"];
  if (def.problems.length > 0) {
    return unusable(def.problems.join("; "), { transport, base_url: def.base_url });
  }
  const meta = modelMetadata(ref, inputs.config).entry;
  const base: ModelCandidate = {
    model_ref: ref,
    provider_id: def.id,
    model: parsed.model,
    transport,
    base_url: def.base_url,
    credential: null,
  };
  if (meta.runtime_max_output_tokens !== undefined) {
    base.max_output_tokens = meta.runtime_max_output_tokens;
  }
  if (inputs.config.providers[def.id]?.stream === false) base.stream = false;
  if (inputs.config.providers[def.id]?.images === false) base.images = false;
  const cred = resolveCredential(def, inputs);
  if (cred.status === "configured" || cred.status === "not_required") {
    return { ...base, credential: cred.credential };
  }
  return { ...base, unavailable_reason: cred.reason ?? `no credential for provider "${def.id}"` };
}

/**
 * The candidates a turn tries, in order. Unusable ones stay in the list with
 * `unavailable_reason` set so the caller can skip them and record why.
 */
export function resolveModelCandidates(
  inputs: ResolutionInputs,
  opts: { override?: string | null } = {},
): ModelCandidate[] {
  return modelChain(inputs.config, opts.override).map((ref) => resolveCandidate(ref, inputs));
}

/** Model selection as status surfaces show it (the spec's AgentModelState, snake_case). */
export type AgentModelState = {
  source: "runtime_default" | "agent_override";
  /** Null when no `model.default` (or HOLON_MODEL) is configured. */
  runtime_default_model: string | null;
  effective_model: string | null;
  effective_fallback_models: string[];
  override_model?: string;
  provider_fallback_disabled: boolean;
};

export function agentModelState(
  config: EffectiveConfig,
  override?: string | null,
): AgentModelState {
  const chain = modelChain(config, override);
  const state: AgentModelState = {
    source: override ? "agent_override" : "runtime_default",
    runtime_default_model: config.model.default,
    effective_model: chain[0] ?? null,
    effective_fallback_models: chain.slice(1),
    provider_fallback_disabled: config.runtime.disable_provider_fallback,
  };
  if (override) state.override_model = override;
  return state;
}
