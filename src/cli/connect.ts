// How CLI commands reach the running host.
import { existsSync, readFileSync } from "node:fs";
import { ClientError, HolonClient, discover } from "../client/client.ts";
import { readGeneratedToken } from "../host/files.ts";
import { homePaths, resolveHome } from "../host/paths.ts";
import { CliError } from "./output.ts";

export type ClientFlags = { home?: string; token?: string };

/** `control_token` from config.json, if set. */
export function configuredToken(home: string): string | undefined {
  const cfg = homePaths(home).config;
  if (!existsSync(cfg)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(cfg, "utf8")) as { control_token?: unknown };
    return typeof parsed.control_token === "string" && parsed.control_token.trim() !== ""
      ? parsed.control_token.trim()
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The token a client sends: --token, then HOLON_CONTROL_TOKEN, then control_token in
 * config.json, then the one a local-mode host generated into <home>/run/control-token.
 * The Unix socket needs none, but loopback TCP does for every /control route.
 */
export function controlToken(home: string, flag?: string): string | undefined {
  if (flag?.trim()) return flag.trim();
  const env = process.env.HOLON_CONTROL_TOKEN?.trim();
  if (env) return env;
  return configuredToken(home) ?? readGeneratedToken(home);
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

/** The agent a command names, or the host's default agent when it names none. */
export async function agentOrDefault(client: HolonClient, agent?: string): Promise<string> {
  if (agent) return agent;
  return (await call(() => client.call<{ default_agent: string }>("GET", "/"))).default_agent;
}
