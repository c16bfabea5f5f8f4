// The shape of <holon_home>/config.json: zod schemas, the list of settable keys (what
// `holon config schema` prints), defaults and environment overrides. No file I/O here.
import { z } from "zod";
import type { KeyDef, KeyType } from "./config-keys.ts";
import {
  RETENTION_KEY_DEFS,
  RetentionFileSchema,
  effectiveRetention,
  type RetentionPolicy,
} from "./retention-config.ts";
import {
  SANDBOX_KEY_DEFS,
  SandboxFileSchema,
  effectiveSandbox,
  type SandboxConfig,
} from "../sandbox/config.ts";
import { CREDENTIAL_KINDS, CREDENTIAL_SOURCES, PROVIDER_TRANSPORTS } from "../providers/types.ts";
import { isBuiltinProvider } from "../providers/builtin.ts";
import {
  CatalogEntrySchema,
  ENV_NAME_RE,
  HttpUrl,
  ModelRefSchema,
  PROFILE_ID_RE,
  PROVIDER_ID_RE,
  PositiveInt,
  ProviderEntryFileSchema,
  UnknownFallbackSchema,
  isLocalBaseUrl,
  normalizeProviderEntry,
  type CatalogEntry,
  type ProviderEntry,
} from "../providers/config.ts";

export {
  ModelRefSchema,
  PROVIDER_ID_RE,
  PROFILE_ID_RE,
  normalizeProviderEntry,
} from "../providers/config.ts";
export type { CatalogEntry, ProviderEntry } from "../providers/config.ts";
import { ExternalEvidenceMode, PermissionMode } from "../domain/policy.ts";
import { HostHooksSchema, HostPermissionsSchema, RuleListSchema } from "../policy/config.ts";
import { McpFileSchema, effectiveMcp, type McpConfig } from "../mcp/config.ts";
import { DATABASE_URL_ENV, databaseUrlProblem } from "./database-url.ts";

/** A Postgres URL (store.database_url); the message never repeats the value, a secret. */
const DatabaseUrl = z.string().superRefine((s, ctx) => {
  const problem = s.length > 4096 ? "longer than 4096 characters" : databaseUrlProblem(s);
  if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
});
const DatabaseCredential = z
  .string()
  .regex(PROFILE_ID_RE, "expected a credential profile id, e.g. postgres:holon");

const ConfigFileBase = z.strictObject({
  model: z
    .strictObject({
      default: ModelRefSchema.optional(),
      fallbacks: z.array(ModelRefSchema).optional(),
      unknown_fallback: UnknownFallbackSchema.optional(),
    })
    .optional(),
  models: z
    .strictObject({
      catalog: z.record(ModelRefSchema, CatalogEntrySchema).optional(),
    })
    .optional(),
  providers: z
    .record(
      z.string().regex(PROVIDER_ID_RE, "provider ids are lowercase letters, digits, '-' or '_'"),
      ProviderEntryFileSchema,
    )
    .optional(),
  runtime: z
    .strictObject({
      disable_provider_fallback: z.boolean().optional(),
      default_tool_output_tokens: PositiveInt.optional(),
      max_tool_output_tokens: PositiveInt.optional(),
      command_env_allow: z.array(z.string().regex(ENV_NAME_RE)).optional(),
      max_command_output_bytes: PositiveInt.optional(),
    })
    .optional(),
  retention: RetentionFileSchema.optional(),
  sandbox: SandboxFileSchema.optional(),
  workspaces: z
    .strictObject({ attach_policy: z.enum(["any_readable", "operator_attached"]).optional() })
    .optional(),
  control_token: z.string().min(1).optional(),
  /** Where the records live: Postgres when a URL is set (host/database-url.ts), else SQLite. */
  store: z
    .strictObject({
      database_url: DatabaseUrl.optional(),
      database_credential: DatabaseCredential.optional(),
    })
    .optional(),
  asks: z.strictObject({ expiry_hours: PositiveInt.optional() }).optional(),
  console: z
    .strictObject({
      persist_sessions: z.boolean().optional(),
      session_hours: z.number().int().min(1).max(720).optional(),
    })
    .optional(),
  agents: z
    .strictObject({
      max_spawn_depth: PositiveInt.optional(),
      max_live_children: PositiveInt.optional(),
    })
    .optional(),
  context: z
    .strictObject({
      keep_recent_rounds: z.number().int().min(1).max(50).optional(),
      recap_share_percent: z.number().int().min(1).max(50).optional(),
      remote_compaction: z.boolean().optional(),
    })
    .optional(),
  tui: z
    .strictObject({
      alternate_screen: z.enum(["auto", "always", "never"]).optional(),
    })
    .optional(),
  telemetry: z
    .strictObject({
      metrics: z
        .strictObject({
          enabled: z.boolean().optional(),
          max_agents: z.number().int().min(0).max(10_000).optional(),
          /** The same metrics over OTLP/HTTP (src/telemetry/metrics.ts); OTEL_* variables win. */
          otlp_enabled: z.boolean().optional(),
          otlp_endpoint: z.url().max(2048).optional(),
          otlp_headers: z.record(z.string().max(256), z.string().max(4096)).optional(),
          otlp_interval_ms: z.number().int().min(1000).max(86_400_000).optional(),
        })
        .optional(),
      /** OpenTelemetry traces over OTLP/HTTP (src/telemetry/tracing.ts); OTEL_* variables win. */
      traces: z
        .strictObject({
          enabled: z.boolean().optional(),
          endpoint: z.url().max(2048).optional(),
          headers: z.record(z.string().max(256), z.string().max(4096)).optional(),
          capture_content: z.boolean().optional(),
          max_queue_spans: z.number().int().min(16).max(100_000).optional(),
        })
        .optional(),
    })
    .optional(),
  /** The action leash, host level (src/policy/): permission mode, rules, taint handling. */
  permissions: HostPermissionsSchema.optional(),
  /** Hooks run around tool calls and turns (Claude Code's shape). */
  hooks: HostHooksSchema.optional(),
  /** MCP servers every root agent may use (src/mcp/config.ts; `holon mcp add`). */
  mcp: McpFileSchema.optional(),
});

