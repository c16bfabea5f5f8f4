// The provider side of config.json: provider entries, the model catalog and model refs,
// as zod schemas. The provider layer reads configuration only through these shapes and
// `ProviderConfig`; the whole file's schema (host/config-schema.ts) is built from them.
import { z } from "zod";
import { CREDENTIAL_KINDS, CREDENTIAL_SOURCES } from "./types.ts";

export type ModelRef = { provider_id: string; model: string };

/**
 * Split `<provider_id>/<model>` at the first slash; the model part may contain more
 * slashes (`openrouter/anthropic/claude-sonnet-4`). Null when either part is empty or
 * the ref has surrounding whitespace.
 */
export function parseModelRef(ref: string): ModelRef | null {
  if (typeof ref !== "string" || ref !== ref.trim()) return null;
  const slash = ref.indexOf("/");
  if (slash <= 0 || slash === ref.length - 1) return null;
  const provider_id = ref.slice(0, slash);
  const model = ref.slice(slash + 1);
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(provider_id) || /\s/.test(model)) return null;
  return { provider_id, model };
}

/** localhost, 127.0.0.0/8, ::1 and *.localhost count as local; nothing else does. */
export function isLocalBaseUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host === "::1") return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Provider ids appear in model refs and dotted config keys, so they are plain. */
export const PROVIDER_ID_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const PROFILE_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$/;
export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const ModelRefSchema = z.string().refine((s) => parseModelRef(s) !== null, {
  message: 'expected a model ref "<provider>/<model>", e.g. "openai/gpt-5.4"',
});

export const HttpUrl = z.string().refine(
  (s) => {
    try {
      const u = new URL(s);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch {
      return false;
    }
  },
  { message: "expected an http(s) URL" },
);

export const PositiveInt = z.number().int().positive();

const AuthBlock = z.strictObject({
  source: z.enum(CREDENTIAL_SOURCES),
  kind: z.enum(CREDENTIAL_KINDS).optional(),
  env: z.string().regex(ENV_NAME_RE, "expected an environment variable name").optional(),
  profile: z.string().regex(PROFILE_ID_RE, "expected a credential profile id").optional(),
  external: z.string().min(1).optional(),
});

/** One `providers.<id>` entry as written in the file (flat fields, or the RFC's `auth` block). */
export const ProviderEntryFileSchema = z.strictObject({
  display_name: z.string().min(1).optional(),
  /** Kept as a string so an unsupported transport fails one candidate, not the whole file. */
  transport: z.string().min(1).optional(),
  base_url: HttpUrl.optional(),
  credential_source: z.enum(CREDENTIAL_SOURCES).optional(),
  credential_kind: z.enum(CREDENTIAL_KINDS).optional(),
  credential_env: z.string().regex(ENV_NAME_RE, "expected an environment variable name").optional(),
  credential_profile: z
    .string()
    .regex(PROFILE_ID_RE, "expected a credential profile id")
    .optional(),
  credential_external: z.string().min(1).optional(),
  auth: AuthBlock.optional(),
  /** Extra model names to list for this provider in the catalog. */
  models: z.array(z.string().min(1)).optional(),
  /**
   * Default true: replies stream (SSE) under an idle timeout. False restores the spec's
   * non-streaming request under a total timeout.
   */
  stream: z.boolean().optional(),
  /**
   * Default true: images a tool returned (an MCP server's) are sent to the model. False for a
   * provider whose models take no images (a text-only Chat Completions server): the model
   * gets the line describing each image instead.
   */
  images: z.boolean().optional(),
});
export type ProviderEntryFile = z.infer<typeof ProviderEntryFileSchema>;
/** A provider entry with any `auth` block folded into the flat fields. */
export type ProviderEntry = Omit<ProviderEntryFile, "auth">;

/** What a model costs, in US dollars per million tokens (cached input and output priced apart). */
export const ModelPricingSchema = z.strictObject({
  input_per_mtok: z.number().nonnegative(),
  /** Input served from the prompt cache (default: the input price). */
  cached_input_per_mtok: z.number().nonnegative().optional(),
  /** Input written to the prompt cache (default: the input price). */
  cache_write_per_mtok: z.number().nonnegative().optional(),
  output_per_mtok: z.number().nonnegative(),
});
export type ModelPricing = z.infer<typeof ModelPricingSchema>;

export const CatalogEntrySchema = z.strictObject({
  display_name: z.string().min(1).optional(),
  description: z.string().optional(),
  context_window_tokens: PositiveInt.optional(),
  effective_context_window_percent: z.number().int().min(1).max(100).optional(),
  prompt_budget_estimated_tokens: PositiveInt.optional(),
  runtime_max_output_tokens: PositiveInt.optional(),
  capabilities: z.record(z.string(), z.boolean()).optional(),
  pricing: ModelPricingSchema.optional(),
});
export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;

export const UnknownFallbackSchema = z.strictObject({
  context_window_tokens: PositiveInt.optional(),
  prompt_budget_estimated_tokens: PositiveInt.optional(),
  runtime_max_output_tokens: PositiveInt.optional(),
});

/** Fold the RFC's `auth` block into the flat credential_* fields. */
export function normalizeProviderEntry(entry: ProviderEntryFile): ProviderEntry {
  const { auth, ...rest } = entry;
  if (!auth) return rest;
  const out: ProviderEntry = { ...rest, credential_source: auth.source };
  if (auth.kind) out.credential_kind = auth.kind;
  if (auth.env) out.credential_env = auth.env;
  if (auth.profile) out.credential_profile = auth.profile;
  if (auth.external) out.credential_external = auth.external;
  return out;
}

/** What the provider layer reads of the effective configuration. */
export type ProviderConfig = {
  model: {
    default: string | null;
    fallbacks: string[];
    unknown_fallback: z.infer<typeof UnknownFallbackSchema>;
  };
  models: { catalog: Record<string, CatalogEntry> };
  providers: Record<string, ProviderEntry>;
  runtime: { disable_provider_fallback: boolean };
};
