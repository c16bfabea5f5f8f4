// The process layer under ExecCommand and command tasks.
//
// Non-PTY commands run detached (own session and process group) under a tiny POSIX sh wrapper
// (process-wrapper.ts) that writes their stdout/stderr to files in a per-process directory:
// no pipes to the host, nothing buffered in host memory, and the command keeps running (and
// its wrapper keeps recording output and exit status) if the host dies. No Node process per
// command: the cost over the user's shell is one `sh` and one fork, and usually not even the
// `sh` start, because the wrapper is a spare started ahead of time by the spawn helper
// (spawner.ts). PTY commands run under a detached Node supervisor (pty-supervisor.ts) holding
// the PTY master.
//
// Decisions:
// - Output. `split` (ExecCommand's default): stdout.log + stderr.log, `output_path` is
//   stdout.log and stderr stays in `stderr_path`; a process started split cannot later gain a
//   merged file (that would need a tee process on every command, and a pipe that a backgrounded
//   child can hold open forever). `merged` (`2>&1`, for tasks created as tasks) and PTY: one
//   output.log in exact write order, `stderr_path` null.
// - Exit status. The wrapper writes "<$?>\n" to `exit` with one write(2) (a file without the
//   newline is "not yet written"); the host or the supervisor write a JSON line (temp + rename)
//   when they know better (the wrapper was SIGKILLed). A status above 128 names the inferred
//   signal (shell convention) and keeps the raw status in exit_code.
// - Restart. `reattach(dir)` says `running` only for a live, non-zombie pid with the recorded
//   start time and boot id; a recorded status says `exited`; anything else is `lost` with a
//   reason (e.g. the wrapper was SIGKILLed together with its group): never running forever.
//
// Process directory layout:
//   spec.json       persisted record: pid, pgid, sid, start ticks, boot id, cmd, cwd, shell, paths
//   params.sh       non-PTY: the wrapper's parameters (cwd, shell, command, …) as sh assignments
//   stdout.log      split mode: the command's stdout
//   stderr.log      split mode: the command's stderr
//   output.log      merged mode and PTY: both streams / the terminal transcript
//   stdin.fifo      input-enabled and PTY processes: named pipe feeding the command (or PTY)
//   stdin.holder    input-enabled non-PTY: pid of the holder keeping the FIFO's write side open
//   stdin.closed    marker: input was closed (EOF sent)
//   exit            exit status: "<shell status>\n" (wrapper) or a JSON line (host / supervisor)
//   pty.json        PTY: pid and start ticks of the terminal's child (written by the supervisor)
//   launch.json     PTY: launch parameters for the supervisor (0600; deleted once read)
//   supervisor.log  PTY: the supervisor's own diagnostics
//   sandbox.json    sandboxed: bubblewrap's status lines (the sandbox init's pid, its exit code)
//   sandbox.log     sandboxed: bubblewrap's own errors (a sandbox that could not be set up)
//
// Sandboxed commands (spec.sandbox, from src/sandbox/): the wrapper runs inside bubblewrap
// in its own PID namespace. The record names the sandbox's init by its pid outside
// (bubblewrap's --json-status-fd): it leads the session and the group every process of the
// command is in, so reattach, stop and input work unchanged, and it lives exactly as long as
// the command does. The directory is read-only inside (so a command cannot rewrite its own
// record); the files the wrapper writes exist before it starts and are bound writable, and an
// empty `exit` is "not yet written" (exitRecorded). A confined command without input or
// terminal starts on its profile's spare when one is ready (sandbox-spares.ts), else cold.
import { ChildProcess, spawn, execFileSync } from "node:child_process";
import {
  closeSync,
  constants as fsConstants,
  existsSync,
  rm,
  rmSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  watch,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  bootId,
  isSameLiveProcess,
  readOwnUmask,
  readProcStat,
  scanMembers,
  signalSessions,
} from "./process-proc.ts";
import {
  WRAPPER_SCRIPT,
  exitRecorded,
  readExitFile,
  wrapperParams,
  statusFromShell,
  writeExitFile,
  type ExitStatus,
  type RecordedExit,
} from "./process-wrapper.ts";
import {
  BUILTIN_COMMAND_POLICY,
  commandEnvOf,
  envPolicyOf,
  outputCapOf,
  type CommandPolicy,
} from "./command-policy.ts";
import { scrubEnv, type CommandEnv } from "./env.ts";
import { DEFAULT_OUTPUT_CAP, droppedBytes, unwatchOutput, watchOutput } from "./output-cap.ts";
import { discardViaSpawner, ensureSpawner, takeSpare, type ExitSource } from "./spawner.ts";
import {
  sandboxSpareSoon,
  takeSandboxSpare,
  wantSandboxSpare,
  type TakenSpare,
} from "./sandbox-spares.ts";
import type { SandboxLaunch } from "../sandbox/profile.ts";
import { atomicWriteFile } from "../store/files.ts";

export type { ExitStatus } from "./process-wrapper.ts";

export type ProcessSpec = {
  cmd: string;
  cwd: string;
  /** Per-process directory to create (must not already hold a process record). */
  dir: string;
  /** Shell program; default `/bin/bash` when present, else `/bin/sh`. */
  shell?: string;
  /** Run the shell as a login shell (`-lc` instead of `-c`). */
  login?: boolean;
  /**
   * The environment of the command; default: the host's own. Either way it is scrubbed of
   * secrets first (env.ts), so no command inherits a provider key or the control token.
   */
  env?: Record<string, string>;
  /** Run under a pseudo-terminal (implies input via `writeInput`). */
  tty?: boolean;
  /** Give a non-PTY command a stdin fed through `writeInput`; otherwise stdin is /dev/null. */
  acceptsInput?: boolean;
  /**
   * Non-PTY output layout. `split` (default): stdout.log and stderr.log, and `output_path`
   * names stdout.log. `merged`: both streams into output.log in exact write order
   * (`2>&1`), `stderr_path` is null. PTY processes are always merged.
   */
  output?: "split" | "merged";
  /** PTY size; default 120x40. */
  cols?: number;
  rows?: number;
  /** Environment rules and output cap (the task service passes the configured ones). */
  policy?: CommandPolicy;
  /** Start confined under this profile (the sandbox decides; null or absent: unconfined). */
  sandbox?: SandboxLaunch | null;
};

