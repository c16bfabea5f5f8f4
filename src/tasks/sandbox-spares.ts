// Spare confined wrappers: two per sandbox profile and output layout in recent use.
//
// A confined command pays for bubblewrap's start (namespaces, mounts) before it runs. A spare
// wrapper cannot be started ahead of time in general, since its confinement depends on the
// agent, the execution root, the network and the paths; but it can be per profile (the
// profile's digest says all of that). So after a confined start, the spawn helper (spawner.ts)
// starts spares for that profile: bubblewrap running the wrapper, blocked reading its process
// directory from stdin. There are two per profile, so that a command started while the spare
// taken by the one before is still being replaced finds the other one ready (an agent's
// rounds come a few milliseconds apart, about what bubblewrap takes to start). When rounds
// come faster still, an async caller waits for a starting spare (sandboxSpareSoon): it is
// ready sooner than a cold start, which forks the host. Profiles not used for SPARE_TTL_MS
// lose their spares; a start that finds none ready (a miss) starts bubblewrap directly.
//
// The trick is the directory. Inside the sandbox the process directory is read-only apart
// from the few files the wrapper writes, bound writable when bubblewrap starts. A spare's are
// made in a directory of its own (`.holon/spares/<random>`, beside `.holon/processes/`, on the
// same file system); taking the spare renames that directory to the command's: the bind
// mounts follow the files, so inside the sandbox they appear at the command's paths. A spare
// is made for one output layout (split: stdout.log and stderr.log; merged: output.log), so it
// binds exactly the files a cold start of that layout binds and the taker removes none (a
// file that is a mount point in the spare's namespace costs an RCU grace period to unlink,
// which under load took the host's event loop 10 to 30 ms). Then the record and parameters
// are written and the directory's name is handed to the spare.
//
// The host holds the spare's stdin, a socket the helper passed on (spawner.ts: SpareChannel).
// The spare says `r` there once it runs inside its sandbox (set up: ready to take), and, once
// given a command, its status once it has recorded it. On that status line the host takes the
// command as ended and kills the sandbox's init, which ends whatever the command left behind
// (bubblewrap does not: its outer process exits with the wrapper, but the init stays as long
// as anything runs inside), so a command that could make its wrapper say it ended early (a
// confined command may trace its wrapper) ends with it. When the helper's report that
// bubblewrap exited comes before the status line, the host kills the init then. No timer
// polls for readiness or for the end.
//
// Only commands without input or terminal use spares (an input FIFO costs a process to make).
// Spares live no longer than the host and the helper that started them: when either goes,
// their stdin closes and they exit without running anything.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, renameSync, rm } from "node:fs";
import { dirname, join } from "node:path";
import type { SandboxLaunch } from "../sandbox/profile.ts";
import type { CommandEnv } from "./env.ts";
import { isSameLiveProcess, readProcStat } from "./process-proc.ts";
import { WRAPPER_SCRIPT } from "./process-wrapper.ts";
import {
  ensureSpawner,
  onConfinedSpares,
  startConfinedSpare,
  takeConfinedSpare,
  type ExitSource,
  type SpareChannel,
} from "./spawner.ts";

/** A profile keeps its spares this long after its last start. */
export const SPARE_TTL_MS = 10 * 60_000;
/** Spares kept per profile and output layout. */
export const SPARES_PER_PROFILE = 2;
const REFILL_DELAY_MS = 25;

/** The output layout of the commands a spare serves. */
export type SpareLayout = "split" | "merged";

/**
 * Files a spare's directory has, empty, for its taker to write (process.ts): the process record
 * and the wrapper's parameters. Not bound into the sandbox (the directory is read-only there).
 */
export const PREMADE = ["spec.json", "params.sh"] as const;

/** The files a wrapper of each layout writes: made in the spare's directory, bound writable. */
const WRITTEN: Record<SpareLayout, readonly string[]> = {
  split: ["stdout.log", "stderr.log", "exit"],
  merged: ["output.log", "exit"],
};

