// <holon_home>/config.json on disk: loading with precise errors, atomic writes that never
// replace a malformed file, key-level get/set/unset, provider entries, and ConfigSource —
// the live view a long-running host reads before each turn. The CLI writes the files
// directly ("offline_store"); a running host notices at its next turn (or within a second
// between turns) because the file's identity (inode, size, mtime) changed.
import { readFileSync, statSync } from "node:fs";
import type { z } from "zod";
import {
  ConfigFileSchema,
  KEY_DEFS,
  ModelRefSchema,
  PROVIDER_ID_RE,
  effectiveConfig,
  matchKey,
  normalizeProviderEntry,
  suggestKeys,
  type ConfigFile,
  type EffectiveConfig,
  type EnvOverride,
  type KeyDef,
  type ProviderEntry,
  type ValueSource,
} from "./config-schema.ts";
import { homePaths } from "./paths.ts";
import { maskDatabaseUrl, withoutJsonSnippet } from "./database-url.ts";
import { atomicWrites } from "../store/files.ts";
import {
  isBuiltinProvider,
  isSupportedTransport,
  providerDefinition,
} from "../providers/builtin.ts";
import { listModels, type ModelListing } from "../providers/catalog.ts";
import { codexAuthPath, readCodexAuth, type CodexAuth } from "../providers/codex-auth.ts";
import {
  credentialsSnapshot,
  redact,
  withFileLock,
  type CredentialsSnapshot,
} from "../providers/credentials.ts";
import { HolonError } from "../domain/errors.ts";
import { atomicWriteFile } from "../store/files.ts";
import { parseModelRef } from "../providers/config.ts";
import {
  agentModelState,
  resolveModelCandidates,
  type AgentModelState,
  type ResolutionInputs,
} from "../providers/resolve.ts";
import { PROVIDER_TRANSPORTS, type ModelCandidate } from "../providers/types.ts";

export type Env = Record<string, string | undefined>;

const NEVER_OVERWRITE_HINT =
  "fix or remove it by hand; Holon does not rewrite a config.json it cannot parse";

/** config.json could not be used: which file, which key, what is wrong. */
export class ConfigFileError extends Error {
  readonly path: string;
  readonly key: string;
  readonly problem: string;
  readonly hint: string;
  constructor(path: string, key: string, problem: string, hint = NEVER_OVERWRITE_HINT) {
    super(`${path}: ${key}: ${problem}`);
    this.path = path;
    this.key = key;
    this.problem = problem;
    this.hint = hint;
  }
}

/** A value given to `config set` (or a provider option) that Holon will not store. */
export class ConfigValueError extends Error {
  readonly key: string;
  readonly problem: string;
  readonly hint: string | undefined;
  constructor(key: string, problem: string, hint?: string) {
    super(`${key}: ${problem}`);
    this.key = key;
    this.problem = problem;
    this.hint = hint;
  }
}

export type LoadedConfig = {
  path: string;
  exists: boolean;
  /** The validated file contents: `{}` when the file is missing or malformed. */
  file: ConfigFile;
  /** Set when config.json exists but cannot be used. */
  error: ConfigFileError | null;
  values: EffectiveConfig;
  overrides: EnvOverride[];
  warnings: string[];
};

// ---------------------------------------------------------------------------------------
// Reading and validation.

/** Paths whose string values are secrets: a problem with one never quotes the value. */
const SECRET_PATHS = new Set(["control_token", "store"]);

function describeAt(data: unknown, path: PropertyKey[]): string {
  const v = valueAt(data, path);
  if (typeof v === "string" && SECRET_PATHS.has(String(path[0]))) return "a string";
  return describe(v);
}

function describe(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string")
    return `a string (${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)})`;
  if (typeof v === "number") return `the number ${v}`;
  if (typeof v === "boolean") return `${v}`;
  return `an ${typeof v}`;
}

function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = data;
  for (const p of path) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

function joinKey(path: PropertyKey[]): string {
  return path.map(String).join(".");
}

