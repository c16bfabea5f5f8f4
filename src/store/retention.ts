// The SQL of retention: remove the oldest history rows in small batches, keep the per-family
// size tallies (maintained by triggers) and the per-agent floors (how far removal went).
//
// Rows of every history table are appended in time order, so their rowid order is time
// order and "the oldest rows" is always a prefix by rowid: each batch reads the next rows
// from the front, decides which go, and deletes them in one short transaction. For events
// and transcript entries that prefix is also a prefix of each agent's own sequence, which
// is what lets replay say "everything up to N is gone" (`retention_floors.removed_through`).
// Nothing here runs on the turn path; the job in host/retention.ts drives it.
import { isPostgres, jsonField, type SqlDatabase, type SqlStatement } from "./sql.ts";
import { bodyText } from "./codec.ts";
import { EventTypes } from "./events.ts";

export type HistoryFamily = "events" | "transcript" | "messages" | "briefs";
export const HISTORY_FAMILIES: readonly HistoryFamily[] = [
  "events",
  "transcript",
  "messages",
  "briefs",
];

/** One candidate row at the old end of a history table. */
export type HistoryRow = {
  rowid: number;
  agent_id: string;
  /** The agent's sequence number (events, transcript) or the global one (messages, briefs). */
  seq: number;
  /** When the row was written, epoch milliseconds. */
  at: number;
  /** Bytes the row counts for in the size tally. */
  bytes: number;
  /** Event type (events only). */
  type?: string;
  /** Messages only: whether it may go at all (a queued or running message never does). */
  removable: boolean;
};

export type Removed = {
  count: number;
  bytes: number;
  /** Per agent: how many rows, the highest seq removed, and (events) how many of each type. */
  byAgent: Map<string, { count: number; maxSeq: number; types: Map<string, number> }>;
};

/** One context episode at the old end of the table. */
export type EpisodeRow = { seq: number; agent_id: string; at: number; bytes: number };

const EPISODE_BYTES = "octet_length(data) + octet_length(id) + octet_length(agent_id) + 24";

export type TaskRow = {
  rowid: number;
  id: string;
  agent_id: string;
  status: string;
  finished_at: string | null;
  process_dir: string | null;
  /** Bytes the record counts for under `retention.tasks.max_mb`. */
  bytes: number;
};

const TASK_BYTES =
  "octet_length(data) + octet_length(id) + octet_length(agent_id) + octet_length(status) + 24";

const TERMINAL_MESSAGE = "status NOT IN ('queued', 'processing')";

const PAGE_SQL: Record<HistoryFamily, string> = {
  events: `SELECT rowid AS rowid, agent_id, event_seq AS seq, ts AS at, type_id,
      octet_length(body) + octet_length(id) + octet_length(agent_id) + 32 AS bytes,
      1 AS removable
    FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?`,
  transcript: `SELECT rowid AS rowid, agent_id, seq, created_at AS at,
      octet_length(body) + octet_length(id) + 2 * octet_length(agent_id) + 64 AS bytes,
      1 AS removable
    FROM transcript WHERE rowid > ? ORDER BY rowid LIMIT ?`,
  messages: `SELECT rowid AS rowid, agent_id, seq, created_at AS at_iso,
      octet_length(envelope) + 3 * octet_length(id) + 2 * octet_length(agent_id) + 80 AS bytes,
      (${TERMINAL_MESSAGE}) AS removable
    FROM messages WHERE rowid > ? ORDER BY rowid LIMIT ?`,
  // A brief's time is inside its body; the job reads it from `data`.
  briefs: `SELECT rowid AS rowid, agent_id, seq, data,
      octet_length(data) + 2 * octet_length(id) + 2 * octet_length(agent_id) + 24 AS bytes,
      1 AS removable
    FROM briefs WHERE rowid > ? ORDER BY rowid LIMIT ?`,
};

