// Output on disk is bounded. A command writes its output straight into files of its process
// directory (no pipe through the host), so a command printing without end would fill the
// disk. While the host watches a process, each of its output files is kept under the cap:
// when a file grows past it, the start of the file (half the cap) stays, the middle is cut
// out and replaced by one marker line, and the most recent output follows. The command is
// never stopped or slowed; it keeps appending after the cut. How many bytes were dropped is
// recorded in `output-dropped.json` beside the files, so tool results, TaskStatus and a host
// started later can say so.
//
// One timer checks every watched file every CHECK_MS; a file can therefore run past the cap
// by what the command writes in that time before it is cut back. Writes that land in the
// instant between reading the tail and cutting are lost without being counted. While no host
// runs, nothing is cut; the next host cuts on reattach.
import {
  closeSync,
  constants as fsConstants,
  existsSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, join } from "node:path";
import { atomicWriteFile } from "../store/files.ts";
import { exitRecorded } from "./process-wrapper.ts";

export const DEFAULT_OUTPUT_CAP = 64 * 1024 * 1024;
/** Below this the head and tail would be too small to be useful. */
export const MIN_OUTPUT_CAP = 4096;
/** Room kept for the marker line between head and tail. */
const MARKER_RESERVE = 256;
const CHECK_MS = 100;
const DROPPED_FILE = "output-dropped.json";

/** A configured cap made safe to use: a whole number, at least MIN_OUTPUT_CAP. */
export function saneOutputCap(cap: number): number {
  return Math.max(MIN_OUTPUT_CAP, Number.isFinite(cap) ? Math.floor(cap) : DEFAULT_OUTPUT_CAP);
}

type Dropped = Record<string, number>;

function readDropped(dir: string): Dropped {
  try {
    const v = JSON.parse(readFileSync(join(dir, DROPPED_FILE), "utf8")) as unknown;
    return v && typeof v === "object" ? (v as Dropped) : {};
  } catch {
    return {};
  }
}

function writeDropped(dir: string, dropped: Dropped): void {
  // Not fsynced: the count is advisory and rewritten at every cut.
  atomicWriteFile(join(dir, DROPPED_FILE), JSON.stringify(dropped) + "\n", { fsync: false });
}

/** Bytes dropped from the output files of a process directory, per file name and in total. */
export function droppedBytes(dir: string): { total: number; files: Dropped } {
  const files = readDropped(dir);
  let total = 0;
  for (const n of Object.values(files)) if (typeof n === "number") total += n;
  return { total, files };
}

export function markerLine(totalDropped: number, cap: number): string {
  return `\n[... holon: ${totalDropped} bytes of output dropped here (output cap ${cap} bytes; the start and the latest output are kept) ...]\n`;
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got === length ? buf : buf.subarray(0, got);
}

/**
 * Cut one file back under `cap` if it grew past it. Returns the bytes dropped by this cut
 * (0 when the file fits). `previous` is what earlier cuts of this file dropped, which tells
 * where the old marker ends.
 */
export function capFile(path: string, cap: number, previous: number): number {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    return 0;
  }
  if (size <= cap) return 0;
  const head = Math.floor(cap / 2);
  const tail = cap - head - MARKER_RESERVE;
  const oldMarker = previous > 0 ? Buffer.byteLength(markerLine(previous, cap)) : 0;
  const fd = openSync(path, fsConstants.O_RDWR);
  let tailBuf: Buffer;
  try {
    // Read the tail, and make sure nothing was appended meanwhile (a few tries).
    for (let attempt = 0; ; attempt++) {
      tailBuf = readAt(fd, size - tail, tail);
      const now = fstatSync(fd).size;
      if (now === size || attempt >= 3) {
        size = now;
        break;
      }
      size = now;
    }
    ftruncateSync(fd, head);
  } finally {
    closeSync(fd);
  }
  const dropped = Math.max(0, size - tailBuf.length - head - oldMarker);
  // Appended, not written at an offset: the command's own writes (O_APPEND) go after ours.
  const out = openSync(path, fsConstants.O_WRONLY | fsConstants.O_APPEND);
  try {
    const data = Buffer.concat([Buffer.from(markerLine(previous + dropped, cap)), tailBuf]);
    let off = 0;
    while (off < data.length) off += writeSync(out, data, off, data.length - off);
  } finally {
    closeSync(out);
  }
  return dropped;
}

type Watched = { dir: string; files: string[]; cap: number };
const watched = new Map<string, Watched>();
let timer: NodeJS.Timeout | null = null;

/** Cut every file of one watched process that is over its cap; record what was dropped. */
export function capNow(dir: string, files: readonly string[], cap: number): void {
  let dropped: Dropped | null = null;
  for (const file of files) {
    const name = basename(file);
    const before = (dropped ?? readDroppedCached(dir))[name] ?? 0;
    let cut = 0;
    try {
      cut = capFile(file, cap, before);
    } catch {
      continue; // the directory went away; nothing left to bound
    }
    if (cut > 0) {
      dropped ??= { ...readDroppedCached(dir) };
      dropped[name] = before + cut;
    }
  }
  if (dropped !== null) {
    try {
      writeDropped(dir, dropped);
    } catch {
      // directory gone
    }
    droppedCache.set(dir, dropped);
  }
}

const droppedCache = new Map<string, Dropped>();
function readDroppedCached(dir: string): Dropped {
  let d = droppedCache.get(dir);
  if (d === undefined) {
    d = readDropped(dir);
    droppedCache.set(dir, d);
  }
  return d;
}

function tick(): void {
  for (const w of watched.values()) {
    capNow(w.dir, w.files, w.cap);
    // A process that ended (its status is recorded), or whose directory is gone, needs no
    // more watching.
    if (exitRecorded(join(w.dir, "exit")) || !existsSync(w.dir)) unwatchOutput(w.dir);
  }
}

/** Keep a running process's output files under `cap` from now on. */
export function watchOutput(dir: string, files: readonly string[], cap: number): void {
  watched.set(dir, { dir, files: [...files], cap });
  if (timer === null) {
    timer = setInterval(tick, CHECK_MS);
    timer.unref();
  }
}

/** Stop watching, after one last cut (the process has ended). */
export function unwatchOutput(dir: string): void {
  const w = watched.get(dir);
  if (w === undefined) return;
  watched.delete(dir);
  capNow(w.dir, w.files, w.cap);
  droppedCache.delete(dir);
  if (watched.size === 0 && timer !== null) {
    clearInterval(timer);
    timer = null;
  }
}
