// `holon tui`: starts the console (src/tui/, a peer of the CLI that may not be imported from
// here) as a child process on this terminal, with the home and token resolved as for every
// client command.
import { spawn } from "node:child_process";
import { join } from "node:path";
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

export async function tui(
  agent: string | undefined,
  flags: { home?: string; token?: string; display?: string },
): Promise<void> {
  const home = resolveHome(flags.home);
  if (!tryConnect(flags)) {
    process.stderr.write(
      `holon: no runtime is running for ${home} yet; the console waits for one (holon daemon start)\n`,
    );
  }
  const args = [TUI_MAIN, "--home", home];
  if (agent) args.push("--agent", agent);
  if (flags.display) args.push("--display", flags.display);
  const env = { ...process.env };
  const token = controlToken(home, flags.token);
  if (token) env.HOLON_CONTROL_TOKEN = token;
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: "inherit", env });
    child.once("error", reject);
    child.once("exit", (c) => resolve(c ?? 1));
  });
  if (code !== 0) throw new CliError(`the console exited with code ${code}`, undefined, code);
}
