// MCP server definitions: the shape users already write in Claude Code's `.mcp.json`
// (`{"mcpServers": {name: {command, args, env, cwd} | {type: "http", url, headers}}}`), the
// same entries under `mcp.servers` in config.json and in an agent record, and what a
// definition references. A value in `env` or `headers` may name a secret instead of holding
// it: `${VAR}` is read from the host's environment, `${credential:<profile>}` from the
// credential store. Every referenced variable is withheld from commands (host/command-policy.ts)
// and no output ever shows a resolved value. The digest of a definition is what a workspace
// approval is bound to, so it covers every field, canonically ordered.
import { createHash } from "node:crypto";
import { z } from "zod";
import { stableJson } from "../providers/model.ts";

/** How long a tool call waits on the operator's answer to an elicitation (src/mcp/elicitation.ts). */
export const DEFAULT_ELICITATION_TIMEOUT_MS = 5 * 60_000;
/** A turn waits on a person at most an hour per elicitation; longer work is a work item's ask. */
export const MAX_ELICITATION_TIMEOUT_MS = 60 * 60_000;

/** Server names: what `mcp__<server>__<tool>` is built from; kept short and plain. */
export const SERVER_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `${VAR}` or `${credential:profile}` anywhere in a value. */
const REF_RE = /\$\{(credential:)?([A-Za-z0-9_.:@+-]{1,128})\}/g;

export const DEFAULT_STARTUP_TIMEOUT_MS = 10_000;
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
export const DEFAULT_IDLE_STOP_MS = 10 * 60_000;

const Value = z.string().max(8_192);
const ToolList = z.array(z.string().min(1).max(256)).max(1_000);

const Common = {
  enabled: z.boolean().optional(),
  enabled_tools: ToolList.optional(),
  disabled_tools: ToolList.optional(),
  startup_timeout_ms: z.number().int().min(100).max(600_000).optional(),
  tool_timeout_ms: z.number().int().min(100).max(3_600_000).optional(),
  /** Host level only: one process for every agent, started with no roots. */
  shared: z.boolean().optional(),
};

export const StdioServer = z.strictObject({
  type: z.literal("stdio").optional(),
  command: z.string().min(1).max(4_096),
  args: z.array(z.string().max(8_192)).max(256).optional(),
  env: z
    .record(z.string().regex(ENV_NAME, "environment names are letters, digits and _"), Value)
    .optional(),
  cwd: z.string().min(1).max(4_096).optional(),
  /** Extra paths the confined server may write, besides the agent's execution root. */
  writable_paths: z.array(z.string().min(1).max(4_096)).max(64).optional(),
  ...Common,
});

const Url = z
  .string()
  .max(4_096)
  .refine((u) => {
    try {
      const p = new URL(u).protocol;
      return p === "http:" || p === "https:";
    } catch {
      return false;
    }
  }, "an http:// or https:// URL");

export const HttpServer = z.strictObject({
  /** `http` is MCP's streamable HTTP; `sse` the legacy HTTP+SSE transport. */
  type: z.enum(["http", "sse"]),
  url: Url,
  headers: z.record(z.string().min(1).max(256), Value).optional(),
  ...Common,
});

export const ServerDefinition = z.union([StdioServer, HttpServer]);
export type ServerDefinition = z.infer<typeof ServerDefinition>;
export type StdioDefinition = z.infer<typeof StdioServer>;
export type HttpDefinition = z.infer<typeof HttpServer>;

/**
 * Check one definition, with a message that names what is wrong: an unknown transport gets
 * its own sentence rather than the union's two failures.
 */
export function parseDefinition(name: string, raw: unknown): ServerDefinition {
  if (!SERVER_NAME_RE.test(name)) {
    throw new McpConfigError(
      `MCP server name '${name.slice(0, 80)}' is not allowed`,
      "use letters, digits, '_', '.', '-' (at most 64, starting with a letter or digit)",
    );
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new McpConfigError(`MCP server '${name}' must be an object`);
  }
  const type = (raw as { type?: unknown }).type;
  if (type !== undefined && type !== "stdio" && type !== "http" && type !== "sse") {
    throw new McpConfigError(
      `MCP server '${name}' has an unknown transport ${JSON.stringify(type).slice(0, 40)}`,
      "type is one of stdio (the default, with command), http (streamable HTTP, with url) or sse",
    );
  }
  const schema = type === "http" || type === "sse" ? HttpServer : StdioServer;
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const at = issue.path.join(".");
    throw new McpConfigError(`MCP server '${name}': ${at ? `${at}: ` : ""}${issue.message}`);
  }
  return r.data;
}