type Spare = {
  key: string;
  dir: string;
  state: "starting" | "ready";
  /** The helper that started it (its pid); a spare is usable only while that helper is. */
  helper: number;
  /** bubblewrap's pid outside, and its start time. */
  outer: number;
  outerTicks: number;
  /** The sandbox's init (the record's pid), and its start time. */
  init: number;
  initTicks: number;
  /** Its stdin, once the helper passed it on. */
  channel: SpareChannel | null;
};

type Profile = { lastUsed: number };

/** Every spare, starting or ready, by its directory. */
const spares = new Map<string, Spare>();
const profiles = new Map<string, Profile>();
/** Processes directories already cleared of spares a previous host left behind. */
const swept = new Set<string>();
let sweeper: NodeJS.Timeout | null = null;

onConfinedSpares({
  started(id, pid, _helper, channel) {
    // `id` is the spare's directory: unique, unlike the profile's key.
    const sp = spares.get(id);
    if (channel === null) {
      if (sp !== undefined && sp.state === "starting" && sp.outer === -1) drop(sp);
      return;
    }
    if (sp === undefined || sp.state !== "starting" || sp.outer !== -1) {
      channel.close(); // nobody wants it any more: it reads EOF and exits
      return;
    }
    sp.outer = pid;
    sp.outerTicks = readProcStat(pid)?.start_ticks ?? -1;
    sp.channel = channel;
    channel.onLine((line) => {
      if (line === "r" && sp.state === "starting") ready(sp);
      else retire(sp); // nothing else comes before it is given a directory
    });
    channel.onClose(() => {
      if (spares.get(sp.dir) === sp) drop(sp);
    });
  },
  gone(pid, helper) {
    // A helper's exit ends its spares, those it had not reported yet too.
    for (const sp of [...spares.values()]) {
      if (pid === null ? sp.helper === helper : sp.outer === pid) retire(sp);
    }
  },
});

function keyOf(launch: SandboxLaunch, envKey: string, layout: SpareLayout): string {
  return `${launch.digest}\0${envKey}\0${layout}`;
}

function countOf(key: string): number {
  let n = 0;
  for (const sp of spares.values()) if (sp.key === key) n++;
  return n;
}

function drop(sp: Spare): void {
  if (spares.get(sp.dir) === sp) spares.delete(sp.dir);
  rm(sp.dir, { recursive: true, force: true }, () => {});
  wake(sp.key); // one fewer starting: a waiter may have nothing left to wait for
}

/** Starts waiting for a spare of a profile and layout to be ready (see sandboxSpareSoon). */
const waiters = new Map<string, Set<() => void>>();
/** Refills scheduled per profile and layout (see wantSandboxSpare), not yet started. */
const refills = new Map<string, number>();

function wake(key: string): void {
  const set = waiters.get(key);
  if (set === undefined) return;
  waiters.delete(key);
  for (const w of set) w();
}

/**
 * No spare of this profile and layout is ready, but one is starting: a promise that settles
 * once one is ready (or the starting ones are gone), or after `maxMs`. Null when one is ready
 * or none is starting: take it, or start cold, now.
 */
export function sandboxSpareSoon(
  launch: SandboxLaunch,
  envKey: string,
  layout: SpareLayout,
  maxMs: number,
): Promise<void> | null {
  const key = keyOf(launch, envKey, layout);
  let starting = refills.has(key);
  for (const s of spares.values()) {
    if (s.key !== key) continue;
    if (s.state === "ready") return null;
    starting = true;
  }
  if (!starting) return null;
  return new Promise<void>((resolve) => {
    let set = waiters.get(key);
    if (set === undefined) waiters.set(key, (set = new Set()));
    const done = (): void => {
      clearTimeout(timer);
      set.delete(done);
      resolve();
    };
    const timer = setTimeout(done, maxMs);
    set.add(done);
  });
}

