// Spare command wrappers, started ahead of time by a helper process.
//
// Forking the host costs milliseconds (it grows with the host's memory) and blocks its event
// loop, and `sh` takes a while to start; every command would pay both before it runs. So a
// small helper process (spawner-helper.js) keeps a couple of wrappers already started, each
// blocked reading its stdin. Starting a command on a spare is: write the process directory's
// record (naming the spare's pid) and parameters, then one IPC message; the helper writes the
// directory to the spare's stdin, and the spare sources the parameters and runs the command.
// The helper, being the wrappers' parent, reports their exits back; the host treats that like
// its own child's exit.
//
// Everything about a command's life stays with the wrapper and its directory, so the helper
// adds no state that a restart could lose: if the helper dies, the commands it started run on
// and the host falls back to watching their pids (then reading the exit file), like after a
// host restart. The helper and its spares carry the scrubbed command environment (env.ts) as
// it was when the helper started; when that changes (the configuration's allowlist or
// provider credentials did), the helper is replaced. Commands given their own environment,
// and any start while no spare is ready, spawn cold.
//
// The helper and its spares cost about 50 MB, which an idle daemon should not carry: once no
// command has started or run for HOLON_SPAWN_HELPER_IDLE_MS (10 minutes by default), the
// helper is let go, and the next command starts cold and brings it back.
import { fork, type ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";
import type { CommandEnv } from "./env.ts";
import { isSameLiveProcess } from "./process-proc.ts";
import { WRAPPER_SCRIPT } from "./process-wrapper.ts";

const HELPER_PATH = fileURLToPath(new URL("./spawner-helper.js", import.meta.url));

/** What the process layer needs from a wrapper it started: its exit, and event-loop refs. */
export type ExitSource = {
  once(
    event: "exit",
    listener: (code: number | null, signal: NodeJS.Signals | null) => void,
  ): unknown;
  ref(): void;
  unref(): void;
};

/** A spare as the helper announced it: its pid and the /proc facts a process record needs. */
export type SpareInfo = { pid: number; pgrp: number; session: number; start_ticks: number };

type HelperMessage =
  | { spare: SpareInfo }
  | { confinedSpare: { key: string; pid: number } }
  | { exit: number; code: number | null; signal: NodeJS.Signals | null };

/** Where confined spares' starts and exits are reported (sandbox-spares.ts). */
export type ConfinedSpareListener = {
  /**
   * `helper` is the helper's pid: a spare works only while that helper does. `channel` is the
   * spare's stdin, the host's from now on; null (and `pid` -1) when the spare did not start.
   */
  started(key: string, pid: number, helper: number, channel: SpareChannel | null): void;
  /** A confined spare exited unused (`pid`), or every spare of a helper went with it (null). */
  gone(pid: number | null, helper: number): void;
};

let confinedListener: ConfinedSpareListener | null = null;

export function onConfinedSpares(listener: ConfinedSpareListener): void {
  confinedListener = listener;
}

type Helper = {
  proc: ChildProcess;
  /** The environment its spares carry (envKey of the scrubbed command environment). */
  envKey: string;
  spares: SpareInfo[];
  running: Map<number, RemoteWrapper>;
  refs: number;
  alive: boolean;
  /** Lets the helper go after a quiet spell (see the header). */
  idle: NodeJS.Timeout | null;
};

const DEFAULT_IDLE_MS = 10 * 60_000;

function idleMs(): number {
  const n = Number(process.env["HOLON_SPAWN_HELPER_IDLE_MS"]);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_IDLE_MS;
}

/** A command started or ended on `h`: its quiet spell starts again. */
function touch(h: Helper): void {
  if (h.idle !== null) clearTimeout(h.idle);
  h.idle = setTimeout(() => {
    h.idle = null;
    if (helper !== h || !h.alive) return;
    if (h.running.size > 0) touch(h);
    else retire(h);
  }, idleMs());
  h.idle.unref();
}

/** Longest line a wrapper writes on its stdin (`r`, or a status of up to three digits). */
const MAX_NOTICE_LINE = 8;

/**
 * The host's end of a spare's stdin, a socket the helper passed on: the spare's directory goes
 * out on it, and the spare's notices come back, one line each (`r` once it runs, then the
 * command's status; see WRAPPER_SCRIPT). Closing it ends an unused spare (it reads EOF). It
 * never keeps the host's event loop alive by itself.
 */
export class SpareChannel {
  readonly #socket: Socket;
  #buf = "";
  #onLine: ((line: string) => void) | null = null;
  #onClose: (() => void) | null = null;
  #closed = false;

  constructor(socket: Socket) {
    this.#socket = socket;
    socket.setEncoding("latin1");
    socket.on("error", () => {});
    socket.on("data", (chunk: string) => {
      this.#buf += chunk;
      for (let i = this.#buf.indexOf("\n"); i >= 0; i = this.#buf.indexOf("\n")) {
        const line = this.#buf.slice(0, i);
        this.#buf = this.#buf.slice(i + 1);
        this.#onLine?.(line);
        if (this.#closed) return;
      }
      // Nothing a wrapper says is longer: whatever this is, the spare is not to be trusted.
      if (this.#buf.length > MAX_NOTICE_LINE) this.#onLine?.(this.#buf);
    });
    socket.once("close", () => {
      this.#closed = true;
      this.#onClose?.();
    });
    socket.unref();
  }

  /** Where each line goes (one listener: the spare's current owner). */
  onLine(fn: (line: string) => void): void {
    this.#onLine = fn;
  }

  /** Called once the socket closed (the spare and its sandbox are gone, or we closed it). */
  onClose(fn: () => void): void {
    this.#onClose = fn;
  }

  /** Hand the spare its directory; false when its stdin is already gone. */
  send(dir: string): boolean {
    if (this.#closed || this.#socket.destroyed) return false;
    this.#socket.write(`${dir}\n`);
    return true;
  }

  ref(): void {
    this.#socket.ref();
  }

  unref(): void {
    this.#socket.unref();
  }

  close(): void {
    this.#closed = true;
    this.#socket.destroy();
  }
}

let helper: Helper | null = null;
let startQueued = false;
/** The command environment the latest ensureSpawner call asked for. */
let wantedEnv: CommandEnv | null = null;

/**
 * A wrapper that is the helper's child: its exit arrives as a message, or, for a spare whose
 * stdin the host holds, as the status line the wrapper writes there once it has recorded it
 * (whichever comes first; `beforeEnd` runs before either is taken as the end).
 */
class RemoteWrapper extends EventEmitter implements ExitSource {
  readonly #h: Helper;
  readonly #pid: number;
  readonly #startTicks: number;
  readonly #channel: SpareChannel | null;
  readonly #beforeEnd: (() => void) | undefined;
  #refd = false;
  #done = false;
  #poll: NodeJS.Timeout | null = null;

  constructor(
    h: Helper,
    pid: number,
    startTicks: number,
    channel: SpareChannel | null = null,
    beforeEnd?: () => void,
  ) {
    super();
    this.#h = h;
    this.#pid = pid;
    this.#startTicks = startTicks;
    this.#channel = channel;
    this.#beforeEnd = beforeEnd;
    channel?.onLine((line) => {
      channel.close();
      // Anything but a status: the end comes from the helper (or the pid watch) instead.
      if (!/^\d{1,3}$/.test(line)) return;
      this.exited(Number(line), null);
    });
    channel?.onClose(() => {});
  }

  ref(): void {
    if (this.#refd || this.#done) return;
    this.#refd = true;
    if (this.#h.refs++ === 0) this.#h.proc.channel?.ref();
    this.#channel?.ref();
    this.#poll?.ref();
  }

  unref(): void {
    if (!this.#refd) return;
    this.#refd = false;
    if (--this.#h.refs === 0) this.#h.proc.channel?.unref();
    this.#channel?.unref();
    this.#poll?.unref();
  }

  /** The wrapper ended (the first word of it counts; later ones are ignored). */
  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#poll !== null) clearInterval(this.#poll);
    this.#poll = null;
    if (this.#done) return;
    this.#done = true;
    // Whichever word of the end came first: the status line, or the helper's report that
    // bubblewrap exited (which it does as soon as the command does, while the sandbox's init
    // stays for whatever the command left running, so its end must not skip this).
    this.#beforeEnd?.();
    this.unref();
    this.#channel?.close();
    this.emit("exit", code, signal);
  }

  /** The helper is gone: watch the pid instead (the exit file then tells the status). */
  orphaned(): void {
    if (this.#poll !== null || this.#done) return;
    this.#poll = setInterval(() => {
      if (!isSameLiveProcess(this.#pid, this.#startTicks)) this.exited(null, null);
    }, 20);
    if (!this.#refd) this.#poll.unref();
  }
}

function startHelper(ce: CommandEnv): void {
  let proc: ChildProcess;
  try {
    proc = fork(HELPER_PATH, [], {
      execArgv: [],
      // Never the host's own environment: the helper and its spares hold no secrets.
      env: ce.env,
      // Its stdin is a pipe from us: it reads end-of-file when we go or let it go (see
      // spawner-helper.js: the IPC channel's disconnect alone is not enough).
      stdio: ["pipe", "ignore", "inherit", "ipc"],
      serialization: "json",
    });
  } catch {
    return; // commands keep starting cold
  }
  const h: Helper = {
    proc,
    envKey: ce.key,
    spares: [],
    running: new Map(),
    refs: 0,
    alive: true,
    idle: null,
  };
  proc.on("error", () => {});
  proc.stdin?.on("error", () => {});
  proc.on("message", (m: HelperMessage, handle?: unknown) => {
    if ("spare" in m) {
      h.spares.push(m.spare);
      return;
    }
    if ("confinedSpare" in m) {
      const socket = handle as Socket | undefined;
      // Without its stdin the host cannot reach it: it exits with the helper.
      const channel = socket === undefined ? null : new SpareChannel(socket);
      if (confinedListener === null) channel?.close();
      else {
        const { key, pid } = m.confinedSpare;
        confinedListener.started(key, channel === null ? -1 : pid, proc.pid ?? -1, channel);
      }
      return;
    }
    h.spares = h.spares.filter((s) => s.pid !== m.exit);
    const remote = h.running.get(m.exit);
    if (remote !== undefined) {
      h.running.delete(m.exit);
      remote.exited(m.code, m.signal);
      if (h.alive) touch(h);
    } else confinedListener?.gone(m.exit, proc.pid ?? -1);
  });
  proc.once("exit", () => {
    confinedListener?.gone(null, proc.pid ?? -1);
    h.alive = false;
    if (h.idle !== null) clearTimeout(h.idle);
    h.spares = [];
    if (helper === h) helper = null;
    for (const remote of h.running.values()) remote.orphaned();
  });
  try {
    proc.send({ script: WRAPPER_SCRIPT });
  } catch {
    return; // it died at once; commands keep starting cold
  }
  proc.unref();
  proc.channel?.unref();
  helper = h;
  touch(h);
}

/**
 * Take a spare wrapper started with the environment `envKey` names, or null (start cold
 * then). The caller must write the process record naming `stat.pid` and the wrapper's
 * `params.sh` before calling `launch(dir)`, and must treat `child` as the wrapper's exit.
 */
/**
 * `HOLON_SPAWN_HELPER=0` turns spare wrappers off: every command spawns cold. For measuring
 * what the helper saves (bench/task.bench.ts) and for hosts that would rather not run it.
 */
export function spawnHelperEnabled(): boolean {
  return process.env["HOLON_SPAWN_HELPER"] !== "0";
}

export function takeSpare(envKey: string): {
  stat: SpareInfo;
  child: ExitSource;
  launch(dir: string): void;
} | null {
  const h = spawnHelperEnabled() ? helper : null;
  const stat = h !== null && h.alive && h.envKey === envKey ? h.spares.shift() : undefined;
  if (h === null || stat === undefined) return null;
  const child = new RemoteWrapper(h, stat.pid, stat.start_ticks);
  h.running.set(stat.pid, child);
  touch(h);
  return {
    stat,
    child,
    launch(dir: string) {
      try {
        h.proc.send({ go: stat.pid, dir });
      } catch {
        child.orphaned(); // the helper is gone; the spare exits unused and the pid watch sees it
      }
    },
  };
}

/**
 * Ask the helper to start a confined spare (bubblewrap running the wrapper, waiting for its
 * directory on stdin) in directory `dir`, which it makes with the empty `files`: `argv` from
 * the sandbox profile, its status and errors into host-owned files. False when no helper with
 * this environment runs (its report comes as `started`), else the pid of the helper asked
 * (whose exit ends the spare, reported or not).
 */
export function startConfinedSpare(
  envKey: string,
  key: string,
  spare: {
    dir: string;
    files: readonly string[];
    argv: readonly string[];
    status: string;
    log: string;
  },
): number | false {
  const h = spawnHelperEnabled() ? helper : null;
  if (h === null || !h.alive || h.envKey !== envKey || h.proc.pid === undefined) return false;
  try {
    h.proc.send({ confined: { key, ...spare } });
    touch(h);
    return h.proc.pid;
  } catch {
    return false;
  }
}

/**
 * Hand a confined spare (bubblewrap's pid `outer`, its stdin `channel`) its command: like
 * takeSpare's launch, the caller has written the record and parameters first. Its end is its
 * status line on `channel`, else bubblewrap's exit as the helper reports it (`beforeEnd` runs
 * first either way). Null when its helper is gone.
 */
export function takeConfinedSpare(
  helperPid: number,
  outer: number,
  outerTicks: number,
  channel: SpareChannel,
  beforeEnd: () => void,
): { child: ExitSource; launch(dir: string): void } | null {
  const h = helper;
  if (h === null || !h.alive || h.proc.pid !== helperPid) return null;
  const child = new RemoteWrapper(h, outer, outerTicks, channel, beforeEnd);
  h.running.set(outer, child);
  touch(h);
  return {
    child,
    launch(dir: string) {
      // Its stdin already gone: it exits (or exited) unused, which the helper reports.
      channel.send(dir);
    },
  };
}

/**
 * Remove a finished process's directory through the helper, so its file-by-file removal costs
 * the host one message. False when there is no helper to ask.
 */
export function discardViaSpawner(dir: string): boolean {
  const h = helper;
  if (h === null || !h.alive) return false;
  try {
    h.proc.send({ discard: dir });
    return true;
  } catch {
    return false;
  }
}

/**
 * Make sure the helper runs with this command environment (started on the next turn
 * of the event loop, off the caller's path). A helper whose spares carry an older
 * environment is let go: its spares exit unused when it does, and commands it already
 * started run on.
 */
export function ensureSpawner(ce: CommandEnv): void {
  wantedEnv = ce;
  if (startQueued || !spawnHelperEnabled()) return;
  startQueued = true;
  setImmediate(() => {
    startQueued = false;
    const ce = wantedEnv!;
    if (helper !== null && helper.envKey !== ce.key) retire(helper);
    if (helper === null) startHelper(ce);
  });
}

/** Stop using a helper. Its running wrappers are watched by pid from now on. */
function retire(h: Helper): void {
  if (helper === h) helper = null;
  confinedListener?.gone(null, h.proc.pid ?? -1);
  h.alive = false;
  if (h.idle !== null) clearTimeout(h.idle);
  h.spares = [];
  for (const remote of h.running.values()) remote.orphaned();
  h.running.clear();
  try {
    h.proc.disconnect(); // the helper exits on disconnect; its spares read EOF and exit
  } catch {
    // already gone
  }
  h.proc.stdin?.destroy(); // and on its stdin's end, which comes even when disconnect does not
}