/** Cross-field rules: auth shape, custom providers, `auth` vs flat fields. */
function checkProviders(cfg: z.infer<typeof ConfigFileBase>, ctx: z.RefinementCtx): void {
  for (const [id, entry] of Object.entries(cfg.providers ?? {})) {
    const at = (field: string) => ["providers", id, field];
    const hasFlat =
      entry.credential_source !== undefined ||
      entry.credential_kind !== undefined ||
      entry.credential_env !== undefined ||
      entry.credential_profile !== undefined ||
      entry.credential_external !== undefined;
    if (entry.auth && hasFlat) {
      ctx.addIssue({
        code: "custom",
        path: at("auth"),
        message: "use either the auth block or the credential_* fields, not both",
      });
      continue;
    }
    const p = normalizeProviderEntry(entry);
    const builtin = isBuiltinProvider(id);
    if (!builtin) {
      if (!p.transport)
        ctx.addIssue({
          code: "custom",
          path: at("transport"),
          message: "required for a custom provider",
        });
      if (!p.base_url)
        ctx.addIssue({
          code: "custom",
          path: at("base_url"),
          message: "required for a custom provider",
        });
      if (p.base_url && !p.credential_source && !isLocalBaseUrl(p.base_url)) {
        ctx.addIssue({
          code: "custom",
          path: at("credential_source"),
          message:
            "a custom provider on a non-local endpoint must declare its credential source (use none with credential_kind none if it really needs no credential)",
        });
      }
    }
    if (p.credential_source === "none" && p.credential_kind && p.credential_kind !== "none") {
      ctx.addIssue({
        code: "custom",
        path: at("credential_kind"),
        message: `credential_source none sends no credential, so credential_kind must be none (got ${p.credential_kind})`,
      });
    }
    if (p.credential_source && p.credential_source !== "none" && p.credential_kind === "none") {
      ctx.addIssue({
        code: "custom",
        path: at("credential_kind"),
        message: `credential_kind none only goes with credential_source none (got ${p.credential_source})`,
      });
    }
    if (p.credential_source === "env" && !p.credential_env && !builtin) {
      ctx.addIssue({
        code: "custom",
        path: at("credential_env"),
        message: "credential_source env needs credential_env (the variable to read)",
      });
    }
    if (
      p.credential_source === "external_cli" &&
      p.credential_external &&
      p.credential_external !== "codex"
    ) {
      ctx.addIssue({
        code: "custom",
        path: at("credential_external"),
        message: `unsupported external credential source "${p.credential_external}" (supported: codex)`,
      });
    }
  }
}

