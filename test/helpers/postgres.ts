// A real Postgres for the tests: one private server per vitest worker, a database per home.
//
// The suite runs on SQLite (`npm test`) and again on Postgres (`npm run test:pg`, which sets
// HOLON_TEST_STORE=postgres): then every home tempHome() makes gets a database of its own,
// named in its config.json as a user would (test/helpers/home.ts). Tests that are about
// Postgres itself ask for a database directly (freshDatabaseUrl, emptyDatabaseUrl) in either
// run, and skip without a server locally (requirePostgres).
//
// A server is never the distribution's own service: the first test file of a worker that asks
// for a database initialises a cluster under the run's directory in the system temp dir
// (data directory and unix socket there, on a tmpfs of its own when we are root), starts it
// as the `postgres` user (Postgres refuses root) on a random free port of 127.0.0.1 only, with
// fsync and full-page writes off for speed but synchronous_commit on (the backend refuses a
// server that acknowledges commits before they are durable), and migrates a template database
// once (openPostgres, in a child process, which leaves no connection behind). Every database
// after that is a copy of the template: one CREATE DATABASE … TEMPLATE, no migrations per
// home. Measured here: a server with its template in about 1 s, a database in about 30 ms.
//
// Vitest runs each test file in a fresh fork and imports this module anew there, so what a
// server is lives in files: the run's directory (made by the global setup below, which stops
// every server in it when the run ends) holds one directory per worker slot (VITEST_POOL_ID,
// 1…maxWorkers, never two files at once) with the server's state.json. A watchdog stops a
// server whose run died without its teardown, and the next run sweeps what such a run left.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { inject } from "vitest";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's directory of Postgres servers (see test/helpers/postgres.ts). */
    pgRunDir: string;
  }
}

const REPO_ROOT = resolve(import.meta.dirname, "../..");
const RUN_PREFIX = "holon-pg-";
const TEMPLATE = "holon_template";
/** The superuser the servers are initialised with; tests connect as it, without a password. */
const SUPERUSER = "postgres";

export type TestStoreKind = "sqlite" | "postgres";

/** The store this run puts its homes on: HOLON_TEST_STORE, `sqlite` unless it says `postgres`. */
export function testStore(): TestStoreKind {
  const v = process.env.HOLON_TEST_STORE;
  if (v === undefined || v === "" || v === "sqlite") return "sqlite";
  if (v === "postgres") return "postgres";
  throw new Error(`HOLON_TEST_STORE=${v}: expected sqlite or postgres`);
}

// ---------------------------------------------------------------------------------------------
// The binaries and the user the servers run as.

type Tools = {
  /** The directory of initdb, pg_ctl, postgres, createdb, psql. */
  bin: string;
  /** runuser, when we are root (Postgres refuses to run as root); else the servers run as us. */
  runuser: string | null;
  /** uid and gid of the servers' user (the postgres user, or us). */
  uid: number;
  gid: number;
};

let tools: Tools | null | undefined;
let missing = "";

function findBin(): string | undefined {
  const has = (dir: string) =>
    ["initdb", "pg_ctl", "postgres", "createdb", "psql"].every((b) => existsSync(join(dir, b)));
  const debian = "/usr/lib/postgresql";
  try {
    const versions = readdirSync(debian)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(join(debian, v, "bin"))) return join(debian, v, "bin");
  } catch {
    // not Debian's layout
  }
  for (const dir of (process.env.PATH ?? "").split(":")) if (dir && has(dir)) return dir;
  return undefined;
}