export type ProcessHandle = {
  readonly pid: number;
  readonly pgid: number;
  readonly dir: string;
  readonly stdout_path: string;
  /** Null when stderr is merged into the single output stream (merged mode, PTY). */
  readonly stderr_path: string | null;
  /** The file holding the process's output for the task plane (see `ProcessSpec.output`). */
  readonly output_path: string;
  /** Null when the process takes no input. */
  readonly stdin_path: string | null;
  readonly started_at: string;
  readonly tty: boolean;
  readonly accepts_input: boolean;
};

/** The JSON record in `<dir>/spec.json`; enough to reattach from the directory alone. */
export type PersistedProcess = {
  version: 1;
  kind: "wrapper" | "pty_supervisor";
  pid: number;
  pgid: number;
  sid: number;
  start_ticks: number;
  boot_id: string;
  host_pid: number;
  cmd: string;
  cwd: string;
  shell: string;
  shell_args: string[];
  login: boolean;
  tty: boolean;
  accepts_input: boolean;
  output_mode: "split" | "merged";
  /** Cap on each output file (output-cap.ts); absent in records written before caps existed. */
  output_cap_bytes?: number;
  stdout_path: string;
  stderr_path: string | null;
  output_path: string;
  stdin_path: string | null;
  started_at: string;
  /** The sandbox profile digest when the command runs confined (absent: unconfined). */
  sandbox?: string;
};

export type ReattachResult =
  | { state: "running"; handle: ProcessHandle }
  | { state: "exited"; status: ExitStatus; handle: ProcessHandle }
  | {
      state: "lost";
      reason: string;
      /** Present when the record exists: pass it to stopProcess to end `leftover_pids`. */
      handle: ProcessHandle | null;
      /** Processes still alive in the process's session although its wrapper is gone. */
      leftover_pids: number[];
    };

export type StopResult = {
  /** The first signal sent, or null when the process had already exited. */
  signal_sent: "SIGTERM" | null;
  escalated_to_kill: boolean;
  exit: ExitStatus;
  /** Processes of the session still alive after the stop (empty unless something escaped the kill). */
  leftover_pids: number[];
};

export type InputResult = {
  accepted: boolean;
  bytes_written: number;
  /** Why input was refused or cut short: `input_not_enabled`, `process_exited`, `input_closed`, `input_unavailable`, `input_blocked`. */
  reason?: string;
};

export class ProcessStartError extends Error {
  override name = "ProcessStartError";
}

/** File names inside a process directory. */
export const PROCESS_FILES = {
  spec: "spec.json",
  stdout: "stdout.log",
  stderr: "stderr.log",
  output: "output.log",
  params: "params.sh",
  stdin: "stdin.fifo",
  holder: "stdin.holder",
  closed: "stdin.closed",
  exit: "exit",
  pty: "pty.json",
  launch: "launch.json",
  supervisorLog: "supervisor.log",
  sandboxStatus: "sandbox.json",
  sandboxLog: "sandbox.log",
} as const;
const FILES = PROCESS_FILES;

// The checkout runs the sources (.ts); an installed package runs the built files (.js).
const SUPERVISOR_PATH = fileURLToPath(
  new URL(
    import.meta.url.endsWith(".ts") ? "./pty-supervisor.ts" : "./pty-supervisor.js",
    import.meta.url,
  ),
);

type Internal = {
  rec: PersistedProcess;
  child: ExitSource | null;
  exited: Promise<ExitStatus> | null;
  status: ExitStatus | null;
  waiters: number;
};

const internals = new WeakMap<ProcessHandle, Internal>();

let sleepBinCache: string | undefined;
/** Absolute path of `sleep` for the input holder, so a command env without PATH still works. */
function sleepBin(): string {
  sleepBinCache ??= ["/bin/sleep", "/usr/bin/sleep"].find((p) => existsSync(p)) ?? "sleep";
  return sleepBinCache;
}

let umaskCache: string | undefined;
/**
 * The host's umask, in octal. The wrapper writes its own files owner-only (umask 077) and
 * gives the command this one back, so files the command creates in the workspace get the
 * modes the user expects. Read from /proc: `process.umask()` without an argument is deprecated.
 */
function hostUmask(): string {
  umaskCache ??= readOwnUmask() ?? "022";
  return umaskCache;
}

let defaultShellCache: string | undefined;
export function defaultShell(): string {
  defaultShellCache ??= existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
  return defaultShellCache;
}

const nowIso = () => new Date().toISOString();

function handleFromRecord(dir: string, rec: PersistedProcess): ProcessHandle {
  // Paths are re-derived from the directory so a record stays valid if the tree moves.
  const out = rec.output_mode === "merged" ? join(dir, FILES.output) : join(dir, FILES.stdout);
  return Object.freeze({
    pid: rec.pid,
    pgid: rec.pgid,
    dir,
    stdout_path: out,
    stderr_path: rec.stderr_path === null ? null : join(dir, FILES.stderr),
    output_path: out,
    stdin_path: rec.stdin_path === null ? null : join(dir, FILES.stdin),
    started_at: rec.started_at,
    tty: rec.tty,
    accepts_input: rec.accepts_input,
  });
}

