// Small helpers every CLI command shares: JSON output and clean failures.

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