function findTools(): Tools | null {
  if (tools !== undefined) return tools;
  tools = null;
  const bin = findBin();
  if (!bin) {
    missing = "no initdb/pg_ctl/postgres/createdb/psql found (install the `postgresql` package)";
    return null;
  }
  if (process.getuid?.() !== 0) {
    tools = { bin, runuser: null, uid: process.getuid!(), gid: process.getgid!() };
    return tools;
  }
  const runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].find(existsSync);
  if (!runuser) {
    missing = "running as root and no runuser to start Postgres as the postgres user";
    return null;
  }
  try {
    const uid = Number(execFileSync("id", ["-u", SUPERUSER], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", SUPERUSER], { encoding: "utf8" }).trim());
    execFileSync(runuser, ["-u", SUPERUSER, "--", join(bin, "postgres"), "--version"], {
      cwd: "/",
      stdio: "ignore",
    });
    tools = { bin, runuser, uid, gid };
  } catch {
    missing = "no `postgres` user to run the servers as (install the `postgresql` package)";
  }
  return tools;
}

/** Whether this machine can run a test server: the binaries are there and we can runuser. */
export function postgresAvailable(): boolean {
  return findTools() !== null;
}

let warned = false;

/**
 * For tests that need a server in either run: true when one can start. Under CI a missing
 * Postgres is a failure (the script installs it); locally the test skips, with one line.
 */
export function requirePostgres(): boolean {
  if (postgresAvailable()) return true;
  const why = `Postgres tests need PostgreSQL: ${missing}`;
  if (process.env.CI) throw new Error(why);
  if (!warned) console.warn(`${why}; skipping them`);
  warned = true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Running commands.

/** The environment of every Postgres command: no PG* variable of the machine's leaks in. */
function pgEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
  env.PGCONNECT_TIMEOUT = "10";
  env.LC_ALL = "C";
  return env;
}

function failure(what: string, err: unknown): Error {
  const e = err as { stderr?: Buffer | string; stdout?: Buffer | string; message?: string };
  const out = `${e.stderr?.toString() ?? ""}${e.stdout?.toString() ?? ""}`.trim();
  return new Error(`${what} failed: ${out || e.message || String(err)}`);
}

/** A server-side command (initdb, pg_ctl) as the servers' user, in `cwd`. */
function asServerUser(t: Tools, cmd: string, args: string[], cwd: string): string {
  const [file, argv] = t.runuser
    ? [t.runuser, ["-u", SUPERUSER, "--", join(t.bin, cmd), ...args]]
    : [join(t.bin, cmd), args];
  try {
    return execFileSync(file, argv, { cwd, env: pgEnv(), encoding: "utf8", stdio: "pipe" });
  } catch (err) {
    throw failure(`${cmd} ${args.join(" ")}`, err);
  }
}

/** A client command (createdb, psql) over the server's unix socket. */
function client(s: ServerState, cmd: string, args: string[], input?: string): string {
  const t = findTools()!;
  try {
    return execFileSync(join(t.bin, cmd), [...serverArgs(s), ...args], {
      env: pgEnv(),
      encoding: "utf8",
      stdio: "pipe",
      ...(input !== undefined ? { input } : {}),
    });
  } catch (err) {
    throw failure(`${cmd} ${args.join(" ")}`, err);
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

// ---------------------------------------------------------------------------------------------
// The run's directory (global setup) and the servers in it.

type ServerState = {
  port: number;
  /** The postmaster's pid. */
  pid: number;
  /** The watchdog that stops the server when the run's main process is gone. */
  watchdog: number;
  dataDir: string;
  socketDir: string;
  /** Milliseconds the start took: initdb, the server, the migrated template. */
  startMs: number;
  /** The template is in place: databases can be made. */
  ready: boolean;
};

/** The global setup: the run's directory, and a teardown that stops every server in it. */
export default async function setup(project: TestProject): Promise<() => void> {
  sweepStaleRuns();
  const dir = newRunDir();
  project.provide("pgRunDir", dir);
  return () => stopRun(dir);
}

function newRunDir(): string {
  const dir = mkdtempSync(join(tmpdir(), RUN_PREFIX));
  // Traversable by the postgres user, who owns the server directories inside.
  chmodSync(dir, 0o711);
  writeFileSync(join(dir, "owner"), String(process.pid));
  return dir;
}

/** Stop every server of a run (immediately: nothing in a test database is kept) and remove it. */
function stopRun(dir: string): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  const pids: number[] = [];
  for (const e of entries) {
    if (!e.startsWith("w")) continue;
    const state = readState(join(dir, e));
    if (state) {
      try {
        process.kill(state.watchdog, "SIGKILL");
      } catch {}
    }
    // A server whose start did not finish has no state yet, but may have a postmaster.pid.
    const pid = state?.pid ?? postmasterPid(join(dir, e, "data"));
    if (pid && alive(pid)) {
      try {
        process.kill(pid, "SIGQUIT"); // immediate shutdown: the postmaster ends its children
        pids.push(pid);
      } catch {}
    }
  }
  const deadline = Date.now() + 10_000;
  for (const pid of pids) {
    while (alive(pid) && Date.now() < deadline) sleepSync(20);
    if (alive(pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }
  for (const e of entries) if (e.startsWith("w")) unmount(join(dir, e));
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
}

/** Whether `dir` is a mount point (the tmpfs of a server directory). */
function mounted(dir: string): boolean {
  try {
    return readFileSync("/proc/self/mounts", "utf8")
      .split("\n")
      .some((l) => l.split(" ")[1] === dir);
  } catch {
    return false;
  }
}

function unmount(dir: string): void {
  if (!mounted(dir)) return;
  try {
    execFileSync("umount", ["-l", dir], { stdio: "ignore" });
  } catch {
    // left mounted: the next run's sweep tries again
  }
}

/** Stop what runs that died without their teardown left behind (their main process is gone). */
function sweepStaleRuns(): void {
  const root = tmpdir();
  let entries: string[] = [];
  try {
    entries = readdirSync(root);
  } catch {
    return;
  }
  for (const e of entries) {
    if (!e.startsWith(RUN_PREFIX)) continue;
    const dir = join(root, e);
    let owner = 0;
    try {
      owner = Number(readFileSync(join(dir, "owner"), "utf8"));
    } catch {
      continue; // not one of ours, or being made right now
    }
    if (owner > 0 && alive(owner)) continue;
    stopRun(dir);
  }
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function readState(serverDir: string): ServerState | undefined {
  try {
    return JSON.parse(readFileSync(join(serverDir, "state.json"), "utf8")) as ServerState;
  } catch {
    return undefined;
  }
}

/** The run's directory: the global setup's, or (a config without it) one of this process's. */
function runDir(): string {
  let dir: string | undefined;
  try {
    dir = inject("pgRunDir");
  } catch {
    dir = undefined;
  }
  if (dir) return dir;
  // Without the global setup: a run of this process alone, stopped when it exits.
  if (!ownRun) {
    const mine = newRunDir();
    process.once("exit", () => stopRun(mine));
    ownRun = mine;
  }
  return ownRun;
}
let ownRun: string | undefined;

let server: ServerState | undefined;

/** This worker's server: started (with its template) on first use, else read from its state. */
function ensureServer(): ServerState {
  if (server && alive(server.pid)) return server;
  const t = findTools();
  if (!t) throw new Error(`no Postgres for the tests: ${missing}`);
  const run = runDir();
  const dir = join(run, `w${process.env.VITEST_POOL_ID ?? "0"}`);
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      mkdirSync(dir, { mode: 0o700 }); // the claim: whoever makes it starts the server
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const failed = readFailure(dir);
      if (failed) throw new Error(`the test Postgres of ${dir} failed to start: ${failed}`);
      const s = readState(dir);
      if (s?.ready && alive(s.pid)) {
        server = s;
        return s;
      }
      // Being started, or dead (its watchdog then removes the directory, and we start another).
      if (Date.now() > deadline) {
        throw new Error(`the test Postgres of ${dir} is not running; see ${join(dir, "log")}`);
      }
      sleepSync(50);
      continue;
    }
    try {
      mountTmpfs(t, dir);
      chownSync(dir, t.uid, t.gid);
      server = startServer(t, run, dir);
      return server;
    } catch (err) {
      // Said once: the worker's later test files fail at once with it, not after a wait.
      writeFileSync(join(dir, "failed"), (err as Error).message);
      throw err;
    }
  }
}

/**
 * As root, the server's directory is a tmpfs of its own (still under the temp dir): a database
 * is a copy of some 600 files, and making files on this machine's disk took about 0.4 ms
 * each, so a copy took 200–400 ms there against a few tens on a tmpfs. Nothing in it is meant
 * to last (fsync is off anyway); the databases of removed homes are dropped as they go.
 * Without the right to mount, the plain directory.
 */
function mountTmpfs(t: Tools, dir: string): void {
  if (process.getuid?.() !== 0) return;
  try {
    execFileSync(
      "mount",
      ["-t", "tmpfs", "-o", `mode=0700,uid=${t.uid},gid=${t.gid}`, "tmpfs", dir],
      { stdio: "ignore" },
    );
  } catch {
    // no mount here (a container without the capability): the disk it is
  }
}

function readFailure(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, "failed"), "utf8");
  } catch {
    return undefined;
  }
}

