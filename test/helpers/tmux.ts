// A real terminal emulator for tests: a private tmux server (its own socket in a temp dir,
// no user config) running one command in a pane of a fixed size. Tests read what a user
// would see (`screen`), the pane's scrollback as well (`scrollback`), whether the program
// switched to the alternate screen, and the command's exit status once it is gone (the pane
// stays after exit). Keys go in through tmux, as typed.
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempHome, waitFor } from "./home.ts";

export class Tmux {
  private readonly socket: string;
  private readonly target: string;
  private constructor(socket: string, target: string) {
    this.socket = socket;
    this.target = target;
  }

  /**
   * Start `argv` in a `cols`×`rows` pane with `env` added to this process's environment, in
   * `cwd` (by default an empty temp dir, so nothing the command does lands in the checkout).
   */
  static start(
    argv: string[],
    opts: { cols?: number; rows?: number; env?: Record<string, string>; cwd?: string } = {},
  ): Tmux {
    const dir = tempHome("holon-tmux-");
    const cwd = opts.cwd ?? mkdtempSync(join(dir, "cwd-"));
    const socket = join(dir, "sock");
    const conf = join(dir, "tmux.conf");
    writeFileSync(
      conf,
      "set -g remain-on-exit on\nset -g history-limit 20000\nset -g status off\n",
    );
    const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
    const exports = Object.entries(opts.env ?? {})
      .map(([k, v]) => `export ${k}=${quote(v)}`)
      .join("; ");
    const script = join(dir, "run.sh");
    // The command's exit status goes to a file: tmux can mark a pane dead (its terminal
    // closed) without ever filling in #{pane_dead_status}, which flaked on a loaded machine.
    const statusFile = join(dir, "status");
    writeFileSync(
      script,
      `${exports}\n${argv.map(quote).join(" ")}\necho $? > ${quote(statusFile)}\n`,
      { mode: 0o700 },
    );
    execFileSync(
      "tmux",
      [
        "-S",
        socket,
        "-f",
        conf,
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        String(opts.cols ?? 100),
        "-y",
        String(opts.rows ?? 24),
        "-c",
        cwd,
        `sh ${quote(script)}`,
      ],
      { env: { ...process.env, TMUX: "" } },
    );
    return new Tmux(socket, "t");
  }

  private tmux(...args: string[]): string {
    return execFileSync("tmux", ["-S", this.socket, ...args], { encoding: "utf8" });
  }

  /** The visible screen, one string per row. */
  screen(): string {
    return this.tmux("capture-pane", "-p", "-t", this.target);
  }

  private screenAsync(): Promise<string> {
    return new Promise((resolve, reject) =>
      execFile(
        "tmux",
        ["-S", this.socket, "capture-pane", "-p", "-t", this.target],
        { encoding: "utf8" },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    );
  }

  /** Everything the pane holds: its scrollback history, then the visible screen. */
  scrollback(): string {
    return this.tmux("capture-pane", "-p", "-S", "-", "-E", "-", "-t", this.target);
  }

  alternateOn(): boolean {
    return this.tmux("display-message", "-p", "-t", this.target, "#{alternate_on}").trim() === "1";
  }

  /** The command's exit status once it has exited, else undefined. */
  exitStatus(): number | undefined {
    try {
      const text = readFileSync(join(dirname(this.socket), "status"), "utf8").trim();
      return text === "" ? undefined : Number(text);
    } catch {
      return undefined; // still running
    }
  }

  /** Type `text` literally, then Enter when asked. */
  type(text: string, enter = true): void {
    this.tmux("send-keys", "-t", this.target, "-l", text);
    if (enter) this.tmux("send-keys", "-t", this.target, "Enter");
  }

  /** Press a key by its tmux name (`PPage`, `NPage`, `Escape`, `C-c`). */
  key(name: string): void {
    this.tmux("send-keys", "-t", this.target, name);
  }

  /**
   * Wait until the screen satisfies `check` (bounded); returns that screen. Each look is an
   * asynchronous `capture-pane`: a synchronous one would block the event loop for the whole
   * wait, and with it the in-process host whose output the test is waiting to see.
   */
  async waitScreen(
    check: (screen: string) => boolean,
    what: string,
    timeoutMs = 20_000,
  ): Promise<string> {
    let last = "";
    try {
      return await waitFor(
        async () => {
          last = await this.screenAsync();
          return check(last) ? last : undefined;
        },
        { what, timeoutMs },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; the screen:\n${last}`);
    }
  }

  close(): void {
    try {
      this.tmux("kill-server");
    } catch {
      // already gone
    }
  }
}
