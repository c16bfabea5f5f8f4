// The durable store: one SQLite database per HOLON_HOME (WAL), or the Postgres database a
// configured URL names (pg-open.ts; the same repositories over pg.ts's connection),
// versioned migrations, one repository per record family, and transactions that publish
// their events only after they commit ("durable before visible"). A transaction body is
// async (`tx`, held open across awaits that may only be store calls) or synchronous
// (`txSync`); see the "async transactions" part at the end for how the two share the one
// connection. On Postgres a failing statement ends its whole transaction (SQLite's ends only
// the statement): no body may catch a store error and go on writing in the same transaction.
import { MemoryRepo } from "./memory.ts";
import { AsyncLocalStorage } from "node:async_hooks";
import { DatabaseSync } from "node:sqlite";
import type { SqlDatabase } from "./sql.ts";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import type { Clock, IdSource } from "../domain/clock.ts";
import type { CatalogEvent, NewEvent } from "../domain/events.ts";
import { applyMigration, MIGRATIONS, migrationsTable } from "./migrations.ts";
import { asyncFace, type Async } from "./async.ts";
import { AgentsRepo } from "./agents.ts";
import { MessagesRepo } from "./messages.ts";
import { EventsRepo } from "./events.ts";
import { BriefsRepo } from "./briefs.ts";
import { TranscriptRepo } from "./transcript.ts";
import { TasksRepo } from "./tasks.ts";
import { DeadlinesRepo } from "./deadlines.ts";
import { SkillActivationsRepo, WorkspacesRepo } from "./workspaces.ts";
import { TimersRepo } from "./timers.ts";
import { TriggersRepo } from "./triggers.ts";
import { WorkItemsRepo } from "./work-items.ts";
import { HolonError } from "../domain/errors.ts";
import { classifyStorageError, StorageHealth } from "./health.ts";
import { AsksRepo } from "./asks.ts";
import { LedgerRepo } from "./ledger.ts";
import { ApprovalsRepo } from "./approvals.ts";
import { Checkpointer, DEFAULT_CHECKPOINT_OPTIONS, type CheckpointOptions } from "./checkpoint.ts";

/** Told of each commit's events; a listener that returns a Promise is not waited for. */
export type EventListener = (events: CatalogEvent[]) => unknown;

/**
 * What the store was asked to do, counted at its interface: outermost transactions, and
 * (once `countCalls()` turned it on) calls of each repository method, keyed `repo.method`.
 * The cost budgets in test/perf-budget*.test.ts read it; a refactor of the SQL underneath
 * leaves these figures as they are.
 */
export type StoreCounts = { transactions: number; calls: Record<string, number> };

/** The repositories whose calls `countCalls()` counts. */
const REPOS = [
  "agents",
  "messages",
  "events",
  "briefs",
  "transcript",
  "tasks",
  "deadlines",
  "workspaces",
  "skills",
  "timers",
  "triggers",
  "workItems",
  "memory",
  "asks",
  "ledger",
  "approvals",
] as const;

/** The SQLite backend's repositories, synchronous under the async faces services see. */
export type SyncRepos = {
  agents: AgentsRepo;
  messages: MessagesRepo;
  events: EventsRepo;
  briefs: BriefsRepo;
  transcript: TranscriptRepo;
  tasks: TasksRepo;
  deadlines: DeadlinesRepo;
  workspaces: WorkspacesRepo;
  skills: SkillActivationsRepo;
  timers: TimersRepo;
  triggers: TriggersRepo;
  workItems: WorkItemsRepo;
  memory: MemoryRepo;
  asks: AsksRepo;
  ledger: LedgerRepo;
  approvals: ApprovalsRepo;
};

