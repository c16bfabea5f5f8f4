// The append-only audit log. `event_seq` is per agent, strictly increasing and gap-free:
// it is assigned inside the writing transaction from the current maximum. Retention may
// remove an agent's oldest events (always a prefix of its log); `retention_floors` keeps how
// far it went, so numbering never restarts and replay can tell a client what is gone.
// Stored compactly: `ts` as epoch milliseconds, `type` as an id into `event_types`; rows
// read back carry the ISO time and the type name as always.
import type { SqlDatabase, SqlStatement } from "./sql.ts";
import type { EventEnvelope } from "../domain/events.ts";
import { decodeBody, encodeBody, encodeMessageBody } from "./codec.ts";

type Row = {
  agent_id: string;
  event_seq: number;
  id: string;
  ts: number;
  type_id: number;
  body: string | Uint8Array;
};

export type EventQuery = {
  afterSeq?: number;
  beforeSeq?: number;
  limit: number;
  order: "asc" | "desc";
};

const COLUMNS = "agent_id, event_seq, id, ts, type_id, body";

export class EventsRepo {
  private readonly db: SqlDatabase;
  private readonly maxStmt: SqlStatement;
  private readonly floorStmt: SqlStatement;
  private readonly insertStmt: SqlStatement;
  private readonly afterStmt: SqlStatement;
  private readonly queryStmts = new Map<string, SqlStatement>();
  /** Newest event_seq per agent, kept in memory; cleared when a transaction rolls back. */
  private readonly newest = new Map<string, number>();
  /** Event type names by id and ids by name; reloaded after a rollback (a new type may be gone). */
  readonly types: EventTypes;

  constructor(db: SqlDatabase) {
    this.db = db;
    this.maxStmt = db.prepare("SELECT MAX(event_seq) AS m FROM events WHERE agent_id = ?");
    this.floorStmt = db.prepare(
      "SELECT removed_through FROM retention_floors WHERE agent_id = ? AND family = 'events'",
    );
    this.insertStmt = db.prepare(`INSERT INTO events (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`);
    this.afterStmt = db.prepare(
      `SELECT ${COLUMNS} FROM events WHERE agent_id = ? AND event_seq > ? ORDER BY event_seq ASC LIMIT ?`,
    );
    this.types = new EventTypes(db);
  }

  newestSeq(agentId: string): number {
    let n = this.newest.get(agentId);
    if (n === undefined) {
      const max = (this.maxStmt.get(agentId) as { m: number | null }).m ?? 0;
      n = Math.max(max, this.removedThrough(agentId));
      this.newest.set(agentId, n);
    }
    return n;
  }

  /** The highest event_seq retention removed for this agent (0: nothing removed). */
  removedThrough(agentId: string): number {
    const row = this.floorStmt.get(agentId) as { removed_through: number } | undefined;
    return row?.removed_through ?? 0;
  }

  invalidate(): void {
    this.newest.clear();
    this.types.invalidate();
  }

  nextSeq(agentId: string): number {
    return this.newestSeq(agentId) + 1;
  }

  insert(e: EventEnvelope): void {
    this.newest.set(e.agent_id, e.event_seq);
    this.insertStmt.run(
      e.agent_id,
      e.event_seq,
      e.id,
      Date.parse(e.ts),
      this.types.idOf(e.type),
      // An admission's event is phrase-coded like the message row it explains (codec.ts).
      (e.type === "message_admitted" ? encodeMessageBody : encodeBody)([e.provenance, e.payload]),
    );
  }

  /** Events strictly after `afterSeq`, ascending: the replay path. */
  after(agentId: string, afterSeq: number, limit: number): EventEnvelope[] {
    return (this.afterStmt.all(agentId, afterSeq, limit) as Row[]).map((r) => this.toEnvelope(r));
  }

  query(agentId: string, q: EventQuery): EventEnvelope[] {
    const where = ["agent_id = ?"];
    const args: (string | number)[] = [agentId];
    if (q.afterSeq !== undefined) {
      where.push("event_seq > ?");
      args.push(q.afterSeq);
    }
    if (q.beforeSeq !== undefined) {
      where.push("event_seq < ?");
      args.push(q.beforeSeq);
    }
    const order = q.order === "asc" ? "ASC" : "DESC";
    const sql = `SELECT ${COLUMNS} FROM events WHERE ${where.join(" AND ")} ORDER BY event_seq ${order} LIMIT ?`;
    args.push(q.limit);
    let stmt = this.queryStmts.get(sql);
    if (!stmt) this.queryStmts.set(sql, (stmt = this.db.prepare(sql)));
    return (stmt.all(...args) as Row[]).map((r) => this.toEnvelope(r));
  }

  private toEnvelope(row: Row): EventEnvelope {
    const [provenance, payload] = decodeBody(row.body) as [
      EventEnvelope["provenance"],
      EventEnvelope["payload"],
    ];
    return {
      id: row.id,
      event_seq: row.event_seq,
      ts: new Date(row.ts).toISOString(),
      agent_id: row.agent_id,
      type: this.types.nameOf(row.type_id),
      provenance,
      payload,
    };
  }
}

/** The `event_types` table: each event type name stored once, referenced by a small id. */
export class EventTypes {
  private readonly listStmt: SqlStatement;
  private readonly addStmt: SqlStatement;
  private byName = new Map<string, number>();
  private byId = new Map<number, string>();
  private loaded = false;

  constructor(db: SqlDatabase) {
    this.listStmt = db.prepare("SELECT id, name FROM event_types");
    this.addStmt = db.prepare("INSERT INTO event_types (name) VALUES (?)");
  }

  private load(): void {
    this.byName = new Map();
    this.byId = new Map();
    for (const r of this.listStmt.all() as { id: number; name: string }[]) {
      this.byName.set(r.name, r.id);
      this.byId.set(r.id, r.name);
    }
    this.loaded = true;
  }

  invalidate(): void {
    this.loaded = false;
  }

  /** The id of a type, added on first use (inside the caller's transaction). */
  idOf(name: string): number {
    if (!this.loaded) this.load();
    let id = this.byName.get(name);
    if (id === undefined) {
      id = Number(this.addStmt.run(name).lastInsertRowid);
      this.byName.set(name, id);
      this.byId.set(id, name);
    }
    return id;
  }

  nameOf(id: number): string {
    if (!this.loaded || !this.byId.has(id)) this.load();
    const name = this.byId.get(id);
    if (name === undefined) throw new Error(`stored event has unknown type id ${id}`);
    return name;
  }
}