export const ConfigFileSchema = ConfigFileBase.superRefine(checkProviders);
export type ConfigFile = z.infer<typeof ConfigFileSchema>;

// ---------------------------------------------------------------------------------------
// Effective configuration: the file plus defaults plus environment overrides.

export const DEFAULTS = {
  default_tool_output_tokens: 8_000,
  max_tool_output_tokens: 64_000,
  max_command_output_bytes: 64 * 1024 * 1024,
} as const;

export type EffectiveConfig = {
  model: {
    /** Null when nothing is configured: turns then fail with an explanation. */
    default: string | null;
    fallbacks: string[];
    unknown_fallback: z.infer<typeof UnknownFallbackSchema>;
  };
  models: { catalog: Record<string, CatalogEntry> };
  providers: Record<string, ProviderEntry>;
  runtime: {
    disable_provider_fallback: boolean;
    default_tool_output_tokens: number;
    max_tool_output_tokens: number;
    /** Variables commands keep although a secret rule would remove them (tasks/env.ts). */
    command_env_allow: string[];
    /** Cap on each output file of a command or task; the middle is dropped beyond it. */
    max_command_output_bytes: number;
  };
  retention: RetentionPolicy;
  /** Host-level sandbox settings (src/sandbox/config.ts); agents may override some. */
  sandbox: SandboxConfig;
  workspaces: { attach_policy: "any_readable" | "operator_attached" };
  control_token: string | null;
  /**
   * The store: a Postgres URL as configured (HOLON_DATABASE_URL wins; a secret, never printed
   * unmasked) and the credential profile holding its password. Null: the embedded SQLite file.
   * The URL the host connects with is resolveDatabaseUrl's (host/database-url.ts).
   */
  store: { database_url: string | null; database_credential: string | null };
  /** Context management (src/memory/budget.ts ContextSettings). */
  context: { keep_recent_rounds: number; recap_share_percent: number; remote_compaction: boolean };
  tui: { alternate_screen: "auto" | "always" | "never" };
  /** `GET /metrics` (telemetry/metrics.ts): on or off, and how many agents get a label. */
  telemetry: {
    metrics: { enabled: boolean; max_agents: number };
    /** Traces: on or off, whether content is exported (the rest is read by tracing.ts). */
    traces: { enabled: boolean; capture_content: boolean };
  };
  /** The agent plane: how deep spawning may nest, how many live children one agent has. */
  agents: { max_spawn_depth: number; max_live_children: number };
  /** Asks (src/asks/): how long an unanswered ask stands before it expires. */
  asks: { expiry_hours: number };
  /** MCP servers of the host and when idle ones stop (src/mcp/). */
  mcp: McpConfig;
  /** The web console (http/console-sessions.ts): session lifetime, kept across restarts or not. */
  console: { persist_sessions: boolean; session_hours: number };
};

/** Where an effective value came from. */
export type ValueSource = "default" | "config" | "env";

export type EnvOverride = { key: string; env: string };

export type Effective = {
  values: EffectiveConfig;
  overrides: EnvOverride[];
  warnings: string[];
};

function envInt(
  env: Record<string, string | undefined>,
  name: string,
  warnings: string[],
): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  const n = Number(raw.trim());
  if (!Number.isInteger(n) || n <= 0) {
    warnings.push(`${name}=${JSON.stringify(raw)} is not a positive integer; ignored`);
    return undefined;
  }
  return n;
}

