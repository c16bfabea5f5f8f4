// Spare confined wrappers: one per sandbox profile in recent use.
//
// A confined command pays for bubblewrap's start (namespaces, mounts) before it runs. A spare
// wrapper cannot be started ahead of time in general, since its confinement depends on the
// agent, the execution root, the network and the paths; but it can be per profile (the
// profile's digest says all of that). So after a confined start, the spawn helper (spawner.ts)
// starts one spare for that profile: bubblewrap running the wrapper, blocked reading its
// process directory from stdin. Profiles not used for SPARE_TTL_MS lose their spare; a start
// that finds none (a miss) starts bubblewrap directly, as before.
//
// The trick is the directory. Inside the sandbox the process directory is read-only apart
// from the few files the wrapper writes, bound writable when bubblewrap starts. A spare's are
// made in a directory of its own (`.holon/spares/<random>`, beside `.holon/processes/`, on the
// same file system); taking the spare renames that directory to the command's: the bind
// mounts follow the files, so inside the sandbox they appear at the command's paths. Then the record and parameters are written
// and the directory's name is handed to the spare, exactly like an unconfined spare.
//
// Only commands without input or terminal use spares (an input FIFO costs a process to make).
// Spares live no longer than the helper: when it exits or is replaced, they read EOF and exit.
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rm } from "node:fs";
import { dirname, join } from "node:path";
import type { SandboxLaunch } from "../sandbox/profile.ts";
import type { CommandEnv } from "./env.ts";
import { isSameLiveProcess, readProcStat } from "./process-proc.ts";
import { WRAPPER_SCRIPT } from "./process-wrapper.ts";
import {
  ensureSpawner,
  onConfinedSpares,
  retireConfinedSpare,
  startConfinedSpare,
  takeConfinedSpare,
  type ExitSource,
} from "./spawner.ts";

/** A profile keeps its spare this long after its last start. */
export const SPARE_TTL_MS = 10 * 60_000;
const REFILL_DELAY_MS = 25;
/** The files a wrapper writes: made in the spare's directory, bound writable. */
const WRITTEN = ["stdout.log", "stderr.log", "output.log", "exit"] as const;

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
};

type Profile = { lastUsed: number };

const spares = new Map<string, Spare>();
const profiles = new Map<string, Profile>();
/** Processes directories already cleared of spares a previous host left behind. */
const swept = new Set<string>();
let sweeper: NodeJS.Timeout | null = null;

onConfinedSpares({
  started(id, pid, helper) {
    // `id` is the spare's directory: unique, unlike the profile's key.
    const sp = [...spares.values()].find((s) => s.dir === id);
    if (sp === undefined || sp.state !== "starting" || sp.outer !== -1) {
      retireConfinedSpare(pid); // nobody wants it any more
      return;
    }
    sp.outer = pid;
    sp.helper = helper;
    sp.outerTicks = readProcStat(pid)?.start_ticks ?? -1;
    awaitInit(sp, Date.now() + 10_000);
  },
  gone(pid, helper) {
    for (const sp of [...spares.values()]) {
      if (pid === null ? sp.helper === helper : sp.outer === pid) drop(sp);
    }
  },
});

function keyOf(launch: SandboxLaunch, envKey: string): string {
  return `${launch.digest}\0${envKey}`;
}

function drop(sp: Spare): void {
  if (spares.get(sp.key) === sp) spares.delete(sp.key);
  rm(sp.dir, { recursive: true, force: true }, () => {});
}

/** bubblewrap names the init in its status file a moment after it starts: wait for it. */
function awaitInit(sp: Spare, deadline: number): void {
  if (spares.get(sp.key) !== sp) return;
  let text = "";
  try {
    text = readFileSync(join(sp.dir, "sandbox.json"), "utf8");
  } catch {
    // not yet
  }
  const m = /"child-pid":\s*(\d+)/.exec(text);
  if (m !== null) {
    const init = Number(m[1]);
    const st = readProcStat(init);
    if (st === null) return retire(sp);
    sp.init = init;
    sp.initTicks = st.start_ticks;
    // bubblewrap names its init before it sets the mounts up, and the spare's directory must
    // not move until then: the init forks the wrapper only once they are in place.
    if (hasChild(init)) {
      sp.state = "ready";
      return;
    }
  }
  if (Date.now() > deadline || readProcStat(sp.outer) === null) return retire(sp);
  setTimeout(() => awaitInit(sp, deadline), 2).unref();
}

function hasChild(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1").trim() !== "";
  } catch {
    return false;
  }
}

