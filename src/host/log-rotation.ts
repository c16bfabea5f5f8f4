// The runtime log's file: a best-effort writer for pino, rotated by size. When holon.log
// reaches its size limit it becomes holon.log.1 (older files shift to .2, .3, …; the oldest
// beyond the count is deleted) and writing continues in a fresh holon.log. Lines are never
// split: rotation happens between writes.
//
// Logging must never take the host down. A write that fails (a full disk, EIO, the log
// directory deleted or made read-only) drops what was buffered, is counted, and is reported
// once on stderr; later lines are tried again after a pause (the directory is recreated),
// and the first line that lands again says how many were lost. Nothing here throws, and
// `flush` never waits longer than a bound: a shutdown is never held by the log.
import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  write,
} from "node:fs";
import { dirname } from "node:path";
import { loadConfig } from "./config.ts";
import { RETENTION_DEFAULTS } from "./retention-config.ts";

export type LogLimits = { maxBytes: number; maxFiles: number };

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

/** Buffered bytes beyond which new lines are dropped (counted) until the file catches up. */
const MAX_BUFFER = 4 * 1024 * 1024;
/** Bytes of lines handed to one write. */
const WRITE_CHUNK = 16 * 1024;
/** Pause after a failed write before the file is tried again. */
const RETRY_MS = 1_000;
/** Longest a flush waits for the file (a shutdown must not hang on a stuck disk). */
const FLUSH_TIMEOUT_MS = 2_000;

export type LogFileStats = {
  /** Writes (or opens) that failed. */
  errors: number;
  /** Lines dropped because they could not be written. */
  dropped_lines: number;
  last_error: string | null;
};

export class LogFile {
  readonly file: string;
  private readonly limits: LogLimits;
  private readonly report: (message: string) => void;
  private fd: number | null = null;
  private size = 0;
  private buffer: string[] = [];
  private buffered = 0;
  private writing = false;
  private failingSince = 0;
  private reported = false;
  private droppedSinceReport = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private flushWaiters: (() => void)[] = [];
  private ended = false;
  private rotateFailedAt = 0;
  private brokenLine = false;
  private checkedAt = 0;
  readonly stats: LogFileStats = { errors: 0, dropped_lines: 0, last_error: null };

  constructor(
    file: string,
    limits: LogLimits,
    report: (message: string) => void = (m) => {
      try {
        process.stderr.write(`holon: ${m}\n`);
      } catch {
        // stderr gone too: the count in stats is all that is left
      }
    },
  ) {
    this.file = file;
    this.limits = limits;
    this.report = report;
    this.open();
  }

  /** pino's destination interface: queue one line. Never throws. */
  write(line: string): boolean {
    if (this.ended) return true;
    if (this.buffered + line.length > MAX_BUFFER) {
      this.lost(1);
      return true;
    }
    this.buffer.push(line);
    this.buffered += line.length;
    this.pump();
    return true;
  }

