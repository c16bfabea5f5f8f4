// Linux /proc helpers for the process layer: identity (pid + start time + boot id),
// liveness, session/process-group membership scans, and the host's umask. This is the one
// TypeScript module that reads /proc (the plain-JS spawn helper, spawner-helper.js, has its
// own three-line copy of the stat parse); another platform (macOS: `ps`/`sysctl`) is one
// more module with these exports.
import { readdirSync, readFileSync } from "node:fs";
import { constants } from "node:os";

export type ProcStat = {
  pid: number;
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. */
  start_ticks: number;
};

/** Parse /proc/<pid>/stat; null when the process does not exist (or /proc is unreadable). */
export function readProcStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return null;
  }
  // comm (field 2) may hold spaces and parentheses: split after the last ')'.
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  const rest = text.slice(close + 2).split(" ");
  // rest[0] is field 3 (state); field n is rest[n - 3].
  const num = (field: number) => Number(rest[field - 3]);
  return {
    pid,
    state: rest[0] ?? "?",
    ppid: num(4),
    pgrp: num(5),
    session: num(6),
    start_ticks: num(22),
  };
}

let bootIdCache: string | undefined;
/** The kernel boot id; a recorded pid + start time is only comparable within one boot. */
export function bootId(): string {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = readFileSync("/proc/sys/kernel/random/boot_id", "latin1").trim();
    } catch {
      bootIdCache = "";
    }
  }
  return bootIdCache;
}

const DEAD_STATES = new Set(["Z", "X", "x"]);

/** A process is ours and alive only when its pid exists, its start time matches, and it is not a zombie. */
export function isSameLiveProcess(pid: number, startTicks: number): boolean {
  const st = readProcStat(pid);
  return st !== null && st.start_ticks === startTicks && !DEAD_STATES.has(st.state);
}

/** Every live (non-zombie) process whose session id is one of `sessions` or whose group is one of `groups`. */
export function scanMembers(
  sessions: readonly number[],
  groups: readonly number[] = [],
): ProcStat[] {
  const out: ProcStat[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const st = readProcStat(Number(name));
    if (st === null || DEAD_STATES.has(st.state)) continue;
    if (sessions.includes(st.session) || groups.includes(st.pgrp)) out.push(st);
  }
  return out;
}

/**
 * Send `signal` to every process group found in the given sessions, plus the listed groups.
 * Group signals are atomic per group, so a member forking during the scan is still hit.
 * Returns the number of groups signalled.
 */
export function signalSessions(
  sessions: readonly number[],
  groups: readonly number[],
  signal: NodeJS.Signals,
): number {
  const pgids = new Set<number>(groups);
  for (const m of scanMembers(sessions, groups)) pgids.add(m.pgrp);
  let sent = 0;
  for (const pgid of pgids) {
    if (pgid <= 1) continue;
    try {
      process.kill(-pgid, signal);
      sent++;
    } catch {
      // group already gone
    }
  }
  return sent;
}

const SIGNAL_NAMES = new Map<number, string>(
  Object.entries(constants.signals).map(([name, n]) => [n, name]),
);

export function signalName(n: number): string | null {
  return SIGNAL_NAMES.get(n) ?? null;
}

/** This process's umask in octal ("022"), from /proc/self/status; null without /proc. */
export function readOwnUmask(): string | null {
  try {
    return /^Umask:\s*([0-7]+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? null;
  } catch {
    return null;
  }
}
