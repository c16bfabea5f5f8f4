// The retention job: applies the user's retention policy (host/retention-config.ts) in the
// background. Every family has an age and a size limit. A pass removes, oldest first, the
// history rows past their age or beyond their family's size cap, finished task records
// (with their output) and task output past theirs, spend ledger rows past their age (and,
// over the ledger's cap, rolls old calls up into quarter-hour summaries without changing
// any total), then hands freed database pages back to the file system. It works in small
// batches, each one short transaction followed by a yield to the event loop, so a turn
// never waits on more than one batch. Rotated runtime log files past their age go too.
// What a pass removed is told per agent as a `retention_applied` event (counts per
// family and per event type, and how far the agent's event log now starts), which the
// runtime log records too.
//
// Time comes from the store's clock, so tests drive passes with `runOnce()` on a fake clock.
import { readdirSync, rmSync, statSync } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";
import type { EventPayload } from "../domain/events.ts";
import type { Store } from "../store/db.ts";
import {
  HISTORY_FAMILIES,
  RetentionRepo,
  type HistoryFamily,
  type HistoryRow,
  type Removed,
  type TaskRow,
} from "../store/retention.ts";
import { LEDGER_BUCKET_MS } from "../store/ledger.ts";
import { TraceLinksRepo } from "../store/trace-links.ts";
import type { RetentionPolicy } from "./retention-config.ts";

export type RemovedFamily =
  | HistoryFamily
  | "episodes"
  | "tombstones"
  /** Floors of deleted agents that nothing reads (one row per deleted id stays). */
  | "floors"
  | "tasks"
  | "task_output"
  | "trace_links"
  | "logs"
  | "ledger"
  /** Per-call ledger rows replaced by quarter-hour summaries (their spend still counts). */
  | "ledger_rolled_up";

export type AgentRemoval = {
  counts: Partial<Record<RemovedFamily, number>>;
  /** Removed events per event type. */
  event_types: Record<string, number>;
  /** The agent's events up to this seq are gone (replay from below it is refused). */
  events_removed_through?: number;
};

export type RetentionSummary = {
  started_at: string;
  duration_ms: number;
  removed: Partial<Record<RemovedFamily, number>>;
  bytes_removed: Partial<Record<RemovedFamily, number>>;
  by_agent: Record<string, AgentRemoval>;
  /** Database pages returned to the file system by incremental vacuum. */
  pages_returned: number;
};

export type RetentionDeps = {
  store: Store;
  policy: () => RetentionPolicy;
  /** Rows looked at per batch (default 500). */
  batchSize?: number;
  /** Delay from start() to the first pass (default one minute: start-up comes first). */
  firstPassDelayMs?: number;
  onError?: (err: unknown) => void;
  /** The runtime log (`<home>/logs/holon.log`): its rotated files follow `retention.logs`. */
  logFile?: string;
  /**
   * After a pass removed episodes or briefs of these agents: files derived from them (the
   * episode mirror, the memory index) are rewritten from what is kept.
   */
  afterRemoval?: (removed: { episodes: string[]; briefs: string[] }) => Promise<void>;
};

const TERMINAL_TASK = new Set(["completed", "failed", "cancelled"]);
const PROCESS_DIR_MARK = `${sep}.holon${sep}processes${sep}`;

/**
 * Briefs and episodes feed files rebuilt after a removal (each agent's memory index, the
 * episode mirror). Over its cap such a family is trimmed to this fraction below the cap, so
 * the rebuild comes once per tenth of the cap the agents write, not on every pass: in the
 * one-hour soak (a pass a minute) rebuilding them on every pass raised host CPU per turn
 * from 14 to 20 ms once the episodes reached their cap.
 */
const DERIVED_LOW_WATER = 0.1;

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Synchronous work between two yields to the event loop, when the work is many small steps. */
const SLICE_MS = 8;