export function effectiveConfig(
  file: ConfigFile,
  env: Record<string, string | undefined> = process.env,
): Effective {
  const overrides: EnvOverride[] = [];
  const warnings: string[] = [];
  const providers: Record<string, ProviderEntry> = {};
  for (const [id, entry] of Object.entries(file.providers ?? {})) {
    providers[id] = normalizeProviderEntry(entry);
  }
  let modelDefault = file.model?.default ?? null;
  const envModel = env.HOLON_MODEL?.trim();
  if (envModel) {
    modelDefault = envModel;
    overrides.push({ key: "model.default", env: "HOLON_MODEL" });
  }
  let defTool = file.runtime?.default_tool_output_tokens ?? DEFAULTS.default_tool_output_tokens;
  const envDef = envInt(env, "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS", warnings);
  if (envDef !== undefined) {
    defTool = envDef;
    overrides.push({
      key: "runtime.default_tool_output_tokens",
      env: "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS",
    });
  }
  let maxTool = file.runtime?.max_tool_output_tokens ?? DEFAULTS.max_tool_output_tokens;
  const envMax = envInt(env, "HOLON_MAX_TOOL_OUTPUT_TOKENS", warnings);
  if (envMax !== undefined) {
    maxTool = envMax;
    overrides.push({ key: "runtime.max_tool_output_tokens", env: "HOLON_MAX_TOOL_OUTPUT_TOKENS" });
  }
  if (defTool > maxTool) {
    warnings.push(
      `runtime.default_tool_output_tokens (${defTool}) is above runtime.max_tool_output_tokens (${maxTool}); using ${maxTool}`,
    );
    defTool = maxTool;
  }
  let controlToken = file.control_token ?? null;
  if (env.HOLON_CONTROL_TOKEN) {
    controlToken = env.HOLON_CONTROL_TOKEN;
    overrides.push({ key: "control_token", env: "HOLON_CONTROL_TOKEN" });
  }
  // An empty variable is unset; a malformed one is kept, so the host refuses it at start
  // (resolveDatabaseUrl) instead of quietly falling back to the embedded store.
  let databaseUrl = file.store?.database_url ?? null;
  const envDatabaseUrl = env[DATABASE_URL_ENV];
  if (envDatabaseUrl !== undefined && envDatabaseUrl.trim() !== "") {
    databaseUrl = envDatabaseUrl;
    overrides.push({ key: "store.database_url", env: DATABASE_URL_ENV });
  }
  return {
    values: {
      model: {
        default: modelDefault,
        fallbacks: file.model?.fallbacks ?? [],
        unknown_fallback: file.model?.unknown_fallback ?? {},
      },
      models: { catalog: file.models?.catalog ?? {} },
      providers,
      runtime: {
        disable_provider_fallback: file.runtime?.disable_provider_fallback ?? false,
        command_env_allow: file.runtime?.command_env_allow ?? [],
        max_command_output_bytes:
          file.runtime?.max_command_output_bytes ?? DEFAULTS.max_command_output_bytes,
        default_tool_output_tokens: defTool,
        max_tool_output_tokens: maxTool,
      },
      retention: effectiveRetention(file.retention),
      sandbox: effectiveSandbox(file.sandbox),
      workspaces: { attach_policy: file.workspaces?.attach_policy ?? "any_readable" },
      control_token: controlToken,
      store: {
        database_url: databaseUrl,
        database_credential: file.store?.database_credential ?? null,
      },
      context: {
        keep_recent_rounds: file.context?.keep_recent_rounds ?? 2,
        recap_share_percent: file.context?.recap_share_percent ?? 15,
        remote_compaction: file.context?.remote_compaction ?? false,
      },
      tui: { alternate_screen: file.tui?.alternate_screen ?? "auto" },
      telemetry: {
        metrics: {
          enabled: file.telemetry?.metrics?.enabled ?? false,
          max_agents: file.telemetry?.metrics?.max_agents ?? 100,
        },
        traces: {
          enabled: file.telemetry?.traces?.enabled ?? false,
          capture_content: file.telemetry?.traces?.capture_content ?? false,
        },
      },
      agents: {
        max_spawn_depth: file.agents?.max_spawn_depth ?? 1,
        max_live_children: file.agents?.max_live_children ?? 8,
      },
      asks: { expiry_hours: file.asks?.expiry_hours ?? 168 },
      mcp: effectiveMcp(file.mcp),
      console: {
        persist_sessions: file.console?.persist_sessions ?? false,
        session_hours: file.console?.session_hours ?? 12,
      },
    },
    overrides,
    warnings,
  };
}

// ---------------------------------------------------------------------------------------
// The key schema: every key `holon config get/set/unset` accepts.

export type { KeyDef, KeyType };

const providerField = (
  field: string,
  type: KeyType,
  description: string,
  schema: z.ZodType,
  values?: readonly string[],
): KeyDef => ({
  key: `providers.<id>.${field}`,
  type,
  description,
  schema,
  ...(values ? { values } : {}),
});

