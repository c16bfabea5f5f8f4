// The providers Holon knows without any configuration, and the merge of those defaults
// with the `providers.<id>` entries of config.json into one registry.
//
// Base URL convention (the transports rely on it):
// - openai_responses / openai_chat_completions / openai_codex_responses: the base URL
//   includes the version segment (`https://host/v1`); the client appends `/responses`
//   or `/chat/completions`.
// - anthropic_messages: the base URL stops before the version (`https://host`); the
//   client appends `/v1/messages`.
import {
  isLocalBaseUrl,
  type CatalogEntry,
  type ProviderConfig as EffectiveConfig,
  type ProviderEntry,
} from "./config.ts";

export { isLocalBaseUrl } from "./config.ts";
import {
  PROVIDER_TRANSPORTS,
  type CredentialKind,
  type CredentialSource,
  type ProviderTransport,
} from "./types.ts";

/** One environment variable a provider may read, and what kind of credential it holds. */
export type EnvCredential = { name: string; kind: CredentialKind };

/** How a provider obtains its credential, after defaults and config are merged. */
export type ProviderAuth = {
  source: CredentialSource;
  kind: CredentialKind;
  /** Variables tried in order (source `env`, or the env fallback of a built-in default). */
  env: EnvCredential[];
  /** Credential profile ids tried in order (source `credential_profile`). */
  profiles: string[];
  /** Named external credential source (source `external_cli`), e.g. `codex`. */
  external: string | null;
  /** True for a built-in default: try the Holon profile first, then the env vars. */
  env_fallback: boolean;
  /** True when the operator wrote the auth fields; false when they are Holon's defaults. */
  explicit: boolean;
  /** True when the operator set `credential_kind`; otherwise a stored profile's own kind applies. */
  kind_explicit: boolean;
};

export type ProviderDefinition = {
  id: string;
  display_name: string;
  /** As configured. It may name a transport Holon does not speak; see `transport_supported`. */
  transport: string;
  transport_supported: boolean;
  /** Without a trailing slash. */
  base_url: string;
  auth: ProviderAuth;
  builtin: boolean;
  /** True when config.json has an entry for this provider. */
  configured: boolean;
  /** Models Holon lists for this provider without being told (bare model names). */
  known_models: string[];
  /** Problems that make the provider unusable (e.g. a custom provider without auth). */
  problems: string[];
};

type BuiltinProvider = {
  id: string;
  display_name: string;
  transport: ProviderTransport;
  base_url: string;
  kind: CredentialKind;
  source: CredentialSource;
  env: EnvCredential[];
  /** Profiles tried first; defaults to `<id>:default` and `<id>`. */
  profiles?: string[];
  external?: string;
};

const apiKey = (...names: string[]): EnvCredential[] =>
  names.map((name) => ({ name, kind: "api_key" }));