export class Store {
  /** The connection: SQLite's, or a Postgres one (pg.ts) behind the same interface. */
  readonly db: SqlDatabase;
  /** Which backend holds the records. */
  readonly kind: "sqlite" | "postgres";
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly agents: Async<AgentsRepo>;
  readonly messages: Async<MessagesRepo>;
  readonly events: Async<EventsRepo>;
  readonly briefs: Async<BriefsRepo>;
  readonly transcript: Async<TranscriptRepo>;
  readonly tasks: Async<TasksRepo>;
  readonly deadlines: Async<DeadlinesRepo>;
  readonly workspaces: Async<WorkspacesRepo>;
  readonly skills: Async<SkillActivationsRepo>;
  readonly timers: Async<TimersRepo>;
  readonly triggers: Async<TriggersRepo>;
  readonly workItems: Async<WorkItemsRepo>;
  readonly memory: Omit<Async<MemoryRepo>, "atomically"> & {
    atomically<T>(fn: () => Promise<T> | T): Promise<T>;
  };
  /** Whether writes can go through (a full disk, a read-only home, a replaced file). */
  readonly health: StorageHealth;
  readonly asks: Async<AsksRepo>;
  readonly ledger: Async<LedgerRepo>;
  readonly approvals: Async<ApprovalsRepo>;
  /** Live counts at the store's interface (see StoreCounts); calls stay empty until `countCalls()`. */
  readonly counts: StoreCounts = { transactions: 0, calls: {} };
  /** Moves WAL checkpoints off the committing request (checkpoint.ts); none in memory. */
  readonly checkpointer: Checkpointer | null;
  /** The synchronous repositories under the async faces (the store's own business). */
  readonly sync = {} as SyncRepos;
  private counting = false;
  /** Nesting depth of the open transaction (0: none open); an async one holds 1 across awaits. */
  private depth = 0;
  private pending: CatalogEvent[] = [];
  /** Told how the open transaction ended (see whenSettled). */
  private settleHooks: ((committed: boolean) => void)[] = [];
  /** Run after the open transaction commits (see afterCommit); a Set, so a hook runs once. */
  private commitHooks = new Set<() => unknown>();
  private readonly listeners = new Set<EventListener>();
  /** The open async transaction, if any; its body's async context carries it. */
  private open: AsyncTx | null = null;
  /** Made on the first async transaction: a store that never runs one pays nothing for it. */
  private context: AsyncLocalStorage<AsyncTx> | undefined;
  /**
   * Async transactions and face calls of other contexts waiting for the open one to end, in
   * arrival order.
   */
  private readonly waiting: (() => void)[] = [];
  /** The connection was handed to the first waiter, which has not begun yet. */
  private handedOver = false;
  /** HOLON_TX_GUARD: fail an async transaction whose body yields to timers or I/O. */
  private readonly txGuard: boolean;

  constructor(
    path: string,
    clock: Clock,
    ids: IdSource,
    opts: {
      checkpoint?: Partial<CheckpointOptions>;
      txGuard?: boolean;
      /**
       * A Postgres connection with its schema in place (pg-open.ts): the store keeps its
       * records there instead of in the SQLite file at `path`.
       */
      database?: SqlDatabase;
    } = {},
  ) {
    this.txGuard = opts.txGuard ?? process.env.HOLON_TX_GUARD === "1";
    this.clock = clock;
    this.ids = ids;
    if (opts.database) {
      this.kind = "postgres";
      this.db = opts.database;
      this.health = new StorageHealth(null, () => clock.now());
      this.checkpointer = null;
    } else {
      this.kind = "sqlite";
      const db = openSqlite(path);
      this.db = db;
      this.health = new StorageHealth(path === ":memory:" ? null : path, () => clock.now());
      this.checkpointer =
        path === ":memory:"
          ? null
          : new Checkpointer(
              path,
              { ...DEFAULT_CHECKPOINT_OPTIONS, ...opts.checkpoint },
              (pages) => db.exec(`PRAGMA wal_autocheckpoint = ${Math.floor(pages)}`),
              () => this.health.state !== "lost",
            );
    }
    // The repositories: one set for both backends (their SQL is SQLite's; pg.ts translates).
    this.sync.agents = new AgentsRepo(this.db);
    this.agents = this.face(this.sync.agents);
    this.sync.messages = new MessagesRepo(this.db);
    this.messages = this.face(this.sync.messages);
    this.sync.events = new EventsRepo(this.db);
    this.events = this.face(this.sync.events);
    this.sync.briefs = new BriefsRepo(this.db);
    this.briefs = this.face(this.sync.briefs);
    this.sync.transcript = new TranscriptRepo(this.db);
    this.transcript = this.face(this.sync.transcript);
    this.sync.tasks = new TasksRepo(this.db);
    this.tasks = this.face(this.sync.tasks);
    this.sync.deadlines = new DeadlinesRepo(this.db);
    this.deadlines = this.face(this.sync.deadlines);
    this.sync.workspaces = new WorkspacesRepo(this.db);
    this.workspaces = this.face(this.sync.workspaces);
    this.sync.skills = new SkillActivationsRepo(this.db);
    this.skills = this.face(this.sync.skills);
    this.sync.timers = new TimersRepo(this.db);
    this.timers = this.face(this.sync.timers);
    this.sync.triggers = new TriggersRepo(this.db);
    this.triggers = this.face(this.sync.triggers);
    this.sync.workItems = new WorkItemsRepo(this.db);
    this.workItems = this.face(this.sync.workItems);
    this.sync.memory = new MemoryRepo(this.db);
    this.memory = this.face(this.sync.memory, {
      // a savepoint inside the caller's transaction, held across the body's store awaits
      atomically: async (fn: () => unknown): Promise<unknown> => {
        this.db.exec("SAVEPOINT memory_update");
        try {
          const r = await fn();
          this.db.exec("RELEASE memory_update");
          return r;
        } catch (err) {
          this.db.exec("ROLLBACK TO memory_update");
          this.db.exec("RELEASE memory_update");
          this.sync.memory.invalidate();
          throw err;
        }
      },
    }) as Store["memory"];
    this.health.pinFile();
    this.sync.asks = new AsksRepo(this.db);
    this.asks = this.face(this.sync.asks);
    this.sync.ledger = new LedgerRepo(this.db);
    this.ledger = this.face(this.sync.ledger);
    this.sync.approvals = new ApprovalsRepo(this.db);
    this.approvals = this.face(this.sync.approvals);
  }

