// `holon serve`: the foreground runtime host. Access modes (remote-tui-access): `local`
// (default: loopback), `tunnel` (loopback, every TCP route needs the token, for SSH port
// forwards), `lan` and `tailnet` (a non-loopback bind; refused without a configured token).
import { readFileSync, statSync } from "node:fs";
import { RuntimeHost } from "../host/host.ts";
import { preloadMcp } from "../host/mcp-facade.ts";
import { resolveHome } from "../host/paths.ts";
import { parseAdvertise, resolveAccess, startServer } from "../http/server.ts";
import { ACCESS_MODES, type AccessMode } from "../http/guard.ts";
import { HolonError } from "../domain/errors.ts";
import { configuredToken } from "./connect.ts";
import { CliError } from "./output.ts";

export type ServeFlags = {
  port: string;
  host: string;
  listen?: string;
  home?: string;
  token?: string;
  tokenFile?: string;
  access?: string;
  advertise?: string;
};

/**
 * The token serve starts with: --token, --token-file, HOLON_CONTROL_TOKEN, then
 * control_token in config.json. An empty one is an error wherever it came from; none at all
 * is fine for local and tunnel modes (the host then generates one).
 */
function serveToken(home: string, flags: ServeFlags): string | undefined {
  const empty = (where: string) =>
    new CliError(`the control token from ${where} is empty`, "give a non-empty token");
  if (flags.token !== undefined && flags.tokenFile !== undefined) {
    throw new CliError("give --token or --token-file, not both");
  }
  if (flags.token !== undefined) {
    if (flags.token.trim() === "") throw empty("--token");
    process.stderr.write(
      "holon: warning: --token is visible to every user on this machine (ps shows command lines); prefer --token-file or HOLON_CONTROL_TOKEN\n",
    );
    return flags.token.trim();
  }
  if (flags.tokenFile !== undefined) {
    let token: string;
    try {
      token = readFileSync(flags.tokenFile, "utf8").trim();
    } catch (err) {
      throw new CliError(`cannot read --token-file: ${(err as Error).message}`);
    }
    if (!token) throw empty(`--token-file ${flags.tokenFile}`);
    if ((statSync(flags.tokenFile).mode & 0o077) !== 0) {
      process.stderr.write(
        `holon: warning: ${flags.tokenFile} is readable by other users; chmod 600 it\n`,
      );
    }
    return token;
  }
  const env = process.env.HOLON_CONTROL_TOKEN;
  if (env !== undefined) {
    if (env.trim() === "") throw empty("HOLON_CONTROL_TOKEN");
    return env.trim();
  }
  return configuredToken(home);
}

/** The effective options of a `serve`, validated before anything is opened (daemon start uses it too). */
export type ServePlan = {
  home: string;
  hostname: string;
  port: number;
  access: AccessMode;
  advertise: string | null;
  token: string | undefined;
};

/** Validate serve's flags into its effective options; throws CliError with a hint. */
export function planServe(flags: ServeFlags): ServePlan {
  const home = resolveHome(flags.home);
  let hostname = flags.host;
  let portText = flags.port;
  if (flags.listen) {
    const m = /^(.*):(\d+)$/.exec(flags.listen);
    if (!m) throw new CliError(`--listen must be host:port, got '${flags.listen}'`);
    hostname = m[1]!.replace(/^\[|\]$/g, "");
    portText = m[2]!;
  }
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new CliError(`--port must be a port number, got '${portText}'`);
  }
  if (flags.access !== undefined && !ACCESS_MODES.includes(flags.access as AccessMode)) {
    throw new CliError(`--access must be one of ${ACCESS_MODES.join(", ")}, got '${flags.access}'`);
  }
  const token = serveToken(home, flags);
  // Refuse a risky bind before the home is even opened.
  let access: AccessMode;
  try {
    access = resolveAccess({
      hostname,
      access: flags.access as AccessMode | undefined,
      token,
    }).access;
    if (flags.advertise) parseAdvertise(flags.advertise);
  } catch (err) {
    if (err instanceof HolonError) throw new CliError(err.message, err.operatorHint ?? err.hint);
    throw err;
  }
  return { home, hostname, port, access, advertise: flags.advertise ?? null, token };
}

/** The log (and pino under it) loads only in a process that serves. */
const loadLog = () => import("../host/log.ts");

/**
 * Loads every module `serve` needs beyond what importing this file loads, so a process that
 * is about to launch a host (`holon daemon start`) can fill the compile cache for it.
 */
export async function loadServeModules(): Promise<void> {
  await Promise.all([loadLog(), preloadMcp()]);
}

export async function serve(flags: ServeFlags): Promise<void> {
  const { home, hostname, port, access, token } = planServe(flags);

  // A long-running host holds the MCP client from its start, whether or not the home uses MCP
  // yet: its control routes and hot-reloaded config answer synchronously (host/mcp-facade.ts).
  await preloadMcp();
  let host: RuntimeHost;
  try {
    host = await RuntimeHost.open({ home });
  } catch (err) {
    // With its kind, which scripts and supervisors match on (database_locked, home_locked…).
    if (err instanceof HolonError) {
      throw new CliError(`${err.message} (${err.kind})`, err.operatorHint ?? err.hint);
    }
    throw err;
  }

  const { openLog, logEvents } = await loadLog();
  const log = openLog(home);
  const unlog = logEvents(host.store, log);

  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`holon: shutting down (${why})\n`);
    log.info({ reason: why }, "runtime stopping");
    await server.close();
    unlog();
    await host.shutdown();
    log.info("runtime stopped");
    log.flush(() => process.exit(0));
  };
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(host, {
      port,
      hostname,
      token,
      access,
      advertise: flags.advertise ?? null,
      onShutdownRequested: () => void stop("shutdown requested"),
    });
  } catch (err) {
    log.error({ err: err instanceof Error ? err.message : String(err) }, "runtime failed to start");
    unlog();
    await host.shutdown();
    if (err instanceof HolonError) throw new CliError(err.message, err.operatorHint ?? err.hint);
    throw err;
  }
  log.info(
    {
      home,
      http_addr: server.httpAddr,
      socket_path: server.socketPath,
      access,
      token_source: token ? "configured" : "generated",
    },
    "runtime started",
  );
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  // A daemon's agents run commands: have spare command wrappers ready before the first one.
  await host.tasks.warmSpawner();
  process.stderr.write(
    `holon: runtime for ${home} listening on http://${server.httpAddr}` +
      (server.socketPath ? ` and ${server.socketPath}` : "") +
      ` (access: ${access}, default agent: ${host.defaultAgentId})\n`,
  );
  if (server.generatedTokenPath) {
    process.stderr.write(
      `holon: TCP control requests need the bearer token in ${server.generatedTokenPath} (the CLI reads it; the Unix socket needs none)\n`,
    );
  }
}
