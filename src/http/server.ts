// Listening: loopback TCP plus a Unix socket under <holon_home>/run/, and a runtime file
// telling clients where to find this host.
import { createAdaptorServer } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, rmSync, writeFileSync, renameSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { HolonError } from "../domain/errors.ts";
import type { RuntimeHost } from "../host/host.ts";
import { createApp, type AppOptions } from "./app.ts";

export type ServeOptions = {
  port?: number;
  hostname?: string;
  token?: string | undefined;
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
  started_at: string;
};

export type RunningServer = {
  httpAddr: string;
  socketPath: string | null;
  close(): Promise<void>;
};

export async function startServer(
  host: RuntimeHost,
  opts: ServeOptions = {},
): Promise<RunningServer> {
  const listen: NonNullable<AppOptions["listen"]> = {};
  const appOpts: AppOptions = { token: opts.token, listen };
  if (opts.heartbeatMs !== undefined) appOpts.heartbeatMs = opts.heartbeatMs;
  if (opts.onShutdownRequested) appOpts.onShutdown = opts.onShutdownRequested;
  const { app, hub } = createApp(host, appOpts);

  const tcp = createAdaptorServer({ fetch: app.fetch }) as Server;
  tcp.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "EADDRINUSE"
          ? new HolonError("address_in_use", `port ${opts.port} is already in use`, {
              hint: "pick another --port, or stop whatever listens there",
            })
          : err,
      ),
    );
    tcp.listen(opts.port ?? 0, opts.hostname ?? "127.0.0.1", () => resolve());
  });
  const addr = tcp.address() as AddressInfo;
  const host6 = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  listen.http_addr = `${host6}:${addr.port}`;

  let unix: Server | null = null;
  if (opts.unixSocket !== false) {
    const socketPath = host.paths.socket;
    await clearStaleSocket(socketPath);
    unix = createAdaptorServer({ fetch: app.fetch }) as Server;
    await new Promise<void>((resolve, reject) => {
      unix!.once("error", reject);
      unix!.listen(socketPath, () => resolve());
    });
    listen.socket_path = socketPath;
  }

  const runtimeFile: RuntimeFile = {
    pid: process.pid,
    home_dir: host.home,
    http_addr: listen.http_addr,
    socket_path: listen.socket_path ?? null,
    auth_mode: opts.token ? "bearer" : "local",
    started_at: host.startedAt,
  };
  const tmp = `${host.paths.runtimeFile}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(runtimeFile, null, 2), { mode: 0o600 });
  renameSync(tmp, host.paths.runtimeFile);

  let closed = false;
  return {
    httpAddr: listen.http_addr,
    socketPath: listen.socket_path ?? null,
    async close() {
      if (closed) return;
      closed = true;
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