/** Turn a zod issue into (key, problem) in the operator's vocabulary. */
function describeIssue(issue: z.core.$ZodIssue, data: unknown): { key: string; problem: string } {
  const path = issue.path;
  const key = joinKey(path) || "(top level)";
  switch (issue.code) {
    case "unrecognized_keys": {
      const bad = issue.keys[0] ?? "?";
      const full = joinKey([...path, bad]);
      const near = suggestKeys(full);
      return {
        key: full,
        problem: `unknown key${near.length ? ` (known keys here: ${near.slice(0, 6).join(", ")})` : ""}`,
      };
    }
    case "invalid_type":
      return { key, problem: `expected ${issue.expected}, got ${describeAt(data, path)}` };
    case "invalid_value":
      return {
        key,
        problem: `expected one of ${issue.values.map((v) => String(v)).join(", ")}, got ${describeAt(data, path)}`,
      };
    case "too_small":
      if (issue.origin === "number" && Number(issue.minimum) === 0 && !issue.inclusive) {
        return {
          key,
          problem: `expected a positive integer, got ${describeAt(data, path)}`,
        };
      }
      return { key, problem: `${issue.message}, got ${describeAt(data, path)}` };
    case "too_big":
      return { key, problem: `${issue.message}, got ${describeAt(data, path)}` };
    case "invalid_key":
      return {
        key: joinKey(path),
        problem: `invalid key: ${issue.issues[0]?.message ?? issue.message}`,
      };
    default:
      return { key, problem: issue.message };
  }
}

/** All problems with a parsed config object, in file order. */
export function configIssues(data: unknown): { key: string; problem: string }[] {
  const r = ConfigFileSchema.safeParse(data);
  if (r.success) return [];
  return r.error.issues.map((i) => describeIssue(i, data));
}

/** Validate a parsed object as config.json; throws ConfigFileError naming the first bad key. */
export function validateConfig(path: string, data: unknown): ConfigFile {
  const r = ConfigFileSchema.safeParse(data);
  if (r.success) return r.data;
  const first = describeIssue(r.error.issues[0]!, data);
  const more =
    r.error.issues.length > 1 ? ` (and ${r.error.issues.length - 1} more problem(s))` : "";
  throw new ConfigFileError(path, first.key, first.problem + more);
}

function jsonSyntaxError(path: string, text: string, err: Error): ConfigFileError {
  // The parser quotes the text around the fault, which may be a secret: never repeated.
  const message = withoutJsonSnippet(err.message);
  let where = "";
  const m = /position (\d+)/.exec(message);
  if (m && !/line \d+/.test(message)) {
    const before = text.slice(0, Number(m[1]));
    const line = before.split("\n").length;
    const col = before.length - before.lastIndexOf("\n");
    where = ` (line ${line}, column ${col})`;
  }
  return new ConfigFileError(path, "(whole file)", `not valid JSON: ${message}${where}`);
}

/** Read config.json. Missing → `{}`; unparsable or invalid → ConfigFileError. */
export function readConfigFile(path: string): { exists: boolean; file: ConfigFile; data: unknown } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      return { exists: false, file: {}, data: {} };
    throw new ConfigFileError(
      path,
      "(whole file)",
      `cannot read: ${(err as Error).message}`,
      "check the file's permissions",
    );
  }
  if (text.trim() === "") return { exists: true, file: {}, data: {} };
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw jsonSyntaxError(path, text, err as Error);
  }
  return { exists: true, file: validateConfig(path, data), data };
}

/** Load and apply defaults and environment overrides. Never throws: errors land in `error`. */
export function loadConfig(home: string, env: Env = process.env): LoadedConfig {
  const path = homePaths(home).config;
  let exists = false;
  let file: ConfigFile = {};
  let error: ConfigFileError | null = null;
  try {
    const r = readConfigFile(path);
    exists = r.exists;
    file = r.file;
  } catch (err) {
    exists = true;
    error =
      err instanceof ConfigFileError ? err : new ConfigFileError(path, "(whole file)", String(err));
  }
  const eff = effectiveConfig(file, env);
  return {
    path,
    exists,
    file,
    error,
    values: eff.values,
    overrides: eff.overrides,
    warnings: eff.warnings,
  };
}

