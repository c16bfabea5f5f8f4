// Durable files beside the database: the one atomic-write helper. A file is written to a
// temporary name in its own directory, created with its final mode (so it is never visible
// with wider permissions), optionally fsynced, then renamed over the target: readers see
// the old content or the new, never a mix. The temporary file never outlives a failure.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";

export type AtomicWriteOptions = {
  /** File mode from creation on (default 0600: Holon's own files are private). */
  mode?: number;
  /** fsync before the rename (default true; hot paths whose loss is recoverable skip it). */
  fsync?: boolean;
  /** Create the parent directory (0700) first. */
  mkdir?: boolean;
};

/**
 * Files this process has replaced so far. A reader that caches a file by its identity (the
 * host's config view) compares it to notice its own process's writes without a stat.
 */
export const atomicWrites = { count: 0 };

export function atomicWriteFile(path: string, data: string, opts: AtomicWriteOptions = {}): void {
  atomicWrites.count++;
  const dir = dirname(path);
  if (opts.mkdir) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", opts.mode ?? 0o600);
  try {
    writeSync(fd, data);
    if (opts.fsync !== false) fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw err;
  }
}
