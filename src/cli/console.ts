// `holon console`: a one-time login link for the web console, opened in the browser (or
// printed when none can be opened). The link's secret is in the URL fragment and works
// once, within 60 seconds. Opening it hands the URL to `xdg-open` (or `open` on macOS) on
// its command line, where `ps` shows it for the moment before the browser spends it.
import { spawn } from "node:child_process";
import { BUILTIN_ENV_POLICY, scrubEnv } from "../tasks/env.ts";
import { call, connect, type ClientFlags } from "./connect.ts";
import { printJson } from "./output.ts";

type ConsoleFlags = ClientFlags & { open?: boolean; json?: boolean };

type Link = { url: string; expires_at: string };

/** The program that opens a URL on this machine, or null where none is expected to work. */
function opener(): string | null {
  if (process.platform === "darwin") return "open";
  if (process.platform === "win32") return null;
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return null;
  return "xdg-open";
}

/** Start the opener detached, with the host's secrets kept out of its environment. */
function openUrl(program: string, url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(program, [url], {
      detached: true,
      stdio: "ignore",
      env: scrubEnv(process.env, BUILTIN_ENV_POLICY),
    });
    child.once("error", () => resolve(false));
    child.once("spawn", () => {
      child.unref();
      resolve(true);
    });
  });
}

export async function consoleCommand(flags: ConsoleFlags): Promise<void> {
  const client = connect(flags);
  const link = await call(() => client.call<Link>("POST", "/control/console/login-link", {}));
  if (flags.json) {
    printJson({ url: link.url, expires_at: link.expires_at });
    return;
  }
  const program = flags.open === false ? null : opener();
  if (program && (await openUrl(program, link.url))) {
    process.stdout.write(
      `Opened the console in your browser (the link works once, until ${link.expires_at}).\n`,
    );
    process.stdout.write(`If nothing opened, visit:\n${link.url}\n`);
    return;
  }
  process.stdout.write(
    `Open this one-time login link in a browser within 60 seconds (it works once):\n${link.url}\n`,
  );
}