// ---------------------------------------------------------------------------------------
// Writing. Every change: lock, re-read (refusing a malformed file), change, validate the
// whole result, atomic write.

function writeConfigFile(path: string, file: unknown): void {
  // Owner-only: config.json may hold the control token.
  atomicWriteFile(path, JSON.stringify(file, null, 2) + "\n", { mkdir: true });
}

/** Apply `change` to config.json under the file lock; returns what `change` returns. */
export function updateConfigFile<T>(home: string, change: (data: Record<string, unknown>) => T): T {
  const path = homePaths(home).config;
  return withFileLock(path, () => {
    const { data } = readConfigFile(path); // throws (and so refuses) on a malformed file
    const next = structuredClone((data ?? {}) as Record<string, unknown>);
    const result = change(next);
    const issues = configIssues(next);
    if (issues.length > 0) {
      const first = issues[0]!;
      throw new ConfigValueError(first.key, first.problem);
    }
    writeConfigFile(path, next);
    return result;
  });
}

/** `config set` values: JSON when it parses, else the raw string; strings stay strings for string keys. */
export function parseCliValue(raw: string, def?: KeyDef): unknown {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return raw;
  }
  const stringish = def && ["model_ref", "string", "url", "enum"].includes(def.type);
  if (stringish && typeof v !== "string" && typeof v !== "object") return raw;
  return v;
}

function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur = obj;
  for (const p of path.slice(0, -1)) {
    const next = cur[p];
    if (typeof next !== "object" || next === null || Array.isArray(next)) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[path[path.length - 1]!] = value;
}

/** Delete a path and any objects it leaves empty. True when something was removed. */
function deletePath(obj: Record<string, unknown>, path: string[]): boolean {
  const parents: Record<string, unknown>[] = [obj];
  let cur: unknown = obj;
  for (const p of path.slice(0, -1)) {
    cur = (cur as Record<string, unknown>)?.[p];
    if (typeof cur !== "object" || cur === null) return false;
    parents.push(cur as Record<string, unknown>);
  }
  const last = path[path.length - 1]!;
  const holder = parents[parents.length - 1]!;
  if (!(last in holder)) return false;
  delete holder[last];
  for (let i = parents.length - 1; i > 0; i--) {
    if (Object.keys(parents[i]!).length > 0) break;
    delete parents[i - 1]![path[i - 1]!];
  }
  return true;
}

/** Provider entries are edited in flat form: fold an `auth` block first. */
function flattenProviderInPlace(data: Record<string, unknown>, id: string): void {
  const providers = data.providers as Record<string, unknown> | undefined;
  const entry = providers?.[id];
  if (entry && typeof entry === "object" && "auth" in entry) {
    providers![id] = normalizeProviderEntry(entry as Parameters<typeof normalizeProviderEntry>[0]);
  }
}

function resolveKey(key: string) {
  const m = matchKey(key);
  if (!m) {
    const near = suggestKeys(key);
    throw new ConfigValueError(
      key,
      "unknown key",
      near.length ? `known keys: ${near.join(", ")}` : "run `holon config schema` to see every key",
    );
  }
  if (m.def.key === "models.catalog.<model_ref>") {
    const ref = m.path[2]!;
    const r = ModelRefSchema.safeParse(ref);
    if (!r.success)
      throw new ConfigValueError(key, `"${ref}" is not a model ref (<provider>/<model>)`);
  }
  return m;
}