  /**
   * Run `fn` in one transaction. Nested calls join the outer transaction. Events appended
   * inside are delivered to listeners only after the outermost commit succeeds. The body is
   * synchronous (an async one is `tx`); inside an async transaction's body this joins it.
   */
  txSync<T>(fn: () => T): T {
    if (this.depth > 0) {
      if (this.open !== null && this.context!.getStore() !== this.open) {
        throw txInterleaved("a synchronous transaction");
      }
      this.depth++;
      try {
        return fn();
      } finally {
        this.depth--;
      }
    }
    this.refuseLostFile();
    let result: T;
    this.counts.transactions++;
    try {
      this.db.exec("BEGIN IMMEDIATE");
      this.depth = 1;
      this.sync.agents.defer();
      result = fn();
      if (result instanceof Promise) throw txPromiseInSync();
      this.sync.agents.flush();
      this.db.exec("COMMIT");
    } catch (err) {
      throw this.rolledBack(err);
    } finally {
      this.depth = 0;
    }
    this.committed();
    return result;
  }

  /**
   * Run the async `fn` in one transaction that stays open until its promise settles: commit
   * when it resolves, roll back when it rejects; then, as for `txSync`, settle hooks, events to
   * listeners, afterCommit hooks. The body awaits only store calls (the one rule; see
   * "async transactions" below). A `tx` or `txSync` inside the body's async context joins
   * it; one from another async context waits its turn (no extra tick when nothing is open);
   * a synchronous store call from another context while it is open fails `tx_interleaved`.
   */
  tx<T>(fn: () => Promise<T> | T): Promise<T> {
    const open = this.open;
    if (open !== null && this.context!.getStore() === open) return joinAsync(open, fn);
    if (this.depth > 0 && open === null) return Promise.reject(txAsyncInSync());
    return this.runAsync(fn);
  }