function internalOf(handle: ProcessHandle): Internal {
  let st = internals.get(handle);
  if (st === undefined) {
    // A handle rebuilt by the caller (e.g. from stored fields): resolve through the directory.
    const rec = readRecord(handle.dir);
    if (rec === null) throw new Error(`no process record in ${handle.dir}`);
    st = { rec, child: null, exited: null, status: null, waiters: 0 };
    internals.set(handle, st);
  }
  return st;
}

function writeJsonAtomic(path: string, value: unknown, mode = 0o600): void {
  // No fsync: a record lost to a power cut is rebuilt from /proc and the exit file.
  atomicWriteFile(path, JSON.stringify(value) + "\n", { mode, fsync: false });
}

function readRecord(dir: string): PersistedProcess | null {
  try {
    const rec = JSON.parse(readFileSync(join(dir, FILES.spec), "utf8")) as PersistedProcess;
    return rec.version === 1 && typeof rec.pid === "number" ? rec : null;
  } catch {
    return null;
  }
}

function spawnWrapper(env: Record<string, string>, cwd: string, dir: string): ChildProcess {
  return spawn("/bin/sh", ["-c", WRAPPER_SCRIPT, "holon-wrap", dir], {
    cwd,
    env,
    detached: true,
    stdio: "ignore",
  });
}

/**
 * Start the wrapper confined: bubblewrap with the profile's command line, its status on fd 3
 * (a host-owned file the sandbox cannot write), its own errors in sandbox.log. Returns once
 * bubblewrap names the sandbox's init (a few milliseconds: the start is synchronous, like
 * every start here), or throws with bubblewrap's error when it could not set the sandbox up.
 */
function spawnSandboxed(
  sandbox: SandboxLaunch,
  env: Record<string, string>,
  cwd: string,
  dir: string,
  draft: DraftRecord,
): { child: ChildProcess; pid: number; stat: SpareLikeStat } {
  // The files the wrapper writes exist now, so they can be bound writable into a directory
  // that is otherwise read-only inside.
  const exitPath = join(dir, FILES.exit);
  closeSync(openSync(exitPath, "wx", 0o600));
  const writable = [draft.output_path, exitPath];
  if (draft.stderr_path !== null) writable.push(draft.stderr_path);
  if (draft.stdin_path !== null) {
    const holder = join(dir, FILES.holder);
    closeSync(openSync(holder, "wx", 0o600));
    writable.push(draft.stdin_path, holder);
  }
  const statusPath = join(dir, FILES.sandboxStatus);
  const statusFd = openSync(statusPath, "wx", 0o600);
  const logPath = join(dir, FILES.sandboxLog);
  const logFd = openSync(logPath, "a", 0o600);
  const argv = sandbox.argv(["/bin/sh", "-c", WRAPPER_SCRIPT, "holon-wrap", dir], {
    writable,
    tty: false,
    statusFd: 3,
  });
  let child: ChildProcess;
  try {
    child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      env,
      detached: true,
      stdio: ["ignore", "ignore", logFd, statusFd],
    });
  } finally {
    closeSync(statusFd);
    closeSync(logFd);
  }
  child.on("error", () => {});
  const outer = child.pid;
  if (outer === undefined) throw new ProcessStartError(`could not start bubblewrap (${argv[0]})`);
  const init = awaitSandboxInit(statusPath, outer);
  if (init === null) {
    try {
      process.kill(outer, "SIGKILL");
    } catch {
      // already gone
    }
    let why = "";
    try {
      why = readFileSync(logPath, "utf8").trim().slice(0, 500);
    } catch {
      // no log
    }
    throw new ProcessStartError(`the sandbox could not be set up: ${why || "bubblewrap exited"}`);
  }
  // The init leads its own session and group (--new-session), though perhaps not yet: the
  // record says what it will be, and a stop that comes first also kills the init itself.
  const started = readProcStat(init)?.start_ticks ?? -1;
  return { child, pid: init, stat: { pgrp: init, session: init, start_ticks: started } };
}

type SpareLikeStat = { pgrp: number; session: number; start_ticks: number };

const pause = new Int32Array(new SharedArrayBuffer(4));

/** The sandbox init's pid from bubblewrap's status file; null when bubblewrap gave up. */
function awaitSandboxInit(statusPath: string, outer: number): number | null {
  const deadline = Date.now() + 5000;
  for (;;) {
    let text = "";
    try {
      text = readFileSync(statusPath, "utf8");
    } catch {
      // not yet
    }
    // bubblewrap writes the init's pid right after creating it, before it sets the sandbox
    // up: so the wait is short (the event loop is blocked only that long). The file is beyond
    // the command's reach, so the pid is bubblewrap's word.
    const m = /"child-pid":\s*(\d+)/.exec(text);
    if (m !== null) return Number(m[1]);
    const o = readProcStat(outer);
    if (o === null || o.state === "Z" || Date.now() > deadline) return null;
    Atomics.wait(pause, 0, 0, 0.2); // a fraction of a millisecond between reads
  }
}

/**
 * Remove a finished process's directory in the background, for callers that have read all
 * they need from it: by the spawn helper when it runs, else by async removal here.
 */
export function discardProcessDir(dir: string): void {
  if (!discardViaSpawner(dir)) rm(dir, { recursive: true, force: true }, () => {});
}

/** A process record before its process exists: everything but what the start tells. */
type DraftRecord = Omit<
  PersistedProcess,
  "version" | "pid" | "pgid" | "sid" | "start_ticks" | "boot_id" | "started_at"
>;

/**
 * When `startProcess(spec)` would miss its profile's confined spare while a replacement is
 * still starting: a promise that settles once one is ready, or after `maxMs`. Null when there
 * is nothing worth waiting for. A spare that started before the miss is ready sooner than a
 * cold start would be, and costs the host no fork; an async caller awaits this first.
 */
export async function confinedSpareSoon(spec: ProcessSpec, maxMs = 250): Promise<void | null> {
  const use = await spareUse(spec);
  return use && sandboxSpareSoon(use.launch, use.envKey, use.layout, maxMs);
}