export class RetentionRepo {
  private readonly db: SqlDatabase;
  private readonly pageStmts: Record<HistoryFamily, SqlStatement>;
  private readonly deleteStmts: Record<HistoryFamily, SqlStatement>;
  private readonly maxRowidStmts: Record<HistoryFamily, SqlStatement>;
  private readonly tallyStmt: SqlStatement;
  private readonly types: EventTypes;
  private readonly floorStmt: SqlStatement;
  private readonly floorsStmt: SqlStatement;
  private readonly tasksPageStmt: SqlStatement;
  private readonly deleteTaskStmt: SqlStatement;
  private readonly taskBytesStmt: SqlStatement;
  private readonly episodeBytesStmt: SqlStatement;
  private readonly episodesPageStmt: SqlStatement;
  private readonly deleteEpisodeStmt: SqlStatement;
  private readonly tombstonesStmt: SqlStatement;
  private readonly deletedFloorsStmt: SqlStatement;
  private freelistStmt: SqlStatement | undefined;

  constructor(db: SqlDatabase) {
    this.db = db;
    const each = (f: (family: HistoryFamily) => string) =>
      Object.fromEntries(HISTORY_FAMILIES.map((fam) => [fam, db.prepare(f(fam))])) as Record<
        HistoryFamily,
        SqlStatement
      >;
    this.pageStmts = each((fam) => PAGE_SQL[fam]);
    this.deleteStmts = each((fam) => `DELETE FROM ${fam} WHERE rowid = ?`);
    this.maxRowidStmts = each((fam) => `SELECT MAX(rowid) AS m FROM ${fam}`);
    this.tallyStmt = db.prepare("SELECT row_count, bytes FROM store_stats WHERE family = ?");
    this.types = new EventTypes(db);
    this.floorStmt = db.prepare(
      `INSERT INTO retention_floors (agent_id, family, removed_through, removed_count, updated_at)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (agent_id, family) DO UPDATE SET
         removed_through = MAX(retention_floors.removed_through, excluded.removed_through),
         removed_count = retention_floors.removed_count + excluded.removed_count,
         updated_at = excluded.updated_at`,
    );
    const field = jsonField(db);
    this.tasksPageStmt = db.prepare(
      `SELECT rowid AS rowid, id, agent_id, status,
         COALESCE(${field("data", "finished_at")}, ${field("data", "updated_at")}) AS finished_at,
         ${field("data", "process_dir")} AS process_dir, ${TASK_BYTES} AS bytes
       FROM tasks WHERE rowid > ? ORDER BY rowid LIMIT ?`,
    );
    this.taskBytesStmt = db.prepare(`SELECT COALESCE(SUM(${TASK_BYTES}), 0) AS bytes FROM tasks`);
    this.deleteTaskStmt = db.prepare("DELETE FROM tasks WHERE rowid = ?");
    this.episodeBytesStmt = db.prepare(
      `SELECT COALESCE(SUM(${EPISODE_BYTES}), 0) AS bytes FROM context_episodes`,
    );
    this.episodesPageStmt = db.prepare(
      `SELECT seq, agent_id, ${field("data", "created_at")} AS at_iso, ${EPISODE_BYTES} AS bytes
       FROM context_episodes WHERE seq > ? ORDER BY seq LIMIT ?`,
    );
    this.deleteEpisodeStmt = db.prepare("DELETE FROM context_episodes WHERE seq = ?");
    // A tombstone explains a deleted agent's events: it goes past the events' age, or once
    // none of them is left (the events' size cap took them), which bounds tombstones by the
    // events kept.
    this.tombstonesStmt = db.prepare(
      `DELETE FROM agent_tombstones WHERE deleted_at < ?
         OR NOT EXISTS (SELECT 1 FROM events WHERE events.agent_id = agent_tombstones.agent_id)`,
    );
    // A deleted agent keeps one floor: its events'. Agent ids are names (an operator may
    // create `scout` again after deleting it), and a new `scout` must not repeat an event
    // number a client may hold as a stream cursor; only that floor carries the numbering once
    // retention has removed the old events. The other floors are never read for a deleted
    // agent: the transcript's numbering follows its newest kept entry and otherwise nothing
    // holds a transcript position, and messages, briefs, episodes and tasks are numbered
    // across all agents. So the table holds at most one row per deleted id.
    this.deletedFloorsStmt = db.prepare(
      `DELETE FROM retention_floors WHERE family <> 'events'
         AND NOT EXISTS (SELECT 1 FROM agents WHERE agents.agent_id = retention_floors.agent_id)`,
    );
    this.floorsStmt = db.prepare(
      "SELECT agent_id, family, removed_through, removed_count, updated_at FROM retention_floors ORDER BY agent_id, family",
    );
  }