/** Built-in providers. Each fits one of the existing transports as documented by its vendor. */
export const BUILTIN_PROVIDERS: readonly BuiltinProvider[] = [
  {
    id: "openai",
    display_name: "OpenAI",
    transport: "openai_responses",
    base_url: "https://api.openai.com/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("OPENAI_API_KEY"),
  },
  {
    id: "anthropic",
    display_name: "Anthropic",
    transport: "anthropic_messages",
    base_url: "https://api.anthropic.com",
    kind: "api_key",
    source: "credential_profile",
    env: [
      { name: "ANTHROPIC_AUTH_TOKEN", kind: "bearer_token" },
      { name: "ANTHROPIC_API_KEY", kind: "api_key" },
    ],
  },
  {
    id: "openai-codex",
    display_name: "OpenAI Codex (ChatGPT login)",
    transport: "openai_codex_responses",
    base_url: "https://chatgpt.com/backend-api/codex",
    kind: "session_token",
    source: "external_cli",
    external: "codex",
    env: [],
  },
  {
    id: "deepseek",
    display_name: "DeepSeek",
    transport: "openai_chat_completions",
    base_url: "https://api.deepseek.com/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("DEEPSEEK_API_KEY"),
  },
  {
    id: "deepseek-anthropic",
    display_name: "DeepSeek (Anthropic-compatible)",
    transport: "anthropic_messages",
    base_url: "https://api.deepseek.com/anthropic",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("DEEPSEEK_API_KEY"),
    profiles: ["deepseek-anthropic:default", "deepseek:default", "deepseek"],
  },
  {
    id: "openrouter",
    display_name: "OpenRouter",
    transport: "openai_chat_completions",
    base_url: "https://openrouter.ai/api/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("OPENROUTER_API_KEY"),
  },
  {
    id: "moonshot",
    display_name: "Moonshot AI (Kimi)",
    transport: "openai_chat_completions",
    base_url: "https://api.moonshot.ai/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("MOONSHOT_API_KEY"),
  },
  {
    id: "mistral",
    display_name: "Mistral AI",
    transport: "openai_chat_completions",
    base_url: "https://api.mistral.ai/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("MISTRAL_API_KEY"),
  },
  {
    id: "xai",
    display_name: "xAI",
    transport: "openai_chat_completions",
    base_url: "https://api.x.ai/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("XAI_API_KEY"),
  },
  {
    id: "together",
    display_name: "Together AI",
    transport: "openai_chat_completions",
    base_url: "https://api.together.ai/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("TOGETHER_API_KEY"),
  },
  {
    id: "fireworks",
    display_name: "Fireworks AI",
    transport: "openai_chat_completions",
    base_url: "https://api.fireworks.ai/inference/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("FIREWORKS_API_KEY"),
  },
  {
    id: "qwen",
    display_name: "Qwen (Alibaba Cloud Model Studio, compatible mode)",
    transport: "openai_chat_completions",
    base_url: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("QWEN_API_KEY", "DASHSCOPE_API_KEY"),
  },
  {
    id: "minimax",
    display_name: "MiniMax (Anthropic-compatible)",
    transport: "anthropic_messages",
    base_url: "https://api.minimax.io/anthropic",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("MINIMAX_API_KEY"),
  },
  {
    id: "bigmodel",
    display_name: "BigModel (Zhipu GLM)",
    transport: "openai_chat_completions",
    base_url: "https://open.bigmodel.cn/api/paas/v4",
    kind: "api_key",
    source: "credential_profile",
    env: apiKey("BIGMODEL_API_KEY"),
  },
];

const BUILTIN_BY_ID = new Map(BUILTIN_PROVIDERS.map((p) => [p.id, p]));

export function isBuiltinProvider(id: string): boolean {
  return BUILTIN_BY_ID.has(id);
}