export const KEY_DEFS: readonly KeyDef[] = [
  {
    key: "permissions.mode",
    type: "enum",
    default: "trusted",
    values: ["trusted", "ask", "read_only"],
    description:
      "Default permission mode of every agent: trusted (rules only), ask (anything not allowed asks), read_only",
    schema: PermissionMode,
  },
  ...(["allow", "ask", "deny"] as const).map((list): KeyDef => ({
    key: `permissions.${list}`,
    type: "string_list",
    default: [],
    description: `Host-level ${list} rules, e.g. ["ExecCommand(git push:*)", "ApplyPatch(src/**)"]`,
    schema: RuleListSchema,
  })),
  {
    key: "permissions.external_evidence_mode",
    type: "enum",
    default: "ask",
    values: ["ask", "read_only", "agent_mode"],
    description:
      "How a turn triggered by external evidence (public enqueue, unauthenticated webhook) runs: ask, read_only, or the agent's own mode",
    schema: ExternalEvidenceMode,
  },
  {
    key: "hooks",
    type: "json_object",
    description:
      'Host-level hooks: {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "..."}]}]}',
    schema: HostHooksSchema,
  },
  {
    key: "model.default",
    type: "model_ref",
    default: null,
    env: "HOLON_MODEL",
    description: "Model every agent uses unless it has its own override (<provider>/<model>)",
    schema: ModelRefSchema,
  },
  {
    key: "model.fallbacks",
    type: "model_ref_list",
    default: [],
    description: "Models tried in order when the default (or an agent's override) fails",
    schema: z.array(ModelRefSchema),
  },
  {
    key: "model.unknown_fallback.context_window_tokens",
    type: "integer",
    description: "Context window assumed for models without catalog metadata",
    schema: PositiveInt,
  },
  {
    key: "model.unknown_fallback.prompt_budget_estimated_tokens",
    type: "integer",
    description: "Prompt budget assumed for models without catalog metadata",
    schema: PositiveInt,
  },
  {
    key: "model.unknown_fallback.runtime_max_output_tokens",
    type: "integer",
    description: "Max output tokens requested from models without catalog metadata",
    schema: PositiveInt,
  },
  {
    key: "models.catalog.<model_ref>",
    type: "json_object",
    description:
      "Metadata for one model: display_name, context_window_tokens, effective_context_window_percent, prompt_budget_estimated_tokens, runtime_max_output_tokens, capabilities",
    schema: CatalogEntrySchema,
  },
  {
    key: "context.keep_recent_rounds",
    type: "integer",
    default: 2,
    description: "Completed rounds a compacted turn keeps exactly, after the recap (1-50)",
    schema: z.number().int().min(1).max(50),
  },
  {
    key: "context.recap_share_percent",
    type: "integer",
    default: 15,
    description: "Most of the context window the turn-local recap may use, in percent (1-50)",
    schema: z.number().int().min(1).max(50),
  },
  {
    key: "context.remote_compaction",
    type: "boolean",
    default: false,
    description:
      "On the OpenAI Responses transport, ask the provider to compact the conversation when the local recap is not enough",
    schema: z.boolean(),
  },
  {
    key: "workspaces.attach_policy",
    type: "enum",
    default: "any_readable",
    values: ["any_readable", "operator_attached"],
    description:
      "Whether an agent may attach any directory its user can read through UseWorkspace (any_readable), or only use workspaces an operator attached (operator_attached)",
    schema: z.enum(["any_readable", "operator_attached"]),
  },
  {
    key: "runtime.disable_provider_fallback",
    type: "boolean",
    default: false,
    description: "Only ever try the effective model; never fall back to another one",
    schema: z.boolean(),
  },
  {
    key: "runtime.default_tool_output_tokens",
    type: "integer",
    default: DEFAULTS.default_tool_output_tokens,
    env: "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS",
    description: "Estimated-token budget for one tool result shown to the model",
    schema: PositiveInt,
  },
  {
    key: "runtime.max_tool_output_tokens",
    type: "integer",
    default: DEFAULTS.max_tool_output_tokens,
    env: "HOLON_MAX_TOOL_OUTPUT_TOKENS",
    description: "Upper bound any tool may ask for its result budget",
    schema: PositiveInt,
  },
  {
    key: "runtime.command_env_allow",
    type: "string_list",
    default: [],
    description:
      "Environment variables commands may see although they look like secrets (*_API_KEY, *_TOKEN, *_SECRET, *_PASSWORD, provider credentials)",
    schema: z.array(z.string().regex(ENV_NAME_RE, "expected an environment variable name")),
  },
  {
    key: "runtime.max_command_output_bytes",
    type: "integer",
    default: DEFAULTS.max_command_output_bytes,
    description:
      "Cap on each output file of a command or task; beyond it the head and tail are kept and the middle dropped",
    schema: PositiveInt,
  },
  {
    key: "agents.max_spawn_depth",
    type: "integer",
    default: 1,
    description:
      "How deep SpawnAgent may nest: 1 lets root agents spawn children that cannot spawn again",
    schema: PositiveInt,
  },
  {
    key: "agents.max_live_children",
    type: "integer",
    default: 8,
    description: "Private children one agent may supervise at the same time",
    schema: PositiveInt,
  },
  {
    key: "asks.expiry_hours",
    type: "integer",
    default: 168,
    description:
      "Hours an unanswered ask stands before it expires (an expired budget ask keeps holding; an expired question tells the agent)",
    schema: PositiveInt,
  },
  {
    key: "console.persist_sessions",
    type: "boolean",
    default: false,
    description:
      "Keep web console sessions across a host restart (their digests in run/console-sessions.json); off, a restart logs every browser out",
    schema: z.boolean(),
  },
  {
    key: "console.session_hours",
    type: "integer",
    default: 12,
    description: "Hours a web console session lasts after its login (1 to 720)",
    schema: z.number().int().min(1).max(720),
  },
  ...RETENTION_KEY_DEFS,
  ...SANDBOX_KEY_DEFS,
  {
    key: "control_token",
    type: "string",
    default: null,
    env: "HOLON_CONTROL_TOKEN",
    secret: true,
    description: "Bearer token the control plane requires (clients send it too)",
    schema: z.string().min(1),
  },
  {
    key: "store.database_url",
    type: "url",
    default: null,
    env: DATABASE_URL_ENV,
    secret: true,
    description:
      "Keep the records in this Postgres database (postgres://user[:password]@host[:port]/db[?sslmode=...]) instead of <home>/holon.db; read at host start, shown with the password masked, never given to commands",
    schema: DatabaseUrl,
  },
  {
    key: "store.database_credential",
    type: "string",
    default: null,
    description:
      "Credential profile whose secret is the database password, used when store.database_url carries none (holon config credentials set <profile> --kind api_key --stdin)",
    schema: DatabaseCredential,
  },
  {
    key: "tui.alternate_screen",
    type: "enum",
    default: "auto",
    values: ["auto", "always", "never"],
    description: "Whether the terminal UI uses the alternate screen buffer",
    schema: z.enum(["auto", "always", "never"]),
  },
  {
    key: "telemetry.metrics.enabled",
    type: "boolean",
    default: false,
    description: "Serve Prometheus metrics at GET /metrics (read at host start)",
    schema: z.boolean(),
  },
  {
    key: "telemetry.metrics.max_agents",
    type: "integer",
    default: 100,
    description:
      "How many public agents get an agent label of their own in metrics (the rest: _other)",
    schema: z.number().int().min(0).max(10_000),
  },
  {
    key: "telemetry.metrics.otlp_enabled",
    type: "boolean",
    default: false,
    description:
      "Export the metrics over OTLP/HTTP protobuf as well, every otlp_interval_ms (read at host start; OTEL_METRICS_EXPORTER wins)",
    schema: z.boolean(),
  },
  {
    key: "telemetry.metrics.otlp_endpoint",
    type: "string",
    default: "http://localhost:4318/v1/metrics",
    description:
      "The collector's OTLP/HTTP metrics URL (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT win)",
    schema: z.url().max(2048),
  },
  {
    key: "telemetry.metrics.otlp_interval_ms",
    type: "integer",
    default: 60000,
    description: "Milliseconds between two OTLP metrics exports (OTEL_METRIC_EXPORT_INTERVAL wins)",
    schema: z.number().int().min(1000).max(86_400_000),
  },
  {
    key: "telemetry.traces.enabled",
    type: "boolean",
    default: false,
    description: "Export OpenTelemetry traces over OTLP/HTTP protobuf (read at host start)",
    schema: z.boolean(),
  },
  {
    key: "telemetry.traces.endpoint",
    type: "string",
    default: "http://localhost:4318/v1/traces",
    description:
      "The collector's OTLP/HTTP traces URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT win)",
    schema: z.url().max(2048),
  },
  {
    key: "telemetry.traces.max_queue_spans",
    type: "integer",
    default: 2048,
    description:
      "Spans waiting for export at most; beyond that they are dropped and counted (OTEL_BSP_MAX_QUEUE_SIZE wins)",
    schema: z.number().int().min(16).max(100_000),
  },
  {
    key: "telemetry.traces.capture_content",
    type: "boolean",
    default: false,
    description:
      "Put prompts, completions, system instructions, tool arguments and results and brief text on spans",
    schema: z.boolean(),
  },
  {
    key: "providers.<id>",
    type: "json_object",
    description: "A whole provider definition (prefer `holon config providers set`)",
    schema: ProviderEntryFileSchema,
  },
  providerField(
    "transport",
    "enum",
    "Wire protocol the provider speaks",
    z.enum(PROVIDER_TRANSPORTS),
    PROVIDER_TRANSPORTS,
  ),
  providerField(
    "base_url",
    "url",
    "Endpoint base URL (with /v1 for OpenAI transports, without it for anthropic_messages)",
    HttpUrl,
  ),
  providerField(
    "credential_source",
    "enum",
    "Where the credential comes from",
    z.enum(CREDENTIAL_SOURCES),
    CREDENTIAL_SOURCES,
  ),
  providerField(
    "credential_kind",
    "enum",
    "What the credential is",
    z.enum(CREDENTIAL_KINDS),
    CREDENTIAL_KINDS,
  ),
  providerField(
    "credential_env",
    "string",
    "Environment variable holding the credential (source env)",
    z.string().regex(ENV_NAME_RE, "expected an environment variable name"),
  ),
  providerField(
    "credential_profile",
    "string",
    "Holon credential profile id (source credential_profile)",
    z.string().regex(PROFILE_ID_RE, "expected a credential profile id"),
  ),
  providerField(
    "credential_external",
    "string",
    "External credential owner (source external_cli; only codex)",
    z.literal("codex"),
  ),
  providerField("display_name", "string", "Name shown in listings", z.string().min(1)),
  providerField(
    "stream",
    "boolean",
    "Stream replies (SSE, with an idle timeout between chunks); false sends one JSON request under a total timeout",
    z.boolean(),
  ),
  providerField(
    "images",
    "boolean",
    "Send images a tool returned (an MCP server's) to the model; false for models that take no images",
    z.boolean(),
  ),
  providerField(
    "models",
    "string_list",
    "Extra model names to list for this provider",
    z.array(z.string().min(1)),
  ),
];

