// What the process layer takes from the configuration: which environment variables commands
// must not inherit (every provider's credential variables, plus the config allowlist), and
// the cap on their output files. Read live, so a config edit applies to the next command.
import { providerRegistry } from "../providers/builtin.ts";
import { setCommandEnvPolicy, type CommandEnvPolicy } from "../tasks/env.ts";
import { setOutputCapSource } from "../tasks/output-cap.ts";
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

/** Point the process layer at this configuration (process-wide, like the spawn helper). */
export function installCommandPolicy(config: ConfigSource): void {
  setCommandEnvPolicy(() => commandEnvPolicy(config));
  setOutputCapSource(() => config.current().values.runtime.max_command_output_bytes);
}