  /** Rows and stored bytes of a history family, from the trigger-kept tally. */
  tally(family: HistoryFamily): { rows: number; bytes: number } {
    const row = this.tallyStmt.get(family) as { row_count: number; bytes: number } | undefined;
    return { rows: row?.row_count ?? 0, bytes: row?.bytes ?? 0 };
  }

  /** The next `limit` rows after `afterRowid`, oldest first. */
  page(family: HistoryFamily, afterRowid: number, limit: number): HistoryRow[] {
    const rows = this.pageStmts[family].all(afterRowid, limit) as Record<string, unknown>[];
    return rows.map((r) => {
      let at = r.at as number;
      if (family === "messages") at = Date.parse(r.at_iso as string);
      if (family === "briefs") {
        at = Date.parse((JSON.parse(bodyText(r.data)) as { created_at: string }).created_at);
      }
      const row: HistoryRow = {
        rowid: r.rowid as number,
        agent_id: r.agent_id as string,
        seq: r.seq as number,
        at,
        bytes: r.bytes as number,
        removable: r.removable === 1,
      };
      if (typeof r.type_id === "number") row.type = this.types.nameOf(r.type_id);
      return row;
    });
  }

  /** The newest row of a table, which retention keeps so a rowid-numbered seq never repeats. */
  newestRowid(family: HistoryFamily): number {
    return (this.maxRowidStmts[family].get() as { m: number | null }).m ?? 0;
  }

  /**
   * Delete `rows` and move the agents' floors past them. Run inside a store transaction;
   * callers pass a prefix (per agent) of the family's rows.
   */
  remove(family: HistoryFamily, rows: HistoryRow[], at: string): Removed {
    const removed: Removed = { count: 0, bytes: 0, byAgent: new Map() };
    const del = this.deleteStmts[family];
    for (const row of rows) {
      del.run(row.rowid);
      removed.count++;
      removed.bytes += row.bytes;
      let agent = removed.byAgent.get(row.agent_id);
      if (!agent)
        removed.byAgent.set(row.agent_id, (agent = { count: 0, maxSeq: 0, types: new Map() }));
      agent.count++;
      agent.maxSeq = Math.max(agent.maxSeq, row.seq);
      if (row.type) agent.types.set(row.type, (agent.types.get(row.type) ?? 0) + 1);
    }
    for (const [agentId, a] of removed.byAgent) {
      this.floorStmt.run(agentId, family, a.maxSeq, a.count, at);
    }
    return removed;
  }

  /** Tasks after `afterRowid`, oldest first, with what retention needs to judge them. */
  tasksPage(afterRowid: number, limit: number): TaskRow[] {
    return this.tasksPageStmt.all(afterRowid, limit) as TaskRow[];
  }

  /**
   * Bytes the task records take. Tasks have no trigger-kept tally: a pass sums them once (the
   * table is held under its cap, so the scan is bounded).
   */
  taskBytes(): number {
    return (this.taskBytesStmt.get() as { bytes: number }).bytes;
  }