function startServer(t: Tools, run: string, dir: string): ServerState {
  const started = Date.now();
  const dataDir = join(dir, "data");
  asServerUser(
    t,
    "initdb",
    [
      "-D",
      dataDir,
      "-U",
      SUPERUSER,
      "--auth=trust",
      "--no-sync",
      "--encoding=UTF8",
      "--locale=C",
      "--no-instructions",
    ],
    dir,
  );
  const log = join(dir, "log");
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    port = 20_000 + Math.floor(Math.random() * 40_000);
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      "-c fsync=off",
      "-c full_page_writes=off",
      "-c synchronous_commit=on",
      "-c max_connections=200",
      "-c autovacuum=off",
      "-c shared_buffers=64MB",
      // Checkpoints are cheap here (no fsync, a tmpfs): a small WAL keeps the tmpfs small.
      "-c max_wal_size=128MB",
      "-c min_wal_size=32MB",
    ].join(" ");
    try {
      asServerUser(
        t,
        "pg_ctl",
        ["start", "-D", dataDir, "-l", log, "-w", "-t", "60", "-s", "-o", options],
        dir,
      );
      break;
    } catch (err) {
      // Another process took the port between our pick and the bind: pick again.
      const text = existsSync(log) ? readFileSync(log, "utf8") : "";
      if (attempt < 10 && /could not (bind|create any TCP)/i.test(text)) continue;
      throw new Error(`${(err as Error).message}\n${text.slice(-2000)}`);
    }
  }
  const pid = postmasterPid(dataDir)!;
  const owner = Number(readFileSync(join(run, "owner"), "utf8"));
  // Stops the server when the run's main process is gone without its teardown (killed), and
  // removes its directory once it is down (or once it died on its own: the worker's next test
  // file then starts another).
  const script = [
    `while kill -0 ${owner} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 1; done`,
    `kill -QUIT ${pid} 2>/dev/null`,
    `i=0; while kill -0 ${pid} 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done`,
    `kill -KILL ${pid} 2>/dev/null; umount -l '${dir}' 2>/dev/null; rm -rf '${dir}'`,
  ].join("; ");
  const watchdog = spawn("sh", ["-c", script], { cwd: "/", detached: true, stdio: "ignore" });
  watchdog.unref();
  const partial: ServerState = {
    port,
    pid,
    watchdog: watchdog.pid ?? 0,
    dataDir,
    socketDir: dir,
    startMs: 0,
    ready: false,
  };
  // The state goes down first, so that the teardown stops the server even if the template fails.
  writeState(dir, partial);
  buildTemplate(partial);
  const state = { ...partial, startMs: Date.now() - started, ready: true };
  writeState(dir, state);
  return state;
}

