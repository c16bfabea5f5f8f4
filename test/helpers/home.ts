// Test helpers: temp homes, in-process hosts with real HTTP, spawned `holon` processes.
import {
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll } from "vitest";
import { RuntimeHost, type HostOptions } from "../../src/host/host.ts";
import { startServer, type RunningServer, type ServeOptions } from "../../src/http/server.ts";
import { readGeneratedToken } from "../../src/host/files.ts";
import { seedProbeCache } from "./probe-cache.ts";
import { dropDatabases, freshDatabaseUrl, testStore } from "./postgres.ts";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");
export const HOLON_BIN = join(REPO_ROOT, "bin/holon.js");

const homes: string[] = [];

/**
 * The prefixes of tempHome directories that are scratch space, not a HOLON_HOME: workspaces,
 * user homes (HOME), template and skill sources, dump directories. In a Postgres run they get
 * no database (and no config.json in the middle of a workspace); every other prefix, the
 * default's above all, is a home.
 */
const SCRATCH_PREFIXES = new Set([
  "codex-",
  "holon-agent-",
  "holon-bad-",
  "holon-bare-",
  "holon-bundle-ws-",
  "holon-doomed-",
  "holon-dumpdir-",
  "holon-dumps-",
  "holon-empty-",
  "holon-go-",
  "holon-gone-",
  "holon-legacy-",
  "holon-log-debug-",
  "holon-logs-",
  "holon-mcp-other-",
  "holon-mcp-tmp-",
  "holon-outside-",
  "holon-patch-crash-",
  "holon-pkg-",
  "holon-plain-",
  "holon-project-",
  "holon-projects-",
  "holon-prompt-",
  "holon-pty-",
  "holon-skill-",
  "holon-skill-src-",
  "holon-tmux-",
  "holon-tok-",
  "holon-tpl-",
  "holon-tui-ws-",
  "holon-user-",
  "holon-userwt-",
  "holon-ws-",
]);

/** Postgres run: each home's database (dropped with the home). */
const databases = new Map<string, string>();
/** Postgres run: the directories that must never get a SQLite file (all but `sqlite` ones). */
const guarded = new Set<string>();

export type TempHomeOptions = {
  /**
   * Keep this home on SQLite in a Postgres run too: no database, no config.json. For tests
   * about the SQLite file itself (`new Store(join(home, "holon.db"))`) and about config.json's
   * own contents; the guard below leaves such a home alone.
   */
  sqlite?: boolean;
};

/**
 * A temporary directory, removed by cleanupHomes(). In a Postgres run (HOLON_TEST_STORE=
 * postgres, `npm run test:pg`) a home gets a database of its own, a copy of the migrated
 * template on this worker's test server, named in its config.json (0600) as a user would
 * configure it: every host started on the home, in this process or a spawned `holon`, runs on
 * Postgres. Tests that write config.json keep that key (writeHomeConfig).
 */
export function tempHome(prefix = "holon-test-", opts: TempHomeOptions = {}): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  homes.push(dir);
  if (testStore() === "postgres" && !opts.sqlite) {
    guarded.add(dir);
    if (!SCRATCH_PREFIXES.has(prefix)) {
      const url = freshDatabaseUrl();
      databases.set(dir, url);
      writeFileSync(
        join(dir, "config.json"),
        JSON.stringify({ store: { database_url: url } }, null, 2) + "\n",
        { mode: 0o600 },
      );
    }
  }
  return dir;
}

/** The `store` section tempHome put into a home's config.json (Postgres run), if any. */
export function homeStoreConfig(home: string): Record<string, unknown> | undefined {
  const url = databases.get(home);
  return url === undefined ? undefined : { database_url: url };
}

/**
 * Write a home's config.json as a test sets it up: `config` replaces the file's contents
 * (`mode` applies to a new file, as writeFileSync's does), except that the `store` section
 * tempHome gave the home in a Postgres run stays unless `config` names one itself.
 */
export function writeHomeConfig(
  home: string,
  config: Record<string, unknown>,
  opts: { mode?: number } = {},
): void {
  const store = homeStoreConfig(home);
  const data = store && config.store === undefined ? { ...config, store } : config;
  writeFileSync(
    join(home, "config.json"),
    JSON.stringify(data),
    opts.mode !== undefined ? { mode: opts.mode } : {},
  );
}

