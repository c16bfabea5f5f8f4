// Child processes for benchmarks: the holon host under test, baseline servers, and forked
// workers (load generators, SSE subscribers) that keep client work off the host's event
// loop. Every child is registered so it is killed if the harness exits early.
import { fork, spawn, execFileSync, type ChildProcess } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  type Dirent,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}

/** An environment for children that cannot pick up the caller's Holon state or token. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.HOLON_HOME;
  delete env.HOLON_CONTROL_TOKEN;
  return env;
}

export type ServerProc = {
  pid: number;
  /** http://127.0.0.1:port */
  url: string;
  hostname: string;
  port: number;
  /** The temporary HOLON_HOME that `stop()` removes (holon servers on a fresh home only). */
  home: string | undefined;
  /** The control token a holon host generated (control routes over TCP need it); else null. */
  token: string | null;
  /** SIGTERM, then SIGKILL after `graceMs` (default 5 s). */
  stop(graceMs?: number): Promise<void>;
};

const LISTEN_RE = /listening on http:\/\/(\[[^\]]+\]|[^\s:]+):(\d+)/;

/** Spawn a server and wait for its "listening on http://host:port" line on stderr. */
async function spawnServer(
  args: string[],
  home: string | undefined,
  timeoutMs = 20_000,
  env: Record<string, string> = {},
  command = process.execPath,
): Promise<ServerProc> {
  const child = track(
    spawn(command, args, {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...childEnv(), ...env },
    }),
  );
  let stderr = "";
  const stream = child.stderr!;
  stream.setEncoding("utf8");
  let onData: (chunk: string) => void = () => {};
  let onExit: (code: number | null, signal: NodeJS.Signals | null) => void = () => {};
  const addr = await new Promise<{ hostname: string; port: number }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not report its address within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    onData = (chunk) => {
      if (stderr.length < 64_000) stderr += chunk;
      const m = LISTEN_RE.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve({ hostname: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]) });
      }
    };
    onExit = (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`server exited early (${signal ?? code}):\n${stderr}`));
    };
    stream.on("data", onData);
    child.once("exit", onExit);
  }).finally(() => {
    stream.off("data", onData);
    child.off("exit", onExit);
  });
  // Keep draining stderr so the child never blocks on a full pipe.
  stream.resume();
  const stop = async (graceMs = 5_000) => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    }
    if (home) rmSync(home, { recursive: true, force: true });
  };
  const url = `http://${addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname}:${addr.port}`;
  return {
    pid: child.pid!,
    url,
    hostname: addr.hostname,
    port: addr.port,
    home,
    token: null,
    stop,
  };
}

/**
 * Configure the scripted fake provider (OpenAI Responses wire) for a home through the real
 * CLI, as a user would, and make `model` (e.g. `fake/bench-model`) the default.
 */
export function configureFakeProvider(
  root: string,
  home: string,
  baseUrl: string,
  model: string,
): void {
  const bin = join(root, "bin", "holon.js");
  const run = (args: string[]) =>
    execFileSync(process.execPath, [bin, ...args, "--home", home], { stdio: "pipe" });
  run([
    "config",
    "providers",
    "set",
    "fake",
    "--transport",
    "openai_responses",
    "--base-url",
    baseUrl,
    "--credential-source",
    "none",
    "--credential-kind",
    "none",
  ]);
  run(["config", "set", "model.default", model]);
}

export type HolonOptions = {
  /** Serve this existing home instead of a fresh temporary one (kept when the server stops). */
  home?: string;
  /** Node options placed before the script (e.g. `--cpu-prof`, `--import <probe>`). */
  nodeArgs?: string[];
  /** Extra environment for the host. */
  env?: Record<string, string>;
};

let warmed = false;

/** `holon serve --port 0 --home <fresh tmp dir>` from the checkout under test. */
export async function startHolon(root: string, opts: HolonOptions = {}): Promise<ServerProc> {
  // A checkout runs TypeScript, which Node strips on a module's first load and then keeps in
  // its compile cache. A host that strips even one module (the first start after an edit)
  // keeps the stripper loaded for good, some 20 MB of RSS. One throwaway start per bench run
  // fills the cache, so figures are those of every later start. A host run from the build
  // (HOLON_DIST=1) strips nothing and needs none of this.
  if (!warmed && opts.env?.HOLON_DIST !== "1") {
    warmed = true;
    await (await startHolon(root)).stop();
  }
  const fresh = opts.home === undefined;
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "holon-bench-"));
  // Through the launcher, as an installed `holon` starts: sh runs bin/holon.js's first lines
  // (Node flags, malloc tuning) and execs `node` from PATH, here the Node running the bench.
  const flags = [...binNodeFlags(root), ...(opts.nodeArgs ?? [])];
  return await spawnServer(
    [join(root, "bin", "holon.js"), "serve", "--port", "0", "--host", "127.0.0.1", "--home", home],
    fresh ? home : undefined,
    20_000,
    {
      ...opts.env,
      HOLON_NODE_OPTIONS: flags.join(" "),
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
    },
    "/bin/sh",
  )
    .then((server) => {
      // A host on TCP without a configured token generates one for its control routes.
      const token = generatedToken(home);
      if (token) tokens.set(server.url, token);
      return { ...server, token };
    })
    .catch((err: unknown) => {
      if (fresh) rmSync(home, { recursive: true, force: true });
      throw err;
    });
}

/**
 * Builds dist/ (`npm run build`) when it is missing or some source file changed after it was
 * built, so a benchmark of the installed layout never measures a stale build.
 */