/**
 * A yield that happens only once `SLICE_MS` of work has run since the last one. Awaiting
 * the event loop once per small step (a task's output directory) makes a pass on a busy
 * host last one loop turn per step: minutes, during which the history families overshoot
 * their caps.
 */
function slicer(): (beforeYield?: () => Promise<void> | void) => Promise<void> {
  let since = performance.now();
  return async (beforeYield) => {
    if (performance.now() - since < SLICE_MS) return;
    // Awaited: the caller's batch (an async store write) is done before the pass goes on.
    await beforeYield?.();
    await tick();
    since = performance.now();
  };
}

export class RetentionJob {
  private readonly store: Store;
  private readonly repo: RetentionRepo;
  private readonly links: TraceLinksRepo;
  private readonly policy: () => RetentionPolicy;
  private readonly batchSize: number;
  private readonly firstPassDelayMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly logFile: string | undefined;
  private readonly afterRemoval: RetentionDeps["afterRemoval"];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<RetentionSummary> | undefined;
  private stopped = false;

  constructor(deps: RetentionDeps) {
    this.store = deps.store;
    this.repo = new RetentionRepo(deps.store.db);
    this.links = new TraceLinksRepo(deps.store.db);
    this.policy = deps.policy;
    this.batchSize = deps.batchSize ?? 500;
    this.firstPassDelayMs = deps.firstPassDelayMs ?? 60_000;
    this.logFile = deps.logFile;
    this.afterRemoval = deps.afterRemoval;
    this.onError =
      deps.onError ??
      ((err) =>
        process.emitWarning(
          `holon: retention pass failed: ${err instanceof Error ? err.message : String(err)}`,
        ));
  }

  start(): void {
    this.stopped = false;
    this.schedule(this.firstPassDelayMs);
  }

  /** Stop scheduling and wait for a pass in progress to reach its next batch boundary. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => {});
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.runOnce()
        .catch((err: unknown) => this.onError(err))
        .finally(() => this.schedule(this.policy().interval_ms));
    }, delayMs);
    this.timer.unref?.();
  }

  /** One full pass now (a pass already running is joined, not doubled). */
  runOnce(): Promise<RetentionSummary> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<RetentionSummary> {
    const policy = this.policy();
    const started = this.store.clock.now();
    const summary: RetentionSummary = {
      started_at: started.toISOString(),
      duration_ms: 0,
      removed: {},
      bytes_removed: {},
      by_agent: {},
      pages_returned: 0,
    };
    const t0 = performance.now();
    for (const family of HISTORY_FAMILIES) {
      await this.history(family, policy[family], started, summary);
    }
    await this.episodes(policy.episodes, started, summary);
    await this.tombstones(policy.events.max_age_ms, started, summary);
    await this.tasks(policy, started, summary);
    await this.traceLinks(policy.trace_links, started, summary);
    await this.logs(policy.logs.max_age_ms, started, summary);
    await this.ledger(policy.ledger, started, summary);
    await this.deletedAgentFloors(summary);
    await this.vacuum(summary);
    await this.announce(summary);
    await this.derived(summary);
    summary.duration_ms = Math.round(performance.now() - t0);
    return summary;
  }

