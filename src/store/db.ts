// The durable store: one SQLite database per HOLON_HOME (WAL), versioned migrations,
// one repository per record family, and transactions that publish their events only
// after they commit ("durable before visible").
import { MemoryRepo } from "./memory.ts";
import { DatabaseSync } from "node:sqlite";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import type { Clock, IdSource } from "../domain/clock.ts";
import type { CatalogEvent, NewEvent } from "../domain/events.ts";
import { MIGRATIONS } from "./migrations.ts";
import { asyncFace, type Async } from "./async.ts";
import { AsyncLocalStorage } from "node:async_hooks";
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
export type EventListener = (events: CatalogEvent[]) => void | Promise<void>;

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
  readonly db: DatabaseSync;
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
  /** The open transaction's token (0: none), carried by its async context. */
  private openTx = 0;
  private txTokens = 0;
  private txEnded: Promise<void> = Promise.resolve();
  private readonly txContext = new AsyncLocalStorage<number>();
  private pending: CatalogEvent[] = [];
  /** Told how the open transaction ended (see whenSettled). */
  private settleHooks: ((committed: boolean) => void)[] = [];
  private readonly listeners = new Set<EventListener>();

  constructor(
    path: string,
    clock: Clock,
    ids: IdSource,
    opts: { checkpoint?: Partial<CheckpointOptions> } = {},
  ) {
    if (path !== ":memory:") {
      // Owner-only from the first byte: SQLite gives its WAL and SHM files the database's mode.
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      closeSync(openSync(path, "a", 0o600));
    }
    this.health = new StorageHealth(path === ":memory:" ? null : path, () => clock.now());
    this.db = new DatabaseSync(path);
    try {
      this.db.exec("PRAGMA journal_mode = WAL");
    } catch (err) {
      this.db.close();
      throw unreadable(path, err);
    }
    this.db.exec("PRAGMA synchronous = NORMAL");
    this.db.exec("PRAGMA busy_timeout = 5000");
    // 2 MB (SQLite's default): the turn path reads through indexes and the recent tail of each
    // table, and the operating system caches the rest of the file. A larger cache only
    // filled up slowly with cold pages (8 MB cost 3 MB more RSS under load and no speed).
    this.db.exec("PRAGMA cache_size = -2000");
    this.db.exec("PRAGMA foreign_keys = ON");
    // A checkpointed WAL shrinks back to this instead of keeping its largest size.
    this.db.exec("PRAGMA journal_size_limit = 67108864");
    this.clock = clock;
    this.ids = ids;
    prepareIncrementalVacuum(this.db);
    migrate(this.db);
    enableIncrementalVacuum(this.db);
    this.sync.agents = new AgentsRepo(this.db);
    this.agents = asyncFace(this.sync.agents);
    this.sync.messages = new MessagesRepo(this.db);
    this.messages = asyncFace(this.sync.messages);
    this.sync.events = new EventsRepo(this.db);
    this.events = asyncFace(this.sync.events);
    this.sync.briefs = new BriefsRepo(this.db);
    this.briefs = asyncFace(this.sync.briefs);
    this.sync.transcript = new TranscriptRepo(this.db);
    this.transcript = asyncFace(this.sync.transcript);
    this.sync.tasks = new TasksRepo(this.db);
    this.tasks = asyncFace(this.sync.tasks);
    this.sync.deadlines = new DeadlinesRepo(this.db);
    this.deadlines = asyncFace(this.sync.deadlines);
    this.sync.workspaces = new WorkspacesRepo(this.db);
    this.workspaces = asyncFace(this.sync.workspaces);
    this.sync.skills = new SkillActivationsRepo(this.db);
    this.skills = asyncFace(this.sync.skills);
    this.sync.timers = new TimersRepo(this.db);
    this.timers = asyncFace(this.sync.timers);
    this.sync.triggers = new TriggersRepo(this.db);
    this.triggers = asyncFace(this.sync.triggers);
    this.sync.workItems = new WorkItemsRepo(this.db);
    this.workItems = asyncFace(this.sync.workItems);
    this.sync.memory = new MemoryRepo(this.db);
    this.memory = asyncFace(this.sync.memory, {
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
    this.asks = asyncFace(this.sync.asks);
    this.sync.ledger = new LedgerRepo(this.db);
    this.ledger = asyncFace(this.sync.ledger);
    this.sync.approvals = new ApprovalsRepo(this.db);
    this.approvals = asyncFace(this.sync.approvals);
    this.checkpointer =
      path === ":memory:"
        ? null
        : new Checkpointer(
            path,
            { ...DEFAULT_CHECKPOINT_OPTIONS, ...opts.checkpoint },
            (pages) => this.db.exec(`PRAGMA wal_autocheckpoint = ${Math.floor(pages)}`),
            () => this.health.state !== "lost",
          );
  }

  /**
   * Run `fn` in one transaction. A call from inside an open transaction's async context joins
   * it; a call from elsewhere waits until the open one has ended. Events appended inside are
   * delivered to listeners only after the outermost commit succeeds.
   */
  async tx<T>(fn: () => Promise<T> | T): Promise<T> {
    if (this.openTx !== 0 && this.txContext.getStore() === this.openTx) return await fn();
    while (this.openTx !== 0) await this.txEnded;
    // A file someone else replaced or emptied is never written again (health.ts). The file
    // is statted only when its watch saw it change, not on every transaction.
    if (this.health.state === "lost" || (this.health.mustCheck && !this.health.checkFile())) {
      throw this.health.fault("lost", "");
    }
    let result: T;
    this.counts.transactions++;
    const token = ++this.txTokens;
    let ended!: () => void;
    this.txEnded = new Promise<void>((resolve) => (ended = resolve));
    try {
      this.db.exec("BEGIN IMMEDIATE");
      this.openTx = token;
      this.sync.agents.defer();
      result = await this.txContext.run(token, fn);
      this.sync.agents.flush();
      this.db.exec("COMMIT");
    } catch (err) {
      this.pending = [];
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
      this.openTx = 0;
      ended();
      for (const hook of hooks) hook(false);
      // A full disk or a refusing file system becomes one stable error (and an outage).
      const fault = err instanceof HolonError ? undefined : classifyStorageError(err);
      if (fault) throw this.health.fault(fault, err instanceof Error ? err.message : String(err));
      throw err;
    }
    this.openTx = 0;
    ended();
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
          if (r) r.catch(() => {}); // a broken subscriber must never break the runtime
        } catch {
          // a broken subscriber must never break the runtime
        }
      }
    }
    return result;
  }

  /**
   * Tell `hook` how the open outermost transaction ended: `true` once it committed (before
   * its events are published), `false` once it rolled back. Must run inside `tx`. For a
   * write a caller may make inside someone else's transaction, to know whether it stuck.
   */
  whenSettled(hook: (committed: boolean) => void): void {
    if (this.openTx === 0) throw new Error("whenSettled must run inside a transaction");
    this.settleHooks.push(hook);
  }

  /** Append an audit event for `agentId`. Must run inside `tx`. */
  async appendEvent(agentId: string, event: NewEvent): Promise<CatalogEvent> {
    if (this.openTx === 0) throw new Error("appendEvent must run inside a transaction");
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

function migrate(db: DatabaseSync): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const applied = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
  }
}
