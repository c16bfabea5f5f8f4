// Whether the store can be written, and what a storage failure means for everyone else.
// A write that fails because the disk is full (SQLITE_FULL, ENOSPC) or the file system
// refuses it (read-only, I/O error) turns the store `full` or `unavailable`: the write is
// refused with a stable kind (`storage_full`, `storage_unavailable`, HTTP 503 with
// Retry-After) and everything that must write waits on `whenWritable()` instead of
// retrying in a loop. Only a write that goes through again ends the outage
// (host/storage-watch.ts probes for it and records the outage as an event).
//
// A database file replaced, removed or truncated by another process makes the store `lost`:
// SQLite would go on writing into a file nobody reads (or over someone else's), so every
// write is refused for good and the host must be restarted.
import { readSync, openSync, closeSync, statSync, watch, type FSWatcher } from "node:fs";
import { HolonError } from "../domain/errors.ts";

export type StorageState = "ok" | "full" | "unavailable" | "lost";

/** How a failure of the store is classified. */
export type StorageFault = Exclude<StorageState, "ok">;

export type StorageOutage = {
  state: Exclude<StorageFault, "lost">;
  from: string;
  to: string;
  duration_ms: number;
  /** The error that started it, as SQLite or the file system said it. */
  error: string;
  /** Writes the store refused meanwhile. */
  refused_writes: number;
  /** HTTP requests refused meanwhile, per route (`POST /agents/:id/enqueue`). */
  refused_requests: Record<string, number>;
};

export type StorageStatus = {
  state: StorageState;
  since: string | null;
  error: string | null;
  refused_writes: number;
  refused_requests: number;
  /** The last outage that ended, if any since start. */
  last_outage: StorageOutage | null;
};

/** Seconds a client is told to wait before trying a refused write again. */
export const STORAGE_RETRY_AFTER_S = 5;

const SQLITE_IOERR = 10;
const SQLITE_CORRUPT = 11;
const SQLITE_FULL = 13;
const SQLITE_CANTOPEN = 14;
const SQLITE_READONLY = 8;
const SQLITE_NOTADB = 26;

const FULL_CODES = new Set(["ENOSPC", "EDQUOT"]);
const UNAVAILABLE_CODES = new Set(["EROFS", "EIO", "EACCES", "EPERM", "ENOENT"]);

/** What a thrown error says about the store, or undefined when it is not a storage fault. */
export function classifyStorageError(err: unknown): StorageFault | undefined {
  if (err instanceof HolonError) {
    if (err.kind === "storage_full") return "full";
    if (err.kind === "storage_unavailable") return "unavailable";
    if (err.kind === "storage_lost") return "lost";
    return undefined;
  }
  if (typeof err !== "object" || err === null) return undefined;
  const e = err as { code?: unknown; errcode?: unknown };
  if (e.code === "ERR_SQLITE_ERROR" && typeof e.errcode === "number") {
    const primary = e.errcode & 0xff;
    if (primary === SQLITE_FULL) return "full";
    if (primary === SQLITE_CORRUPT || primary === SQLITE_NOTADB) return "lost";
    if (primary === SQLITE_IOERR || primary === SQLITE_READONLY || primary === SQLITE_CANTOPEN) {
      return "unavailable";
    }
    return undefined;
  }
  if (typeof e.code === "string" && FULL_CODES.has(e.code)) return "full";
  return undefined;
}

/** A file-system error code that means the disk, not the caller, is at fault. */
export function isDiskFault(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && (FULL_CODES.has(code) || UNAVAILABLE_CODES.has(code));
}

export function storageError(state: StorageFault, detail: string): HolonError {
  if (state === "lost") {
    return new HolonError(
      "storage_lost",
      `the database file was replaced, removed or truncated by another process (${detail}); the runtime refuses to write to it`,
      {
        status: 503,
        hint: "restore the database file (or move it aside) and restart the runtime; nothing more is written until then",
      },
    );
  }
  return new HolonError(
    state === "full" ? "storage_full" : "storage_unavailable",
    state === "full"
      ? `the disk holding the runtime's home is full (${detail}); nothing was written`
      : `the runtime's home cannot be written (${detail}); nothing was written`,
    {
      status: 503,
      hint:
        state === "full"
          ? "free space on that disk; the runtime resumes by itself within seconds, then retry"
          : "make the home writable again; the runtime resumes by itself within seconds, then retry",
      details: { retry_after_s: STORAGE_RETRY_AFTER_S },
    },
  );
}

type FileId = { dev: number; ino: number };

export class StorageHealth {
  private current: StorageState = "ok";
  private since: Date | null = null;
  private error: string | null = null;
  private refusedWrites = 0;
  private refusedRequests: Record<string, number> = {};
  private lastOutage: StorageOutage | null = null;
  private probing = false;
  private waiters: (() => void)[] = [];
  private readonly listeners = new Set<(state: StorageState) => void>();
  private readonly path: string | null;
  private identity: FileId | null = null;
  private readonly now: () => Date;

  constructor(path: string | null, now: () => Date) {
    this.path = path;
    this.now = now;
  }

  get state(): StorageState {
    return this.current;
  }

  /** Remember which file the database is, to notice later when someone replaces it. */
  pinFile(): void {
    if (!this.path) return;
    const s = statSync(this.path);
    this.identity = { dev: s.dev, ino: s.ino };
    this.watchFile();
  }