  /**
   * Spend ledger rows past their own age (400 days by default), in short batches; then, while
   * the ledger is over its size cap, the oldest per-call rows older than
   * `retention.ledger.detail_hours` are rolled up into quarter-hour summaries, one agent's
   * quarter-hour per transaction. Sums by agent, agent tree, work item and calendar window, and usage per
   * day, count the summaries the same (store/ledger.ts).
   */
  private async ledger(limit: RetentionPolicy["ledger"], now: Date, summary: RetentionSummary) {
    if (limit.max_age_ms !== null) {
      const before = new Date(now.getTime() - limit.max_age_ms);
      while (!this.stopped) {
        const n = await this.store.tx(
          async () => await this.store.ledger.deleteBefore(before, this.batchSize),
        );
        if (n > 0) summary.removed.ledger = (summary.removed.ledger ?? 0) + n;
        if (n < this.batchSize) break;
        await tick();
      }
    }
    if (limit.max_bytes === null || this.stopped) return;
    let over = (await this.store.ledger.bytes()) - limit.max_bytes;
    // Only whole quarter-hours, all of them older than the detail kept.
    const horizon = now.getTime() - limit.detail_ms;
    const end = horizon - (horizon % LEDGER_BUCKET_MS);
    // `from` skips what this pass has rolled up already (the summaries sit below it).
    let from = 0;
    while (over > 0 && !this.stopped) {
      const oldest = await this.store.ledger.oldestDetail(from);
      if (oldest === null) return;
      const lo = oldest - (oldest % LEDGER_BUCKET_MS);
      const hi = lo + LEDGER_BUCKET_MS;
      if (hi > end) return;
      from = hi;
      // One agent's quarter-hour per transaction (a busy host makes thousands of calls in one).
      for (const agentId of await this.store.ledger.detailAgents(lo, hi)) {
        if (this.stopped) return;
        const r = await this.store.tx(async () => await this.store.ledger.rollUp(lo, hi, agentId));
        summary.removed.ledger_rolled_up = (summary.removed.ledger_rolled_up ?? 0) + r.removed;
        summary.bytes_removed.ledger_rolled_up =
          (summary.bytes_removed.ledger_rolled_up ?? 0) + r.bytes;
        over -= r.bytes;
        await tick();
      }
    }
  }

  /** Remove the oldest rows of one family: those past the age limit, then any over the cap. */
  private async history(
    family: HistoryFamily,
    limit: RetentionPolicy[HistoryFamily],
    now: Date,
    summary: RetentionSummary,
  ): Promise<void> {
    if (limit.max_age_ms === null && limit.max_bytes === null) return;
    const cutoff = limit.max_age_ms === null ? null : now.getTime() - limit.max_age_ms;
    const at = now.toISOString();
    // Messages and briefs are numbered by rowid: their newest row stays so no number repeats.
    const keepNewest = family === "messages" || family === "briefs";
    let cursor = 0;
    // Over the cap, a family with derived files is trimmed to below it (DERIVED_LOW_WATER).
    let slack = 0;
    if (family === "briefs" && limit.max_bytes !== null) {
      if (this.repo.tally(family).bytes > limit.max_bytes) {
        slack = Math.floor(limit.max_bytes * DERIVED_LOW_WATER);
      }
    }
    while (!this.stopped) {
      let done = false;
      await this.store.tx(() => {
        const over =
          limit.max_bytes === null ? 0 : this.repo.tally(family).bytes - limit.max_bytes + slack;
        const page = this.repo.page(family, cursor, this.batchSize);
        const newest = keepNewest ? this.repo.newestRowid(family) : Number.POSITIVE_INFINITY;
        const take: HistoryRow[] = [];
        let excess = over;
        for (const row of page) {
          const expired = cutoff !== null && row.at < cutoff;
          if (!expired && excess <= 0) {
            done = true;
            break;
          }
          cursor = row.rowid;
          if (!row.removable || row.rowid >= newest) continue;
          take.push(row);
          excess -= row.bytes;
        }
        if (page.length < this.batchSize) done = true;
        if (take.length > 0) this.merge(summary, family, this.repo.remove(family, take, at));
      });
      if (done) return;
      await tick();
    }
  }

