// Small helpers every CLI command shares: JSON output, clean failures, the client flags.
import { Option, type Command } from "commander";

export class CliError extends Error {
  readonly hint: string | undefined;
  readonly exitCode: number;
  constructor(message: string, hint?: string, exitCode = 1) {
    super(message);
    this.hint = hint;
    this.exitCode = exitCode;
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** Wrap an async command action so a thrown error prints cleanly and sets the exit code. */
export function action<A extends unknown[]>(
  fn: (...args: A) => Promise<void> | void,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      if (err instanceof CliError) {
        process.stderr.write(`error: ${err.message}\n`);
        if (err.hint) process.stderr.write(`hint: ${err.hint}\n`);
        process.exitCode = err.exitCode;
        return;
      }
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    }
  };
}

/** The flags every command that talks to a host shares. */
export const homeOption = () =>
  new Option("--home <path>", "Holon state directory (default: $HOLON_HOME or ~/.holon)");
export const tokenOption = () =>
  new Option("--token <token>", "control token for a runtime in bearer mode");
export const jsonOption = () => new Option("--json", "print machine-readable JSON");

/** Add --home, --token and --json to a command. */
export function clientOptions(c: Command): Command {
  return c.addOption(homeOption()).addOption(tokenOption()).addOption(jsonOption());
}
