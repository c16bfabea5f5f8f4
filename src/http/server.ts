// Listening: TCP (loopback unless an access mode says otherwise) plus a Unix socket under
// <holon_home>/run/, and a runtime file telling clients where to find this host. Every
// request passes the pre-routing guard (guard.ts) before the app sees it.
import { createAdaptorServer, type Http2Bindings, type HttpBindings } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chmodSync, existsSync, rmSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { HolonError } from "../domain/errors.ts";
import type { RuntimeHost } from "../host/host.ts";
import {
  controlTokenPath,
  ensureGeneratedToken,
  ensurePrivateDir,
  PRIVATE_FILE,
} from "../host/files.ts";
import { createApp, type AppOptions } from "./app.ts";
import { CONSOLE_CSP } from "./routes-ui.ts";
import {
  RefusalAudit,
  allowedHostNames,
  guardRequest,
  isLoopbackName,
  tokenRequiredMode,
  type AccessMode,
  type AccessPolicy,
  type Refusal,
  type Transport,
} from "./guard.ts";
import { atomicWriteFile } from "../store/files.ts";
import { reassertHomeLock } from "../host/lock.ts";

/** How often the run/ files are checked (and put back when deleted). */
const RUN_FILES_CHECK_MS = 1_000;

export type ServeOptions = {
  port?: number;
  hostname?: string;
  /** A configured control token. Without one, local and tunnel modes generate one. */
  token?: string | undefined;
  /** Default: `local` for a loopback bind, `lan` otherwise (which then needs a token). */
  access?: AccessMode;
  /** The URL clients should use (`--advertise`); its host name is accepted in `Host`. */
  advertise?: string | null;
  heartbeatMs?: number;
  /** Listen on the Unix socket too (default true). */
  unixSocket?: boolean;
  onShutdownRequested?: () => void;
};

export type RuntimeFile = {
  pid: number;
  home_dir: string;
  http_addr: string | null;
  socket_path: string | null;
  auth_mode: "local" | "bearer";
  access: AccessMode;
  advertise_url: string | null;
  started_at: string;
};

export type RunningServer = {
  httpAddr: string;
  socketPath: string | null;
  access: AccessMode;
  /** Where the generated control token lives, when the host generated one. */
  generatedTokenPath: string | null;
  close(): Promise<void>;
};

/** Check an `--advertise` URL: http(s), a routable host (never a wildcard address). */
export function parseAdvertise(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new HolonError("invalid_advertise_url", `--advertise '${url}' is not a URL`, {
      hint: "use a full URL such as http://lab.example.ts.net:7878",
    });
  }
  const host = u.hostname.replace(/^\[|\]$/g, "");
  if ((u.protocol !== "http:" && u.protocol !== "https:") || host === "") {
    throw new HolonError("invalid_advertise_url", `--advertise '${url}' must be an http(s) URL`);
  }
  if (host === "0.0.0.0" || host === "::") {
    throw new HolonError(
      "invalid_advertise_url",
      `--advertise cannot be ${host}: clients cannot route to a wildcard address`,
      { hint: "advertise the name or address clients dial, e.g. http://lab.example.ts.net:7878" },
    );
  }
  return u;
}

/**
 * Decide the access mode and token for a bind address, or refuse: a non-loopback bind
 * needs `lan` or `tailnet` and a configured token; `local` and `tunnel` bind loopback only.
 */
export function resolveAccess(opts: {
  hostname: string;
  access?: AccessMode | undefined;
  token?: string | undefined;
}): { access: AccessMode; needsGeneratedToken: boolean } {
  const loopback = isLoopbackName(opts.hostname);
  const access = opts.access ?? (loopback ? "local" : "lan");
  if (opts.token !== undefined && opts.token.trim() === "") {
    throw new HolonError("empty_token", "the control token is empty", {
      hint: "give a non-empty token (--token, --token-file, HOLON_CONTROL_TOKEN or control_token)",
    });
  }
  if (!loopback && (access === "local" || access === "tunnel")) {
    throw new HolonError(
      "access_mode_mismatch",
      `--access ${access} listens on loopback only, not on ${opts.hostname}`,
      {
        hint: "bind 127.0.0.1 (the default), or use --access lan|tailnet with a control token",
      },
    );
  }
  if ((access === "lan" || access === "tailnet") && opts.token === undefined) {
    throw new HolonError(
      "token_required",
      `refusing to listen on ${opts.hostname} (--access ${access}) without a control token`,
      {
        hint: "pass --token-file <path> (or set HOLON_CONTROL_TOKEN / control_token); anyone who can reach the port could otherwise drive the runtime",
      },
    );
  }
  return { access, needsGeneratedToken: opts.token === undefined };
}

/** Record one refusal as an audit event on the agent the path names, else the default agent. */
function auditSink(host: RuntimeHost) {
  return async (refusal: Refusal, suppressed: number) => {
    if (host.isClosed) return;
    const { agent_hint, ...payload } = refusal;
    try {
      await host.services.audit.requestRefused(agent_hint, {
        ...payload,
        suppressed_before: suppressed,
      });
    } catch {
      // the refusal stands; its record is lost only when the store cannot be written
    }
  };
}

