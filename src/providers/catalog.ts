// The model catalog behind `GET /models` and `holon config models list`: built-in models,
// `models.catalog` entries, models configured per provider, and the configured default and
// fallbacks, each with whether Holon could call it right now.
import type { CatalogEntry } from "./config.ts";
import {
  BUILTIN_MODELS,
  modelMetadata,
  providerDefinition,
  providerRegistry,
  type ModelMetadataSource,
} from "./builtin.ts";
import { parseModelRef, resolveCandidate, type ResolutionInputs } from "./resolve.ts";

export type CatalogModel = {
  /** The full model ref, `<provider>/<model>`. */
  id: string;
  display_name: string;
  provider: string;
  model: string;
  /** Empty when the provider is unknown. */
  transport: string;
  available: boolean;
  unavailable_reason?: string;
  /** Safe to show: e.g. "env:OPENAI_API_KEY", "profile:openai:default", "none". */
  credential_source?: string;
  is_default: boolean;
  is_fallback: boolean;
  metadata_source: ModelMetadataSource;
  context_window_tokens?: number;
  runtime_max_output_tokens?: number;
  prompt_budget_estimated_tokens?: number;
  capabilities?: Record<string, boolean>;
};

export type ModelListing = {
  available_models: CatalogModel[];
  model_availability: Record<string, boolean>;
};

function catalogModel(ref: string, inputs: ResolutionInputs): CatalogModel {
  const cfg = inputs.config;
  const parsed = parseModelRef(ref);
  const candidate = resolveCandidate(ref, inputs);
  const { entry, source } = modelMetadata(ref, cfg);
  const def = parsed ? providerDefinition(parsed.provider_id, cfg) : null;
  const out: CatalogModel = {
    id: ref,
    display_name: entry.display_name ?? parsed?.model ?? ref,
    provider: parsed?.provider_id ?? "",
    model: parsed?.model ?? "",
    transport: def?.transport ?? "",
    available: candidate.unavailable_reason === undefined,
    is_default: cfg.model.default === ref,
    is_fallback: cfg.model.fallbacks.includes(ref),
    metadata_source: source,
  };
  if (candidate.unavailable_reason !== undefined)
    out.unavailable_reason = candidate.unavailable_reason;
  if (candidate.credential) out.credential_source = candidate.credential.source_label;
  else if (out.available) out.credential_source = "none";
  copyMeta(out, entry);
  return out;
}

function copyMeta(out: CatalogModel, entry: CatalogEntry): void {
  if (entry.context_window_tokens !== undefined)
    out.context_window_tokens = entry.context_window_tokens;
  if (entry.runtime_max_output_tokens !== undefined)
    out.runtime_max_output_tokens = entry.runtime_max_output_tokens;
  if (entry.prompt_budget_estimated_tokens !== undefined)
    out.prompt_budget_estimated_tokens = entry.prompt_budget_estimated_tokens;
  if (entry.capabilities !== undefined) out.capabilities = entry.capabilities;
}

/**
 * Every model Holon knows about: the configured default and fallbacks first (in chain
 * order), then `models.catalog` entries, provider-listed models and built-in models,
 * sorted by ref. Each ref appears once.
 */
export function listModels(inputs: ResolutionInputs): ModelListing {
  const cfg = inputs.config;
  const refs: string[] = [];
  if (cfg.model.default) refs.push(cfg.model.default);
  refs.push(...cfg.model.fallbacks);
  const rest = new Set<string>(Object.keys(cfg.models.catalog));
  for (const p of providerRegistry(cfg)) {
    for (const m of p.known_models) rest.add(`${p.id}/${m}`);
  }
  for (const ref of Object.keys(BUILTIN_MODELS)) rest.add(ref);
  refs.push(...[...rest].sort());
  const seen = new Set<string>();
  const models: CatalogModel[] = [];
  for (const ref of refs) {
    if (seen.has(ref)) continue;
    seen.add(ref);
    models.push(catalogModel(ref, inputs));
  }
  return {
    available_models: models,
    model_availability: Object.fromEntries(models.map((m) => [m.id, m.available])),
  };
}