function retire(sp: Spare): void {
  if (sp.outer !== -1) retireConfinedSpare(sp.outer);
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
 * The ready spare of this profile, its directory renamed to `dir` (which must not exist yet),
 * or null (a miss: start bubblewrap directly).
 */
export function takeSandboxSpare(
  launch: SandboxLaunch,
  envKey: string,
  dir: string,
): TakenSpare | null {
  const sp = spares.get(keyOf(launch, envKey));
  if (sp === undefined || sp.state !== "ready") return null;
  if (!isSameLiveProcess(sp.init, sp.initTicks)) {
    retire(sp);
    return null;
  }
  try {
    renameSync(sp.dir, dir);
  } catch {
    return null; // the directory is taken: start cold, keep the spare
  }
  spares.delete(sp.key);
  const taken = takeConfinedSpare(sp.helper, sp.outer, sp.outerTicks);
  if (taken === null) {
    // its helper is gone, and the spare with it
    rm(dir, { recursive: true, force: true }, () => {});
    return null;
  }
  hits++;
  return {
    pid: sp.init,
    stat: { pgrp: sp.init, session: sp.init, start_ticks: sp.initTicks },
    child: taken.child,
    launch: taken.launch,
  };
}

/**
 * A command of this profile started: keep (or start) its spare, in `processesDir` (the parent
 * of every process directory of the agent), off the caller's path.
 */
export function wantSandboxSpare(
  launch: SandboxLaunch,
  env: CommandEnv,
  processesDir: string,
  started: ExitSource,
): void {
  const key = keyOf(launch, env.key);
  profiles.set(key, { lastUsed: Date.now() });
  sweeper ??= setInterval(sweep, 60_000).unref();
  if (spares.has(key)) return;
  ensureSpawner(env);
  // Not while the command just started is likely still starting: a bubblewrap start would
  // compete with it for the CPU. When it exits, or after REFILL_DELAY_MS if it runs on.
  let done = false;
  const go = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    startSpare(key, launch, env, processesDir, 1);
  };
  const timer = setTimeout(go, REFILL_DELAY_MS);
  timer.unref();
  started.once("exit", () => setImmediate(go));
}

function startSpare(
  key: string,
  launch: SandboxLaunch,
  env: CommandEnv,
  processesDir: string,
  retries: number,
): void {
  if (spares.has(key) || !profiles.has(key)) return;
  const parent = join(dirname(processesDir), "spares");
  if (!swept.has(parent)) {
    swept.add(parent);
    sweepLeftovers(parent);
  }
  const dir = join(parent, randomBytes(8).toString("hex"));
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of WRITTEN) closeSync(openSync(join(dir, f), "wx", 0o600));
  } catch {
    rm(dir, { recursive: true, force: true }, () => {});
    return;
  }
  const argv = launch.argv(["/bin/sh", "-c", WRAPPER_SCRIPT, "holon-wrap"], {
    writable: WRITTEN.map((f) => join(dir, f)),
    tty: false,
    statusFd: 3,
  });
  const sp: Spare = {
    key,
    dir,
    state: "starting",
    helper: -1,
    outer: -1,
    outerTicks: -1,
    init: -1,
    initTicks: -1,
  };
  if (
    !startConfinedSpare(env.key, dir, argv, join(dir, "sandbox.json"), join(dir, "sandbox.log"))
  ) {
    rm(dir, { recursive: true, force: true }, () => {});
    // The helper is starting (or restarting with a new environment): try once more soon.
    if (retries > 0) {
      setTimeout(() => startSpare(key, launch, env, processesDir, retries - 1), 50).unref();
    }
    return;
  }
  spares.set(key, sp);
}

/** Spares a previous host left (they exited with it): their directories go. */
function sweepLeftovers(parent: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  const ours = new Set([...spares.values()].map((s) => s.dir));
  for (const n of names) {
    const p = join(parent, n);
    if (!ours.has(p)) rm(p, { recursive: true, force: true }, () => {});
  }
}

/** Profiles not used for SPARE_TTL_MS lose their spare. */
function sweep(): void {
  const now = Date.now();
  for (const [key, p] of profiles) {
    if (now - p.lastUsed < SPARE_TTL_MS) continue;
    profiles.delete(key);
    const sp = spares.get(key);
    if (sp !== undefined) retire(sp);
  }
  if (profiles.size === 0 && sweeper !== null) {
    clearInterval(sweeper);
    sweeper = null;
  }
}

/** Host shutdown: every spare goes (those of other hosts in this process too are rebuilt). */
export function retireSandboxSpares(): void {
  profiles.clear();
  for (const sp of [...spares.values()]) retire(sp);
}

let hits = 0;

/** How many spares are ready or starting, and how many starts took one (tests, benchmark). */
export function sandboxSpareCount(digest?: string): {
  ready: number;
  starting: number;
  hits: number;
} {
  let ready = 0;
  let starting = 0;
  for (const sp of spares.values()) {
    if (digest !== undefined && !sp.key.startsWith(`${digest}\0`)) continue;
    if (sp.state === "ready") ready++;
    else starting++;
  }
  return { ready, starting, hits };
}