function checkValue(key: string, def: KeyDef, value: unknown): void {
  const r = def.schema.safeParse(value);
  if (!r.success) {
    const d = describeIssue(r.error.issues[0]!, value);
    const where = d.key === "(top level)" ? "" : ` (${d.key})`;
    const hint =
      def.type === "model_ref_list" || def.type === "string_list"
        ? "give a JSON array, e.g. '[\"anthropic/claude-sonnet-4-6\"]'"
        : def.values
          ? `allowed values: ${def.values.join(", ")}`
          : undefined;
    throw new ConfigValueError(key, `${d.problem}${where}`, hint);
  }
  // Whole provider entries and hand-written transports: only speakable transports are stored.
  if (def.key === "providers.<id>") {
    const t = (value as { transport?: unknown }).transport;
    if (typeof t === "string" && !isSupportedTransport(t)) {
      throw new ConfigValueError(
        `${key}.transport`,
        `unsupported transport "${t}"`,
        `supported: ${PROVIDER_TRANSPORTS.join(", ")}`,
      );
    }
  }
}

export type SetResult = {
  key: string;
  value: unknown;
  previous: unknown;
  path: string;
  applied_via: "offline_store";
  warnings: string[];
};

/**
 * Redact a value if its key is secret. A secret URL (the database URL) keeps its shape and
 * loses its password: `postgres://holon:***@db:5432/holon?sslmode=require`.
 */
export function displayValue(def: KeyDef | undefined, value: unknown): unknown {
  if (def?.secret && def.type === "url" && typeof value === "string") return maskDatabaseUrl(value);
  if (def?.secret && typeof value === "string") return redact(value);
  return value;
}

export function setConfigValue(
  home: string,
  key: string,
  raw: string,
  env: Env = process.env,
): SetResult {
  return setConfigValues(home, [[key, raw]], env)[0]!;
}

/**
 * Several keys in one change of config.json: every value is checked before anything is
 * written, and the file is written once, so a refused pair leaves the file as it was.
 */
export function setConfigValues(
  home: string,
  pairs: readonly (readonly [key: string, raw: string])[],
  env: Env = process.env,
): SetResult[] {
  const changes = pairs.map(([key, raw]) => {
    const m = resolveKey(key);
    const value = parseCliValue(raw, m.def);
    checkValue(key, m.def, value);
    return { key, m, value, previous: undefined as unknown };
  });
  updateConfigFile(home, (data) => {
    for (const c of changes) {
      if (c.m.path[0] === "providers") flattenProviderInPlace(data, c.m.path[1]!);
      c.previous = valueAt(data, c.m.path);
      setPath(data, c.m.path, c.value);
    }
  });
  const overrides = effectiveConfig({}, env).overrides;
  let loaded: ReturnType<typeof loadConfig> | undefined;
  return changes.map(({ key, m, value, previous }) => {
    const warnings: string[] = [];
    for (const o of overrides) {
      if (o.key === key) warnings.push(`${o.env} is set in this environment and overrides ${key}`);
    }
    if (m.def.type === "model_ref" || m.def.type === "model_ref_list") {
      loaded ??= loadConfig(home, env);
      const refs = Array.isArray(value) ? (value as string[]) : [value as string];
      for (const ref of refs) {
        const provider = ref.slice(0, ref.indexOf("/"));
        if (!providerDefinition(provider, loaded.values)) {
          warnings.push(
            `provider "${provider}" is not known yet; add it with \`holon config providers set ${provider} ...\``,
          );
        }
      }
    }
    return {
      key,
      value: displayValue(m.def, value),
      previous: displayValue(m.def, previous),
      path: homePaths(home).config,
      applied_via: "offline_store" as const,
      warnings,
    };
  });
}

export function unsetConfigValue(
  home: string,
  key: string,
): { key: string; removed: boolean; path: string; applied_via: "offline_store" } {
  const m = resolveKey(key);
  const removed = updateConfigFile(home, (data) => {
    if (m.path[0] === "providers") flattenProviderInPlace(data, m.path[1]!);
    return deletePath(data, m.path);
  });
  return { key, removed, path: homePaths(home).config, applied_via: "offline_store" };
}

export type ConfigValueView = {
  key: string;
  value: unknown;
  source: ValueSource | "builtin";
  env?: string;
};