/**
 * The spare runs inside its sandbox: bubblewrap set it up. It named the sandbox's init in its
 * status file before that (bubblewrap writes it before it lets the init go on).
 */
function ready(sp: Spare): void {
  let text = "";
  try {
    text = readFileSync(join(sp.dir, "sandbox.json"), "utf8");
  } catch {
    // retired below
  }
  const m = /"child-pid":\s*(\d+)/.exec(text);
  const init = m === null ? NaN : Number(m[1]);
  const st = Number.isInteger(init) ? readProcStat(init) : null;
  if (st === null) return retire(sp);
  sp.init = init;
  sp.initTicks = st.start_ticks;
  sp.state = "ready";
  wake(sp.key);
}

/** End an unused spare: its stdin closes, it reads EOF and exits without running anything. */
function retire(sp: Spare): void {
  sp.channel?.close();
  drop(sp);
}

export type TakenSpare = {
  pid: number;
  stat: { pgrp: number; session: number; start_ticks: number };
  child: ExitSource;
  /** Hand it the directory, once the record naming its pid is written. */
  launch(dir: string): void;
};

/**
 * A ready spare of this profile and output layout, its directory renamed to `dir` (which must
 * not exist yet), or null (a miss: start bubblewrap directly).
 */
export function takeSandboxSpare(
  launch: SandboxLaunch,
  envKey: string,
  layout: SpareLayout,
  dir: string,
): TakenSpare | null {
  const key = keyOf(launch, envKey, layout);
  let sp: Spare | undefined;
  for (const s of spares.values()) {
    if (s.key === key && s.state === "ready") {
      sp = s;
      break;
    }
  }
  if (sp === undefined) return null;
  if (!isSameLiveProcess(sp.init, sp.initTicks)) {
    retire(sp);
    return null;
  }
  try {
    renameSync(sp.dir, dir);
  } catch {
    return null; // the directory is taken: start cold, keep the spare
  }
  spares.delete(sp.dir);
  const { init, initTicks } = sp;
  const taken = takeConfinedSpare(sp.helper, sp.outer, sp.outerTicks, sp.channel!, () => {
    // The command ended (its status line, or bubblewrap's exit reported first by the helper):
    // end the sandbox now, and with it whatever the command left running (see the header).
    if (isSameLiveProcess(init, initTicks)) {
      try {
        process.kill(init, "SIGKILL");
      } catch {
        // already gone
      }
    }
  });
  if (taken === null) {
    // its helper is gone: the spare goes too
    sp.channel?.close();
    rm(dir, { recursive: true, force: true }, () => {});
    return null;
  }
  hits++;
  return {
    pid: init,
    stat: { pgrp: init, session: init, start_ticks: initTicks },
    child: taken.child,
    launch: taken.launch,
  };
}

/**
 * A command of this profile and output layout started: keep (or start) its spares, in
 * `processesDir` (the parent of every process directory of the agent), off the caller's path.
 */
export function wantSandboxSpare(
  launch: SandboxLaunch,
  env: CommandEnv,
  layout: SpareLayout,
  processesDir: string,
  started: ExitSource,
): void {
  const key = keyOf(launch, env.key, layout);
  profiles.set(key, { lastUsed: Date.now() });
  sweeper ??= setInterval(sweep, 60_000).unref();
  if (countOf(key) >= SPARES_PER_PROFILE) return;
  ensureSpawner(env);
  // Not while the command just started is likely still starting: a bubblewrap start would
  // compete with it for the CPU. When it exits, or after REFILL_DELAY_MS if it runs on.
  // Until then a waiter (sandboxSpareSoon) counts the refill as a spare starting.
  let done = false;
  refills.set(key, (refills.get(key) ?? 0) + 1);
  const go = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    const left = refills.get(key)! - 1;
    if (left > 0) refills.set(key, left);
    else refills.delete(key);
    while (countOf(key) < SPARES_PER_PROFILE) {
      if (!startSpare(key, launch, env, layout, processesDir, 1)) break;
    }
    if (countOf(key) === 0) wake(key); // none could start: a waiter has nothing to wait for
  };
  const timer = setTimeout(go, REFILL_DELAY_MS);
  timer.unref();
  started.once("exit", () => setImmediate(go));
}

