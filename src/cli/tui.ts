// `holon tui`: starts the console (src/tui/, a peer of the CLI that may not be imported from
// here) as a child process on this terminal. Locally it finds the host of HOLON_HOME with the
// home and token resolved as for every client command. With `--connect <url>` it dials that
// host only (remote-tui-access): a token is required (--token-file or --token), the host's
// /handshake and the token are checked before the console starts, and it never falls back to
// a local runtime.
import { spawn } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ClientError, HolonClient } from "../client/client.ts";
import { loadConfig } from "../host/config.ts";
import { resolveHome } from "../host/paths.ts";
import { controlToken, tryConnect } from "./connect.ts";
import { CliError } from "./output.ts";

// From the sources the entry is main.ts; in the built package (dist/) it is main.js.
const TUI_MAIN = join(
  import.meta.dirname,
  "..",
  "tui",
  import.meta.url.endsWith(".ts") ? "main.ts" : "main.js",
);

const CHECK_TIMEOUT_MS = 5_000;

type TuiFlags = {
  home?: string;
  token?: string;
  tokenFile?: string;
  display?: string;
  connect?: string;
  alternateScreen?: string;
};

const SCREEN_MODES = ["auto", "always", "never"];

/** The host and port of a `--connect` URL (plain http: the control plane speaks no TLS). */
export function parseConnectUrl(raw: string): { host: string; port: number; url: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`--connect ${raw} is not a URL`, "use http://host:port");
  }
  if (url.protocol !== "http:") {
    throw new CliError(
      `--connect must be an http:// URL (got ${url.protocol}//)`,
      "put a TLS terminator or an SSH tunnel in front and connect to its http:// side",
    );
  }
  if (url.username || url.password) {
    throw new CliError("--connect must not carry credentials", "pass the token with --token-file");
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash) {
    throw new CliError("--connect takes the host's base URL only (http://host:port)");
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = url.port ? Number(url.port) : 80;
  return { host, port, url: `http://${url.host}` };
}

function remoteToken(flags: TuiFlags): string {
  if (flags.token !== undefined && flags.tokenFile !== undefined) {
    throw new CliError("give --token or --token-file, not both");
  }
  if (flags.tokenFile !== undefined) {
    let token: string;
    try {
      token = readFileSync(flags.tokenFile, "utf8").trim();
    } catch (err) {
      throw new CliError(`cannot read --token-file ${flags.tokenFile}: ${(err as Error).message}`);
    }
    if (!token) throw new CliError(`--token-file ${flags.tokenFile} is empty`);
    if ((statSync(flags.tokenFile).mode & 0o077) !== 0) {
      process.stderr.write(
        `holon: warning: ${flags.tokenFile} is readable by other users; chmod 600 it\n`,
      );
    }
    return token;
  }
  const token = flags.token?.trim() || process.env.HOLON_CONTROL_TOKEN?.trim();
  if (!token) {
    throw new CliError(
      "--connect needs the host's control token",
      "pass --token-file <file> (or --token, or HOLON_CONTROL_TOKEN)",
    );
  }
  return token;
}

/** Check the remote host before the console starts: it answers, and takes this token. */
async function checkRemote(target: { host: string; port: number; url: string }, token: string) {
  const client = new HolonClient({ host: target.host, port: target.port, token });
  try {
    const hs = await client.call<{ protocol?: { name?: string } }>("GET", "/handshake", undefined, {
      timeoutMs: CHECK_TIMEOUT_MS,
    });
    if (hs.protocol?.name !== "holon-control") {
      throw new CliError(`${target.url} is not a Holon runtime (no holon-control handshake)`);
    }
    await client.call("GET", "/agents/list", undefined, { timeoutMs: CHECK_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof CliError) throw err;
    if (err instanceof ClientError) {
      if (err.status === 401 || err.status === 403) {
        throw new CliError(
          `${target.url} refused the token (${err.kind})`,
          "check the token file against the host's control token",
        );
      }
      throw new CliError(`cannot use ${target.url}: ${err.message} (${err.kind})`, err.hint);
    }
    throw err;
  }
}

/** Ink needs raw keys from a terminal and draws to one: without it, one line and stop. */
function needTerminal(): void {
  if (process.stdin.isTTY && process.stdout.isTTY) return;
  // One line, no hint: a script that started it by mistake has one line to read.
  throw new CliError(
    `holon tui needs a terminal (its ${process.stdin.isTTY ? "output" : "input"} is not one); to follow an agent in a pipe or a log, use holon tail -f`,
  );
}

export async function tui(agent: string | undefined, flags: TuiFlags): Promise<void> {
  if (flags.alternateScreen !== undefined && !SCREEN_MODES.includes(flags.alternateScreen)) {
    throw new CliError("--alternate-screen must be auto, always or never");
  }
  const home = resolveHome(flags.home);
  // The flag, else tui.alternate_screen from this home's config (auto when unset or unreadable).
  const screen = flags.alternateScreen ?? loadConfig(home).values.tui.alternate_screen;
  const args = [TUI_MAIN, "--home", home, "--alternate-screen", screen];
  const env = { ...process.env };
  if (flags.connect !== undefined) {
    const target = parseConnectUrl(flags.connect);
    const token = remoteToken(flags);
    await checkRemote(target, token);
    needTerminal();
    args.push("--connect", target.url);
    env.HOLON_CONTROL_TOKEN = token;
  } else {
    if (flags.tokenFile !== undefined) {
      throw new CliError("--token-file is for --connect; a local console finds its token itself");
    }
    needTerminal();
    if (!tryConnect(flags)) {
      process.stderr.write(
        `holon: no runtime is running for ${home} yet; the console waits for one (holon daemon start)\n`,
      );
    }
    const token = controlToken(home, flags.token);
    if (token) env.HOLON_CONTROL_TOKEN = token;
  }
  if (agent) args.push("--agent", agent);
  if (flags.display) args.push("--display", flags.display);
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: "inherit", env });
    child.once("error", reject);
    child.once("exit", (c) => resolve(c ?? 1));
  });
  if (code !== 0) throw new CliError(`the console exited with code ${code}`, undefined, code);
}
