// Small helpers every CLI command shares: JSON output, clean failures, the client flags.
import { statSync } from "node:fs";
import { dirname } from "node:path";
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

/**
 * What is wrong with a state directory before any command touches it, in one line (a file
 * where the directory or one of its parents should be), or undefined when it is usable or
 * can be created. Every command checks it first, so nobody sees a raw EEXIST or ENOTDIR.
 */
export function homeProblem(home: string, source: string): string | undefined {
  for (let p = home; ; p = dirname(p)) {
    let isDir: boolean;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      if (dirname(p) === p) return undefined;
      continue; // missing: created on first use, if its parents allow
    }
    if (isDir) return undefined;
    return p === home
      ? `${source} ${home} is a file, not a directory; point it at a directory (it is created when missing)`
      : `${source} ${home} cannot be created: ${p} is a file, not a directory`;
  }
}