export class McpConfigError extends Error {
  readonly hint: string | undefined;
  constructor(message: string, hint?: string) {
    super(message);
    this.hint = hint;
  }
}

/** A map of definitions, each checked; used for config.json, agent records and `.mcp.json`. */
export const ServerMap = z
  .record(z.string(), z.unknown())
  .superRefine((map, ctx) => {
    if (Object.keys(map).length > 64) {
      ctx.addIssue({ code: "custom", message: "at most 64 MCP servers" });
      return;
    }
    for (const [name, def] of Object.entries(map)) {
      try {
        parseDefinition(name, def);
      } catch (err) {
        ctx.addIssue({ code: "custom", path: [name], message: (err as Error).message });
      }
    }
  })
  .transform((map) =>
    Object.fromEntries(Object.entries(map).map(([n, d]) => [n, parseDefinition(n, d)])),
  );

/** The `mcp` section of config.json. */
export const McpFileSchema = z.strictObject({
  servers: ServerMap.optional(),
  /** Stop a server this long after its last call (default 10 minutes). */
  idle_stop_ms: z.number().int().min(1_000).max(86_400_000).optional(),
  /**
   * How long a tool call waits for the operator's answer to a server's elicitation (default 5
   * minutes, at most an hour: the agent's turn is held meanwhile).
   */
  elicitation_timeout_ms: z.number().int().min(1_000).max(MAX_ELICITATION_TIMEOUT_MS).optional(),
});
export type McpFile = z.infer<typeof McpFileSchema>;

export type McpConfig = {
  servers: Record<string, ServerDefinition>;
  idle_stop_ms: number;
  elicitation_timeout_ms: number;
};

export function effectiveMcp(file: McpFile | undefined): McpConfig {
  return {
    servers: file?.servers ?? {},
    idle_stop_ms: file?.idle_stop_ms ?? DEFAULT_IDLE_STOP_MS,
    elicitation_timeout_ms: file?.elicitation_timeout_ms ?? DEFAULT_ELICITATION_TIMEOUT_MS,
  };
}

export type Reference = { kind: "env" | "credential"; name: string };

/** Every secret a definition names (in env values, headers, args and url), each once. */
export function referencesOf(def: ServerDefinition): Reference[] {
  const texts: string[] = [];
  if ("command" in def) {
    texts.push(def.command, ...(def.args ?? []), ...Object.values(def.env ?? {}));
    if (def.cwd) texts.push(def.cwd);
  } else {
    texts.push(def.url, ...Object.values(def.headers ?? {}));
  }
  const seen = new Map<string, Reference>();
  for (const t of texts) {
    for (const m of t.matchAll(REF_RE)) {
      const ref: Reference = { kind: m[1] ? "credential" : "env", name: m[2]! };
      seen.set(`${ref.kind}:${ref.name}`, ref);
    }
  }
  return [...seen.values()];
}

/** How a reference is written, as a user would type it (what an approval lists). */
export function referenceText(r: Reference): string {
  return r.kind === "credential" ? `\${credential:${r.name}}` : `\${${r.name}}`;
}

/** Host environment variables the definition reads: these are withheld from commands. */
export function envNamesOf(def: ServerDefinition): string[] {
  return referencesOf(def)
    .filter((r) => r.kind === "env")
    .map((r) => r.name);
}

/**
 * Every host variable MCP definitions read, sorted: those of the approved workspace servers
 * (their stored grants), the host's servers and each agent's own. Withheld from commands.
 */
export function referencedEnvNamesOf(
  grants: Iterable<{ definition: unknown }>,
  hostServers: Record<string, ServerDefinition>,
  agentServerSets: Iterable<Record<string, ServerDefinition>>,
): string[] {
  const names = new Set<string>();
  for (const g of grants) for (const n of envNamesIn(g.definition)) names.add(n);
  for (const def of Object.values(hostServers)) for (const n of envNamesOf(def)) names.add(n);
  for (const servers of agentServerSets)
    for (const def of Object.values(servers)) for (const n of envNamesOf(def)) names.add(n);
  return [...names].sort();
}