  private async runAsync<T>(fn: () => Promise<T> | T): Promise<T> {
    if (this.open !== null || this.handedOver || this.waiting.length > 0) {
      await this.yourTurn();
    }
    this.handedOver = false;
    let result: T;
    try {
      this.refuseLostFile();
      const context = (this.context ??= this.startAsync());
      // Postgres may end a transaction with a serialization failure or a deadlock another
      // session caused; the body awaits only store calls, so running it again is safe.
      for (let attempt = 1; ; attempt++) {
        const frame = new AsyncTx();
        let sentinels: [NodeJS.Immediate, NodeJS.Timeout] | undefined;
        this.counts.transactions++;
        try {
          this.db.exec("BEGIN IMMEDIATE");
          this.depth = 1;
          this.open = frame;
          if (this.txGuard) sentinels = armSentinels(frame);
          this.sync.agents.defer();
          result = await context.run(frame, fn);
          if (frame.yielded) throw txYielded();
          if (frame.joined > 0) throw txUnawaited();
          this.sync.agents.flush();
          this.db.exec("COMMIT");
          break;
        } catch (err) {
          this.open = null;
          const failed = this.rolledBack(err);
          if (attempt < TX_ATTEMPTS && isRetryable(failed)) continue;
          throw failed;
        } finally {
          if (sentinels) {
            clearImmediate(sentinels[0]);
            clearTimeout(sentinels[1]);
          }
          this.depth = 0;
          this.open = null;
        }
      }
    } finally {
      this.handOver();
    }
    // Handed over first: a hook that starts an async transaction queues behind the waiter
    // (which begins only after these hooks, at a later microtask).
    this.committed();
    return result;
  }

