// WAL checkpoints off the request path. SQLite's auto-checkpoint runs inside the commit that
// takes the WAL past 1,000 pages, so that request, and every request behind it on the event
// loop, waits while pages are copied and the WAL and the database are fsynced. Here:
//
//  - once the WAL first passes `startBytes` (SQLite's own point, 4 MB), a worker thread with
//    its own connection takes over: `everyMs` after a commit it runs a PASSIVE checkpoint,
//    which never blocks a writer. The WAL starts again from its beginning at the first commit
//    after a checkpoint that caught up with it.
//  - the committing connection's auto-checkpoint moves to `backstopPages` (64 MB): under
//    writes that never pause the worker may never quite catch up, and a commit past that
//    point checkpoints inline (copying only what the worker has not), so the WAL stays bounded.
//
// Durability is unchanged: a commit is in the WAL before it is acknowledged, whoever copies it
// into the database later, and a checkpoint fsyncs the WAL before it copies and the database
// after. A host that never writes 4 MB never starts the thread; if the worker cannot start or
// dies, the connection checkpoints at 1,000 pages again, as SQLite does by default.
import { statSync } from "node:fs";
import type { Worker } from "node:worker_threads";

export type CheckpointOptions = {
  /** WAL size at which the worker starts (SQLite's own checkpoint point is 1,000 pages). */
  startBytes: number;
  /** Pages after which the committing connection checkpoints itself, as a backstop. */
  backstopPages: number;
  /** How long after a commit the worker checkpoints (one checkpoint covers every commit since). */
  everyMs: number;
};

export const DEFAULT_CHECKPOINT_OPTIONS: CheckpointOptions = {
  startBytes: 4 * 1024 * 1024,
  backstopPages: 16_384, // 64 MB of 4 KB pages, the journal_size_limit
  everyMs: 200,
};

/** Commits between two looks at the WAL's size (a `stat`), until the worker runs. */
const LOOK_EVERY_COMMITS = 32;
/** How long `close()` waits for a checkpoint under way to finish. */
const CLOSE_WAIT_MS = 10_000;

// Plain JavaScript run in the worker (an `eval` worker needs no file of its own, so the same
// code serves a checkout and the built package). State 0: open; 1: closed.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { DatabaseSync } = require("node:sqlite");
const flag = new Int32Array(workerData.flag);
const db = new DatabaseSync(workerData.path);
db.exec("PRAGMA busy_timeout = 0");
parentPort.on("message", (m) => {
  if (m === "close") {
    try { db.close(); } catch {}
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    parentPort.close();
    return;
  }
  try {
    const r = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get();
    parentPort.postMessage({ ok: true, log: r.log, checkpointed: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err && err.message || err) });
  }
});
`;

/** What the checkpointer did, for tests: checkpoints the worker ran, WAL size looks. */
export type CheckpointCounts = { worker: number; looks: number };

export class Checkpointer {
  readonly counts: CheckpointCounts = { worker: 0, looks: 0 };
  private readonly dbPath: string;
  private readonly walPath: string;
  private readonly options: CheckpointOptions;
  /** Sets SQLite's auto-checkpoint point (pages) on the store's own connection. */
  private readonly autoCheckpoint: (pages: number) => void;
  /** False while the database must not be written (a replaced or lost file). */
  private readonly mayWrite: () => boolean;
  private commits = 0;
  private worker: Worker | null | undefined; // undefined: not started; null: cannot start
  private flag: Int32Array | undefined;
  private busy = false;
  /** Commits came while the worker was busy: they need the next round. */
  private behind = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    dbPath: string,
    options: CheckpointOptions,
    autoCheckpoint: (pages: number) => void,
    mayWrite: () => boolean,
  ) {
    this.dbPath = dbPath;
    this.walPath = `${dbPath}-wal`;
    this.options = options;
    this.autoCheckpoint = autoCheckpoint;
    this.mayWrite = mayWrite;
  }

  /** After each outermost commit: a boolean test, and every few commits before the worker runs a `stat`. */
  committed(): void {
    if (this.worker) {
      if (this.busy) this.behind = true;
      else this.arm();
      return;
    }
    if (this.worker === undefined && ++this.commits % LOOK_EVERY_COMMITS === 0) this.look();
  }

  /** Whether the WAL has grown enough to hand its checkpoints to the worker. */
  private look(): void {
    if (this.closed) return;
    this.counts.looks++;
    let size = 0;
    try {
      size = statSync(this.walPath, { throwIfNoEntry: false })?.size ?? 0;
    } catch {
      return; // looked at again a few commits later
    }
    if (size < this.options.startBytes) return;
    if (this.startWorker()) {
      // From now on the committing connection checkpoints only past the backstop.
      this.autoCheckpoint(this.options.backstopPages);
      this.committed();
    }
  }

  private arm(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setTimeout(() => this.checkpoint(), this.options.everyMs);
    this.timer.unref();
  }

  private checkpoint(): void {
    this.timer = undefined;
    if (this.closed || !this.worker || this.busy || !this.mayWrite()) return;
    this.busy = true;
    this.behind = false;
    this.worker.postMessage("checkpoint");
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    const worker = this.worker;
    if (!worker || !this.flag) return;
    // Synchronously, so the store's own close runs after the worker's connection is gone (the
    // last connection to close is the one that checkpoints and removes the WAL).
    worker.postMessage("close");
    Atomics.wait(this.flag, 0, 0, CLOSE_WAIT_MS);
    void worker.terminate();
  }

  private startWorker(): boolean {
    try {
      const shared = new SharedArrayBuffer(4);
      this.flag = new Int32Array(shared);
      // Loaded here, not imported: a host that never writes 4 MB of WAL (every `holon run`)
      // never needs worker_threads and the seven builtin modules it brings.
      const { Worker } = process.getBuiltinModule("node:worker_threads");
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { path: this.dbPath, flag: shared },
        env: {}, // it needs none of the host's environment
        stdout: false,
        stderr: false,
      });
      worker.unref();
      worker.on("message", (m: { ok: boolean }) => {
        this.busy = false;
        if (m.ok) this.counts.worker++;
        if (this.behind) {
          this.behind = false;
          this.arm();
        }
      });
      worker.on("error", () => this.lost());
      worker.on("exit", () => this.lost());
      this.worker = worker;
      return true;
    } catch {
      this.worker = null;
      return false;
    }
  }

  /** The worker is gone: the committing connection checkpoints as SQLite does by default. */
  private lost(): void {
    if (this.closed || !this.worker) return;
    this.worker = null;
    this.busy = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      this.autoCheckpoint(1000);
    } catch {
      // the connection is closing
    }
  }
}