  /** Calls `cb` once what is buffered has been written, or dropped, or after the bound. */
  flush(cb?: (err?: Error) => void): void {
    if (!cb) return;
    if (!this.writing && this.buffer.length === 0) return cb();
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      cb();
    };
    // Kept referenced: a host that awaits this flush on its way out stays alive for it (at
    // most FLUSH_TIMEOUT_MS), so a retry after a failed write can still land.
    const timer = setTimeout(finish, FLUSH_TIMEOUT_MS);
    this.flushWaiters.push(finish);
    this.pump();
  }

  /** Write what is left (bounded by the flush bound) and close the file. */
  end(cb?: () => void): void {
    this.flush(() => {
      this.ended = true;
      if (this.retryTimer) clearTimeout(this.retryTimer);
      this.closeFd();
      cb?.();
    });
  }

  private open(): boolean {
    try {
      mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
      // Other users of the machine must not read the runtime's log.
      this.fd = openSync(this.file, "a", 0o600);
      this.size = fstatSync(this.fd).size;
      return true;
    } catch (err) {
      this.failed(err, 0);
      return false;
    }
  }

  private pump(): void {
    if (this.writing || this.buffer.length === 0) {
      if (!this.writing && this.buffer.length === 0) this.settleFlushes();
      return;
    }
    if (this.fd === null) {
      const wait = this.failingSince + RETRY_MS - Date.now();
      if (wait > 0) {
        // Still in the pause after a failure: keep the lines (write() bounds the buffer and
        // counts what it drops) and try again when the pause ends, so the lines logged as
        // the disk comes back (the outage's own event) are not lost to the pause.
        if (!this.retryTimer) {
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            this.pump();
          }, wait);
          this.retryTimer.unref?.();
        }
        return;
      }
      if (!this.open()) {
        this.lost(this.buffer.length);
        this.buffer = [];
        this.buffered = 0;
        this.settleFlushes();
        return;
      }
    }
    this.followPath();
    if (this.fd === null) return this.pump();
    // At most ~16 KB per write, so a burst still rotates near the limit.
    let take = 0;
    let bytes = 0;
    while (take < this.buffer.length && (take === 0 || bytes < WRITE_CHUNK)) {
      bytes += this.buffer[take]!.length;
      take++;
    }
    const lines = take;
    const chunk = Buffer.from(this.buffer.splice(0, take).join(""));
    this.buffered -= bytes;
    this.writing = true;
    this.writeAll(this.fd!, chunk, 0, (err) => {
      this.writing = false;
      if (err) {
        this.cutPartial();
        this.failed(err, lines);
      } else {
        this.size += chunk.length;
        if (this.failingSince !== 0) this.resumed();
        if (this.size >= this.limits.maxBytes) this.rotateNow();
      }
      this.pump();
    });
  }

  private writeAll(fd: number, chunk: Buffer, from: number, done: (err?: unknown) => void): void {
    write(fd, chunk, from, chunk.length - from, null, (err, n) => {
      if (err) return done(err);
      if (from + n < chunk.length) return this.writeAll(fd, chunk, from + n, done);
      done();
    });
  }

  /**
   * A write that failed half-way left part of a line: cut the file back to its last whole
   * line, or (if even that fails) start the next write on a new line.
   */
  private cutPartial(): void {
    if (this.fd === null) return;
    try {
      if (fstatSync(this.fd).size > this.size) ftruncateSync(this.fd, this.size);
    } catch {
      this.brokenLine = true;
    }
  }

  private rotateNow(): void {
    if (Date.now() - this.rotateFailedAt < RETRY_MS) return;
    if (!rotate(this.file, this.limits.maxFiles)) {
      this.rotateFailedAt = Date.now(); // writing just goes on in this file; tried again later
      return;
    }
    this.closeFd();
    this.open();
  }

  /**
   * Once a second: is the open file still the one at the log's path? A log directory deleted
   * (or the file moved away) would otherwise swallow every line; it is recreated instead.
   */
  private followPath(): void {
    const now = Date.now();
    if (this.fd === null || now - this.checkedAt < RETRY_MS) return;
    this.checkedAt = now;
    let same = false;
    try {
      const open = fstatSync(this.fd);
      const there = statSync(this.file);
      same = open.ino === there.ino && open.dev === there.dev;
    } catch {
      // missing: reopen below
    }
    if (same) return;
    this.closeFd();
    this.open();
  }

  private failed(err: unknown, lines: number): void {
    this.stats.errors++;
    this.stats.last_error = err instanceof Error ? err.message : String(err);
    this.lost(lines);
    this.closeFd();
    this.failingSince = Date.now();
    if (!this.reported) {
      this.reported = true;
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      this.report(
        `cannot write the log ${this.file} (${code}: ${this.stats.last_error}); log lines are dropped until it can be written again`,
      );
    }
  }

  private resumed(): void {
    const dropped = this.droppedSinceReport;
    this.failingSince = 0;
    this.brokenLine = false;
    this.reported = false;
    this.droppedSinceReport = 0;
    this.buffer.unshift(
      (this.brokenLine ? "\n" : "") +
        JSON.stringify({
          level: 40,
          time: new Date().toISOString(),
          pid: process.pid,
          dropped_lines: dropped,
          msg: "log writes resumed after a failure; lines were dropped meanwhile",
        }) +
        "\n",
    );
  }

  private lost(lines: number): void {
    this.stats.dropped_lines += lines;
    this.droppedSinceReport += lines;
  }

  private closeFd(): void {
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      // a descriptor on a failing disk may refuse to close; it is gone either way
    }
    this.fd = null;
  }

  private settleFlushes(): void {
    for (const w of this.flushWaiters.splice(0)) w();
  }
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