  /**
   * Context episodes past their age or over their cap, oldest first. The running size is
   * summed once and then reduced by what each batch removes.
   */
  private async episodes(limit: RetentionPolicy["episodes"], now: Date, summary: RetentionSummary) {
    if (limit.max_age_ms === null && limit.max_bytes === null) return;
    const cutoff = limit.max_age_ms === null ? null : now.getTime() - limit.max_age_ms;
    const at = now.toISOString();
    let excess = limit.max_bytes === null ? 0 : this.repo.episodeBytes() - limit.max_bytes;
    // Over the cap, trimmed to below it: the mirror and index are rebuilt less often.
    if (excess > 0) excess += Math.floor(limit.max_bytes! * DERIVED_LOW_WATER);
    let cursor = 0;
    while (!this.stopped) {
      let done = false;
      await this.store.tx(() => {
        const page = this.repo.episodesPage(cursor, this.batchSize);
        const take: typeof page = [];
        for (const row of page) {
          if (!(cutoff !== null && row.at < cutoff) && excess <= 0) {
            done = true;
            break;
          }
          cursor = row.seq;
          take.push(row);
          excess -= row.bytes;
        }
        if (page.length < this.batchSize) done = true;
        if (take.length > 0) this.merge(summary, "episodes", this.repo.removeEpisodes(take, at));
      });
      if (done) return;
      await tick();
    }
  }

  /**
   * Tombstones of deleted agents go with the events that explain them: past the events' age,
   * or once the events' size cap has taken all of that agent's events.
   */
  private async tombstones(
    maxAgeMs: number | null,
    now: Date,
    summary: RetentionSummary,
  ): Promise<void> {
    const cutoff = cutoffOf(now, maxAgeMs);
    if (this.stopped) return;
    const n = await this.store.tx(() => this.repo.removeTombstones(cutoff));
    if (n > 0) summary.removed.tombstones = (summary.removed.tombstones ?? 0) + n;
  }

  /**
   * Trace links past their age or over their cap, oldest first. They belong to no agent's
   * history, so they count in the pass's totals only (no `retention_applied` event). The
   * running size is summed once and then reduced by what each batch removes.
   */
  private async traceLinks(
    limit: RetentionPolicy["trace_links"],
    now: Date,
    summary: RetentionSummary,
  ): Promise<void> {
    if (limit.max_age_ms === null && limit.max_bytes === null) return;
    const cutoff = limit.max_age_ms === null ? null : now.getTime() - limit.max_age_ms;
    let excess = limit.max_bytes === null ? 0 : this.links.bytes() - limit.max_bytes;
    while (!this.stopped) {
      const page = this.links.oldest(this.batchSize);
      const take: typeof page = [];
      for (const row of page) {
        if (!(cutoff !== null && row.created_at < cutoff) && excess <= 0) break;
        take.push(row);
        excess -= row.bytes;
      }
      if (take.length === 0) return;
      await this.store.tx(() => this.links.remove(take));
      summary.removed.trace_links = (summary.removed.trace_links ?? 0) + take.length;
      summary.bytes_removed.trace_links =
        (summary.bytes_removed.trace_links ?? 0) + take.reduce((n, r) => n + r.bytes, 0);
      if (take.length < this.batchSize) return;
      await tick();
    }
  }

  /**
   * A deleted agent keeps only its events' floor (store/retention.ts says why): the others,
   * including those this pass wrote while removing its old briefs, episodes and tasks, go.
   */
  private async deletedAgentFloors(summary: RetentionSummary): Promise<void> {
    if (this.stopped) return;
    const n = await this.store.tx(() => this.repo.removeDeletedAgentFloors());
    if (n > 0) summary.removed.floors = (summary.removed.floors ?? 0) + n;
  }

  /** Rewrite what is derived from removed records (mirror, memory index); never fails a pass. */
  private async derived(summary: RetentionSummary): Promise<void> {
    if (!this.afterRemoval || this.stopped) return;
    const of = (family: RemovedFamily) =>
      Object.entries(summary.by_agent)
        .filter(([, r]) => (r.counts[family] ?? 0) > 0)
        .map(([id]) => id);
    const removed = { episodes: of("episodes"), briefs: of("briefs") };
    if (removed.episodes.length === 0 && removed.briefs.length === 0) return;
    try {
      await this.afterRemoval(removed);
    } catch (err) {
      this.onError(err);
    }
  }

