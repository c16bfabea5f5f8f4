// `holon daemon`: the same `serve` runtime, started in the background and managed by pid.
// There is no second runtime shape: `start` validates serve's options (planServe), spawns
// `holon serve` detached with its output in <home>/logs/daemon.out, and waits until the host
// answers. The daemon's own metadata lives in <home>/run/daemon.json (pid, options and a
// fingerprint of the effective options), so a second `start` with the same options is a
// no-op and one with different options is refused until `restart`. A pid whose process is
// gone (SIGKILL, reboot) is stale state: start, stop and restart clean it instead of failing.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  openSync,
  readFileSync,
  readSync,
  fstatSync,
  rmSync,
  statSync,
  watchFile,
  unwatchFile,
} from "node:fs";
import { flushCompileCache } from "node:module";
import { join, resolve } from "node:path";
import { ensurePrivateDir, PRIVATE_FILE } from "../host/files.ts";
import { pidAlive } from "../host/lock.ts";
import { homePaths, resolveHome } from "../host/paths.ts";
import { atomicWriteFile } from "../store/files.ts";
import { tryConnect } from "./connect.ts";
import { CliError, printJson } from "./output.ts";
import { loadServeModules, planServe, type ServeFlags, type ServePlan } from "./serve.ts";

const REPO_ROOT = resolve(import.meta.dirname, "../..");
const HOLON_BIN = join(REPO_ROOT, "bin", "holon.js");
const START_TIMEOUT_MS = 30_000;

export type DaemonStartFlags = Partial<ServeFlags> & { json?: boolean };
type StopFlags = { home?: string; timeout?: string; json?: boolean };

/** What `daemon start` records about the process it launched. */
type DaemonFile = {
  pid: number;
  home_dir: string;
  started_at: string;
  fingerprint: string;
  options: {
    host: string;
    port: number;
    access: string;
    advertise: string | null;
    token_source: "flag" | "file" | "environment_or_config" | "generated";
  };
  version: string;
  log_path: string;
  output_path: string;
};

/** A daemon startup or shutdown failure, kept until a later start or stop succeeds. */
type DaemonFailure = {
  occurred_at: string;
  phase: "startup" | "shutdown";
  summary: string;
  detail_hint: string;
};

type RuntimeFileInfo = {
  pid: number;
  http_addr: string | null;
  socket_path: string | null;
  access?: string;
  advertise_url?: string | null;
  started_at?: string;
};

export function daemonPaths(home: string) {
  const p = homePaths(home);
  return {
    ...p,
    daemonFile: join(p.runDir, "daemon.json"),
    failureFile: join(p.runDir, "daemon-failure.json"),
    logFile: join(p.logsDir, "holon.log"),
    outputFile: join(p.logsDir, "daemon.out"),
  };
}

function version(): string {
  try {
    return (
      JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string }
    ).version;
  } catch {
    return "unknown";
  }
}

function readJsonFile<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}

/** The effective options as one hash: a token is hashed first, so it never lands on disk. */
export function fingerprint(plan: ServePlan): string {
  const token = plan.token ? createHash("sha256").update(plan.token).digest("hex") : null;
  return createHash("sha256")
    .update(
      JSON.stringify({
        host: plan.hostname,
        port: plan.port,
        access: plan.access,
        advertise: plan.advertise,
        token,
      }),
    )
    .digest("hex")
    .slice(0, 16);
}

/** The live runtime owning `home`, if any (a runtime file whose pid is alive). */
function liveRuntime(home: string): RuntimeFileInfo | undefined {
  const info = readJsonFile<RuntimeFileInfo>(homePaths(home).runtimeFile);
  return info && Number.isInteger(info.pid) && pidAlive(info.pid) ? info : undefined;
}

