// What the process layer takes from the configuration: which environment variables commands
// must not inherit (every provider's credential variables, every variable an MCP server
// definition references, the database URL's password variables and any value carrying the
// database URL or its password, plus the config allowlist), and the cap on their output files.
// Read live, so a config edit applies to the next command. services.ts hands the result to
// the task service; nothing is installed process-wide.
import { providerRegistry } from "../providers/builtin.ts";
import type { CommandPolicy } from "../tasks/command-policy.ts";
import type { CommandEnvPolicy } from "../tasks/env.ts";
import type { ConfigSource } from "./config.ts";
import { databaseSecrets } from "./database-url.ts";

/**
 * One policy object per configuration read (and set of MCP names and database password), so
 * the process layer can reuse its result.
 */
const policies = new WeakMap<object, { key: string; policy: CommandEnvPolicy }>();

/** Host variables MCP server definitions reference (`${VAR}`), sorted. */
export type McpEnvNames = () => Promise<readonly string[]>;
const NO_NAMES: McpEnvNames = async () => [];

export async function commandEnvPolicy(
  config: ConfigSource,
  mcpNames: McpEnvNames = NO_NAMES,
): Promise<CommandEnvPolicy> {
  const values = config.current().values;
  const mcp = await mcpNames();
  // The database password may live in a credential profile, which changes apart from config.json.
  const { database_url: url, database_credential: profile } = values.store;
  const password =
    url !== null && profile !== null
      ? (config.credentials().profiles[profile]?.material ?? null)
      : null;
  const key = `${mcp.join("\0")}\u0001${password ?? ""}`;
  const kept = policies.get(values);
  if (kept !== undefined && kept.key === key) return kept.policy;
  const names = new Set<string>();
  for (const def of providerRegistry(values)) for (const v of def.auth.env) names.add(v.name);
  for (const n of mcp) names.add(n);
  const db = databaseSecrets([url], password);
  for (const n of db.names) names.add(n);
  const policy: CommandEnvPolicy = {
    secretNames: [...names],
    allow: values.runtime.command_env_allow,
    secretValues: db.values,
    secretFragments: db.fragments,
  };
  policies.set(values, { key, policy });
  return policy;
}

/** The command policy of this configuration, for the task service. */
export function commandPolicy(
  config: ConfigSource,
  mcpNames: McpEnvNames = NO_NAMES,
): CommandPolicy {
  return {
    env: async () => await commandEnvPolicy(config, mcpNames),
    outputCap: () => config.current().values.runtime.max_command_output_bytes,
  };
}