/** The effective value of one key (redacted when secret). */
export function getConfigValue(loaded: LoadedConfig, key: string): ConfigValueView {
  const m = resolveKey(key);
  const override = loaded.overrides.find((o) => o.key === key);
  const fileValue = valueAt(loaded.file, m.path);
  if (m.path[0] === "providers") {
    const id = m.path[1]!;
    const def = providerDefinition(id, loaded.values);
    if (!def) throw new ConfigValueError(key, `no provider "${id}" is built in or configured`);
    const field = m.path[2];
    const entry = loaded.values.providers[id];
    const fromFile = field ? entry?.[field as keyof ProviderEntry] : entry;
    if (fromFile !== undefined && field) return { key, value: fromFile, source: "config" };
    const derived: Record<string, unknown> = {
      transport: def.transport,
      base_url: def.base_url,
      credential_source: def.auth.source,
      credential_kind: def.auth.kind,
      credential_env: def.auth.env.map((e) => e.name).join(" or ") || null,
      credential_profile: def.auth.profiles[0] ?? null,
      credential_external: def.auth.external,
      display_name: def.display_name,
      models: def.known_models,
    };
    if (!field)
      return { key, value: providerView(def), source: def.configured ? "config" : "builtin" };
    return { key, value: derived[field] ?? null, source: def.builtin ? "builtin" : "default" };
  }
  const effective = valueAt(loaded.values, m.path);
  const value = displayValue(m.def, effective ?? m.def.default ?? null);
  if (override) return { key, value, source: "env", env: override.env };
  return { key, value, source: fileValue !== undefined ? "config" : "default" };
}

/** Every key with an effective value, for `config list` (secrets redacted). */
export function listConfigValues(loaded: LoadedConfig): ConfigValueView[] {
  const rows: ConfigValueView[] = [];
  for (const def of KEY_DEFS) {
    if (def.key.includes("<")) continue;
    const v = getConfigValue(loaded, def.key);
    if (v.value === null && v.source === "default" && def.default === undefined) continue;
    rows.push(v);
  }
  for (const ref of Object.keys(loaded.file.models?.catalog ?? {}).sort()) {
    rows.push({
      key: `models.catalog.${ref}`,
      value: loaded.values.models.catalog[ref],
      source: "config",
    });
  }
  for (const [id, entry] of Object.entries(loaded.values.providers).sort(([a], [b]) =>
    a.localeCompare(b),
  )) {
    for (const [field, value] of Object.entries(entry)) {
      rows.push({ key: `providers.${id}.${field}`, value, source: "config" });
    }
  }
  return rows;
}

// ---------------------------------------------------------------------------------------
// Provider entries (`holon config providers ...`).

export type ProviderFields = Partial<
  Pick<
    ProviderEntry,
    | "transport"
    | "base_url"
    | "credential_source"
    | "credential_kind"
    | "credential_env"
    | "credential_profile"
    | "credential_external"
    | "display_name"
  >
>;

export function validateProviderId(id: string): void {
  if (!PROVIDER_ID_RE.test(id)) {
    throw new ConfigValueError(
      `providers.${id}`,
      "invalid provider id",
      "use lowercase letters, digits, '-' and '_' (it becomes the first part of model refs)",
    );
  }
}

