// What the process layer takes from the configuration: which environment variables commands
// must not inherit (every provider's credential variables, plus the config allowlist), and
// the cap on their output files. Read live, so a config edit applies to the next command.
// services.ts hands the result to the task service; nothing is installed process-wide.
import { providerRegistry } from "../providers/builtin.ts";
import type { CommandPolicy } from "../tasks/command-policy.ts";
import type { CommandEnvPolicy } from "../tasks/env.ts";
import type { ConfigSource } from "./config.ts";

/** One policy object per configuration read, so the process layer can reuse its result. */
const policies = new WeakMap<object, CommandEnvPolicy>();

export function commandEnvPolicy(config: ConfigSource): CommandEnvPolicy {
  const values = config.current().values;
  let policy = policies.get(values);
  if (policy === undefined) {
    const names = new Set<string>();
    for (const def of providerRegistry(values)) for (const v of def.auth.env) names.add(v.name);
    policy = { secretNames: [...names], allow: values.runtime.command_env_allow };
    policies.set(values, policy);
  }
  return policy;
}

/** The command policy of this configuration, for the task service. */
export function commandPolicy(config: ConfigSource): CommandPolicy {
  return {
    env: () => commandEnvPolicy(config),
    outputCap: () => config.current().values.runtime.max_command_output_bytes,
  };
}