/** Remove run files left by a process that is gone. Returns the stale pids found. */
function cleanStale(home: string): number[] {
  const paths = daemonPaths(home);
  const stale: number[] = [];
  for (const file of [paths.daemonFile, paths.runtimeFile]) {
    const info = readJsonFile<{ pid?: number }>(file);
    if (!info) continue;
    if (typeof info.pid === "number" && pidAlive(info.pid)) continue;
    if (typeof info.pid === "number" && !stale.includes(info.pid)) stale.push(info.pid);
    rmSync(file, { force: true });
  }
  return stale;
}

function recordFailure(home: string, failure: Omit<DaemonFailure, "occurred_at">): void {
  const paths = daemonPaths(home);
  ensurePrivateDir(paths.runDir);
  atomicWriteFile(
    paths.failureFile,
    JSON.stringify({ occurred_at: new Date().toISOString(), ...failure }, null, 2),
    { mode: PRIVATE_FILE },
  );
}

function clearFailure(home: string): void {
  rmSync(daemonPaths(home).failureFile, { force: true });
}

/** The last `n` lines of a file (reads at most the last 256 KiB). */
export function tailLines(path: string, n: number): string[] {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return [];
  }
  try {
    const size = statSync(path).size;
    const len = Math.min(size, 256 * 1024);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString("utf8").split("\n");
    if (lines.at(-1) === "") lines.pop();
    if (len < size) lines.shift(); // the first line may be cut
    return n === 0 ? [] : lines.slice(-n); // slice(-0) would be every line
  } finally {
    closeSync(fd);
  }
}

function serveArgs(plan: ServePlan, flags: DaemonStartFlags): string[] {
  const args = ["serve", "--home", plan.home, "--host", plan.hostname, "--port", String(plan.port)];
  if (flags.access) args.push("--access", plan.access);
  if (plan.advertise) args.push("--advertise", plan.advertise);
  if (flags.tokenFile) args.push("--token-file", resolve(flags.tokenFile));
  return args;
}

function tokenSource(
  flags: DaemonStartFlags,
  plan: ServePlan,
): DaemonFile["options"]["token_source"] {
  if (flags.token !== undefined) return "flag";
  if (flags.tokenFile !== undefined) return "file";
  return plan.token ? "environment_or_config" : "generated";
}

function normalizeFlags(flags: DaemonStartFlags): ServeFlags {
  return { ...flags, host: flags.host ?? "127.0.0.1", port: flags.port ?? "9101" };
}

export async function start(flags: DaemonStartFlags): Promise<void> {
  const plan = planServe(normalizeFlags(flags));
  const result = await startDaemon(plan, flags);
  if (flags.json) return printJson(result);
  process.stdout.write(
    result.already_running
      ? `holon: daemon already running for ${plan.home} (pid ${result.pid}, same options)\n`
      : `holon: daemon started for ${plan.home} (pid ${result.pid}) on http://${result.http_addr}\n`,
  );
}