/** Create or update a provider entry, merging with what is there. */
export function setProvider(
  home: string,
  id: string,
  fields: ProviderFields,
): {
  id: string;
  created: boolean;
  entry: ProviderEntry;
  path: string;
  applied_via: "offline_store";
} {
  validateProviderId(id);
  if (fields.transport !== undefined && !isSupportedTransport(fields.transport)) {
    throw new ConfigValueError(
      `providers.${id}.transport`,
      `unsupported transport "${fields.transport}"`,
      `supported: ${PROVIDER_TRANSPORTS.join(", ")}`,
    );
  }
  if (Object.keys(fields).length === 0) {
    throw new ConfigValueError(
      `providers.${id}`,
      "nothing to set",
      "pass at least one option, e.g. --base-url",
    );
  }
  // Validate each field on its own first, for precise messages.
  for (const [field, value] of Object.entries(fields)) {
    const m = matchKey(`providers.${id}.${field}`);
    if (m) checkValue(`providers.${id}.${field}`, m.def, value);
  }
  let created = false;
  let entry: ProviderEntry = {};
  updateConfigFile(home, (data) => {
    flattenProviderInPlace(data, id);
    const providers = (data.providers ??= {}) as Record<string, ProviderEntry>;
    created = !providers[id];
    const merged: ProviderEntry = { ...(providers[id] ?? {}), ...fields };
    // Switching the source drops fields that belonged to the old one.
    if (fields.credential_source) {
      if (fields.credential_source !== "env" && !fields.credential_env)
        delete merged.credential_env;
      if (fields.credential_source !== "credential_profile" && !fields.credential_profile)
        delete merged.credential_profile;
      if (fields.credential_source !== "external_cli" && !fields.credential_external)
        delete merged.credential_external;
      if (fields.credential_source === "none" && !fields.credential_kind)
        merged.credential_kind = "none";
    }
    providers[id] = merged;
    entry = merged;
  });
  return { id, created, entry, path: homePaths(home).config, applied_via: "offline_store" };
}

/** Remove a provider entry. For a built-in provider this restores Holon's defaults. */
export function removeProvider(
  home: string,
  id: string,
): { id: string; removed: boolean; builtin: boolean; path: string; applied_via: "offline_store" } {
  validateProviderId(id);
  const removed = updateConfigFile(home, (data) => deletePath(data, ["providers", id]));
  return {
    id,
    removed,
    builtin: isBuiltinProvider(id),
    path: homePaths(home).config,
    applied_via: "offline_store",
  };
}

/** A provider definition as shown by `providers get/list` (never secrets). */
export function providerView(def: NonNullable<ReturnType<typeof providerDefinition>>) {
  return {
    id: def.id,
    display_name: def.display_name,
    transport: def.transport,
    transport_supported: def.transport_supported,
    base_url: def.base_url,
    credential_source: def.auth.source,
    credential_kind: def.auth.kind,
    credential_env: def.auth.env.map((e) => e.name),
    credential_profiles: def.auth.profiles,
    credential_external: def.auth.external,
    env_fallback: def.auth.env_fallback,
    builtin: def.builtin,
    configured: def.configured,
    known_models: def.known_models,
    problems: def.problems,
  };
}

// ---------------------------------------------------------------------------------------
// The live view for a long-running host.

function fileStamp(path: string): string {
  try {
    const st = statSync(path, { throwIfNoEntry: false });
    return st ? `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.mode}` : "absent";
  } catch {
    return "absent";
  }
}

/** How long a checked file is trusted between turns (a turn's start always checks). */
export const CONFIG_RECHECK_MS = 1_000;

/**
 * Cheap, current configuration for the host: config.json, credentials.json and the Codex
 * login are statted at most once per check, and re-read only when their identity changed.
 * A check happens at the start of every turn (`forTurn`), after this process wrote a file
 * itself, and at most once a second for readers between turns; every other read is served
 * from memory (a turn calls for the config dozens of times). A config.json that turns
 * malformed while the host runs keeps the last good values in effect and reports the error.
 */
export class ConfigSource {
  readonly home: string;
  private readonly env: Env;
  private readonly now: () => Date;
  private cfg: { stamp: string; check: number; loaded: LoadedConfig } | null = null;
  private lastGood: ConfigFile | null = null;
  private creds: { stamp: string; check: number; snap: CredentialsSnapshot } | null = null;
  private codex: { stamp: string; check: number; auth: CodexAuth } | null = null;
  /** The current check: a cached file whose `check` differs is statted again. */
  private check = 0;
  private checkedAt = -Infinity;
  private checkedWrites = -1;