  /**
   * Finished task records past their age or over their cap (a record and its output go
   * together), and task output past its age or over its cap.
   * Every kept record's output directory is measured on every pass, so that is done with
   * synchronous calls, a page (batchSize records) between two yields: awaiting each
   * readdir and stat made a pass take one event-loop turn per file of every task kept (30
   * days of them by default), and on a busy host a pass then ran for minutes, long enough
   * for the history families to overshoot their caps until it ended. Removing output is
   * synchronous for the same reason (an awaited recursive `rm` costs several loop turns per
   * directory: a pass over a few thousand finished tasks took ten minutes in a one-hour
   * soak); the work yields every `SLICE_MS` instead.
   */
  private async tasks(policy: RetentionPolicy, now: Date, summary: RetentionSummary) {
    const recordCutoff = cutoffOf(now, policy.tasks.max_age_ms);
    const recordCap = policy.tasks.max_bytes;
    const outputCutoff = cutoffOf(now, policy.task_output.max_age_ms);
    const outputCap = policy.task_output.max_bytes;
    if (recordCutoff === null && recordCap === null && outputCutoff === null && outputCap === null)
      return;
    // Bytes of records over the cap: finished ones go oldest first (with their output) until
    // the rest fits; queued and running ones count but never go.
    let recordExcess = recordCap === null ? 0 : this.repo.taskBytes() - recordCap;
    const at = now.toISOString();
    const kept: { dir: string; agent: string; finished: string; bytes: number }[] = [];
    let cursor = 0;
    const slice = slicer();
    const records: TaskRow[] = [];
    const removeRecords = async () => {
      if (records.length === 0) return;
      const batch = records.splice(0);
      await this.store.tx(() => this.merge(summary, "tasks", this.repo.removeTasks(batch, at)));
    };
    while (!this.stopped) {
      const page = this.repo.tasksPage(cursor, this.batchSize);
      if (page.length === 0) break;
      cursor = page.at(-1)!.rowid;
      for (const t of page) {
        await slice(removeRecords);
        if (!TERMINAL_TASK.has(t.status)) continue;
        const finished = t.finished_at ?? "";
        const dir = ownedProcessDir(t.process_dir);
        if ((recordCutoff !== null && finished < recordCutoff) || recordExcess > 0) {
          records.push(t);
          recordExcess -= t.bytes;
          if (dir) this.removeOutput(dir, t.agent_id, summary);
        } else if (dir) {
          const bytes = dirBytes(dir);
          if (bytes === null) continue; // already gone
          if (outputCutoff !== null && finished < outputCutoff) {
            this.removeOutput(dir, t.agent_id, summary, bytes);
          } else kept.push({ dir, agent: t.agent_id, finished, bytes });
        }
      }
      await removeRecords();
      await tick();
    }
    await removeRecords();
    if (outputCap === null || this.stopped) return;
    let total = kept.reduce((n, k) => n + k.bytes, 0);
    kept.sort((a, b) => (a.finished < b.finished ? -1 : a.finished > b.finished ? 1 : 0));
    for (const k of kept) {
      if (total <= outputCap || this.stopped) break;
      this.removeOutput(k.dir, k.agent, summary, k.bytes);
      total -= k.bytes;
      await slice();
    }
  }

  private removeOutput(dir: string, agentId: string, summary: RetentionSummary, bytes?: number) {
    const size = bytes ?? dirBytes(dir);
    if (size === null) return;
    // Synchronous, like dirBytes: a task's directory is a few small files (see tasks()).
    rmSync(dir, { recursive: true, force: true });
    summary.removed.task_output = (summary.removed.task_output ?? 0) + 1;
    summary.bytes_removed.task_output = (summary.bytes_removed.task_output ?? 0) + size;
    const agent = agentOf(summary, agentId);
    agent.counts.task_output = (agent.counts.task_output ?? 0) + 1;
  }

