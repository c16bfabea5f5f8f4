// Test helpers: temp homes, in-process hosts with real HTTP, spawned `holon` processes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { RuntimeHost, type HostOptions } from "../../src/host/host.ts";
import { startServer, type RunningServer, type ServeOptions } from "../../src/http/server.ts";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");
export const HOLON_BIN = join(REPO_ROOT, "bin/holon.js");

const homes: string[] = [];
export function tempHome(prefix = "holon-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  homes.push(dir);
  return dir;
}
export function cleanupHomes(): void {
  for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
}

/** Poll `check` until it returns a truthy value (bounded); for waiting on runtime events. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  opts: { timeoutMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.what ?? "condition"}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export type TestRuntime = {
  home: string;
  host: RuntimeHost;
  server: RunningServer;
  url: string;
  req(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; json: any }>;
  close(): Promise<void>;
};

export async function startRuntime(
  opts: Partial<HostOptions> & { serve?: ServeOptions } = {},
): Promise<TestRuntime> {
  const home = opts.home ?? tempHome();
  const host = RuntimeHost.open({ ...opts, home });
  const server = await startServer(host, { port: 0, ...opts.serve });
  const url = `http://${server.httpAddr}`;
  return {
    home,
    host,
    server,
    url,
    async req(method, path, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === "string" ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)["content-type"] = "application/json";
      }
      const res = await fetch(url + path, init);
      const text = await res.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      return { status: res.status, json };
    },
    async close() {
      await server.close();
      await host.shutdown();
    },
  };
}

export type CliResult = { code: number | null; stdout: string; stderr: string };

/** Run the real `holon` binary with Node 24 (the test runner's own node). */
export function runCli(
  args: string[],
  opts: {
    env?: Record<string, string>;
    input?: string;
    cwd?: string;
    timeoutMs?: number;
    /** Run this command line instead of `node bin/holon.js <args>` (e.g. under `script`). */
    exec?: string[];
  } = {},
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const [file, ...argv] = opts.exec ?? [process.execPath, HOLON_BIN, ...args];
    const child = spawn(file!, argv, {
      cwd: opts.cwd ?? REPO_ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? "");
  });
}

/** Start `holon serve` as its own process and wait until it answers. */
export async function spawnServe(
  home: string,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<{ proc: ChildProcess; url: string; stderr: () => string }> {
  const proc = spawn(
    process.execPath,
    [HOLON_BIN, "serve", "--port", "0", "--home", home, ...extraArgs],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  proc.stderr!.on("data", (d) => (stderr += d));
  const url = await waitFor(
    () => {
      if (proc.exitCode !== null) throw new Error(`serve exited early: ${stderr}`);
      const m = /listening on (http:\/\/[^\s]+)/.exec(stderr);
      return m?.[1];
    },
    { what: "holon serve to listen", timeoutMs: 15_000 },
  );
  return { proc, url, stderr: () => stderr };
}