/**
 * Host environment variables named anywhere in a value (every string, at any depth): what a
 * stored consent grant's definition or reference list reads.
 */
export function envNamesIn(value: unknown, depth = 0): string[] {
  const out = new Set<string>();
  const walk = (v: unknown, d: number) => {
    if (d > 8) return;
    if (typeof v === "string") {
      for (const m of v.matchAll(REF_RE)) if (!m[1]) out.add(m[2]!);
    } else if (Array.isArray(v)) for (const x of v.slice(0, 1_000)) walk(x, d + 1);
    else if (v && typeof v === "object")
      for (const x of Object.values(v).slice(0, 1_000)) walk(x, d + 1);
  };
  walk(value, depth);
  return [...out];
}

/** What a reference resolves to, or undefined when it may not or cannot be resolved. */
export type Resolver = (ref: Reference) => string | undefined;

/**
 * Expand the references in one value. An unresolvable reference is an error naming it (never
 * its value): a server started with half its secrets would fail in a confusing way later.
 */
export function expand(value: string, resolve: Resolver, where: string): string {
  return value.replace(REF_RE, (_all, cred: string | undefined, name: string) => {
    const ref: Reference = { kind: cred ? "credential" : "env", name };
    const v = resolve(ref);
    if (v === undefined) {
      throw new McpConfigError(
        `${where} references ${referenceText(ref)}, which is not available`,
        ref.kind === "credential"
          ? `store it with \`holon config credentials set ${name}\``
          : `set ${name} in the host's environment (or, for a workspace server, approve the server, which lists it)`,
      );
    }
    return v;
  });
}

/** SHA-256 of the whole definition, canonically ordered: what an approval is bound to. */
export function definitionDigest(def: ServerDefinition): string {
  return createHash("sha256").update(stableJson(def)).digest("hex");
}

/**
 * A definition as output shows it: references stay as written (they hold no secret), any
 * other `env` or `headers` value is hidden, since it may be a literal secret.
 */
export function redactDefinition(def: ServerDefinition): Record<string, unknown> {
  const hide = (m: Record<string, string> | undefined) =>
    m === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries(m).map(([k, v]) => [k, /^\$\{[^}]+\}$/.test(v) ? v : "<hidden>"]),
        );
  if ("command" in def) {
    const env = hide(def.env);
    return { ...def, ...(env ? { env } : {}) };
  }
  const headers = hide(def.headers);
  return { ...def, ...(headers ? { headers } : {}) };
}

/** The full command line or URL of a definition, as an approval shows it. */
export function describeDefinition(def: ServerDefinition): string {
  if ("command" in def) {
    const q = (s: string) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : JSON.stringify(s));
    return [def.command, ...(def.args ?? [])].map(q).join(" ");
  }
  return `${def.type} ${def.url}`;
}

/** The workspace file: Claude Code's shape. */
export const WORKSPACE_MCP_FILE = ".mcp.json";
export const WORKSPACE_MCP_MAX_BYTES = 256 * 1024;

/**
 * Parse a workspace `.mcp.json`. Each entry is checked on its own, so one bad entry is an
 * error for that server only; the others still ask for approval.
 */
export function parseWorkspaceFile(text: string): {
  servers: Record<string, ServerDefinition>;
  errors: Record<string, string>;
  error: string | null;
} {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { servers: {}, errors: {}, error: `not JSON: ${(err as Error).message}` };
  }
  const map = (data as { mcpServers?: unknown } | null)?.mcpServers;
  if (map === undefined) return { servers: {}, errors: {}, error: null };
  if (map === null || typeof map !== "object" || Array.isArray(map)) {
    return { servers: {}, errors: {}, error: "mcpServers must be an object" };
  }
  const servers: Record<string, ServerDefinition> = {};
  const errors: Record<string, string> = {};
  for (const [name, raw] of Object.entries(map).slice(0, 64)) {
    try {
      servers[name] = parseDefinition(name, raw);
    } catch (err) {
      errors[name.slice(0, 64)] = (err as Error).message;
    }
  }
  return { servers, errors, error: null };
}