/**
 * The confined spare a start of `spec` can take: a sandboxed command without input or
 * terminal, in the host's command environment. Null when it always starts cold.
 */
async function spareUse(
  spec: ProcessSpec,
): Promise<{ launch: SandboxLaunch; envKey: string; layout: "split" | "merged" } | null> {
  if (!spec.sandbox || spec.tty === true || spec.env !== undefined) return null;
  if (spec.acceptsInput === true) return null;
  const envKey = (await commandEnvOf(spec.policy ?? BUILTIN_COMMAND_POLICY)).key;
  return { launch: spec.sandbox, envKey, layout: spec.output === "merged" ? "merged" : "split" };
}

/** Start a command. Synchronous: the returned handle's process is already running. */
export async function startProcess(spec: ProcessSpec): Promise<ProcessHandle> {
  const dir = resolve(spec.dir);
  const tty = spec.tty === true;
  const merged = tty || spec.output === "merged";
  const flag = spec.login === true ? "-lc" : "-c";
  const outPath = join(dir, merged ? FILES.output : FILES.stdout);
  const draft: DraftRecord = {
    kind: tty ? "pty_supervisor" : "wrapper",
    host_pid: process.pid,
    cmd: spec.cmd,
    cwd: spec.cwd,
    shell: spec.shell ?? defaultShell(),
    shell_args: [flag, spec.cmd],
    login: spec.login === true,
    tty,
    accepts_input: tty || spec.acceptsInput === true,
    output_mode: merged ? "merged" : "split",
    stdout_path: outPath,
    stderr_path: merged ? null : join(dir, FILES.stderr),
    output_path: outPath,
    stdin_path: tty || spec.acceptsInput === true ? join(dir, FILES.stdin) : null,
  };
  if (!tty && spec.cmd.includes("\0")) {
    throw new ProcessStartError("the command contains a NUL byte");
  }
  try {
    if (!statSync(spec.cwd).isDirectory()) throw new Error("not a directory");
  } catch (err) {
    throw new ProcessStartError(
      `working directory ${spec.cwd} is unusable: ${(err as Error).message}`,
    );
  }
  // A confined command without input or terminal takes its profile's spare, whose directory
  // becomes this one (so it must not exist yet: a taken directory starts cold below).
  const use = await spareUse(spec);
  const confinedSpare = use && takeSandboxSpare(use.launch, use.envKey, use.layout, dir);
  // Owner-only, like everything Holon keeps: output can hold anything the command printed.
  // A spare's directory (now this one) exists, with its files made empty by the helper.
  if (confinedSpare === null) mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The record is created exclusively up front (claiming the directory) and written once the
  // pid is known: a single write of a new file, which a reader sees whole or not at all. A
  // spare's directory was claimed by its rename, its empty record made with it.
  const specPath = join(dir, FILES.spec);
  let specFd: number;
  try {
    specFd =
      confinedSpare === null
        ? openSync(specPath, "wx", 0o600)
        : openSync(specPath, fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") {
      throw new ProcessStartError(`process directory ${dir} is already in use`);
    }
    throw new ProcessStartError(`cannot create the process record: ${(err as Error).message}`);
  }
  try {
    return await startRecorded(spec, dir, specFd, draft, confinedSpare);
  } catch (err) {
    try {
      closeSync(specFd);
    } catch {
      // already closed by the write
    }
    if (readRecord(dir) === null) rmSync(specPath, { force: true });
    throw err;
  }
}