export function cleanupHomes(): void {
  const gone = homes.splice(0);
  killLeftovers(gone);
  const fellBack = sqliteFiles(gone);
  // Retried: the spawn helper outlives a test's host in the worker (one per process) and may
  // still be making or removing a spare sandbox's directory in a home as it is removed, which
  // makes one pass fail with ENOTEMPTY.
  for (const h of gone) rmSync(h, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
  dropHomeDatabases(gone);
  for (const h of gone) guarded.delete(h);
  failOnSqlite(fellBack);
}

function dropHomeDatabases(gone: string[]): void {
  const urls: string[] = [];
  for (const h of gone) {
    const url = databases.get(h);
    if (url === undefined) continue;
    urls.push(url);
    databases.delete(h);
  }
  dropDatabases(urls);
}

/**
 * The guard of a Postgres run against a silent fallback: a SQLite database (holon.db) in a
 * home, or one level below it (a HOLON_HOME inside it, ~/.holon of a user home), means a host
 * or a command opened SQLite where the run meant Postgres.
 */
function sqliteFiles(dirs: string[]): string[] {
  const found: string[] = [];
  const isFile = (p: string) => {
    try {
      return lstatSync(p).isFile();
    } catch {
      return false;
    }
  };
  for (const d of dirs) {
    if (!guarded.has(d)) continue;
    if (isFile(join(d, "holon.db"))) found.push(join(d, "holon.db"));
    let entries: string[] = [];
    try {
      entries = readdirSync(d);
    } catch {
      continue;
    }
    for (const e of entries) if (isFile(join(d, e, "holon.db"))) found.push(join(d, e, "holon.db"));
  }
  return found;
}

function failOnSqlite(files: string[]): void {
  if (files.length === 0) return;
  throw new Error(
    `HOLON_TEST_STORE=postgres, yet SQLite databases were made: ${files.join(", ")}. ` +
      "Something opened SQLite instead of the home's Postgres database; a test that means " +
      "SQLite asks for it with tempHome(prefix, { sqlite: true }).",
  );
}

// Postgres run: at the end of the test file, the homes it never cleaned up get the same check
// (and their databases are dropped when nothing uses them). Registered by the file's first
// import of this module, so it runs after the file's own afterAll hooks.
if (testStore() === "postgres") {
  try {
    afterAll(() => {
      const left = [...guarded];
      const fellBack = sqliteFiles(left);
      dropHomeDatabases(left);
      guarded.clear();
      failOnSqlite(fellBack);
    });
  } catch {
    // imported inside a test: the file's hooks are already set
  }
}

/**
 * Kill what a test left running in its homes: tasks outlive their host by design, so a test
 * that fails before stopping its task would leave the command (sandboxed or not) running
 * for the rest of the suite. A process is a leftover when its working directory or its
 * command line names one of the homes.
 */
function killLeftovers(dirs: string[]): void {
  if (dirs.length === 0 || process.platform !== "linux") return;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let cwd = "";
    let cmd = "";
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {}
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {}
    const hit = dirs.some((d) => cwd === d || cwd.startsWith(`${d}/`) || cmd.includes(d));
    if (!hit) continue;
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {}
  }
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
  /** The control token TCP control routes need (configured, or generated by the host). */
  token: string;
  /** Sends the control token unless `headers.authorization` is given ("" sends none). */
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
  const host = await RuntimeHost.open({ ...opts, home });
  const server = await startServer(host, { port: 0, ...opts.serve });
  const url = `http://${server.httpAddr}`;
  const token = opts.serve?.token ?? readGeneratedToken(home)!;
  return {
    home,
    host,
    server,
    url,
    token,
    async req(method, path, body, headers = {}) {
      const h: Record<string, string> = { ...headers };
      if (h.authorization === undefined) h.authorization = `Bearer ${token}`;
      else if (h.authorization === "") delete h.authorization;
      const init: RequestInit = { method, headers: h };
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
    input?: string | Buffer;
    cwd?: string;
    timeoutMs?: number;
    /** Run this command line instead of `node bin/holon.js <args>` (e.g. under `script`). */
    exec?: string[];
  } = {},
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const [file, ...argv] = opts.exec ?? [process.execPath, HOLON_BIN, ...args];
    const env = { ...process.env, ...opts.env };
    seedProbeCache(homeOf(argv, env));
    const child = spawn(file!, argv, {
      cwd: opts.cwd ?? REPO_ROOT,
      env,
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
    // A command may stop reading its input early (a refused oversized prompt): not an error.
    child.stdin.on("error", () => {});
    child.stdin.end(opts.input ?? "");
  });
}

/** Commands that may start a host, and so probe the sandbox (see probe-cache.ts). */
const HOST_COMMANDS = new Set(["run", "serve", "daemon"]);

/** The home a `holon` command line that may start a host runs on: `--home`, else HOLON_HOME. */
function homeOf(argv: string[], env: NodeJS.ProcessEnv): string | undefined {
  if (!argv.some((a) => HOST_COMMANDS.has(a))) return undefined;
  const i = argv.indexOf("--home");
  if (i >= 0) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith("--home="));
  return eq !== undefined ? eq.slice("--home=".length) : env.HOLON_HOME;
}

/** Start `holon serve` as its own process and wait until it answers. */
export async function spawnServe(
  home: string,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<{
  proc: ChildProcess;
  url: string;
  stderr: () => string;
  /** `Authorization` for TCP control routes: the --token given, or the generated one. */
  auth: Record<string, string>;
}> {
  seedProbeCache(home);
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
    // A stall bound: a cold `holon serve` loads the whole host, which on a loaded machine took
    // over 15 s; a test that starts one gives itself the time (see crash.test.ts).
    { what: "holon serve to listen", timeoutMs: 45_000 },
  );
  const i = extraArgs.indexOf("--token");
  const token = i >= 0 ? extraArgs[i + 1]! : (env.HOLON_CONTROL_TOKEN ?? readGeneratedToken(home));
  return {
    proc,
    url,
    stderr: () => stderr,
    auth: token ? { authorization: `Bearer ${token}` } : {},
  };
}