export type KeyMatch = {
  def: KeyDef;
  /** Path inside the config file object. */
  path: string[];
};

/** Map a dotted key to its definition and file path, or null when Holon has no such key. */
export function matchKey(key: string): KeyMatch | null {
  const catalogPrefix = "models.catalog.";
  if (key.startsWith(catalogPrefix)) {
    const ref = key.slice(catalogPrefix.length);
    const def = KEY_DEFS.find((d) => d.key === "models.catalog.<model_ref>")!;
    return ref ? { def, path: ["models", "catalog", ref] } : null;
  }
  const parts = key.split(".");
  for (const def of KEY_DEFS) {
    const pattern = def.key.split(".");
    if (pattern.length !== parts.length) continue;
    let ok = true;
    for (let i = 0; i < pattern.length; i++) {
      if (pattern[i] === "<id>") {
        if (!PROVIDER_ID_RE.test(parts[i]!)) ok = false;
      } else if (pattern[i] !== parts[i]) ok = false;
    }
    if (ok) return { def, path: parts };
  }
  return null;
}

/** Keys close to an unknown one, for "did you mean" hints. */
export function suggestKeys(key: string): string[] {
  const head = key.split(".")[0] ?? "";
  return KEY_DEFS.map((d) => d.key).filter((k) => k.startsWith(head + ".") || k === head);
}