async function startRecorded(
  spec: ProcessSpec,
  dir: string,
  specFd: number,
  draft: DraftRecord,
  confinedSpare: TakenSpare | null,
): Promise<ProcessHandle> {
  if (draft.stdin_path !== null) {
    try {
      execFileSync("mkfifo", ["-m", "600", draft.stdin_path], { stdio: "ignore" });
    } catch (err) {
      throw new ProcessStartError(`cannot create input pipe: ${(err as Error).message}`);
    }
  }
  let child: ExitSource;
  let pid: number | undefined;
  let spare: ReturnType<typeof takeSpare> = null;
  let sandboxStat: SpareLikeStat | null = null;
  const policy = spec.policy ?? BUILTIN_COMMAND_POLICY;
  const env: CommandEnv =
    spec.env === undefined
      ? await commandEnvOf(policy)
      : { env: scrubEnv(spec.env, await envPolicyOf(policy)), key: "" };
  draft.output_cap_bytes = outputCapOf(policy);
  const outFlags =
    fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_APPEND;
  // The output files exist before the command does, so readers never race their creation (a
  // spare's were made empty with it, and nothing ran there yet to write them).
  if (confinedSpare === null) closeSync(openSync(draft.output_path, outFlags, 0o600));
  if (!draft.tty) {
    if (draft.stderr_path !== null && confinedSpare === null) {
      closeSync(openSync(draft.stderr_path, outFlags, 0o600));
    }
    writeFileSync(
      join(dir, FILES.params),
      wrapperParams({
        cwd: spec.cwd,
        shell: draft.shell,
        flag: draft.shell_args[0]!,
        cmd: spec.cmd,
        input: draft.accepts_input,
        merged: draft.output_mode === "merged",
        sleep: sleepBin(),
        umask: hostUmask(),
      }),
      { mode: 0o600 },
    );
    if (spec.sandbox) {
      // Confined: on the profile's spare, or a cold bubblewrap start (see the header); the
      // record names the sandbox's init either way.
      const started = confinedSpare ?? spawnSandboxed(spec.sandbox, env.env, spec.cwd, dir, draft);
      child = started.child;
      pid = started.pid;
      sandboxStat = started.stat;
      draft.sandbox = spec.sandbox.digest;
      if (spec.env === undefined) {
        wantSandboxSpare(spec.sandbox, env, draft.output_mode, dirname(dir), child);
      }
    } else {
      spare = spec.env === undefined ? takeSpare(env.key) : null;
      if (spare === null) {
        child = spawnWrapper(env.env, spec.cwd, dir);
        if (spec.env === undefined) ensureSpawner(env);
      } else {
        child = spare.child;
        pid = spare.stat.pid;
      }
    }
  } else {
    // Confined: the supervisor (outside) runs bubblewrap as the terminal's child, so the
    // terminal and its transcript stay the host's and only the shell is confined.
    const argv = spec.sandbox?.argv([draft.shell, ...draft.shell_args], {
      writable: [],
      tty: true,
      statusFd: null,
    });
    if (spec.sandbox) draft.sandbox = spec.sandbox.digest;
    writeJsonAtomic(
      join(dir, FILES.launch),
      {
        shell: argv?.[0] ?? draft.shell,
        args: argv?.slice(1) ?? draft.shell_args,
        cwd: spec.cwd,
        env: env.env,
        cols: spec.cols ?? 120,
        rows: spec.rows ?? 40,
      },
      0o600,
    );
    const logFd = openSync(join(dir, FILES.supervisorLog), "a", 0o600);
    try {
      child = spawn(process.execPath, [SUPERVISOR_PATH, dir], {
        cwd: dir,
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
        detached: true,
        stdio: ["ignore", "ignore", logFd],
      });
    } finally {
      closeSync(logFd);
    }
  }
  if (child instanceof ChildProcess) {
    child.on("error", () => {
      // reported through the missing pid below or through the exit event
    });
    if (!spec.sandbox || draft.tty) pid = child.pid; // a sandbox's pid is its init's (above)
    child.unref();
  }
  if (pid === undefined) {
    throw new ProcessStartError(
      `could not spawn the ${draft.tty ? "PTY supervisor" : "command wrapper"}`,
    );
  }
  try {
    const handle = track(
      dir,
      specFd,
      draft,
      pid,
      sandboxStat ?? spare?.stat ?? readProcStat(pid),
      child,
    );
    // A spare learns its directory only now that the record naming its pid exists.
    spare?.launch(dir);
    confinedSpare?.launch(dir);
    return handle;
  } catch (err) {
    // Never leave a process running that nobody can find: end it before reporting the failure.
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already gone
    }
    throw new ProcessStartError(`could not record the started process: ${(err as Error).message}`);
  }
}

function track(
  dir: string,
  specFd: number,
  draft: DraftRecord,
  pid: number,
  stat: { pgrp: number; session: number; start_ticks: number } | null,
  child: ExitSource,
): ProcessHandle {
  const rec: PersistedProcess = {
    version: 1,
    ...draft,
    pid,
    pgid: stat?.pgrp ?? pid,
    sid: stat?.session ?? pid,
    start_ticks: stat?.start_ticks ?? -1,
    boot_id: bootId(),
    started_at: nowIso(),
  };
  try {
    writeSync(specFd, JSON.stringify(rec) + "\n");
  } finally {
    closeSync(specFd);
  }
  const handle = handleFromRecord(dir, rec);
  const internal: Internal = { rec, child, exited: null, status: null, waiters: 0 };
  watchOutput(dir, outputFiles(handle), rec.output_cap_bytes!);
  internal.exited = new Promise<ExitStatus>((resolveExit) => {
    child.once("exit", (code, signal) => {
      const status = settleChildExit(dir, rec, code, signal);
      unwatchOutput(dir); // the last cut, before anyone reads the output of the finished process
      internal.status = status;
      internal.child = null;
      resolveExit(status);
    });
  });
  internals.set(handle, internal);
  return handle;
}

/** Decide the status after our own child (wrapper or supervisor) exited; record it if nobody did. */
function settleChildExit(
  dir: string,
  rec: PersistedProcess,
  code: number | null,
  signal: NodeJS.Signals | null,
): ExitStatus {
  const exitPath = join(dir, FILES.exit);
  if (rec.kind === "wrapper" && code !== null && exitRecorded(exitPath)) {
    // The wrapper exits with exactly the status it recorded: no need to read the file back.
    return statusFromShell(code, nowIso());
  }
  const recorded = readExitFile(exitPath);
  if (recorded !== null) return recorded;
  const finished_at = nowIso();
  let out: RecordedExit;
  if (rec.kind === "wrapper" && code !== null) {
    // The wrapper exits with the command's status; it failed to write the file only if it
    // died before (e.g. the directory vanished). Treat the code as the shell status.
    const s = statusFromShell(code, finished_at);
    out = { exit_code: s.exit_code, signal: s.signal, finished_at, recorded_by: "host" };
  } else if (signal !== null) {
    out = { exit_code: null, signal, finished_at, recorded_by: "host" };
  } else {
    out = {
      exit_code: null,
      signal: null,
      finished_at,
      recorded_by: "host",
      lost_reason:
        rec.kind === "wrapper"
          ? // only when a spare's helper died: nobody saw the wrapper's own exit
            `process ${rec.pid} ended without recording a status; its spawn helper exited, so the command may never have started`
          : `PTY supervisor exited with code ${code} without recording a status (see supervisor.log)`,
    };
  }
  try {
    writeExitFile(exitPath, out);
  } catch {
    // directory gone: the in-memory status still stands
  }
  const status: ExitStatus = { exit_code: out.exit_code, signal: out.signal, finished_at };
  if (out.lost_reason !== undefined) status.lost_reason = out.lost_reason;
  return status;
}

/**
 * Current status without waiting: the exit status once known, else null while running.
 * For a process that vanished without recording a status, a status with `lost_reason`.
 */