function writeState(dir: string, state: ServerState): void {
  const tmp = join(dir, `.state.${process.pid}.json`);
  writeFileSync(tmp, JSON.stringify(state));
  renameSync(tmp, join(dir, "state.json"));
}

/** The migrated template: openPostgres creates the schema; no connection stays open on it. */
function buildTemplate(s: ServerState): void {
  client(s, "createdb", [TEMPLATE]);
  const node = existsSync(join(REPO_ROOT, "node_modules/.bin/node"))
    ? join(REPO_ROOT, "node_modules/.bin/node")
    : process.execPath;
  const mod = pathToFileURL(join(REPO_ROOT, "src/store/pg-open.ts")).href;
  // A CommonJS script: `openPostgres` from the top-level await of an ESM `-e` script never got
  // its connection's worker thread going (Node 24), from a callback it does.
  const script = `import(${JSON.stringify(mod)}).then(({ openPostgres }) => openPostgres(${JSON.stringify(urlOf(s, TEMPLATE))}).close()).catch((e) => { console.error(e); process.exit(1); });`;
  try {
    execFileSync(node, ["-e", script], {
      cwd: REPO_ROOT,
      env: pgEnv(),
      stdio: "pipe",
      timeout: 60_000,
    });
  } catch (err) {
    throw failure("migrating the template database", err);
  }
  // A template nobody can connect to: a copy never waits on (or fails over) a session on it.
  psql(s, "postgres", `ALTER DATABASE ${TEMPLATE} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
}

function urlOf(s: ServerState, db: string): string {
  return `postgres://${SUPERUSER}@127.0.0.1:${s.port}/${db}`;
}

/** How a client program reaches this worker's server, as its superuser. */
function serverArgs(s: ServerState): string[] {
  return ["-h", s.socketDir, "-p", String(s.port), "-U", SUPERUSER, "-w"];
}

/** psql's arguments to run `sql` in `db`, printing bare values and stopping at an error. */
function psqlArgs(db: string, sql: string): string[] {
  return ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql];
}

function psql(s: ServerState, db: string, sql: string): string {
  return client(s, "psql", psqlArgs(db, sql));
}