export async function startServer(
  host: RuntimeHost,
  opts: ServeOptions = {},
): Promise<RunningServer> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const { access, needsGeneratedToken } = resolveAccess({
    hostname,
    access: opts.access,
    token: opts.token,
  });
  const token = needsGeneratedToken ? ensureGeneratedToken(host.home) : opts.token!;
  const advertise = opts.advertise ? parseAdvertise(opts.advertise) : null;

  const listen: NonNullable<AppOptions["listen"]> = {};
  const appOpts: AppOptions = {
    token,
    listen,
    advertiseUrl: advertise ? advertise.href.replace(/\/$/, "") : null,
  };
  if (opts.heartbeatMs !== undefined) appOpts.heartbeatMs = opts.heartbeatMs;
  if (opts.onShutdownRequested) appOpts.onShutdown = opts.onShutdownRequested;
  const { app, hub, consoleSessions } = createApp(host, appOpts);

  // The policy needs the bound address, known only after listen; requests wait for it.
  let policy: AccessPolicy | null = null;
  const audit = new RefusalAudit(auditSink(host));
  const guarded = (transport: Transport) => (req: Request, env: HttpBindings | Http2Bindings) => {
    const peer = transport === "tcp" ? env.incoming.socket.remoteAddress : undefined;
    const verdict = guardRequest(req, transport, peer, policy!);
    if ("refused" in verdict) {
      audit.note(verdict.refusal);
      // A refusal is never framed or run as a page either (a refused /ui/ request is still
      // a /ui/ response).
      return Response.json(
        { ok: false, error: verdict.refused.toBody() },
        {
          status: verdict.refused.status,
          headers: { "content-security-policy": CONSOLE_CSP, "x-frame-options": "DENY" },
        },
      );
    }
    return app.fetch(req, { ...env, holon_auth: verdict.auth });
  };

  const tcp = createAdaptorServer({ fetch: guarded("tcp") }) as Server;
  tcp.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "EADDRINUSE"
          ? new HolonError("address_in_use", `port ${opts.port} is already in use`, {
              hint: "pick another --port, or stop whatever listens there",
            })
          : err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND"
            ? new HolonError("address_unavailable", `cannot listen on ${hostname}: ${err.code}`, {
                hint: "bind an address of this machine (--host or --listen)",
              })
            : err,
      ),
    );
    tcp.listen(opts.port ?? 0, hostname, () => resolve());
  });
  const addr = tcp.address() as AddressInfo;
  const host6 = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  listen.http_addr = `${host6}:${addr.port}`;
  // The sandbox's allowlist proxy never connects a command to this port.
  host.services.sandbox.protectPort(addr.port);
  policy = {
    access,
    token,
    allowedHosts: allowedHostNames({
      bindHost: hostname,
      boundAddress: addr.address,
      advertiseHost: advertise ? advertise.hostname : null,
    }),
    advertiseOrigin: advertise ? advertise.origin : null,
    consoleSession: (cookies, csrf) => consoleSessions.check(cookies, csrf),
  };

  let unix: Server | null = null;
  const listenUnix = async (socketPath: string) => {
    // Other users are kept out by the directory (0700) and the socket itself (0600).
    ensurePrivateDir(host.paths.runDir);
    await clearStaleSocket(socketPath);
    const server = createAdaptorServer({ fetch: guarded("unix") }) as Server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => resolve());
    });
    chmodSync(socketPath, PRIVATE_FILE);
    return server;
  };
  if (opts.unixSocket !== false) {
    unix = await listenUnix(host.paths.socket);
    listen.socket_path = host.paths.socket;
  }

  const runtimeFile: RuntimeFile = {
    pid: process.pid,
    home_dir: host.home,
    http_addr: listen.http_addr,
    socket_path: listen.socket_path ?? null,
    auth_mode: tokenRequiredMode(access) ? "bearer" : "local",
    access,
    advertise_url: appOpts.advertiseUrl ?? null,
    started_at: host.startedAt,
  };
  const writeRuntimeFile = () =>
    atomicWriteFile(host.paths.runtimeFile, JSON.stringify(runtimeFile, null, 2), {
      mode: PRIVATE_FILE,
    });
  writeRuntimeFile();

  let closed = false;
  // run/ is how clients (and a second host) find this one: deleted under a running host, its
  // lock, runtime file and socket are put back within a second.
  let repairing = false;
  const repair = setInterval(() => {
    if (closed || repairing) return;
    repairing = true;
    void restoreRunFiles()
      .catch(() => {}) // a home that cannot be written now is tried again next time
      .finally(() => (repairing = false));
  }, RUN_FILES_CHECK_MS);
  repair.unref();
  const restoreRunFiles = async () => {
    reassertHomeLock(host.paths.lockFile);
    if (!existsSync(host.paths.runtimeFile)) {
      ensurePrivateDir(host.paths.runDir);
      writeRuntimeFile();
    }
    if (unix && listen.socket_path && !existsSync(listen.socket_path)) {
      // Closing a Unix listener unlinks its path: close the old one (its open connections
      // finish) before the new one binds that path.
      unix.close();
      unix = await listenUnix(listen.socket_path);
    }
  };
  return {
    httpAddr: listen.http_addr,
    socketPath: listen.socket_path ?? null,
    access,
    generatedTokenPath: needsGeneratedToken ? controlTokenPath(host.home) : null,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(repair);
      hub.close();
      const servers = [tcp, unix].filter((s): s is Server => s !== null);
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
      if (listen.socket_path) rmSync(listen.socket_path, { force: true });
      try {
        const current = JSON.parse(readFileSync(host.paths.runtimeFile, "utf8")) as RuntimeFile;
        if (current.pid === process.pid) rmSync(host.paths.runtimeFile, { force: true });
      } catch {
        // already gone
      }
    },
  };
}

/** A socket file left by a dead runtime is removed; one something answers on is not ours to take. */
async function clearStaleSocket(path: string): Promise<void> {
  if (!existsSync(path)) return;
  const alive = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
  if (alive) {
    throw new HolonError("socket_in_use", `something is already listening on ${path}`, {
      status: 409,
      hint: "another runtime may own this home; check holon status",
    });
  }
  rmSync(path, { force: true });
}
