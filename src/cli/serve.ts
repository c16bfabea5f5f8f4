// `holon serve`: the foreground runtime host.
import { readFileSync } from "node:fs";
import { RuntimeHost } from "../host/host.ts";
import { resolveHome } from "../host/paths.ts";
import { startServer } from "../http/server.ts";
import { ensureSpawner } from "../tasks/spawner.ts";
import { HolonError } from "../domain/errors.ts";
import { controlToken } from "./connect.ts";
import { CliError } from "./output.ts";

type ServeFlags = {
  port: string;
  host: string;
  listen?: string;
  home?: string;
  token?: string;
  tokenFile?: string;
};

export async function serve(flags: ServeFlags): Promise<void> {
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
  let token = flags.token;
  if (flags.tokenFile) {
    try {
      token = readFileSync(flags.tokenFile, "utf8").trim();
    } catch (err) {
      throw new CliError(`cannot read --token-file: ${(err as Error).message}`);
    }
    if (!token) throw new CliError(`--token-file ${flags.tokenFile} is empty`);
  }
  token ??= controlToken(home);

  let host: RuntimeHost;
  try {
    const { buildHostOptions } = await import("../host/wiring.ts");
    host = RuntimeHost.open(await buildHostOptions(home));
  } catch (err) {
    if (err instanceof HolonError) throw new CliError(err.message, err.hint);
    throw err;
  }

  const { openLog, logEvents } = await import("../host/log.ts");
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
      onShutdownRequested: () => void stop("shutdown requested"),
    });
  } catch (err) {
    log.error({ err: err instanceof Error ? err.message : String(err) }, "runtime failed to start");
    unlog();
    await host.shutdown();
    if (err instanceof HolonError) throw new CliError(err.message, err.hint);
    throw err;
  }
  log.info(
    {
      home,
      http_addr: server.httpAddr,
      socket_path: server.socketPath,
      auth: token ? "bearer" : "local",
    },
    "runtime started",
  );
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  // A daemon's agents run commands: have spare command wrappers ready before the first one.
  ensureSpawner();
  process.stderr.write(
    `holon: runtime for ${home} listening on http://${server.httpAddr}` +
      (server.socketPath ? ` and ${server.socketPath}` : "") +
      ` (auth: ${token ? "bearer" : "local"}, default agent: ${host.defaultAgentId})\n`,
  );
}