/** The database `url` names on this worker's server (one on another server is an error). */
function databaseOf(s: ServerState, url: string): string {
  const u = new URL(url);
  if (Number(u.port) !== s.port) throw new Error(`${url} is not on this worker's test server`);
  return decodeURIComponent(u.pathname.slice(1));
}

// ---------------------------------------------------------------------------------------------
// Databases.

function newName(kind: string): string {
  return `${kind}_${randomBytes(6).toString("hex")}`;
}

/** Copies of the template made per psql: the process costs about as much as one copy. */
const BATCH = 4;

/**
 * A new database on this worker's server, with the store's schema (a copy of the migrated
 * template); the server and the template start on first use. Synchronous, for tempHome().
 * Copies are made a few at a time; the spares wait in the server's directory for the next
 * calls (of this test file or the worker's next).
 */
export function freshDatabaseUrl(): string {
  const s = ensureServer();
  const spares = join(s.socketDir, "spares");
  let names: string[] = [];
  try {
    names = readFileSync(spares, "utf8").split("\n").filter(Boolean);
  } catch {}
  if (names.length === 0) {
    const made = Array.from({ length: BATCH }, () => newName("h"));
    const script = made.map((n) => `CREATE DATABASE ${n} TEMPLATE ${TEMPLATE};\n`).join("");
    client(s, "psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-f", "-"], script);
    names = made;
  }
  const [name, ...rest] = names;
  writeFileSync(spares, rest.join("\n"));
  return urlOf(s, name!);
}

/** A new database without any schema (what `holon store import` wants). */
export function emptyDatabaseUrl(): string {
  const s = ensureServer();
  const name = newName("e");
  client(s, "createdb", ["-T", "template0", name]);
  return urlOf(s, name);
}

/** Run SQL on a database of this worker's server (by URL); psql's unaligned rows, trimmed. */
export function psqlQuery(url: string, sql: string): string {
  const s = ensureServer();
  return psql(s, databaseOf(s, url), sql).trim();
}

/**
 * psqlQuery in a process of its own, started now: it runs while the caller's thread is blocked
 * in a synchronous store call (to end that call's connection under it, say).
 */
export function psqlAlongside(url: string, sql: string): Promise<string> {
  const s = ensureServer();
  const args = [...serverArgs(s), ...psqlArgs(databaseOf(s, url), sql)];
  const child = spawn(join(findTools()!.bin, "psql"), args, { env: pgEnv() });
  let out = "";
  let err = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (err += b.toString()));
  return new Promise((res, rej) => {
    child.on("error", rej);
    child.on("close", (code) =>
      code === 0 ? res(out.trim()) : rej(new Error(`psql exited ${code}: ${err}`)),
    );
  });
}

/** This worker's server (started if need be): its port, socket directory and postmaster pid. */
export function testServer(): Readonly<ServerState> {
  return ensureServer();
}

/**
 * Drop the databases of homes that are gone, when nothing is connected to them any more. One
 * still in use (a backend not yet gone after its host, a host a test left open) is kept in the
 * server's list and tried again by the next call, or left to the server's end. Best effort: a
 * failure here never fails a test.
 */
export function dropDatabases(urls: string[]): void {
  if (!server) return;
  const s = server;
  const pendingFile = join(s.socketDir, "drop-pending");
  let pending: string[] = [];
  try {
    pending = readFileSync(pendingFile, "utf8").split("\n").filter(Boolean);
  } catch {}
  const names = [
    ...new Set([
      ...pending,
      ...urls
        .map((url) => new URL(url))
        .filter((u) => Number(u.port) === s.port)
        .map((u) => decodeURIComponent(u.pathname.slice(1))),
    ]),
  ].filter((n) => /^[a-z0-9_]+$/.test(n));
  if (names.length === 0) return;
  const list = `ARRAY[${names.map((n) => `'${n}'`).join(",")}]`;
  const script =
    `SELECT format('DROP DATABASE %I', d) FROM unnest(${list}) AS d ` +
    "WHERE EXISTS (SELECT 1 FROM pg_database WHERE datname = d) " +
    "AND NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = d) \\gexec\n" +
    `SELECT datname FROM pg_database WHERE datname = ANY (${list});\n`;
  try {
    const left = client(s, "psql", ["-X", "-q", "-A", "-t", "-d", "postgres", "-f", "-"], script);
    writeFileSync(pendingFile, left);
  } catch {
    // left to the server's end
  }
}