export function peekExit(handle: ProcessHandle): ExitStatus | null {
  const st = internalOf(handle);
  if (st.status !== null) return st.status;
  if (st.child !== null) return null; // our child: the exit event is authoritative
  const exitPath = join(handle.dir, FILES.exit);
  const recorded = readExitFile(exitPath);
  if (recorded !== null) return finished(handle, st, recorded);
  if (st.rec.boot_id === bootId() && isSameLiveProcess(st.rec.pid, st.rec.start_ticks)) return null;
  const again = readExitFile(exitPath);
  if (again !== null) return finished(handle, st, again);
  return finished(handle, st, {
    exit_code: null,
    signal: null,
    finished_at: nowIso(),
    lost_reason: lostReason(st.rec),
  });
}

/** Record a reattached process's final status, after the last cut of its output. */
function finished(handle: ProcessHandle, st: Internal, status: ExitStatus): ExitStatus {
  unwatchOutput(handle.dir);
  return (st.status = status);
}

/** The files a process writes its output to (what the output cap bounds). */
function outputFiles(handle: ProcessHandle): string[] {
  return handle.stderr_path === null
    ? [handle.output_path]
    : [handle.output_path, handle.stderr_path];
}

/** Bytes the output cap dropped from this process's output so far (0 when none). */
export function outputDroppedBytes(handle: { dir: string }): number {
  return droppedBytes(handle.dir).total;
}

function lostReason(rec: PersistedProcess): string {
  if (rec.boot_id !== bootId()) return "the machine rebooted since the process started";
  const who = rec.kind === "wrapper" ? "its wrapper" : "its PTY supervisor";
  return `process ${rec.pid} is gone and no exit status was recorded (${who} was killed before it could record one, e.g. by SIGKILL)`;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted", "AbortError");
}