export function ensureDist(root: string, log: (line: string) => void): void {
  // The build's entry (the CLI bundle); a checkout built before the bundle has dist/cli/.
  const built =
    ["bundle", "cli"].map((d) => join(root, "dist", d, "main.js")).find((f) => existsSync(f)) ??
    join(root, "dist", "bundle", "main.js");
  const src = join(root, "src");
  if (existsSync(built)) {
    const builtAt = statSync(built).mtimeMs;
    const files = readdirSync(src, { recursive: true, encoding: "utf8" });
    if (!files.some((f) => statSync(join(src, f)).mtimeMs > builtAt)) return;
  }
  log("building dist/ (npm run build): missing or older than src/");
  execFileSync(process.execPath, [join(root, "scripts", "build.mjs")], { stdio: "ignore" });
}

/**
 * The Node flags `bin/holon.js` starts itself with when run as a program (its sh line), so a
 * host spawned here as `node bin/holon.js` runs the way an installed `holon` does.
 */
export function binNodeFlags(root: string): string[] {
  let head = "";
  try {
    head = readFileSync(join(root, "bin", "holon.js"), "utf8").slice(0, 1000);
  } catch {
    return [];
  }
  const m = /exec node \$\{HOLON_NODE_OPTIONS:-([^}]*)\}/.exec(head);
  if (!m) return [];
  const flags = process.env.HOLON_NODE_OPTIONS ?? m[1]!;
  return flags.split(/\s+/).filter(Boolean);
}

/** Control tokens of the hosts started here, by base URL; `json()` sends them along. */
const tokens = new Map<string, string>();

function generatedToken(home: string): string | null {
  try {
    return readFileSync(join(home, "run", "control-token"), "utf8").trim() || null;
  } catch {
    return null;
  }
}

/** `Authorization` for a URL on a host started here (empty for anything else). */
export function authHeaders(url: string): Record<string, string> {
  const token = tokens.get(new URL(url).origin);
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** A baseline server from bench/workers/baseline-server.ts ("bare" node:http or "hono"). */
export function startBaseline(mode: "bare" | "hono"): Promise<ServerProc> {
  return spawnServer(
    [new URL("../workers/baseline-server.ts", import.meta.url).pathname, mode],
    undefined,
  );
}

/** A forked worker speaking a request/response protocol over IPC. */
export class Worker<Msg extends { type: string }> {
  private readonly child: ChildProcess;
  private readonly inbox: Msg[] = [];
  private waiter: (() => void) | undefined;
  private exited: string | undefined;

  constructor(file: string) {
    this.child = track(
      fork(file, [], {
        execArgv: [],
        stdio: ["ignore", "inherit", "inherit", "ipc"],
        env: childEnv(),
      }),
    );
    this.child.on("message", (m) => {
      this.inbox.push(m as Msg);
      this.wake();
    });
    this.child.once("exit", (code, signal) => {
      this.exited = `worker ${file} exited (${signal ?? code})`;
      this.wake();
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  private wake() {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  send(message: unknown): void {
    this.child.send(message as object);
  }

  /** The next message of `type` (earlier messages of other types are dropped). */
  async next<T extends Msg["type"]>(
    type: T,
    timeoutMs: number,
  ): Promise<Extract<Msg, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.inbox.findIndex((m) => m.type === type || m.type === "error");
      if (i >= 0) {
        const m = this.inbox.splice(i, 1)[0]!;
        if (m.type === "error")
          throw new Error(`worker error: ${(m as { message?: string }).message}`);
        return m as Extract<Msg, { type: T }>;
      }
      if (this.exited) throw new Error(this.exited);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for '${type}'`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 3_000);
    await exited;
    clearTimeout(timer);
  }
}

export function workerPath(name: string): string {
  return new URL(`../workers/${name}`, import.meta.url).pathname;
}

// ---- /proc readers (Linux) -------------------------------------------------------------

/** VmRSS and VmHWM of a process, in KiB. */
export function memoryKb(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m").exec(status)?.[1] ?? NaN);
  return { rss: field("VmRSS"), hwm: field("VmHWM") };
}

let clockTicks: number | undefined;
export function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** Open file descriptors of a process. */
export function fdCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** Every live process below `pid` (children, grandchildren, …), from /proc. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited while we looked
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const list = children.get(ppid);
    if (list) list.push(Number(entry));
    else children.set(ppid, [Number(entry)]);
  }
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    for (const c of children.get(stack.pop()!) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

/** Bytes of the regular files under `dir` (0 when it does not exist). */
export function dirBytes(dir: string): number {
  let total = 0;
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += dirBytes(path);
    else if (e.isFile()) {
      try {
        total += statSync(path).size;
      } catch {
        // removed while we looked
      }
    }
  }
  return total;
}

/** utime + stime of a process, in seconds. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) / clockTicksPerSecond();
}

/** JSON over loopback for setup and verification calls (not for measured traffic); a host started here gets its control token. */
export async function json(
  url: string,
  method = "GET",
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const init: RequestInit = { method, signal: AbortSignal.timeout(15_000) };
  const headers: Record<string, string> = authHeaders(url);
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    headers["content-type"] = "application/json";
  }
  init.headers = headers;
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed };
}

export async function expectOk(
  url: string,
  method = "GET",
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await json(url, method, body);
  if (res.status < 200 || res.status >= 300) {
    throw new Error(`${method} ${url} -> ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
