// The environment commands start from. The host holds secrets in its environment (provider
// API keys, the control token); a model that can run `env` must not get them, and nor may
// anything a command starts. So every command, task, terminal and the spawn helper (whose
// spare wrappers become commands) starts from a copy of the host's environment with these
// removed:
//   - the credential variables the provider configuration names (built-in and custom),
//   - HOLON_CONTROL_TOKEN,
//   - any name ending in _API_KEY, _TOKEN, _SECRET or _PASSWORD (any case),
//   - the OpenTelemetry exporter headers (OTEL_EXPORTER_OTLP_HEADERS and its per-signal
//     OTEL_EXPORTER_OTLP_<SIGNAL>_HEADERS), which carry collector keys,
//   - when the home keeps its records in Postgres, the variables Postgres clients take a
//     password from (DATABASE_URL, PGPASSWORD, PGPASSFILE, PGSERVICEFILE; the policy names them),
// except the names a config allowlist (`runtime.command_env_allow`) passes through. Two rules
// no allowlist relaxes: HOLON_DATABASE_URL is always removed, and so is any variable whose
// value is the database password or contains the database URL or its password (the policy's
// secretValues and secretFragments), whatever it is called. The
// variables the `holon` launcher set for its own Node process (listed in HOLON_LAUNCHER_ENV,
// which goes too: malloc tuning, see bin/holon.js) are removed as well, so commands start
// with the user's environment, not the host's tuning.
//
// The policy reaches the process layer as data (a CommandPolicy, tasks/command-policy.ts)
// that the composition root builds from the live configuration and hands to the task
// service; a start without one gets the built-in rules.
import { createHash } from "node:crypto";

export type CommandEnvPolicy = {
  /** Exact variable names to remove (credential variables named by provider config). */
  secretNames: readonly string[];
  /** Exact variable names to keep even when a rule would remove them. */
  allow: readonly string[];
  /** Values no variable may have, whatever its name; the allowlist does not apply. */
  secretValues?: readonly string[];
  /** Strings no variable's value may contain, whatever its name; the allowlist does not apply. */
  secretFragments?: readonly string[];
};

const ALWAYS_SECRET = new Set(["HOLON_CONTROL_TOKEN"]);
/** Removed even when the allowlist names them: the database URL is the whole store. */
const NEVER_PASSED = new Set(["HOLON_DATABASE_URL"]);
/** Names the launcher (bin/holon.js) set for the Node process it started, space-separated. */
const LAUNCHER_ENV = "HOLON_LAUNCHER_ENV";
const SECRET_SUFFIX = /(?:_API_KEY|_TOKEN|_SECRET|_PASSWORD)$/i;
const OTLP_HEADERS = /^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?HEADERS$/i;

/** Whether a variable is withheld from commands under `policy`. */
export function isSecretName(name: string, policy: CommandEnvPolicy): boolean {
  if (NEVER_PASSED.has(name)) return true;
  if (policy.allow.includes(name)) return false;
  return (
    ALWAYS_SECRET.has(name) ||
    SECRET_SUFFIX.test(name) ||
    OTLP_HEADERS.test(name) ||
    policy.secretNames.includes(name)
  );
}

/** Whether a variable's value carries a secret `policy` withholds by value (any name). */
export function isSecretValue(value: string, policy: CommandEnvPolicy): boolean {
  if (value === "") return false;
  if (policy.secretValues?.includes(value)) return true;
  for (const fragment of policy.secretFragments ?? []) {
    if (fragment !== "" && value.includes(fragment)) return true;
  }
  return false;
}

/** A copy of `env` without the variables `policy` withholds. The one scrubbing function. */
export function scrubEnv(
  env: Readonly<Record<string, string | undefined>>,
  policy: CommandEnvPolicy,
): Record<string, string> {
  const launcher = new Set((env[LAUNCHER_ENV] ?? "").split(" "));
  launcher.add(LAUNCHER_ENV);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || isSecretName(name, policy) || launcher.has(name)) continue;
    if (isSecretValue(value, policy)) continue;
    out[name] = value;
  }
  return out;
}

/** The rules alone: what applies when no configuration names anything more. */
export const BUILTIN_ENV_POLICY: CommandEnvPolicy = { secretNames: [], allow: [] };

export type CommandEnv = {
  env: Record<string, string>;
  /** Identifies the environment, so a spare started with another one is not used. */
  key: string;
};

let last: { policy: CommandEnvPolicy; value: CommandEnv } | null = null;

/**
 * The scrubbed copy of this process's environment that commands start from under `policy`.
 * Reading `process.env` whole is slow, so the result is kept until the policy object changes
 * (a configuration edit); the host never changes its own environment.
 */
export function commandEnv(policy: CommandEnvPolicy): CommandEnv {
  if (last?.policy === policy) return last.value;
  const env = scrubEnv(process.env, policy);
  last = { policy, value: { env, key: envKey(env) } };
  return last.value;
}

/** A short digest of an environment, order-independent. */
export function envKey(env: Readonly<Record<string, string>>): string {
  const h = createHash("sha256");
  for (const name of Object.keys(env).sort())
    h.update(name).update("\0").update(env[name]!).update("\0");
  return h.digest("hex").slice(0, 16);
}