  constructor(opts: { home: string; env?: Env; now?: () => Date }) {
    this.home = opts.home;
    this.env = opts.env ?? process.env;
    this.now = opts.now ?? (() => new Date());
  }

  /** Make the next read of each file stat it again (a turn starts, or a test wrote a file). */
  refresh(): void {
    this.check++;
    this.checkedAt = performance.now();
    this.checkedWrites = atomicWrites.count;
  }

  /** The check a cached file must carry to be served without a stat. */
  private currentCheck(): number {
    if (
      atomicWrites.count !== this.checkedWrites ||
      performance.now() - this.checkedAt >= CONFIG_RECHECK_MS
    ) {
      this.refresh();
    }
    return this.check;
  }

  /** Throws a HolonError when a model ref is malformed or names an unknown provider. */
  checkModelRef(ref: string): void {
    const parsed = parseModelRef(ref);
    if (!parsed) {
      throw new HolonError("invalid_model_ref", `'${ref}' is not a model ref`, {
        hint: "use <provider_id>/<model>, e.g. anthropic/claude-sonnet-4-6",
      });
    }
    if (!providerDefinition(parsed.provider_id, this.current().values)) {
      throw new HolonError("unknown_provider", `no provider named '${parsed.provider_id}'`, {
        hint: "see `holon config providers list`, or add one with `holon config providers set`",
      });
    }
  }

  current(): LoadedConfig {
    const check = this.currentCheck();
    if (this.cfg?.check === check) return this.cfg.loaded;
    const path = homePaths(this.home).config;
    const stamp = fileStamp(path);
    if (this.cfg && this.cfg.stamp === stamp) {
      this.cfg.check = check;
      return this.cfg.loaded;
    }
    let loaded = loadConfig(this.home, this.env);
    if (loaded.error && this.lastGood) {
      const eff = effectiveConfig(this.lastGood, this.env);
      loaded = {
        ...loaded,
        file: this.lastGood,
        values: eff.values,
        overrides: eff.overrides,
        warnings: eff.warnings,
      };
    } else if (!loaded.error) {
      this.lastGood = loaded.file;
    }
    this.cfg = { stamp, check, loaded };
    return loaded;
  }

  credentials(): CredentialsSnapshot {
    const check = this.currentCheck();
    if (this.creds?.check === check) return this.creds.snap;
    const path = homePaths(this.home).credentials;
    const stamp = fileStamp(path);
    if (this.creds && this.creds.stamp === stamp) {
      this.creds.check = check;
      return this.creds.snap;
    }
    const snap = credentialsSnapshot(path);
    this.creds = { stamp, check, snap };
    return snap;
  }

  /** The Codex login, re-read when auth.json changes or the cached session expires. */
  codexAuth(): CodexAuth {
    const now = this.now();
    const check = this.currentCheck();
    const c = this.codex;
    const expired = c?.auth.expires_at ? Date.parse(c.auth.expires_at) <= now.getTime() : false;
    if (c && c.check === check && !expired) return c.auth;
    const stamp = fileStamp(codexAuthPath(this.env));
    if (c && c.stamp === stamp && !expired) {
      c.check = check;
      return c.auth;
    }
    const auth = readCodexAuth(this.env, now);
    this.codex = { stamp, check, auth };
    return auth;
  }

  inputs(): ResolutionInputs {
    return {
      config: this.current().values,
      credentials: this.credentials(),
      env: this.env,
      codexAuth: () => this.codexAuth(),
    };
  }

  /** Ordered candidates (see resolveModelCandidates). */
  candidates(override?: string | null): ModelCandidate[] {
    return resolveModelCandidates(this.inputs(), { override: override ?? null });
  }

  /** A turn starts: check every file once, then the candidates it runs with. */
  forTurn(override?: string | null): ModelCandidate[] {
    this.refresh();
    return this.candidates(override);
  }

  modelState(override?: string | null): AgentModelState {
    return agentModelState(this.current().values, override ?? null);
  }

  models(): ModelListing {
    return listModels(this.inputs());
  }
}