  /** Resolves when the connection is handed to this caller (see handOver), in arrival order. */
  private yourTurn(): Promise<void> {
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /**
   * A file someone else replaced or emptied is never written again (health.ts). The file is
   * statted only when its watch saw it change, not on every transaction.
   */
  private refuseLostFile(): void {
    if (this.health.state === "lost" || (this.health.mustCheck && !this.health.checkFile())) {
      throw this.health.fault("lost", "");
    }
  }

  /**
   * The open async transaction ended: the first waiter may begin. Not while another one is
   * open (a rollback's settle hook may have started one) or already handed the connection:
   * that one hands over when it ends.
   */
  private handOver(): void {
    if (this.open !== null || this.handedOver) return;
    const next = this.waiting.shift();
    if (next) {
      this.handedOver = true;
      next();
    }
  }

  /**
   * The first async transaction. Services reach the repositories only through their faces,
   * which already wait for another caller's open transaction. Under the tx guard (tests),
   * every synchronous repository method checks it too, so a call that went around a face
   * fails loudly; in production that check would cost a call and a context read per call.
   */
  private startAsync(): AsyncLocalStorage<AsyncTx> {
    const context = new AsyncLocalStorage<AsyncTx>();
    if (!this.txGuard) return context;
    const check = (label: string) => {
      if (this.open !== null && context.getStore() !== this.open) throw txInterleaved(label);
    };
    for (const name of REPOS) {
      const repo = this.sync[name] as object;
      for (const key of Object.getOwnPropertyNames(Object.getPrototypeOf(repo))) {
        const fn = (repo as Record<string, unknown>)[key];
        if (key === "constructor" || typeof fn !== "function") continue;
        const label = `${name}.${key}`;
        Object.defineProperty(repo, key, {
          configurable: true,
          writable: true,
          value: function (this: unknown, ...args: unknown[]) {
            check(label);
            return (fn as (...a: unknown[]) => unknown).apply(this, args);
          },
        });
      }
    }
    return context;
  }

  /** After a failed body or COMMIT: undo everything the transaction staged; the error to throw. */
  private rolledBack(err: unknown): unknown {
    this.pending = [];
    this.commitHooks.clear();
    const hooks = this.settleHooks;
    this.settleHooks = [];
    this.sync.agents.invalidate();
    this.sync.events.invalidate();
    this.sync.transcript.invalidate();
    this.sync.briefs.invalidate();
    this.sync.memory.invalidate();
    try {
      this.db.exec("ROLLBACK");
    } catch {
      // the transaction may already be gone; the original error matters more
    }
    this.depth = 0;
    for (const hook of hooks) hook(false);
    // A full disk or a refusing file system becomes one stable error (and an outage).
    const fault = err instanceof HolonError ? undefined : classifyStorageError(err);
    if (fault) return this.health.fault(fault, err instanceof Error ? err.message : String(err));
    return err;
  }

  /** After COMMIT: settle hooks, then the events to listeners, then the afterCommit hooks. */
  private committed(): void {
    this.checkpointer?.committed();
    if (this.settleHooks.length > 0) {
      const hooks = this.settleHooks;
      this.settleHooks = [];
      for (const hook of hooks) hook(true);
    }
    const published = this.pending;
    this.pending = [];
    if (published.length > 0) {
      for (const listener of this.listeners) {
        try {
          const r = listener(published);
          if (r instanceof Promise) r.catch(() => {}); // a broken subscriber never breaks the runtime
        } catch {
          // a broken subscriber must never break the runtime
        }
      }
    }
    if (this.commitHooks.size > 0) {
      const hooks = this.commitHooks;
      this.commitHooks = new Set();
      for (const hook of hooks) {
        try {
          const r = hook();
          if (r instanceof Promise) r.catch(() => {}); // an async hook is not waited for
        } catch {
          // like a broken subscriber: a failing hook breaks neither the commit nor the others
        }
      }
    }
  }

  /**
   * Run `fn` once the writes made so far are committed: after the open outermost transaction
   * commits and its events reached the listeners, in registration order (the same function
   * registered twice in one transaction runs once); never, if it rolls back. Outside a
   * transaction (or from outside an open async one) everything written is committed already,
   * so `fn` runs at once. For what must not happen before a commit: waking a loop to read
   * the queue, re-arming a timer from the deadlines table.
   */
  afterCommit(fn: () => unknown): void {
    if (this.depth === 0 || (this.open !== null && this.context!.getStore() !== this.open)) {
      const r = fn();
      if (r instanceof Promise) r.catch(() => {});
      return;
    }
    this.commitHooks.add(fn);
  }

  /**
   * The async face of a repository. A call made while another async context's transaction is
   * open waits for it to end, so it neither writes into that transaction nor reads its
   * uncommitted rows; it then runs as a call outside any transaction does (one statement,
   * committed on its own), not as a transaction of its own: no BEGIN and COMMIT for a read.
   */
  private face<T extends object>(impl: T, own: Record<string, unknown> = {}): Async<T> {
    return asyncFace(
      impl,
      own,
      () => this.open !== null && this.context!.getStore() !== this.open,
      (call) => this.whenFree(call),
    );
  }

  /** Run `call` once no async transaction holds the connection (in the waiters' order). */
  private async whenFree<T>(call: () => T): Promise<T> {
    await this.yourTurn();
    this.handedOver = false;
    try {
      return call();
    } finally {
      this.handOver();
    }
  }

  /**
   * Tell `hook` how the open outermost transaction ended: `true` once it committed (before
   * its events are published), `false` once it rolled back. Must run inside `tx`. For a
   * write a caller may make inside someone else's transaction, to know whether it stuck.
   */
  whenSettled(hook: (committed: boolean) => void): void {
    if (this.depth === 0) throw new Error("whenSettled must run inside a transaction");
    if (this.open !== null && this.context!.getStore() !== this.open) {
      throw txInterleaved("whenSettled");
    }
    this.settleHooks.push(hook);
  }

  /** Append an audit event for `agentId`. Must run inside `tx`. */
  async appendEvent(agentId: string, event: NewEvent): Promise<CatalogEvent> {
    if (this.depth === 0) throw new Error("appendEvent must run inside a transaction");
    if (this.open !== null && this.context!.getStore() !== this.open) {
      throw txInterleaved("appendEvent");
    }
    const envelope: CatalogEvent = {
      id: this.ids.next("evt"),
      event_seq: this.sync.events.nextSeq(agentId),
      ts: this.clock.now().toISOString(),
      agent_id: agentId,
      ...event,
      provenance: event.provenance ?? {},
    };
    this.sync.events.insert(envelope);
    this.pending.push(envelope);
    return envelope;
  }

  /**
   * Start counting calls of every repository method and of `appendEvent` into `counts.calls`
   * (a wrapper per method on this instance; nothing is counted, or wrapped, before). For
   * tests and benchmarks: the wrappers cost a little on every call.
   */
  countCalls(): StoreCounts {
    if (this.counting) return this.counts;
    this.counting = true;
    const calls = this.counts.calls;
    // Only calls from outside count: what a repository method calls on itself or another
    // repository (appendEvent → events.insert) is the store's own business.
    let inside = 0;
    const wrap = (target: object, key: string, label: string) => {
      const fn = (target as Record<string, unknown>)[key];
      if (typeof fn !== "function") return;
      Object.defineProperty(target, key, {
        configurable: true,
        writable: true,
        value: function (this: unknown, ...args: unknown[]) {
          if (inside === 0) calls[label] = (calls[label] ?? 0) + 1;
          inside++;
          try {
            return (fn as (...a: unknown[]) => unknown).apply(this, args);
          } finally {
            inside--;
          }
        },
      });
    };
    for (const name of REPOS) {
      const repo = this.sync[name] as object;
      for (const key of Object.getOwnPropertyNames(Object.getPrototypeOf(repo))) {
        if (key !== "constructor") wrap(repo, key, `${name}.${key}`);
      }
    }
    wrap(this, "appendEvent", "store.appendEvent");
    return this.counts;
  }

  onEvents(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    // Closing checkpoints the WAL into the database file: never into one that was replaced
    // or truncated under us (the process exits and leaves the WAL as it is).
    this.health.unwatch();
    this.checkpointer?.close();
    if (this.health.state === "lost") return;
    if (this.db.isOpen) this.db.close();
  }
}

// ---- async transactions ------------------------------------------------------------------
// One SQLite connection means one open transaction at a time: an async transaction holds it
// across its awaits, so everything else must either join it (same async context), wait for
// it (another async transaction), or fail loudly (a synchronous call from elsewhere, which
// would otherwise write into, or read the uncommitted rows of, someone else's transaction).
// The one rule: a transaction body awaits only store calls.

/** The open async transaction: the async context its body runs in carries this object. */
class AsyncTx {
  /** Nested async transactions that joined this one and have not settled yet. */
  joined = 0;
  /** The guard's sentinel fired: the body yielded to timers or I/O before its commit. */
  yielded = false;
}

/** A store call from outside the open async transaction's context (see the header). */
function txInterleaved(what: string): HolonError {
  return new HolonError(
    "tx_interleaved",
    `${what} ran while an async transaction of another caller was open: it would join that transaction or read its uncommitted rows`,
    {
      status: 500,
      hint: "make this call inside that transaction's body, or after it settles (await it, or use store.afterCommit); a transaction body awaits only store calls",
    },
  );
}

/** An async body started inside a synchronous transaction, which commits before it ends. */
function txAsyncInSync(): HolonError {
  return new HolonError(
    "tx_interleaved",
    "an async transaction was started inside a synchronous one: the synchronous transaction would commit before the async body ends",
    {
      status: 500,
      hint: "make the outer transaction async (store.tx) and await the inner one",
    },
  );
}

/** How many times a transaction runs when Postgres keeps failing it retryably. */
const TX_ATTEMPTS = 3;

/** Postgres's serialization failure (40001) and deadlock (40P01): the body may run again. */
function isRetryable(err: unknown): boolean {
  const code = (err as { pgCode?: unknown } | null)?.pgCode;
  return code === "40001" || code === "40P01";
}

/** A `txSync` whose body returned a Promise: it would commit before the body ends. */
function txPromiseInSync(): HolonError {
  return new HolonError(
    "tx_interleaved",
    "store.txSync got a body that returned a Promise: the transaction would commit before the body's awaits",
    { status: 500, hint: "use store.tx for an async body" },
  );
}

/** HOLON_TX_GUARD: the body yielded to timers or I/O between BEGIN and COMMIT. */
function txYielded(): HolonError {
  return new HolonError(
    "tx_yielded",
    "a transaction body yielded to timers or I/O before its commit (it awaited something other than a store call); it was rolled back. The rule: a transaction body awaits only store calls",
    {
      status: 500,
      hint: "do the provider, tool, timer or file work before the transaction or after it commits",
    },
  );
}

/** A nested async transaction the outer body did not await: part of it would run after COMMIT. */
function txUnawaited(): HolonError {
  return new HolonError(
    "tx_unawaited",
    "an async transaction's body finished while a nested transaction it started was still running (a store promise left un-awaited); it was rolled back",
    { status: 500, hint: "await every store call inside a transaction body" },
  );
}

/**
 * A nested async transaction joins the open one; the outer body must await it (txUnawaited).
 * Not an async function: a join is on every hot path, and a synchronous body (most are)
 * costs one promise instead of an async frame and three.
 */
function joinAsync<T>(frame: AsyncTx, fn: () => Promise<T> | T): Promise<T> {
  frame.joined++;
  let result: Promise<T> | T;
  try {
    result = fn();
  } catch (err) {
    frame.joined--;
    return Promise.reject(err);
  }
  if (!(result instanceof Promise)) {
    frame.joined--;
    return Promise.resolve(result);
  }
  return result.then(
    (value) => {
      frame.joined--;
      return value;
    },
    (err: unknown) => {
      frame.joined--;
      throw err;
    },
  );
}

/**
 * HOLON_TX_GUARD: an immediate and a zero timer scheduled at BEGIN. Awaiting store calls
 * only ever runs microtasks, so neither can fire before COMMIT unless the body let the event
 * loop go on to timers or I/O (the timer covers a BEGIN inside an immediate's own phase).
 */
function armSentinels(frame: AsyncTx): [NodeJS.Immediate, NodeJS.Timeout] {
  const trip = () => {
    frame.yielded = true;
  };
  return [setImmediate(trip), setTimeout(trip, 0)];
}

/** A database file SQLite cannot open or read: one clear error instead of SQLite's words. */
function unreadable(path: string, err: unknown): unknown {
  if (classifyStorageError(err) === undefined) return err;
  return new HolonError(
    "database_unreadable",
    `${path} cannot be opened as the runtime's database: ${err instanceof Error ? err.message : String(err)}`,
    {
      status: 503,
      hint: "restore the file from a backup, or move it aside to start with an empty database",
    },
  );
}

/**
 * Retention frees pages; with `auto_vacuum = INCREMENTAL` the retention job can hand them
 * back to the file system a few at a time (`PRAGMA incremental_vacuum`). A new database
 * gets the mode before its first table exists, which costs nothing.
 */
function prepareIncrementalVacuum(db: DatabaseSync): void {
  const tables = db.prepare("SELECT COUNT(*) AS n FROM sqlite_schema").get() as { n: number };
  if (tables.n === 0) db.exec("PRAGMA auto_vacuum = INCREMENTAL");
}

/**
 * A database made before incremental vacuum existed changes mode only with a full VACUUM,
 * done once here, right after the migrations (which rewrote most of it anyway). It needs
 * free disk about the size of the database; when that fails the database keeps working,
 * freed pages are reused for new rows instead of returned, and the next start tries again.
 */
function enableIncrementalVacuum(db: DatabaseSync): void {
  const mode = (db.prepare("PRAGMA auto_vacuum").get() as { auto_vacuum: number }).auto_vacuum;
  if (mode === 2) return;
  try {
    db.exec("PRAGMA auto_vacuum = INCREMENTAL");
    db.exec("VACUUM");
  } catch (err) {
    process.emitWarning(
      `holon: could not switch the database to incremental vacuum (${err instanceof Error ? err.message : String(err)}); freed space is reused but not returned`,
    );
  }
}

/** A SQLite database file opened as the store wants it: WAL, migrated, incremental vacuum. */
function openSqlite(path: string): DatabaseSync {
  if (path !== ":memory:") {
    // Owner-only from the first byte: SQLite gives its WAL and SHM files the database's mode.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, "a", 0o600));
  }
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA journal_mode = WAL");
  } catch (err) {
    db.close();
    throw unreadable(path, err);
  }
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA busy_timeout = 5000");
  // 2 MB (SQLite's default): the turn path reads through indexes and the recent tail of each
  // table, and the operating system caches the rest of the file. A larger cache only
  // filled up slowly with cold pages (8 MB cost 3 MB more RSS under load and no speed).
  db.exec("PRAGMA cache_size = -2000");
  db.exec("PRAGMA foreign_keys = ON");
  // A checkpointed WAL shrinks back to this instead of keeping its largest size.
  db.exec("PRAGMA journal_size_limit = 67108864");
  prepareIncrementalVacuum(db);
  migrate(db);
  enableIncrementalVacuum(db);
  return db;
}

function migrate(db: DatabaseSync): void {
  migrationsTable(db);
  const applied = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.exec("BEGIN IMMEDIATE");
    try {
      applyMigration(db, m);
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
  }
}
