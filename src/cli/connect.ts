// How CLI commands reach the running host.
import { existsSync, readFileSync } from "node:fs";
import { ClientError, HolonClient, discover } from "../client/client.ts";
import { homePaths, resolveHome } from "../host/paths.ts";
import { CliError } from "./output.ts";

export type ClientFlags = { home?: string; token?: string };

/** The control token: --token, then HOLON_CONTROL_TOKEN, then control_token in config.json. */
export function controlToken(home: string, flag?: string): string | undefined {
  if (flag) return flag;
  if (process.env.HOLON_CONTROL_TOKEN) return process.env.HOLON_CONTROL_TOKEN;
  const cfg = homePaths(home).config;
  if (!existsSync(cfg)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(cfg, "utf8")) as { control_token?: unknown };
    return typeof parsed.control_token === "string" ? parsed.control_token : undefined;
  } catch {
    return undefined;
  }
}

export function tryConnect(flags: ClientFlags): HolonClient | undefined {
  const home = resolveHome(flags.home);
  const conn = discover(home, controlToken(home, flags.token));
  return conn ? new HolonClient(conn) : undefined;
}

export function connect(flags: ClientFlags): HolonClient {
  const client = tryConnect(flags);
  if (!client) {
    throw new CliError(
      `no Holon runtime is running for ${resolveHome(flags.home)}`,
      "start one with `holon serve` (or pass --home / HOLON_HOME for another state dir)",
    );
  }
  return client;
}

/** Turn a client error into a CLI error with the server's hint. */
export async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ClientError) throw new CliError(`${err.message} (${err.kind})`, err.hint);
    throw err;
  }
}