  /**
   * Whether a transaction must check the file first. With a watch on the file (inotify), only
   * after the file changed: a truncation, a rename or unlink over it, or the store's own
   * checkpoint. Without one (a file system that offers none), before every transaction.
   */
  get mustCheck(): boolean {
    return this.touched || this.watcher === null;
  }

  private watcher: FSWatcher | null = null;
  private touched = true;

  private watchFile(): void {
    if (!this.path || this.watcher) return;
    try {
      const w = watch(this.path, { persistent: false }, () => {
        this.touched = true;
      });
      w.on("error", () => {
        // the watch is gone (the file was removed): every transaction checks again
        w.close();
        if (this.watcher === w) this.watcher = null;
      });
      this.watcher = w;
    } catch {
      this.watcher = null;
    }
  }

  /** Stop watching the file (the store is closing). */
  unwatch(): void {
    this.watcher?.close();
    this.watcher = null;
  }

  /**
   * Check the database file is still the one opened, not emptied, and still a SQLite file.
   * `deep` reads its header too (the periodic check; the per-transaction one only stats).
   * Turns the store `lost` and returns false when it is not.
   */
  checkFile(deep = false): boolean {
    if (this.current === "lost") return false;
    if (!this.path || !this.identity) return true;
    this.touched = false;
    let problem: string | undefined;
    try {
      const s = statSync(this.path);
      if (s.dev !== this.identity.dev || s.ino !== this.identity.ino) {
        problem = "the file at its path is another file";
      } else if (s.size === 0) problem = "the file was truncated to 0 bytes";
      else if (deep && !hasSqliteHeader(this.path)) problem = "the file is no longer a database";
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") problem = "the file was removed";
      // other stat errors (EIO, EACCES) are not evidence of replacement
    }
    if (problem === undefined) return true;
    this.fault("lost", problem);
    return false;
  }

  /** Record a storage failure; returns the HolonError to throw in its place. */
  fault(state: StorageFault, detail: string): HolonError {
    if (this.current !== "lost" && this.current !== state) {
      // full ↔ unavailable is the same outage with a newer cause; it keeps its start
      if (this.current === "ok" || state === "lost") this.since = this.now();
      this.current = state;
      this.error = detail;
      this.emit();
    }
    if (!this.probing) this.refusedWrites++;
    return storageError(this.current as StorageFault, this.error ?? detail);
  }

  /** An HTTP request was refused for a storage fault (counted per route). */
  noteRefusedRequest(route: string): void {
    this.refusedRequests[route] = (this.refusedRequests[route] ?? 0) + 1;
  }

  /** The outage in progress as it would be recorded if it ended now, or undefined. */
  outage(): StorageOutage | undefined {
    if (this.current === "ok" || this.current === "lost") return undefined;
    const to = this.now();
    return {
      state: this.current,
      from: this.since!.toISOString(),
      to: to.toISOString(),
      duration_ms: Math.max(0, to.getTime() - this.since!.getTime()),
      error: this.error ?? "",
      refused_writes: this.refusedWrites,
      refused_requests: { ...this.refusedRequests },
    };
  }

  /**
   * A write went through while the store was `full` or `unavailable`: the outage is over and
   * whoever waited on `whenWritable()` goes on. Returns the outage's record.
   */
  recovered(): StorageOutage | undefined {
    const outage = this.outage();
    if (!outage) return undefined;
    this.current = "ok";
    this.since = null;
    this.error = null;
    this.refusedWrites = 0;
    this.refusedRequests = {};
    this.lastOutage = outage;
    const waiters = this.waiters.splice(0);
    for (const w of waiters) w();
    this.emit();
    return outage;
  }

  /** Run a probe write: its own failure is not counted as a refused write. */
  probe<T>(fn: () => T): T {
    this.probing = true;
    try {
      return fn();
    } finally {
      this.probing = false;
    }
  }

  /** Resolves when the store can be written again (at once when it can), or when `signal` aborts. */
  whenWritable(signal?: AbortSignal): Promise<void> {
    if (this.current === "ok" || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.push(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * Wait after `err`, a storage fault, until writes go through again. A fault the store did
   * not see itself (ENOSPC from a file written outside a transaction) starts an outage too,
   * so the wait ends only once the storage watch has proved a write works: never a retry
   * loop that spins on a disk that is still full.
   */
  whenWritableAfter(err: unknown, signal?: AbortSignal): Promise<void> {
    const fault = classifyStorageError(err);
    if (fault && fault !== "lost" && this.current === "ok") {
      this.fault(fault, err instanceof Error ? err.message : String(err));
    }
    return this.whenWritable(signal);
  }

  onChange(listener: (state: StorageState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  status(): StorageStatus {
    return {
      state: this.current,
      since: this.since?.toISOString() ?? null,
      error: this.error,
      refused_writes: this.refusedWrites,
      refused_requests: Object.values(this.refusedRequests).reduce((a, b) => a + b, 0),
      last_outage: this.lastOutage,
    };
  }

  private emit(): void {
    for (const l of this.listeners) {
      try {
        l(this.current);
      } catch {
        // a listener must never turn a storage fault into a crash
      }
    }
  }
}

const MAGIC = Buffer.from("SQLite format 3\0", "latin1");

function hasSqliteHeader(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const buf = Buffer.alloc(MAGIC.length);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return n === buf.length && buf.equals(MAGIC);
  } catch {
    return true; // unreadable is not proof of replacement; the next write will tell
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
