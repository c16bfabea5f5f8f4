// Size-based rotation for the runtime log. When holon.log reaches its size limit it becomes
// holon.log.1 (older files shift to .2, .3, …; the oldest beyond the count is deleted) and
// writing continues in a fresh holon.log. Lines are never split or lost: a write already
// in flight finishes in the renamed file, and sonic-boom's `reopen` sends what is still
// buffered to the new one. A file may overshoot the limit by what was buffered meanwhile.
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import type { pino } from "pino";
import { loadConfig } from "./config.ts";
import { RETENTION_DEFAULTS } from "./retention-config.ts";

export type LogLimits = { maxBytes: number; maxFiles: number };

type Destination = ReturnType<typeof pino.destination>;

/** The limits in `retention.logs` (read once, when the log opens). */
export function logLimits(home: string): LogLimits {
  let logs = {
    max_file_bytes: RETENTION_DEFAULTS.logs.max_file_mb * 1024 * 1024,
    max_files: RETENTION_DEFAULTS.logs.max_files as number,
  };
  try {
    logs = loadConfig(home).values.retention.logs;
  } catch {
    // an unreadable config keeps the defaults; the host reports the config problem itself
  }
  return { maxBytes: logs.max_file_bytes, maxFiles: logs.max_files };
}

/**
 * Make `dest` (writing `file`) rotate at `limits`. Returns `dest`. Counts the bytes that
 * reached the file (sonic-boom's `write` event), so a burst of buffered lines rotates once,
 * after it lands, and the renamed file only ever holds whole lines.
 */
export function rotateBySize<D extends Destination>(dest: D, file: string, limits: LogLimits): D {
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    // not created yet
  }
  let rotating = false;
  dest.on("write", (n: number) => {
    size += n;
    if (size < limits.maxBytes || rotating) return;
    rotating = true;
    if (!rotate(file, limits.maxFiles)) {
      rotating = false;
      return;
    }
    dest.once("ready", () => {
      size = 0;
      rotating = false;
    });
    dest.reopen();
  });
  return dest;
}

/** Shift the files up by one; false when the log could not be moved (writing just goes on). */
function rotate(file: string, maxFiles: number): boolean {
  try {
    rmSync(`${file}.${maxFiles}`, { force: true });
    for (let i = maxFiles - 1; i >= 1; i--) {
      if (existsSync(`${file}.${i}`)) renameSync(`${file}.${i}`, `${file}.${i + 1}`);
    }
    renameSync(file, `${file}.1`);
    return true;
  } catch {
    return false;
  }
}
