// Working memory (one row per agent) and context episodes (append-only, immutable).
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import { EpisodeRecord, WorkingMemoryRecord } from "../domain/memory.ts";
import { BOUNDS_SQL, DecodedByText, DecodedRows, readRow, RecentIds } from "./json.ts";

export class MemoryRepo {
  private readonly db: SqlDatabase;
  private readonly getStmt: SqlStatement;
  private readonly putStmt: SqlStatement;
  private readonly addEpisodeStmt: SqlStatement;
  private readonly recentEpisodesStmt: SqlStatement;
  private readonly episodeDataStmt: SqlStatement;
  private readonly episodesAfterStmt: SqlStatement;
  private readonly episodeStmt: SqlStatement;
  private readonly countStmt: SqlStatement;
  /** The prompt, the recent history and the turn boundary each read these on every turn. */
  private readonly decodedMemory = new DecodedByText<WorkingMemoryRecord>(256);
  /** Episodes never change once written. */
  private readonly decodedEpisodes = new DecodedRows<EpisodeRecord>(1024);
  private readonly episodeBoundsStmt: SqlStatement;
  /** The newest episode ids of an agent as last listed (see `recentEpisodes`). */
  private readonly recentIds = new RecentIds();

  constructor(db: SqlDatabase) {
    this.db = db;
    this.getStmt = db.prepare("SELECT data FROM working_memory WHERE agent_id = ?");
    this.putStmt = db.prepare(
      "INSERT INTO working_memory (agent_id, data) VALUES (?, ?) ON CONFLICT (agent_id) DO UPDATE SET data = excluded.data",
    );
    this.addEpisodeStmt = db.prepare(
      "INSERT INTO context_episodes (id, agent_id, data) VALUES (?, ?, ?)",
    );
    this.recentEpisodesStmt = db.prepare(
      "SELECT id FROM context_episodes WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
    );
    this.episodeDataStmt = db.prepare("SELECT data FROM context_episodes WHERE id = ?");
    this.episodesAfterStmt = db.prepare(
      "SELECT seq, data FROM context_episodes WHERE agent_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    );
    this.episodeStmt = db.prepare(
      "SELECT data FROM context_episodes WHERE id = ? AND agent_id = ?",
    );
    this.countStmt = db.prepare("SELECT count(*) AS n FROM context_episodes WHERE agent_id = ?");
    this.episodeBoundsStmt = db.prepare(BOUNDS_SQL("context_episodes"));
  }

  /** Runs `fn` all or nothing (a savepoint, inside the caller's transaction). */
  atomically<T>(fn: () => T): T {
    this.db.exec("SAVEPOINT memory_update");
    try {
      const r = fn();
      this.db.exec("RELEASE memory_update");
      return r;
    } catch (err) {
      this.db.exec("ROLLBACK TO memory_update");
      this.db.exec("RELEASE memory_update");
      this.recentIds.clear();
      throw err;
    }
  }

  workingMemory(agentId: string): WorkingMemoryRecord | undefined {
    const row = this.getStmt.get(agentId) as { data: string } | undefined;
    if (!row) return undefined;
    return this.decodedMemory.get(agentId, row.data, () =>
      readRow(WorkingMemoryRecord, row.data, "working memory"),
    );
  }

  putWorkingMemory(record: WorkingMemoryRecord): void {
    const text = JSON.stringify(record);
    this.putStmt.run(record.agent_id, text);
    // The next prompt reads it right away: kept as written (a copy), not decoded back. Keyed
    // by the stored text, so a rolled-back write is never served.
    this.decodedMemory.get(record.agent_id, text, () => structuredClone(record));
  }

  addEpisode(episode: EpisodeRecord): void {
    const { lastInsertRowid } = this.addEpisodeStmt.run(
      episode.id,
      episode.agent_id,
      JSON.stringify(episode),
    );
    this.recentIds.added(episode.agent_id, Number(lastInsertRowid), episode.id);
  }

  /**
   * The newest episodes, oldest first. Ids first: an episode already decoded is not read
   * again (the prompt shows the same few on every turn).
   */
  recentEpisodes(agentId: string, limit: number): EpisodeRecord[] {
    const ids = this.recentIds.get(agentId, limit, this.episodeBoundsStmt, this.recentEpisodesStmt);
    return this.decodedEpisodes.oldestFirst(ids, (id) => {
      const row = this.episodeDataStmt.get(id) as { data: string };
      return readRow(EpisodeRecord, row.data, "episode");
    });
  }

  /** A rolled-back transaction may have listed an episode it added: list again. */
  invalidate(): void {
    this.recentIds.clear();
  }

  /** Episodes in order after a sequence number (index sync, mirror rebuild). */
  episodesAfter(
    agentId: string,
    afterSeq: number,
    limit: number,
  ): { seq: number; episode: EpisodeRecord }[] {
    return (
      this.episodesAfterStmt.all(agentId, afterSeq, limit) as { seq: number; data: string }[]
    ).map((r) => ({ seq: r.seq, episode: readRow(EpisodeRecord, r.data, "episode") }));
  }

  episode(agentId: string, id: string): EpisodeRecord | undefined {
    const row = this.episodeStmt.get(id, agentId) as { data: string } | undefined;
    return row ? readRow(EpisodeRecord, row.data, "episode") : undefined;
  }

  episodeCount(agentId: string): number {
    return (this.countStmt.get(agentId) as { n: number }).n;
  }
}