async function startDaemon(
  plan: ServePlan,
  flags: DaemonStartFlags,
): Promise<{ already_running: boolean; pid: number; http_addr: string | null }> {
  const home = plan.home;
  const paths = daemonPaths(home);
  const fp = fingerprint(plan);
  const live = liveRuntime(home);
  if (live) {
    const daemon = readJsonFile<DaemonFile>(paths.daemonFile);
    if (daemon?.pid === live.pid && daemon.fingerprint === fp) {
      return { already_running: true, pid: live.pid, http_addr: live.http_addr };
    }
    throw new CliError(
      daemon?.pid === live.pid
        ? `a daemon (pid ${live.pid}) is already running for ${home} with different options`
        : `a runtime (pid ${live.pid}) started with \`holon serve\` already owns ${home}`,
      daemon?.pid === live.pid
        ? "use `holon daemon restart` with the new options"
        : "stop that runtime first (Ctrl-C, or `holon daemon stop`)",
    );
  }
  cleanStale(home);
  ensurePrivateDir(home);
  ensurePrivateDir(paths.runDir);
  ensurePrivateDir(paths.logsDir);
  const out = openSync(paths.outputFile, "a", PRIVATE_FILE);
  const env = { ...process.env };
  if (flags.token !== undefined) env.HOLON_CONTROL_TOKEN = plan.token ?? "";
  // From a checkout, load the host's modules here and write the compile cache: they are
  // TypeScript that Node strips on first load, and a process that strips anything keeps the
  // stripper for good (some 20 MB); this way the host finds every module already stripped.
  // An installed package's host runs its build without the cache (bin/holon.js).
  if (import.meta.url.endsWith(".ts")) {
    await loadServeModules();
    flushCompileCache();
  }
  // The host runs as this command does: the Node flags and the environment the launcher
  // (bin/holon.js) gave it, which are the ones meant for a long-lived process.
  const child = spawn(
    process.execPath,
    [...process.execArgv, HOLON_BIN, ...serveArgs(plan, flags)],
    {
      cwd: home,
      env,
      detached: true,
      stdio: ["ignore", out, out],
    },
  );
  closeSync(out);
  const pid = child.pid;
  if (pid === undefined) {
    recordFailure(home, {
      phase: "startup",
      summary: "could not spawn the runtime process",
      detail_hint: "run `holon serve` in the foreground to see why",
    });
    throw new CliError("could not spawn the runtime process", "see `holon daemon logs`");
  }
  let exitCode: number | null | undefined;
  child.once("exit", (code, signal) => (exitCode = code ?? (signal ? -1 : null)));
  child.unref();
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const info = readJsonFile<RuntimeFileInfo>(paths.runtimeFile);
    if (info?.pid === pid) {
      const client = tryConnect({ home });
      const ok = client
        ? await client.call("GET", "/").then(
            () => true,
            () => false,
          )
        : false;
      if (ok) {
        const daemon: DaemonFile = {
          pid,
          home_dir: home,
          started_at: new Date().toISOString(),
          fingerprint: fp,
          options: {
            host: plan.hostname,
            port: plan.port,
            access: plan.access,
            advertise: plan.advertise,
            token_source: tokenSource(flags, plan),
          },
          version: version(),
          log_path: paths.logFile,
          output_path: paths.outputFile,
        };
        atomicWriteFile(paths.daemonFile, JSON.stringify(daemon, null, 2), { mode: PRIVATE_FILE });
        clearFailure(home);
        return { already_running: false, pid, http_addr: info.http_addr };
      }
    }
    if (exitCode !== undefined || !pidAlive(pid) || Date.now() > deadline) {
      const why =
        exitCode !== undefined || !pidAlive(pid)
          ? "the runtime exited during startup"
          : "the runtime did not answer in time";
      const detail = tailLines(paths.outputFile, 5)
        .filter((l) => l.startsWith("error:") || l.startsWith("hint:"))
        .join("; ");
      if (pidAlive(pid)) process.kill(pid, "SIGKILL");
      recordFailure(home, {
        phase: "startup",
        summary: detail ? `${why}: ${detail}` : why,
        detail_hint: "see `holon daemon logs`, or run `holon serve` in the foreground",
      });
      throw new CliError(detail ? `${why}: ${detail}` : why, "see `holon daemon logs`");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function waitExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/**
 * Stop the runtime owning `home`: a graceful shutdown request over the control plane (agents
 * are drained, never persisted as stopped), then SIGTERM, then SIGKILL after `timeoutMs`.
 */
async function stopDaemon(
  home: string,
  timeoutMs: number,
): Promise<{ was_running: boolean; pid: number | null; how: string; stale_pids: number[] }> {
  const live = liveRuntime(home);
  if (!live) {
    const stale = cleanStale(home);
    clearFailure(home);
    return { was_running: false, pid: null, how: "not_running", stale_pids: stale };
  }
  const pid = live.pid;
  let how = "graceful";
  const client = tryConnect({ home });
  const asked = client
    ? await client.call("POST", "/control/runtime/shutdown", undefined, { timeoutMs }).then(
        () => true,
        () => false, // unreachable or refused: fall back to signals
      )
    : false;
  if (!asked || !(await waitExit(pid, timeoutMs))) {
    how = "terminated";
    process.kill(pid, "SIGTERM");
    if (!(await waitExit(pid, timeoutMs))) {
      how = "killed";
      process.kill(pid, "SIGKILL");
      if (!(await waitExit(pid, 5_000))) {
        recordFailure(home, {
          phase: "shutdown",
          summary: `pid ${pid} survived SIGKILL`,
          detail_hint: "check the process with ps; see `holon daemon logs`",
        });
        throw new CliError(`the runtime (pid ${pid}) did not exit`, "see `holon daemon logs`");
      }
    }
  }
  cleanStale(home);
  clearFailure(home);
  return { was_running: true, pid, how, stale_pids: [] };
}

function stopTimeout(flags: StopFlags): number {
  const s = Number(flags.timeout ?? "10");
  if (!Number.isFinite(s) || s <= 0)
    throw new CliError("--timeout must be a positive number of seconds");
  return s * 1000;
}

export async function stop(flags: StopFlags): Promise<void> {
  const home = resolveHome(flags.home);
  const r = await stopDaemon(home, stopTimeout(flags));
  if (flags.json) return printJson(r);
  if (!r.was_running) {
    process.stdout.write(
      `holon: no runtime is running for ${home}` +
        (r.stale_pids.length ? ` (cleaned stale pid ${r.stale_pids.join(", ")})` : "") +
        "\n",
    );
  } else {
    process.stdout.write(`holon: runtime (pid ${r.pid}) stopped (${r.how})\n`);
  }
}

export async function restart(flags: DaemonStartFlags & { timeout?: string }): Promise<void> {
  const plan = planServe(normalizeFlags(flags)); // validate before stopping anything
  const stopped = await stopDaemon(plan.home, stopTimeout(flags));
  const started = await startDaemon(plan, flags);
  if (flags.json) return printJson({ stopped, started });
  process.stdout.write(
    (stopped.was_running ? `holon: runtime (pid ${stopped.pid}) stopped (${stopped.how})\n` : "") +
      `holon: daemon started for ${plan.home} (pid ${started.pid}) on http://${started.http_addr}\n`,
  );
}

type RuntimeStatusBody = {
  activity?: Record<string, unknown>;
  last_failure?: { occurred_at: string; summary: string } | null;
  default_agent?: string;
};

export async function status(flags: { home?: string; json?: boolean }): Promise<void> {
  const home = resolveHome(flags.home);
  const paths = daemonPaths(home);
  const live = liveRuntime(home);
  const daemon = readJsonFile<DaemonFile>(paths.daemonFile);
  const failure = readJsonFile<DaemonFailure>(paths.failureFile) ?? null;
  let health: "ok" | "unreachable" | "not_running" = live ? "unreachable" : "not_running";
  let runtime: RuntimeStatusBody | undefined;
  let healthError: string | undefined;
  if (live) {
    const client = tryConnect({ home });
    try {
      runtime = client
        ? await client.call<RuntimeStatusBody>("GET", "/control/runtime/status", undefined, {
            timeoutMs: 5_000,
          })
        : undefined;
      if (runtime) health = "ok";
    } catch (err) {
      healthError = err instanceof Error ? err.message : String(err);
    }
  }
  const managed = Boolean(live && daemon?.pid === live.pid);
  const startedAt = live?.started_at ?? daemon?.started_at;
  const uptimeS =
    live && startedAt ? Math.max(0, Math.round((Date.now() - Date.parse(startedAt)) / 1000)) : null;
  const out = {
    running: Boolean(live),
    managed_by_daemon: managed,
    pid: live?.pid ?? null,
    stale_pid: !live && daemon ? daemon.pid : null,
    home_dir: home,
    socket_path: live?.socket_path ?? null,
    http_addr: live?.http_addr ?? null,
    access: live?.access ?? null,
    advertise_url: live?.advertise_url ?? null,
    started_at: live ? (startedAt ?? null) : null,
    uptime_s: uptimeS,
    version: managed ? daemon!.version : version(),
    health,
    health_error: healthError ?? null,
    config_fingerprint: managed ? daemon!.fingerprint : null,
    options: managed ? daemon!.options : null,
    activity: runtime?.activity ?? null,
    last_runtime_failure: runtime?.last_failure ?? null,
    last_daemon_failure: failure,
    log_path: paths.logFile,
  };
  if (flags.json) return printJson(out);
  const lines = [`home:      ${home}`];
  if (!live) {
    lines.push(
      `state:     not running${out.stale_pid ? ` (stale pid ${out.stale_pid} recorded)` : ""}`,
    );
  } else {
    lines.push(
      `state:     running, pid ${live.pid}${managed ? " (daemon)" : " (foreground serve)"}, up ${formatDuration(uptimeS ?? 0)}`,
      `health:    ${health}${healthError ? ` (${healthError})` : ""}`,
      `endpoint:  http://${live.http_addr ?? "-"}${live.socket_path ? `  socket ${live.socket_path}` : ""}`,
      `access:    ${live.access ?? "?"}${live.advertise_url ? `  advertised as ${live.advertise_url}` : ""}`,
      `version:   ${out.version}`,
    );
    if (managed) {
      const o = daemon!.options;
      lines.push(
        `options:   --host ${o.host} --port ${o.port} --access ${o.access}` +
          `${o.advertise ? ` --advertise ${o.advertise}` : ""}  token: ${o.token_source}` +
          `  fingerprint ${daemon!.fingerprint}`,
      );
    }
    if (runtime?.activity) {
      const a = runtime.activity as Record<string, number | string>;
      lines.push(
        `activity:  ${a.state}: ${a.active_agent_count} agents active, ${a.processing_agent_count} processing, ${a.waiting_agent_count} waiting, ${a.active_task_count} tasks`,
      );
    }
    lines.push(
      runtime?.last_failure
        ? `last turn failure: ${runtime.last_failure.occurred_at} ${runtime.last_failure.summary}`
        : "last turn failure: none",
    );
  }
  lines.push(
    failure
      ? `last ${failure.phase} failure: ${failure.occurred_at} ${failure.summary} (${failure.detail_hint})`
      : "last daemon failure: none",
  );
  lines.push(`logs:      ${paths.logFile}  (holon daemon logs)`);
  process.stdout.write(lines.join("\n") + "\n");
}

function formatDuration(s: number): string {
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** One pino JSON line as `time level msg key=value…` (non-JSON lines pass through). */
export function formatLogLine(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, pid: _pid, ...rest } = rec;
  const levelName =
    (
      { 10: "trace", 20: "debug", 30: "info", 40: "warn", 50: "error", 60: "fatal" } as Record<
        number,
        string
      >
    )[Number(level)] ?? String(level);
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  return `${String(time ?? "")} ${levelName.padEnd(5)} ${String(msg ?? "")}${fields ? `  ${fields}` : ""}`;
}

export async function logs(flags: {
  home?: string;
  lines?: string;
  follow?: boolean;
  json?: boolean;
}): Promise<void> {
  const home = resolveHome(flags.home);
  const paths = daemonPaths(home);
  const n = Number(flags.lines ?? "50");
  if (!Number.isInteger(n) || n < 0) throw new CliError("-n must be a non-negative integer");
  const failure = readJsonFile<DaemonFailure>(paths.failureFile) ?? null;
  // Following, the last lines come from the follower: read from the descriptor it goes on
  // with, so a line written between the two is neither lost nor printed twice.
  const lines = flags.follow ? [] : tailLines(paths.logFile, n);
  if (flags.json && !flags.follow) {
    return printJson({
      log_path: paths.logFile,
      output_path: paths.outputFile,
      daemon_metadata_path: paths.daemonFile,
      failure_path: paths.failureFile,
      startup_failure: failure?.phase === "startup" ? failure : null,
      shutdown_failure: failure?.phase === "shutdown" ? failure : null,
      lines,
      output_tail: tailLines(paths.outputFile, Math.min(n, 20)),
    });
  }
  const err = process.stderr;
  err.write(`log:       ${paths.logFile}\n`);
  err.write(`output:    ${paths.outputFile}\n`);
  err.write(`metadata:  ${paths.daemonFile}\n`);
  err.write(`failures:  ${paths.failureFile}\n`);
  if (failure)
    err.write(`last ${failure.phase} failure: ${failure.occurred_at} ${failure.summary}\n`);
  if (failure?.phase === "startup") {
    for (const l of tailLines(paths.outputFile, 10)) err.write(`  | ${l}\n`);
  }
  const print = (l: string) => process.stdout.write((flags.json ? l : formatLogLine(l)) + "\n");
  for (const l of lines) print(l);
  if (flags.follow) await followFile(paths.logFile, n, print);
}

/** A file held open by its descriptor, and which file it is. */
type HeldFile = { fd: number; ino: number };

/**
 * Reads the lines appended to `file`, following it across size rotation (host/log-rotation.ts:
 * `file` becomes `file`.1, the older ones shift up by one, the oldest beyond the count is
 * deleted). Every file is read through a descriptor held open, never by a path looked up a
 * step earlier: a rotation renames every file, so a path names another one after it. `drain`
 * reads what is new. When the path holds a new file (opened and held first, so a rotation
 * meanwhile cannot take it away unread), the old one is read to its end through its
 * descriptor, then the rotated files newer than it, oldest first, then the new one from its
 * start. The rotated files are opened in one pass over `file`.1, .2, … up to the old one, and
 * the pass counts only when every name still holds the file it found there afterwards (a
 * rotation during the pass moves them all; the pass is then taken again). A half-done
 * rotation leaves a gap in the names but never changes their order, so such a pass is right.
 * A line split across two files is joined again. `step` runs before each file-system call
 * (tests rotate the log there).
 */
export function createFollower(
  file: string,
  onLine: (line: string) => void,
  step: (what: string) => void = () => {},
  tail = 0,
): { drain: () => void; close: () => void } {
  const MAX_ROTATED = 100;
  const PASSES = 10;
  let fd: number | null = null;
  let ino = 0;
  let offset = 0;
  let partial = "";
  /** Files already read to their end, for when the old file is gone from the names. */
  const done: number[] = [];
  const markDone = (i: number) => {
    done.push(i);
    if (done.length > 2 * MAX_ROTATED) done.shift();
  };
  /** Read `f` from `from` to its current end; returns the new offset. */
  const readFrom = (f: number, from: number): number => {
    step("read");
    const size = fstatSync(f).size;
    if (size <= from) return from;
    const buf = Buffer.alloc(size - from);
    const n = readSync(f, buf, 0, buf.length, from);
    const parts = (partial + buf.subarray(0, n).toString("utf8")).split("\n");
    partial = parts.pop() ?? "";
    for (const p of parts) if (p) onLine(p);
    return from + n;
  };
  const hold = (path: string): HeldFile | null => {
    step("open");
    let f: number;
    try {
      f = openSync(path, "r");
    } catch {
      return null;
    }
    try {
      return { fd: f, ino: fstatSync(f).ino };
    } catch {
      closeSync(f);
      return null;
    }
  };
  const inoAt = (path: string): number | null => {
    step("stat");
    return statOrNull(path)?.ino ?? null;
  };
  const release = (files: (HeldFile | null)[]) => {
    for (const f of files) if (f) closeSync(f.fd);
  };
  /** `file`.1, .2, … up to the old file (or all), held, as one pass no rotation interrupted found them. */
  const rotatedFiles = (): (HeldFile | null)[] | null => {
    const found: (HeldFile | null)[] = [];
    for (let i = 1; i <= MAX_ROTATED; i++) {
      const f = hold(`${file}.${i}`);
      found.push(f);
      if (f?.ino === ino) break; // the old file: the ones after it are older
    }
    for (let i = 0; i < found.length; i++) {
      if (inoAt(`${file}.${i + 1}`) !== (found[i]?.ino ?? null)) {
        release(found);
        return null;
      }
    }
    return found;
  };
  const openCurrent = (): boolean => {
    const f = hold(file);
    if (!f) return false;
    fd = f.fd;
    ino = f.ino;
    offset = 0;
    return true;
  };
  // At the start, the last `tail` lines of the file as it is now (at most the last 256 KiB),
  // from the descriptor that follows it: what is written from then on is read by `drain`. A
  // last line still being written is kept to be joined with its end.
  if (openCurrent()) {
    step("read");
    const size = fstatSync(fd!).size;
    const from = Math.max(0, size - 256 * 1024);
    const buf = Buffer.alloc(size - from);
    const n = readSync(fd!, buf, 0, buf.length, from);
    const parts = buf.subarray(0, n).toString("utf8").split("\n");
    partial = parts.pop() ?? "";
    if (from > 0) parts.shift(); // the first line may be cut
    if (tail > 0) for (const p of parts.filter(Boolean).slice(-tail)) onLine(p);
    offset = from + n;
  }
  const drain = () => {
    let next: HeldFile | null = null;
    let rotated: (HeldFile | null)[] = [];
    try {
      if (fd === null && !openCurrent()) return;
      // The file at the path now, held before anything is decided.
      next = hold(file); // null between a rotation's rename and the new file: the old reads on
      if (next !== null && next.ino !== ino) {
        offset = readFrom(fd!, offset); // the old file, wherever rotation moved it
        let pass: (HeldFile | null)[] | null = null;
        for (let i = 0; i < PASSES && pass === null; i++) pass = rotatedFiles();
        if (pass === null) return; // rotating faster than a pass: the next drain tries again
        rotated = pass;
        const old = rotated.findIndex((f) => f?.ino === ino);
        // The new file may have been rotated already: the ones before it are newer still.
        const current = rotated.findIndex((f) => f?.ino === next!.ino);
        // Without the old file among the names (deleted as the oldest), every rotated file
        // not read yet is newer than it.
        const from = old >= 0 ? old - 1 : rotated.length - 1;
        for (let j = from; j > current; j--) {
          const f = rotated[j];
          if (!f || (old < 0 && done.includes(f.ino))) continue;
          readFrom(f.fd, 0);
          markDone(f.ino);
        }
        markDone(ino);
        closeSync(fd!);
        fd = next.fd;
        ino = next.ino;
        next = null;
        offset = 0;
      } else if (fstatSync(fd!).size < offset) {
        offset = 0; // truncated in place
      }
      offset = readFrom(fd!, offset);
    } catch {
      // a file vanished between two steps: the next drain sees the new state
    } finally {
      if (next !== null) closeSync(next.fd);
      release(rotated);
    }
  };
  return {
    drain,
    close: () => {
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}

/**
 * Print the last `tail` lines of `file`, then the lines appended to it until SIGINT or SIGTERM,
 * across rotation (createFollower).
 */
function followFile(file: string, tail: number, onLine: (line: string) => void): Promise<void> {
  const follower = createFollower(file, onLine, undefined, tail);
  const drain = follower.drain;
  const stop = (resolvePromise: () => void) => {
    unwatchFile(file);
    clearInterval(timer);
    follower.close();
    resolvePromise();
  };
  let timer: NodeJS.Timeout;
  return new Promise((resolvePromise) => {
    watchFile(file, { interval: 250 }, drain);
    timer = setInterval(drain, 500);
    process.once("SIGINT", () => stop(resolvePromise));
    process.once("SIGTERM", () => stop(resolvePromise));
  });
}

function statOrNull(path: string): { ino: number; size: number } | null {
  try {
    const s = statSync(path);
    return { ino: s.ino, size: s.size };
  } catch {
    return null;
  }
}
