// Entry point of `holon tui` (started by the CLI as its own process): finds the host for
// HOLON_HOME through the client's discovery and renders the console until the user quits.
// Usage: main.ts --home <dir> [--connect http://host:port] [--agent <id>]
//        [--display info|verbose|debug] [--alternate-screen auto|always|never]
// It draws a fixed-height frame (on the alternate screen unless told otherwise) and needs a
// terminal on both ends: without one it says so in one line instead of failing in Ink.
import { createElement as h } from "react";
import { render } from "ink";
import { HolonClient, discover } from "../client/client.ts";
import { parseDisplayLevel } from "../client/presentation.ts";
import { App, wantsAlternateScreen } from "./app.ts";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const NEEDS_TERMINAL =
  "holon tui needs a terminal: run it in an interactive shell (for a log, use holon tail -f)";
if (!process.stdin.isTTY || !process.stdout.isTTY) {
  process.stderr.write(`${NEEDS_TERMINAL}\n`);
  process.exit(1);
}

const home = arg("--home");
if (!home) {
  process.stderr.write("holon tui: --home is required\n");
  process.exit(2);
}
const display = parseDisplayLevel(arg("--display") ?? "info");
if (!display || display === "trace") {
  process.stderr.write("holon tui: --display must be info, verbose or debug (or 3, 4, 5)\n");
  process.exit(2);
}
const token = process.env.HOLON_CONTROL_TOKEN;
// --connect http://host:port (checked by the CLI): that host only, never a local fallback.
const remote = arg("--connect");
const remoteUrl = remote ? new URL(remote) : undefined;
const connect = remoteUrl
  ? () =>
      new HolonClient({
        host: remoteUrl.hostname.replace(/^\[|\]$/g, ""),
        port: remoteUrl.port ? Number(remoteUrl.port) : 80,
        ...(token ? { token } : {}),
      })
  : () => {
      const conn = discover(home, token);
      return conn ? new HolonClient(conn) : undefined;
    };
const screen = arg("--alternate-screen") ?? "auto";
if (!["auto", "always", "never"].includes(screen)) {
  process.stderr.write("holon tui: --alternate-screen must be auto, always or never\n");
  process.exit(2);
}
const app = render(h(App, { connect, agentId: arg("--agent"), display }), {
  exitOnCtrlC: false,
  alternateScreen: wantsAlternateScreen(screen, process.stdout, process.env.TERM),
  // A console on a terminal stays interactive even where CI=true is set (Ink would otherwise
  // print only a final frame, and the operator would type into nothing).
  interactive: Boolean(process.stdout.isTTY),
});
await app.waitUntilExit();
process.exit(0);
