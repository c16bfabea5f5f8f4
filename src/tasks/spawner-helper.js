// The spawn helper: a small Node process, forked once by the host, that keeps spare command
// wrappers started ahead of time (see spawner.ts). It is plain JavaScript importing only Node
// built-ins, so it starts without the TypeScript stripper (about 25 MB less memory) and its
// own forks stay cheap. The host sends the wrapper script as its first message.
//
// Protocol over the IPC channel (JSON):
//   host → helper  { script }                      the wrapper script (first message)
//   helper → host  { spare: {pid, pgrp, session, start_ticks} }   a spare waits on its stdin
//   host → helper  { go: pid, dir }                hand that spare its process directory
//   helper → host  { exit: pid, code, signal }     one of our wrappers exited
//   host → helper  { discard: dir }                remove a finished process's directory
//   host → helper  { confined: {key, dir, files, argv, status, log} }   start a confined
//                                                  spare: make its directory and empty files,
//                                                  then bubblewrap running the wrapper (see
//                                                  sandbox-spares.ts), its status on fd 3, its
//                                                  errors in `log`
//   helper → host  { confinedSpare: {key, pid} } + the spare's stdin socket as the handle
//                                                  it started (pid: bubblewrap's, outside; -1
//                                                  and no handle: it could not); the
//                                                  host holds its stdin from now on: it writes
//                                                  the directory there, reads the spare's `r`
//                                                  (ready) and status lines, and ends an unused
//                                                  spare by closing it
// When the channel closes or its stdin (a pipe from the host) ends, the host is gone and the
// helper exits; its spares read EOF and exit
// without running anything (a confined spare's stdin was the host's: it closed with the host),
// and handed-off wrappers run on and record their own status.
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rm } from "node:fs";

let wrapperScript = "";
const SPARES = 2;
/** @type {Map<number, import("node:child_process").ChildProcess>} */
const idle = new Map();

/**
 * @param {object} message
 * @param {import("node:net").Socket} [handle] passed to the host, and closed here once sent
 */
function send(message, handle) {
  // With a callback, a send that fails because the host just went away is not an error event.
  if (process.connected) process.send?.(message, handle, undefined, () => {});
  else handle?.destroy();
}

/**
 * Group, session and start time of a process, from /proc/<pid>/stat (the same parsing as
 * readProcStat in process-proc.ts: fields after the last ')', which ends the command name).
 * @param {number} pid
 */
function procFacts(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return null;
  }
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { pgrp: Number(rest[2]), session: Number(rest[3]), start_ticks: Number(rest[19]) };
}

function startSpare() {
  let child;
  try {
    child = spawn("/bin/sh", ["-c", wrapperScript, "holon-wrap"], {
      cwd: "/",
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
    });
  } catch {
    return false;
  }
  child.on("error", () => {});
  child.stdin?.on("error", () => {});
  const pid = child.pid;
  if (pid === undefined) return false;
  idle.set(pid, child);
  child.once("exit", (code, signal) => {
    idle.delete(pid);
    send({ exit: pid, code, signal });
  });
  // A detached child leads its own group and session; its start time tells a reused pid apart.
  const facts = procFacts(pid);
  if (facts === null) return true; // already gone: its exit message follows
  send({ spare: { pid, ...facts } });
  return true;
}

/** @type {Map<number, import("node:child_process").ChildProcess>} confined spares, unused */
const confined = new Map();

/**
 * @param {{key: string, dir: string, files: string[], argv: string[], status: string, log: string}} c
 */
function startConfined(c) {
  let child;
  let statusFd = -1;
  let logFd = -1;
  try {
    // The spare's directory and its empty files are made here, not in the host, whose event
    // loop a file system busy with other writes can hold up for milliseconds per file made.
    mkdirSync(c.dir, { recursive: true, mode: 0o700 });
    for (const f of c.files) closeSync(openSync(f, "wx", 0o600));
    statusFd = openSync(c.status, "wx", 0o600);
    logFd = openSync(c.log, "a", 0o600);
    child = spawn(c.argv[0], c.argv.slice(1), {
      cwd: "/",
      detached: true,
      stdio: ["pipe", "ignore", logFd, statusFd],
    });
  } catch {
    rm(c.dir, { recursive: true, force: true }, () => {});
    send({ confinedSpare: { key: c.key, pid: -1 } });
    return;
  } finally {
    if (statusFd >= 0) closeSync(statusFd);
    if (logFd >= 0) closeSync(logFd);
  }
  child.on("error", () => {});
  child.stdin?.on("error", () => {});
  const pid = child.pid;
  if (pid === undefined) {
    send({ confinedSpare: { key: c.key, pid: -1 } });
    return;
  }
  confined.set(pid, child);
  child.once("exit", (code, signal) => {
    confined.delete(pid);
    send({ exit: pid, code, signal });
  });
  // The spare's stdin (a socket) goes to the host, which hands it its directory and reads its
  // notices there: nothing of a confined spare's start or end waits for this process.
  send({ confinedSpare: { key: c.key, pid } }, child.stdin ?? undefined);
}

function refill() {
  while (wrapperScript && idle.size < SPARES && process.connected && startSpare());
}

// A refill forks this process: not while a command it just launched is likely still starting
// (the fork would compete with it for the CPU and hold up its exit report). Refill when that
// command exits, after a short delay if it runs on, or at once when no spare is left.
/** @type {NodeJS.Timeout | null} */
let refillTimer = null;

function refillNow() {
  if (refillTimer !== null) clearTimeout(refillTimer);
  refillTimer = null;
  setImmediate(refill);
}

process.on(
  "message",
  (
    /** @type {{script?: string, go?: number, dir?: string, discard?: string, confined?: any}} */ m,
  ) => {
    if (m.confined !== undefined) {
      startConfined(m.confined);
      return;
    }
    if (typeof m.script === "string") {
      wrapperScript = m.script;
      refill();
      return;
    }
    if (typeof m.discard === "string") {
      rm(m.discard, { recursive: true, force: true }, () => {});
      return;
    }
    const child = typeof m.go === "number" ? idle.get(m.go) : undefined;
    if (child !== undefined && typeof m.dir === "string") {
      idle.delete(m.go);
      child.once("exit", refillNow);
      child.stdin?.end(`${m.dir}\n`);
    }
    if (idle.size === 0) refillNow();
    else refillTimer ??= setTimeout(refillNow, 25);
  },
);
process.on("disconnect", () => process.exit(0));
// The IPC channel's disconnect does not come while a handle we passed waits for the host's
// acknowledgement (Node defers it until its queue of handles drains, which it never does once
// the host is gone). Our stdin is a pipe from the host: its end comes whenever the host goes.
process.stdin.on("error", () => {});
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
process.stdin.resume();