  /** Rotated log files (`holon.log.<n>`) last written before the age limit; never the live one. */
  private async logs(maxAgeMs: number | null, now: Date, summary: RetentionSummary) {
    if (maxAgeMs === null || !this.logFile || this.stopped) return;
    const cutoff = now.getTime() - maxAgeMs;
    const dir = dirname(this.logFile);
    const rotated = new RegExp(`^${basename(this.logFile).replaceAll(".", "\\.")}\\.\\d+$`);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const name of names.filter((n) => rotated.test(n))) {
      const file = join(dir, name);
      try {
        const s = await stat(file);
        if (!s.isFile() || s.mtimeMs >= cutoff) continue;
        await rm(file, { force: true });
        summary.removed.logs = (summary.removed.logs ?? 0) + 1;
        summary.bytes_removed.logs = (summary.bytes_removed.logs ?? 0) + s.size;
      } catch {
        // removed meanwhile
      }
    }
  }

  /** Give freed pages back to the file system, a couple of megabytes per step. */
  private async vacuum(summary: RetentionSummary): Promise<void> {
    if (Object.keys(summary.removed).length === 0) return;
    while (!this.stopped) {
      const free = this.repo.freePages();
      if (free === 0) break;
      this.repo.vacuumStep(512);
      summary.pages_returned += free - this.repo.freePages();
      if (this.repo.freePages() >= free) break; // not in incremental mode: nothing to return
      await tick();
    }
    if (!this.stopped) this.repo.checkpoint();
  }

  private merge(summary: RetentionSummary, family: RemovedFamily, removed: Removed): void {
    summary.removed[family] = (summary.removed[family] ?? 0) + removed.count;
    summary.bytes_removed[family] = (summary.bytes_removed[family] ?? 0) + removed.bytes;
    for (const [agentId, r] of removed.byAgent) {
      const agent = agentOf(summary, agentId);
      agent.counts[family] = (agent.counts[family] ?? 0) + r.count;
      if (family === "events") {
        agent.events_removed_through = Math.max(agent.events_removed_through ?? 0, r.maxSeq);
        for (const [type, n] of r.types)
          agent.event_types[type] = (agent.event_types[type] ?? 0) + n;
      }
    }
  }

  /** One `retention_applied` event per agent that lost something in this pass. */
  private async announce(summary: RetentionSummary): Promise<void> {
    const agents = Object.entries(summary.by_agent);
    if (agents.length === 0 || this.stopped) return;
    await this.store.tx(async () => {
      for (const [agentId, r] of agents) {
        if (!(await this.store.agents.get(agentId))) continue;
        const payload: EventPayload<"retention_applied"> = {
          removed: r.counts as Record<string, number>,
          event_types: r.event_types,
          pass_started_at: summary.started_at,
        };
        const through = await this.store.events.removedThrough(agentId);
        if (through > 0) {
          payload.events_removed_through = through;
          payload.oldest_available_seq = through + 1;
        }
        await this.store.appendEvent(agentId, { type: "retention_applied", payload });
      }
    });
  }
}

function cutoffOf(now: Date, maxAgeMs: number | null): string | null {
  return maxAgeMs === null ? null : new Date(now.getTime() - maxAgeMs).toISOString();
}

function agentOf(summary: RetentionSummary, agentId: string): AgentRemoval {
  return (summary.by_agent[agentId] ??= { counts: {}, event_types: {} });
}

/** A task's process directory, only when it is where the runtime puts them (never elsewhere). */
function ownedProcessDir(dir: string | null): string | null {
  return dir && dir.includes(PROCESS_DIR_MARK) ? dir : null;
}

/**
 * Bytes of the files in a process directory, or null when it no longer exists. Synchronous
 * on purpose (see `tasks`): a process directory holds a couple of files.
 */
function dirBytes(dir: string): number | null {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return null;
  }
  let total = 0;
  for (const name of names) {
    const s = statSync(join(dir, name), { throwIfNoEntry: false });
    if (s?.isFile()) total += s.size;
  }
  return total;
}