export function isSupportedTransport(t: string): t is ProviderTransport {
  return (PROVIDER_TRANSPORTS as readonly string[]).includes(t);
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

function builtinAuth(b: BuiltinProvider): ProviderAuth {
  return {
    source: b.source,
    kind: b.kind,
    env: b.env,
    profiles: b.profiles ?? [`${b.id}:default`, b.id],
    external: b.external ?? null,
    env_fallback: b.source === "credential_profile" && b.env.length > 0,
    explicit: false,
    kind_explicit: false,
  };
}

/**
 * Auth for a provider entry. Fields the operator wrote win; a built-in fills in the rest.
 * A custom provider without a credential source gets none/none only on a local endpoint.
 */
function mergeAuth(
  id: string,
  entry: ProviderEntry,
  builtin: BuiltinProvider | undefined,
  baseUrl: string,
  problems: string[],
): ProviderAuth {
  const source = entry.credential_source;
  if (!source) {
    if (builtin) {
      const auth = builtinAuth(builtin);
      if (entry.credential_kind) {
        auth.kind = entry.credential_kind;
        auth.kind_explicit = true;
      }
      if (entry.credential_profile) auth.profiles = [entry.credential_profile];
      if (entry.credential_env) auth.env = [{ name: entry.credential_env, kind: auth.kind }];
      return auth;
    }
    if (!isLocalBaseUrl(baseUrl)) {
      problems.push(
        `custom provider "${id}" talks to a non-local endpoint but declares no credential source; set credential_source (or credential_source none with credential_kind none)`,
      );
    }
    return {
      source: "none",
      kind: "none",
      env: [],
      profiles: [],
      external: null,
      env_fallback: false,
      explicit: false,
      kind_explicit: false,
    };
  }
  const defaultKind: CredentialKind =
    source === "none" ? "none" : source === "external_cli" ? "session_token" : "api_key";
  const kind =
    entry.credential_kind ?? (builtin && source === builtin.source ? builtin.kind : defaultKind);
  const auth: ProviderAuth = {
    source,
    kind,
    env: [],
    profiles: [],
    external: null,
    env_fallback: false,
    explicit: true,
    kind_explicit: entry.credential_kind !== undefined,
  };
  if (source === "env") {
    if (entry.credential_env) auth.env = [{ name: entry.credential_env, kind }];
    else if (builtin) auth.env = builtin.env;
    else
      problems.push(`provider "${id}" reads its credential from env but names no credential_env`);
  } else if (source === "credential_profile") {
    auth.profiles = entry.credential_profile
      ? [entry.credential_profile]
      : (builtin?.profiles ?? [`${id}:default`]);
  } else if (source === "external_cli") {
    auth.external = entry.credential_external ?? builtin?.external ?? "codex";
  }
  return auth;
}

/** The provider definition for one id, or null when neither built in nor configured. */
export function providerDefinition(id: string, config: EffectiveConfig): ProviderDefinition | null {
  const builtin = BUILTIN_BY_ID.get(id);
  const entry = config.providers[id];
  if (!builtin && !entry) return null;
  const problems: string[] = [];
  const e: ProviderEntry = entry ?? {};
  const transport = e.transport ?? builtin?.transport ?? "";
  const baseUrl = stripSlash(e.base_url ?? builtin?.base_url ?? "");
  if (!transport) problems.push(`provider "${id}" has no transport`);
  if (!baseUrl) problems.push(`provider "${id}" has no base_url`);
  const auth = mergeAuth(id, e, builtin, baseUrl, problems);
  return {
    id,
    display_name: e.display_name ?? builtin?.display_name ?? id,
    transport,
    transport_supported: isSupportedTransport(transport),
    base_url: baseUrl,
    auth,
    builtin: Boolean(builtin),
    configured: Boolean(entry),
    known_models: [
      ...new Set([
        ...Object.keys(BUILTIN_MODELS)
          .filter((ref) => ref.startsWith(`${id}/`))
          .map((ref) => ref.slice(id.length + 1)),
        ...(e.models ?? []),
      ]),
    ],
    problems,
  };
}

/** Every provider: built-ins first (in their fixed order), then configured custom ones by id. */
export function providerRegistry(config: EffectiveConfig): ProviderDefinition[] {
  const ids = [
    ...BUILTIN_PROVIDERS.map((b) => b.id),
    ...Object.keys(config.providers)
      .filter((id) => !BUILTIN_BY_ID.has(id))
      .sort(),
  ];
  return ids.map((id) => providerDefinition(id, config)).filter((p) => p !== null);
}

/**
 * Metadata Holon ships for a few well-known models. Deliberately small: only facts taken
 * from the vendors' documentation; anything else comes from `models.catalog` or
 * `model.unknown_fallback`.
 */
export const BUILTIN_MODELS: Readonly<Record<string, CatalogEntry>> = {
  "openai/gpt-5.4": { display_name: "GPT-5.4", context_window_tokens: 272_000 },
  "openai/gpt-5.4-mini": { display_name: "GPT-5.4 mini" },
  "anthropic/claude-sonnet-4-6": { display_name: "Claude Sonnet 4.6" },
  "deepseek/deepseek-v4-pro": { display_name: "DeepSeek V4 Pro" },
  "deepseek/deepseek-v4-flash": { display_name: "DeepSeek V4 Flash" },
  "deepseek-anthropic/deepseek-v4-pro": { display_name: "DeepSeek V4 Pro (Anthropic API)" },
  "deepseek-anthropic/deepseek-v4-flash": { display_name: "DeepSeek V4 Flash (Anthropic API)" },
  "moonshot/kimi-k2.6": { display_name: "Kimi K2.6" },
  "mistral/mistral-large-latest": { display_name: "Mistral Large" },
  "minimax/MiniMax-M2.7": { display_name: "MiniMax M2.7", context_window_tokens: 204_800 },
};

export type ModelMetadataSource = "config_catalog" | "builtin" | "unknown_fallback";

/** Metadata for one model ref: a `models.catalog` entry over the built-in one, else the unknown-model policy. */
export function modelMetadata(
  ref: string,
  config: EffectiveConfig,
): { entry: CatalogEntry; source: ModelMetadataSource } {
  const configured = config.models.catalog[ref];
  const builtin = BUILTIN_MODELS[ref];
  if (configured) return { entry: { ...builtin, ...configured }, source: "config_catalog" };
  if (builtin) return { entry: builtin, source: "builtin" };
  return { entry: { ...config.model.unknown_fallback }, source: "unknown_fallback" };
}
