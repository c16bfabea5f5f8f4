// What a command starts under: which environment variables it must not inherit, and the cap
// on its output files. The composition root builds one from the live configuration
// (host/command-policy.ts) and hands it to the task service, which passes it to every start;
// a start without one gets the built-in rules and the default cap. Both are read at each
// start, so a configuration edit applies to the next command.
import { BUILTIN_ENV_POLICY, commandEnv, type CommandEnv, type CommandEnvPolicy } from "./env.ts";
import { DEFAULT_OUTPUT_CAP, saneOutputCap } from "./output-cap.ts";

export type CommandPolicy = {
  env(): Promise<CommandEnvPolicy>;
  outputCap(): number;
};

export const BUILTIN_COMMAND_POLICY: CommandPolicy = {
  env: async () => BUILTIN_ENV_POLICY,
  outputCap: () => DEFAULT_OUTPUT_CAP,
};

/** The environment policy now; a broken configuration must not widen what commands see. */
export async function envPolicyOf(policy: CommandPolicy): Promise<CommandEnvPolicy> {
  try {
    return await policy.env();
  } catch {
    return BUILTIN_ENV_POLICY;
  }
}

/** The scrubbed environment commands start from now under `policy`. */
export async function commandEnvOf(policy: CommandPolicy): Promise<CommandEnv> {
  return commandEnv(await envPolicyOf(policy));
}

/** The output cap for a command starting now. */
export function outputCapOf(policy: CommandPolicy): number {
  try {
    return saneOutputCap(policy.outputCap());
  } catch {
    return DEFAULT_OUTPUT_CAP;
  }
}