/** Wait for the process to exit, at most `timeoutMs` (default: forever). The process keeps running on timeout. */
export async function waitForExit(
  handle: ProcessHandle,
  opts: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ExitStatus | "timeout"> {
  const st = internalOf(handle);
  if (st.status !== null) return st.status;
  opts.signal?.throwIfAborted();
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  if (st.child !== null && st.exited !== null) {
    const child = st.child;
    if (st.waiters++ === 0) child.ref();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await new Promise<ExitStatus | "timeout">((res, rej) => {
        st.exited!.then(res, rej);
        if (deadline !== Infinity)
          timer = setTimeout(() => res("timeout"), Math.max(0, deadline - Date.now()));
        if (opts.signal !== undefined) {
          const signal = opts.signal;
          onAbort = () => rej(abortError(signal));
          signal.addEventListener("abort", onAbort, { once: true });
        }
      });
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      if (onAbort !== undefined) opts.signal?.removeEventListener("abort", onAbort);
      if (--st.waiters === 0 && st.child !== null) child.unref();
    }
  }
  // Reattached (not our child): poll the exit file and the pid, backing off to 200 ms.
  let interval = 10;
  for (;;) {
    const status = peekExit(handle);
    if (status !== null) return status;
    const left = deadline - Date.now();
    if (left <= 0) return "timeout";
    await sleep(Math.min(interval, left), opts.signal);
    interval = Math.min(interval * 2, 200);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((res, rej) => {
    if (signal?.aborted) return rej(abortError(signal));
    const onAbort = () => {
      clearTimeout(t);
      rej(abortError(signal!));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      res();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

async function pollUntil(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(10, Math.max(1, deadline - Date.now())));
  }
}

/**
 * Reattach to a process from its directory alone (after a host restart). A process is
 * `running` only if its recorded pid is alive, not a zombie, and has the recorded start time
 * and boot id (so a reused pid is never mistaken for ours). A recorded exit status wins over
 * everything. Otherwise it is `lost` with a reason: never `running` forever.
 */
export function reattach(dir: string): ReattachResult {
  const abs = resolve(dir);
  const rec = readRecord(abs);
  if (rec === null) {
    const exit = readExitFile(join(abs, FILES.exit));
    const reason =
      exit !== null
        ? "exit status recorded but process record spec.json is missing"
        : `no process record (spec.json) in ${abs}`;
    return { state: "lost", reason, handle: null, leftover_pids: [] };
  }
  const handle = handleFromRecord(abs, rec);
  const internal: Internal = { rec, child: null, exited: null, status: null, waiters: 0 };
  internals.set(handle, internal);
  // Output written while no host watched is cut now; a process that ended gets its last cut.
  watchOutput(abs, outputFiles(handle), rec.output_cap_bytes ?? DEFAULT_OUTPUT_CAP);
  const status = peekExit(handle);
  if (status === null) return { state: "running", handle };
  if (status.lost_reason !== undefined && status.exit_code === null && status.signal === null) {
    const { own, pty } = ownSessions(handle, rec);
    const leftover = scanMembers([...own, ...pty], own.length > 0 ? [rec.pgid] : []);
    let reason = status.lost_reason;
    if (leftover.length > 0) reason += `; ${leftover.length} process(es) of its session still run`;
    return { state: "lost", reason, handle, leftover_pids: leftover.map((m) => m.pid) };
  }
  return { state: "exited", status, handle };
}

function readPtyChild(dir: string): { pid: number; start_ticks: number } | null {
  try {
    const v = JSON.parse(readFileSync(join(dir, FILES.pty), "utf8")) as {
      child_pid: number;
      child_start_ticks: number;
    };
    return { pid: v.child_pid, start_ticks: v.child_start_ticks };
  } catch {
    return null;
  }
}

/**
 * Whether session `sid` (whose leader was `leaderPid` started at `leaderTicks`) still belongs
 * to us. The kernel never hands out a pid that is still in use as a session id, so members of
 * the session are ours unless its number was reused, which shows as a different live process
 * with that pid; a session whose members all died may be reused by a stranger only after that.
 */
function sessionIsOurs(rec: PersistedProcess, leaderPid: number, leaderTicks: number): boolean {
  if (rec.boot_id !== bootId()) return false;
  const leader = readProcStat(leaderPid);
  return leader === null || leader.start_ticks === leaderTicks;
}

/** Sessions whose members belong to this process: the wrapper's / supervisor's, and for a PTY the terminal's. */
function ownSessions(
  handle: ProcessHandle,
  rec: PersistedProcess,
): { own: number[]; pty: number[] } {
  const own = sessionIsOurs(rec, rec.sid, rec.start_ticks) ? [rec.sid] : [];
  const pty: number[] = [];
  if (rec.tty) {
    // The terminal's child is a session leader (setsid), so its pid is the session id.
    const c = readPtyChild(handle.dir);
    if (c !== null && sessionIsOurs(rec, c.pid, c.start_ticks)) pty.push(c.pid);
  }
  return { own, pty };
}

/**
 * Stop the process and everything in its session: SIGTERM to every process group of the
 * session (for a PTY: SIGHUP + SIGTERM to the terminal's session and SIGTERM to the
 * supervisor, which forwards), wait up to `graceMs` for the process to exit and the session
 * to empty, then SIGKILL every group left. Also cleans up children a finished command left
 * behind. Processes that left the session (setsid, daemons) are not tracked.
 */
export async function stopProcess(
  handle: ProcessHandle,
  opts: { graceMs?: number; killWaitMs?: number } = {},
): Promise<StopResult> {
  const st = internalOf(handle);
  const rec = st.rec;
  const graceMs = opts.graceMs ?? 2000;
  const killWaitMs = opts.killWaitMs ?? 5000;
  const targets = () => {
    const { own, pty } = ownSessions(handle, rec);
    return { sessions: [...own, ...pty], groups: own.length > 0 ? [rec.pgid] : [], pty };
  };
  const members = () => {
    const t = targets();
    return scanMembers(t.sessions, t.groups);
  };
  const exited = () => peekExit(handle) !== null;
  const already = peekExit(handle);
  if (already !== null && members().length === 0) {
    return { signal_sent: null, escalated_to_kill: false, exit: already, leftover_pids: [] };
  }
  const supervisorAlive = () =>
    rec.tty && rec.boot_id === bootId() && isSameLiveProcess(rec.pid, rec.start_ticks);

  const first = targets();
  if (rec.tty) {
    signalSessions(first.pty, [], "SIGHUP");
    signalSessions(first.pty, [], "SIGTERM");
    if (supervisorAlive()) {
      try {
        process.kill(rec.pid, "SIGTERM"); // forwards to the terminal's session
      } catch {
        // already gone
      }
    }
  } else {
    signalSessions(first.sessions, first.groups, "SIGTERM");
  }
  let escalated = false;
  const clean = await pollUntil(() => exited() && members().length === 0, graceMs);
  if (!clean) {
    escalated = true;
    const t = targets(); // re-read: a PTY child may have appeared since
    if (rec.tty && t.pty.length > 0) {
      signalSessions(t.pty, [], "SIGKILL");
      // Let the supervisor observe the terminal's death and record it itself.
      await pollUntil(exited, Math.min(1000, killWaitMs));
    }
    const k = targets();
    signalSessions(k.sessions, k.groups, "SIGKILL");
    // A sandbox's init ends its whole PID namespace; killed by pid too, in case the stop came
    // before it had made its session (see spawnSandboxed).
    if (rec.sandbox !== undefined && !rec.tty && isSameLiveProcess(rec.pid, rec.start_ticks)) {
      try {
        process.kill(rec.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await pollUntil(
      () => members().length === 0 && (st.child === null || st.status !== null),
      killWaitMs,
    );
  }
  const leftover = () => members().map((m) => m.pid);
  if (already !== null) {
    return {
      signal_sent: "SIGTERM",
      escalated_to_kill: escalated,
      exit: already,
      leftover_pids: leftover(),
    };
  }
  let exit =
    st.child !== null ? await waitForExit(handle, { timeoutMs: killWaitMs }) : peekExit(handle);
  if (exit === null || exit === "timeout" || (exit.lost_reason !== undefined && escalated)) {
    // The recorder died under SIGKILL: record what we did.
    const finished_at = nowIso();
    const recorded: RecordedExit = {
      exit_code: null,
      signal: "SIGKILL",
      finished_at,
      recorded_by: "host",
    };
    try {
      writeExitFile(join(handle.dir, FILES.exit), recorded);
    } catch {
      // directory gone
    }
    exit = readExitFile(join(handle.dir, FILES.exit)) ?? {
      exit_code: null,
      signal: "SIGKILL",
      finished_at,
    };
    st.status = exit;
  }
  return {
    signal_sent: "SIGTERM",
    escalated_to_kill: escalated,
    exit,
    leftover_pids: leftover(),
  };
}

function inputRefusal(handle: ProcessHandle, st: Internal): string | null {
  if (!st.rec.accepts_input || handle.stdin_path === null) return "input_not_enabled";
  if (peekExit(handle) !== null || exitRecorded(join(handle.dir, FILES.exit)))
    return "process_exited";
  if (existsSync(join(handle.dir, FILES.closed))) return "input_closed";
  return null;
}

/**
 * Write bytes to the process's stdin (FIFO; for a PTY the supervisor forwards them to the
 * terminal). Opens the FIFO per call, so it works the same after a host restart. Waits up to
 * `timeoutMs` (default 5 s) while the pipe is full; `bytes_written` reports partial delivery.
 */
export async function writeInput(
  handle: ProcessHandle,
  data: string | Uint8Array,
  opts: { timeoutMs?: number } = {},
): Promise<InputResult> {
  const st = internalOf(handle);
  const refusal = inputRefusal(handle, st);
  if (refusal !== null) return { accepted: false, bytes_written: 0, reason: refusal };
  const buf = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
  const deadline = Date.now() + (opts.timeoutMs ?? 5000);
  let fd: number | null = null;
  while (fd === null) {
    try {
      fd = openSync(handle.stdin_path!, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // ENXIO: nobody holds the read side yet (wrapper or supervisor still starting) or any
      // more (the process is finishing). Retry while the process lives.
      if (code === "ENXIO" && peekExit(handle) === null && Date.now() < deadline) {
        await sleep(5);
        continue;
      }
      const reason =
        code === "ENXIO" || peekExit(handle) !== null ? "process_exited" : "input_unavailable";
      return { accepted: false, bytes_written: 0, reason };
    }
  }
  let written = 0;
  try {
    while (written < buf.length) {
      try {
        written += writeSync(fd, buf, written, buf.length - written);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EAGAIN") {
          if (Date.now() >= deadline || peekExit(handle) !== null) {
            return { accepted: written > 0, bytes_written: written, reason: "input_blocked" };
          }
          await sleep(5);
          continue;
        }
        return {
          accepted: written > 0,
          bytes_written: written,
          reason: code === "EPIPE" ? "process_exited" : "input_unavailable",
        };
      }
    }
  } finally {
    closeSync(fd);
  }
  return { accepted: true, bytes_written: written };
}

/**
 * Close the process's input (EOF). Non-PTY: the holder of the FIFO's write side is ended, so
 * the command reads EOF once it drained what was written. PTY: sends the terminal's EOF
 * character (Ctrl-D), which ends input at the start of a line.
 */
export async function closeInput(handle: ProcessHandle): Promise<InputResult> {
  const st = internalOf(handle);
  const refusal = inputRefusal(handle, st);
  if (refusal !== null) return { accepted: false, bytes_written: 0, reason: refusal };
  if (st.rec.tty) {
    const r = await writeInput(handle, "\x04");
    if (r.accepted) writeFileSync(join(handle.dir, FILES.closed), nowIso() + "\n", { mode: 0o600 });
    return r;
  }
  const holderPath = join(handle.dir, FILES.holder);
  let holder = NaN;
  // Input closed right after the start: the wrapper may not have written the holder's pid yet
  // (absent, or the empty file a sandboxed start creates). Wait for the wrapper to write it
  // or for the process to end; the bound only detects a stalled wrapper.
  await untilDirChanges(
    handle.dir,
    () => {
      try {
        holder = Number(readFileSync(holderPath, "utf8").trim());
      } catch {
        holder = NaN;
      }
      return (Number.isInteger(holder) && holder > 0) || peekExit(handle) !== null;
    },
    st.exited,
    HOLDER_WAIT_MS,
  );
  // A sandboxed wrapper wrote the holder's pid as its own PID namespace numbers it.
  if (st.rec.sandbox !== undefined && Number.isInteger(holder))
    holder = outerPid(holder, st.rec.sid);
  const hs = Number.isInteger(holder) ? readProcStat(holder) : null;
  // Only end the holder if it is still a member of this process's session.
  if (hs === null || hs.session !== st.rec.sid) {
    return {
      accepted: false,
      bytes_written: 0,
      reason: peekExit(handle) !== null ? "process_exited" : "input_unavailable",
    };
  }
  writeFileSync(join(handle.dir, FILES.closed), nowIso() + "\n", { mode: 0o600 });
  try {
    // SIGKILL, not SIGTERM: the holder may still be the wrapper's fork, whose inherited TERM
    // trap swallows a SIGTERM (see WRAPPER_SCRIPT), and then it lives on holding the FIFO.
    process.kill(holder, "SIGKILL");
  } catch {
    // already gone
  }
  return { accepted: true, bytes_written: 0 };
}

/** How long closeInput waits for the wrapper to name the input holder: a stall detector. */
const HOLDER_WAIT_MS = 30_000;

/**
 * Resolve true once `check()` holds, re-checked on every change in directory `dir` (where the
 * wrapper writes its files) and when `exited` settles; false after `timeoutMs`. A slow
 * re-check (250 ms) backs the watch up, as inotify can miss a change on some filesystems.
 */
async function untilDirChanges(
  dir: string,
  check: () => boolean,
  exited: Promise<unknown> | null,
  timeoutMs: number,
): Promise<boolean> {
  if (check()) return true;
  return new Promise<boolean>((res) => {
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      watcher?.close();
      clearInterval(backstop);
      clearTimeout(limit);
      res(ok);
    };
    const again = () => {
      if (check()) finish(true);
    };
    let watcher: ReturnType<typeof watch> | undefined;
    try {
      watcher = watch(dir, { persistent: false }, again);
      watcher.on("error", () => {});
    } catch {
      // no watch: the backstop alone
    }
    const backstop = setInterval(again, 250);
    const limit = setTimeout(() => finish(check()), timeoutMs);
    exited?.then(again, again);
    again(); // a write between the first check and the watch being armed
  });
}

/** The pid outside of the member of session `sid` whose innermost pid is `inner` (NaN: none). */
function outerPid(inner: number, sid: number): number {
  for (const m of scanMembers([sid])) {
    try {
      const line = /^NSpid:\s*(.+)$/m.exec(readFileSync(`/proc/${m.pid}/status`, "latin1"))?.[1];
      if (line !== undefined && Number(line.trim().split(/\s+/).at(-1)) === inner) return m.pid;
    } catch {
      // gone
    }
  }
  return NaN;
}

/** The persisted record of a process directory (null when absent or unreadable). */
export function readProcessRecord(dir: string): PersistedProcess | null {
  return readRecord(resolve(dir));
}

/** Remove a FIFO left behind so the directory can be archived as plain files (optional). */
export function removeInputPipe(handle: ProcessHandle): void {
  if (handle.stdin_path === null) return;
  try {
    unlinkSync(handle.stdin_path);
  } catch {
    // absent
  }
}