/** Start one spare; false when none was started (the helper is not there yet, or an error). */
function startSpare(
  key: string,
  launch: SandboxLaunch,
  env: CommandEnv,
  layout: SpareLayout,
  processesDir: string,
  retries: number,
): boolean {
  if (countOf(key) >= SPARES_PER_PROFILE || !profiles.has(key)) return false;
  const parent = join(dirname(processesDir), "spares");
  if (!swept.has(parent)) {
    swept.add(parent);
    sweepLeftovers(parent);
  }
  const dir = join(parent, randomBytes(8).toString("hex"));
  const written = WRITTEN[layout].map((f) => join(dir, f));
  const argv = launch.argv(["/bin/sh", "-c", WRAPPER_SCRIPT, "holon-wrap"], {
    writable: written,
    tty: false,
    statusFd: 3,
  });
  // The helper makes the directory with the files the wrapper writes, and the record and
  // parameters files, empty, for the taker to fill (none is made in the host's event loop).
  const files = [...written, ...PREMADE.map((f) => join(dir, f))];
  const status = join(dir, "sandbox.json");
  const log = join(dir, "sandbox.log");
  const helper = startConfinedSpare(env.key, dir, { dir, files, argv, status, log });
  if (helper === false) {
    rm(dir, { recursive: true, force: true }, () => {});
    // The helper is starting (or restarting with a new environment): try once more soon.
    if (retries > 0) {
      setTimeout(() => {
        while (countOf(key) < SPARES_PER_PROFILE) {
          if (!startSpare(key, launch, env, layout, processesDir, retries - 1)) break;
        }
      }, 50).unref();
    }
    return false;
  }
  spares.set(dir, {
    key,
    dir,
    state: "starting",
    helper,
    outer: -1,
    outerTicks: -1,
    init: -1,
    initTicks: -1,
    channel: null,
  });
  return true;
}

/** Spares a previous host left (they exited with it): their directories go. */
function sweepLeftovers(parent: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const n of names) {
    const p = join(parent, n);
    if (!spares.has(p)) rm(p, { recursive: true, force: true }, () => {});
  }
}

/** Profiles not used for SPARE_TTL_MS lose their spares. */
function sweep(): void {
  const now = Date.now();
  for (const [key, p] of profiles) {
    if (now - p.lastUsed < SPARE_TTL_MS) continue;
    profiles.delete(key);
    for (const sp of [...spares.values()]) if (sp.key === key) retire(sp);
  }
  if (profiles.size === 0 && sweeper !== null) {
    clearInterval(sweeper);
    sweeper = null;
  }
}

/** Host shutdown: every spare goes (those of other hosts in this process too are rebuilt). */
export function retireSandboxSpares(): void {
  profiles.clear();
  refills.clear();
  for (const sp of [...spares.values()]) retire(sp);
}

let hits = 0;

/**
 * How many spares are ready or starting (of one profile, and one output layout), and how many
 * starts took one (tests, benchmark).
 */
export function sandboxSpareCount(
  digest?: string,
  layout?: SpareLayout,
): {
  ready: number;
  starting: number;
  hits: number;
} {
  let ready = 0;
  let starting = 0;
  for (const sp of spares.values()) {
    if (digest !== undefined && !sp.key.startsWith(`${digest}\0`)) continue;
    if (layout !== undefined && !sp.key.endsWith(`\0${layout}`)) continue;
    if (sp.state === "ready") ready++;
    else starting++;
  }
  return { ready, starting, hits };
}
