// The spawn helper: a small Node process, forked once by the host, that keeps spare command
// wrappers started ahead of time (see spawner.ts). It imports nothing but Node and the
// wrapper script, so its memory stays small and its forks stay cheap.
//
// Protocol over the IPC channel (JSON):
//   helper → host  { spare: {pid, pgrp, session, start_ticks} }   a spare waits on its stdin
//   host → helper  { go: pid, dir }                hand that spare its process directory
//   helper → host  { exit: pid, code, signal }     one of our wrappers exited
//   host → helper  { discard: dir }                remove a finished process's directory
// When the channel closes (the host is gone) the helper exits; its spares read EOF and exit
// without running anything, and handed-off wrappers run on and record their own status.
import { spawn, type ChildProcess } from "node:child_process";
import { rm } from "node:fs";
import { readProcStat } from "./process-proc.ts";
import { WRAPPER_SCRIPT } from "./process-wrapper.ts";

const SPARES = 2;
const idle = new Map<number, ChildProcess>();

function send(message: object): void {
  // With a callback, a send that fails because the host just went away is not an error event.
  if (process.connected) process.send!(message, undefined, undefined, () => {});
}

function startSpare(): boolean {
  let child: ChildProcess;
  try {
    child = spawn("/bin/sh", ["-c", WRAPPER_SCRIPT, "holon-wrap"], {
      cwd: "/",
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
    });
  } catch {
    return false;
  }
  child.on("error", () => {});
  child.stdin!.on("error", () => {});
  const pid = child.pid;
  if (pid === undefined) return false;
  idle.set(pid, child);
  child.once("exit", (code, signal) => {
    idle.delete(pid);
    send({ exit: pid, code, signal });
  });
  // A detached child leads its own group and session; its start time tells a reused pid apart.
  const stat = readProcStat(pid);
  if (stat === null) return true; // already gone: its exit message follows
  send({ spare: { pid, pgrp: stat.pgrp, session: stat.session, start_ticks: stat.start_ticks } });
  return true;
}

function refill(): void {
  while (idle.size < SPARES && process.connected && startSpare());
}

// A refill forks this process: not while a command it just launched is likely still starting
// (the fork would compete with it for the CPU and hold up its exit report). Refill when that
// command exits, after a short delay if it runs on, or at once when no spare is left.
let refillTimer: NodeJS.Timeout | null = null;

function refillNow(): void {
  if (refillTimer !== null) clearTimeout(refillTimer);
  refillTimer = null;
  setImmediate(refill);
}

process.on("message", (m: { go?: number; dir?: string; discard?: string }) => {
  if (typeof m.discard === "string") {
    rm(m.discard, { recursive: true, force: true }, () => {});
    return;
  }
  const child = typeof m.go === "number" ? idle.get(m.go) : undefined;
  if (child !== undefined && typeof m.dir === "string") {
    idle.delete(m.go!);
    child.once("exit", refillNow);
    child.stdin!.end(`${m.dir}\n`);
  }
  if (idle.size === 0) refillNow();
  else refillTimer ??= setTimeout(refillNow, 25);
});
process.on("disconnect", () => process.exit(0));
refill();