  /** Delete finished task records (their output directories are the caller's to remove). */
  removeTasks(rows: TaskRow[], at: string): Removed {
    const removed: Removed = { count: 0, bytes: 0, byAgent: new Map() };
    for (const row of rows) {
      this.deleteTaskStmt.run(row.rowid);
      removed.count++;
      removed.bytes += row.bytes;
      let agent = removed.byAgent.get(row.agent_id);
      if (!agent) {
        removed.byAgent.set(row.agent_id, (agent = { count: 0, maxSeq: 0, types: new Map() }));
      }
      agent.count++;
      agent.maxSeq = Math.max(agent.maxSeq, row.rowid);
    }
    for (const [agentId, a] of removed.byAgent) {
      this.floorStmt.run(agentId, "tasks", a.maxSeq, a.count, at);
    }
    return removed;
  }

  /**
   * Bytes the context episodes take. Episodes have no trigger-kept tally: a pass sums them
   * once (the table is held under its cap, so the scan is bounded too).
   */
  episodeBytes(): number {
    return (this.episodeBytesStmt.get() as { bytes: number }).bytes;
  }

  /** The next `limit` episodes after `afterSeq`, oldest first. */
  episodesPage(afterSeq: number, limit: number): EpisodeRow[] {
    return (
      this.episodesPageStmt.all(afterSeq, limit) as {
        seq: number;
        agent_id: string;
        at_iso: string | null;
        bytes: number;
      }[]
    ).map((r) => ({
      seq: r.seq,
      agent_id: r.agent_id,
      at: r.at_iso ? Date.parse(r.at_iso) : 0,
      bytes: r.bytes,
    }));
  }

  /** Delete episodes (a prefix by seq) and move the agents' floors past them. */
  removeEpisodes(rows: EpisodeRow[], at: string): Removed {
    const removed: Removed = { count: 0, bytes: 0, byAgent: new Map() };
    for (const row of rows) {
      this.deleteEpisodeStmt.run(row.seq);
      removed.count++;
      removed.bytes += row.bytes;
      let agent = removed.byAgent.get(row.agent_id);
      if (!agent) {
        removed.byAgent.set(row.agent_id, (agent = { count: 0, maxSeq: 0, types: new Map() }));
      }
      agent.count++;
      agent.maxSeq = Math.max(agent.maxSeq, row.seq);
    }
    for (const [agentId, a] of removed.byAgent) {
      this.floorStmt.run(agentId, "episodes", a.maxSeq, a.count, at);
    }
    return removed;
  }

  /**
   * Tombstones of agents deleted before `cutoff` (ISO time; none by age when null) or whose
   * events are all gone; returns how many went.
   */
  removeTombstones(cutoff: string | null): number {
    return Number(this.tombstonesStmt.run(cutoff ?? "").changes);
  }

  /** Floors of deleted agents other than their events' (see the constructor); returns how many. */
  removeDeletedAgentFloors(): number {
    return Number(this.deletedFloorsStmt.run().changes);
  }

  /** Everything retention has removed so far, per agent and family. */
  floors(): {
    agent_id: string;
    family: string;
    removed_through: number;
    removed_count: number;
    updated_at: string;
  }[] {
    return this.floorsStmt.all() as ReturnType<RetentionRepo["floors"]>;
  }

  /** Free pages waiting to be returned to the file system (Postgres: its autovacuum's job). */
  freePages(): number {
    if (isPostgres(this.db)) return 0;
    // One statement for the life of the repo: a pass asks this in a loop, and a statement
    // prepared per call holds native memory until V8 happens to collect its wrapper.
    this.freelistStmt ??= this.db.prepare("PRAGMA freelist_count");
    return (this.freelistStmt.get() as { freelist_count: number }).freelist_count;
  }

  /** Return up to `pages` free pages to the file system (needs auto_vacuum = INCREMENTAL). */
  vacuumStep(pages: number): void {
    if (isPostgres(this.db)) return;
    this.db.exec(`PRAGMA incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  }

  checkpoint(): void {
    if (isPostgres(this.db)) return;
    this.db.exec("PRAGMA wal_checkpoint(PASSIVE)");
  }
}
