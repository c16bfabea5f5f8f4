// The per-agent memory search index: a separate, disposable SQLite file
// (`agent_home/.holon/indexes/memory.sqlite3`) with one row per indexed source (its exact
// original body and provenance) and an FTS5 table over its search terms (the text with CJK
// bigram expansion, src/memory/search.ts). Any doubt about the file (an open error, another
// schema) and it is deleted and rebuilt from the sources of truth.
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";

const SCHEMA = "memory-index-1";

export type IndexedDoc = {
  source_ref: string;
  kind: string;
  scope_kind: "agent" | "workspace";
  workspace_id: string | null;
  agent_id: string;
  source_path: string | null;
  title: string;
  body: string;
  hash: string;
  updated_at: string;
  metadata: Record<string, unknown>;
};

export type IndexHit = IndexedDoc & { score: number };

export class MemoryIndexDb {
  private readonly db: DatabaseSync;
  private readonly stmts: Record<string, StatementSync>;
  /** True when the file was created (or recreated) by this open: it needs a full build. */
  readonly fresh: boolean;

  private constructor(db: DatabaseSync, fresh: boolean) {
    this.db = db;
    this.fresh = fresh;
    this.stmts = {
      hash: db.prepare("SELECT hash FROM docs WHERE source_ref = ?"),
      get: db.prepare("SELECT * FROM docs WHERE source_ref = ?"),
      id: db.prepare("SELECT id FROM docs WHERE source_ref = ?"),
      insert: db.prepare(
        `INSERT INTO docs (source_ref, kind, scope_kind, workspace_id, agent_id, source_path, title, body, hash, updated_at, metadata)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      del: db.prepare("DELETE FROM docs WHERE id = ?"),
      ftsInsert: db.prepare("INSERT INTO docs_fts (rowid, title, terms) VALUES (?, ?, ?)"),
      ftsDel: db.prepare("DELETE FROM docs_fts WHERE rowid = ?"),
      metaGet: db.prepare("SELECT value FROM meta WHERE key = ?"),
      metaSet: db.prepare(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ),
      refs: db.prepare("SELECT source_ref FROM docs WHERE kind = ?"),
      count: db.prepare("SELECT count(*) AS n FROM docs"),
    };
  }

  /** Opens (or recreates) the index file, private to the user. */
  static open(path: string): MemoryIndexDb {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    for (let attempt = 0; ; attempt++) {
      try {
        const db = new DatabaseSync(path);
        chmodSync(path, 0o600);
        db.exec("PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF;");
        const has = db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
          .get();
        const schema = has
          ? (db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as
              { value: string } | undefined)
          : undefined;
        if (schema?.value === SCHEMA) return new MemoryIndexDb(db, false);
        db.exec(`
          DROP TABLE IF EXISTS docs_fts; DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS meta;
          CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
          CREATE TABLE docs (
            id INTEGER PRIMARY KEY,
            source_ref TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            scope_kind TEXT NOT NULL,
            workspace_id TEXT,
            agent_id TEXT NOT NULL,
            source_path TEXT,
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            hash TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            metadata TEXT NOT NULL
          );
          CREATE INDEX docs_kind ON docs (kind);
          CREATE VIRTUAL TABLE docs_fts USING fts5(title, terms, tokenize = 'unicode61 remove_diacritics 2');
        `);
        db.prepare("INSERT INTO meta (key, value) VALUES ('schema', ?)").run(SCHEMA);
        return new MemoryIndexDb(db, true);
      } catch (err) {
        if (attempt > 0) throw err;
        // Disposable: a damaged file is removed and built again.
        rmSync(path, { force: true });
      }
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  /** A transaction on the index file; its body may await reads of the main store. */
  async tx<T>(fn: () => T | Promise<T>): Promise<T> {
    this.db.exec("BEGIN");
    try {
      const r = await fn();
      this.db.exec("COMMIT");
      return r;
    } catch (err) {
      this.db.exec("ROLLBACK");
      throw err;
    }
  }

  hashOf(sourceRef: string): string | undefined {
    return (this.stmts.hash!.get(sourceRef) as { hash: string } | undefined)?.hash;
  }

  /** Inserts or replaces one document with its search terms. */
  upsert(doc: IndexedDoc, terms: string): void {
    this.remove(doc.source_ref);
    const r = this.stmts.insert!.run(
      doc.source_ref,
      doc.kind,
      doc.scope_kind,
      doc.workspace_id,
      doc.agent_id,
      doc.source_path,
      doc.title,
      doc.body,
      doc.hash,
      doc.updated_at,
      JSON.stringify(doc.metadata),
    );
    this.stmts.ftsInsert!.run(r.lastInsertRowid, doc.title, terms);
  }

  remove(sourceRef: string): void {
    const row = this.stmts.id!.get(sourceRef) as { id: number } | undefined;
    if (!row) return;
    this.stmts.del!.run(row.id);
    this.stmts.ftsDel!.run(row.id);
  }

  refsOfKind(kind: string): string[] {
    return (this.stmts.refs!.all(kind) as { source_ref: string }[]).map((r) => r.source_ref);
  }

  count(): number {
    return (this.stmts.count!.get() as { n: number }).n;
  }

  get(sourceRef: string): IndexedDoc | undefined {
    const row = this.stmts.get!.get(sourceRef) as Record<string, unknown> | undefined;
    return row ? toDoc(row) : undefined;
  }

  meta(key: string): string | undefined {
    return (this.stmts.metaGet!.get(key) as { value: string } | undefined)?.value;
  }

  setMeta(key: string, value: string): void {
    this.stmts.metaSet!.run(key, value);
  }

  /**
   * FTS5 search. `match` is a complete FTS5 query built from quoted terms; results are
   * limited to agent-scoped documents plus, unless `workspaceId` is null, that workspace's.
   */
  search(
    match: string,
    opts: { workspaceId: string | null; all: boolean; kinds: string[] | null; limit: number },
  ): IndexHit[] {
    const where = ["docs_fts MATCH ?"];
    const params: (string | number)[] = [match];
    if (!opts.all) {
      where.push("(d.scope_kind = 'agent' OR d.workspace_id = ?)");
      params.push(opts.workspaceId ?? "");
    }
    if (opts.kinds?.length) {
      where.push(`d.kind IN (${opts.kinds.map(() => "?").join(", ")})`);
      params.push(...opts.kinds);
    }
    params.push(opts.limit);
    const rows = this.db
      .prepare(
        `SELECT d.*, bm25(docs_fts, 2.0, 1.0) AS rank FROM docs_fts JOIN docs d ON d.id = docs_fts.rowid
         WHERE ${where.join(" AND ")} ORDER BY rank LIMIT ?`,
      )
      .all(...params) as Record<string, unknown>[];
    return rows.map((r) => ({ ...toDoc(r), score: Math.round(-Number(r.rank) * 1000) / 1000 }));
  }
}

function toDoc(r: Record<string, unknown>): IndexedDoc {
  return {
    source_ref: String(r.source_ref),
    kind: String(r.kind),
    scope_kind: r.scope_kind === "workspace" ? "workspace" : "agent",
    workspace_id: (r.workspace_id as string | null) ?? null,
    agent_id: String(r.agent_id),
    source_path: (r.source_path as string | null) ?? null,
    title: String(r.title),
    body: String(r.body),
    hash: String(r.hash),
    updated_at: String(r.updated_at),
    metadata: JSON.parse(String(r.metadata)) as Record<string, unknown>,
  };
}
