// Memory search: the agent-facing recall over Holon-owned memory (MemorySearch, MemoryGet).
//
// Sources: `agent_home/memory/self.md` and `memory/operator.md` (agent-scoped notes), briefs,
// finalized context episodes and work items. The index (store/memory-index.ts) is derived
// and disposable: it is brought up to date before every search and expansion — records by
// their sequence watermarks, work items and the two memory files by content hash (so edits
// made outside Holon, by a shell or an editor, are picked up) — and rebuilt from scratch
// when its file is missing or damaged, its schema changed, or the dirty marker
// (`.holon/indexes/memory.dirty`) is present.
//
// Chinese, Japanese and Korean text has no spaces for the FTS5 tokenizer to split on, so
// both indexed and query text are expanded: every run of CJK characters becomes its
// overlapping two-character pieces (and single characters, for one-character queries).
// The expansion lives only in the search terms; bodies are kept and returned exactly.
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { AgentRecord } from "../domain/agent.ts";
import { HolonError } from "../domain/errors.ts";
import type { WorkItemRecord } from "../domain/work-item.ts";
import { AGENT_HOME_WORKSPACE_ID } from "../domain/workspace.ts";
import type { Store } from "../store/db.ts";
import { MemoryIndexDb, type IndexedDoc } from "../store/memory-index.ts";
import { isCjk } from "./tokens.ts";

export const MEMORY_GET_DEFAULT_CHARS = 12_000;
export const MEMORY_GET_MAX_CHARS = 50_000;
/** Largest slice of a memory file that is indexed and returned. */
const MAX_FILE_BYTES = 1_000_000;
const MAX_QUERY_TERMS = 32;
const SNIPPET_CHARS = 240;
const PAGE = 1_000;

export const MEMORY_KINDS = ["memory_file", "brief", "episode", "work_item"] as const;
export type MemoryKind = (typeof MEMORY_KINDS)[number];
export const SOURCE_REF_RE = /^mem:(file|brief|episode|work):[A-Za-z0-9_.-]{1,120}$/;

export type MemoryHit = {
  kind: string;
  source_ref: string;
  scope_kind: "agent" | "workspace";
  workspace_id: string | null;
  agent_id: string;
  source_path: string | null;
  title: string;
  snippet: string;
  score: number;
  updated_at: string;
  metadata: Record<string, unknown>;
};

export type MemoryDocument = Omit<MemoryHit, "snippet" | "score"> & {
  content: string;
  truncated: boolean;
  total_chars: number;
};

export function indexPaths(agentHome: string) {
  const dir = join(agentHome, ".holon", "indexes");
  return { dir, index: join(dir, "memory.sqlite3"), dirty: join(dir, "memory.dirty") };
}

/** Search terms: Latin words lower-cased as they are; CJK runs as bigrams (and unigrams). */
export function expandTerms(text: string, forQuery = false): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/[\p{L}\p{N}_]+/gu)) {
    let latin = "";
    let cjk = "";
    const flush = () => {
      if (latin) out.push(latin.toLowerCase());
      latin = "";
      if (cjk) {
        const chars = [...cjk];
        if (chars.length === 1 || !forQuery) out.push(...chars);
        for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!);
      }
      cjk = "";
    };
    for (const ch of m[0]) {
      if (isCjk(ch.codePointAt(0)!)) {
        if (latin) flush();
        cjk += ch;
      } else {
        if (cjk) flush();
        latin += ch;
      }
    }
    flush();
  }
  return out;
}

export class MemoryIndexService {
  private readonly store: Store;

  constructor(store: Store) {
    this.store = store;
  }

  /** Ask for a full rebuild before the next search (a source changed in a way sync cannot see). */
  markDirty(agentHome: string): void {
    const p = indexPaths(agentHome);
    try {
      if (existsSync(p.dir))
        writeFileSync(p.dirty, new Date().toISOString() + "\n", { mode: 0o600 });
    } catch {
      // the index is disposable; a missed marker only delays a repair
    }
  }

  async search(
    agent: AgentRecord,
    query: string,
    opts: { limit?: number; include_all_workspaces?: boolean; kinds?: string[] } = {},
  ): Promise<{ results: MemoryHit[]; workspace_id: string | null; indexed: number }> {
    const terms = [...new Set(expandTerms(query, true))].slice(0, MAX_QUERY_TERMS);
    return await this.withIndex(agent, (db) => {
      const workspaceId = activeWorkspace(agent);
      if (terms.length === 0)
        return { results: [], workspace_id: workspaceId, indexed: db.count() };
      const match = terms.map((t) => `"${t}"`).join(" OR ");
      const hits = db.search(match, {
        workspaceId,
        all: opts.include_all_workspaces ?? false,
        kinds: opts.kinds?.length ? opts.kinds : null,
        limit: opts.limit ?? 8,
      });
      return {
        workspace_id: workspaceId,
        indexed: db.count(),
        results: hits.map((h) => ({
          kind: h.kind,
          source_ref: h.source_ref,
          scope_kind: h.scope_kind,
          workspace_id: h.workspace_id,
          agent_id: h.agent_id,
          source_path: h.source_path,
          title: h.title,
          snippet: snippet(h.body, query, terms),
          score: h.score,
          updated_at: h.updated_at,
          metadata: h.metadata,
        })),
      };
    });
  }

  async get(
    agent: AgentRecord,
    sourceRef: string,
    maxChars = MEMORY_GET_DEFAULT_CHARS,
  ): Promise<MemoryDocument> {
    if (!SOURCE_REF_RE.test(sourceRef)) {
      throw new HolonError("invalid_source_ref", "source_ref is not a memory handle", {
        hint: "copy a source_ref exactly as MemorySearch returned it (mem:<kind>:<id>)",
      });
    }
    if (!Number.isInteger(maxChars) || maxChars < 1 || maxChars > MEMORY_GET_MAX_CHARS) {
      throw new HolonError(
        "invalid_request",
        `max_chars must be between 1 and ${MEMORY_GET_MAX_CHARS}`,
      );
    }
    return await this.withIndex(agent, (db) => {
      const doc = db.get(sourceRef);
      if (!doc || doc.agent_id !== agent.agent_id) {
        throw new HolonError("memory_source_not_found", `no memory source ${sourceRef}`, {
          status: 404,
          hint: "run MemorySearch again: the source may have been removed since",
        });
      }
      const chars = [...doc.body];
      const truncated = chars.length > maxChars;
      const { body: _body, hash: _hash, ...prov } = doc;
      return {
        ...prov,
        content: truncated ? chars.slice(0, maxChars).join("") : doc.body,
        truncated,
        total_chars: chars.length,
      };
    });
  }

  /** Opens the index, brings it up to date and runs `fn`; the file is closed after. */
  async withIndex<T>(agent: AgentRecord, fn: (db: MemoryIndexDb) => T): Promise<T> {
    const p = indexPaths(agent.agent_home);
    let db = MemoryIndexDb.open(p.index);
    try {
      // Retention removed old briefs: their documents must go too, so build afresh.
      const oldest = String((await this.store.briefs.after(agent.agent_id, 0, 1))[0]?.seq ?? 0);
      const known = db.meta("briefs_oldest");
      if (!db.fresh && (existsSync(p.dirty) || (known !== undefined && known !== oldest))) {
        db.close();
        rmSync(p.index, { force: true });
        db = MemoryIndexDb.open(p.index);
      }
      rmSync(p.dirty, { force: true });
      await this.sync(agent, db);
      db.setMeta("briefs_oldest", oldest);
      return fn(db);
    } finally {
      db.close();
    }
  }

  /** Full rebuild (`holon` tooling and the benchmark). */
  async rebuild(agent: AgentRecord): Promise<number> {
    const p = indexPaths(agent.agent_home);
    rmSync(p.index, { force: true });
    return await this.withIndex(agent, (db) => db.count());
  }

  private async sync(agent: AgentRecord, db: MemoryIndexDb): Promise<void> {
    const id = agent.agent_id;
    await db.tx(async () => {
      // The two curated memory files, by content hash.
      for (const name of ["self", "operator"] as const) {
        const path = join(agent.agent_home, "memory", `${name}.md`);
        const ref = `mem:file:${name}`;
        const body = readBounded(path);
        if (body === undefined) {
          db.remove(ref);
          continue;
        }
        const hash = sha(body);
        if (db.hashOf(ref) === hash) continue;
        const title = /^#\s+(.+)$/m.exec(body)?.[1]?.trim() ?? `memory/${name}.md`;
        put(db, {
          source_ref: ref,
          kind: "memory_file",
          scope_kind: "agent",
          workspace_id: null,
          agent_id: id,
          source_path: path,
          title,
          body,
          hash,
          updated_at: statSync(path).mtime.toISOString(),
          metadata: { file: `memory/${name}.md` },
        });
      }
      // Briefs, by sequence.
      let seq = Number(db.meta("briefs_seq") ?? 0);
      for (;;) {
        const page = await this.store.briefs.after(id, seq, PAGE);
        for (const { brief } of page) {
          const ws = scopedWorkspace(brief.workspace_id);
          put(db, {
            source_ref: `mem:brief:${brief.id}`,
            kind: "brief",
            scope_kind: ws ? "workspace" : "agent",
            workspace_id: ws,
            agent_id: id,
            source_path: null,
            title: `${brief.kind} brief ${brief.created_at}`,
            body: brief.text,
            hash: "",
            updated_at: brief.created_at,
            metadata: {
              brief_kind: brief.kind,
              ...(brief.work_item_id ? { work_item_id: brief.work_item_id } : {}),
              ...(brief.related_message_id ? { message_id: brief.related_message_id } : {}),
            },
          });
        }
        if (page.length === 0) break;
        seq = page.at(-1)!.seq;
        if (page.length < PAGE) break;
      }
      db.setMeta("briefs_seq", String(seq));
      // Episodes, by sequence.
      let eseq = Number(db.meta("episodes_seq") ?? 0);
      for (;;) {
        const page = await this.store.memory.episodesAfter(id, eseq, PAGE);
        for (const { episode: e } of page) {
          const ws = scopedWorkspace(e.workspace_id ?? undefined);
          put(db, {
            source_ref: `mem:episode:${e.id}`,
            kind: "episode",
            scope_kind: ws ? "workspace" : "agent",
            workspace_id: ws,
            agent_id: id,
            source_path: null,
            title: `episode turns ${e.turn_range[0]}–${e.turn_range[1]}${e.work_item_id ? ` (${e.work_item_id})` : ""}`,
            body: [
              e.summary,
              ...e.decisions.map((d) => `Result: ${d}`),
              ...e.commands.map((c) => `Command: ${c}`),
            ].join("\n"),
            hash: "",
            updated_at: e.created_at,
            metadata: { boundary: e.boundary, files: e.files, work_item_id: e.work_item_id },
          });
        }
        if (page.length === 0) break;
        eseq = page.at(-1)!.seq;
        if (page.length < PAGE) break;
      }
      db.setMeta("episodes_seq", String(eseq));
      // Work items: few and mutable; by hash, and removed ones dropped.
      const items = [
        ...(await this.store.workItems.withState(id, "open")),
        ...(await this.store.workItems.recentWithState(id, "completed", 500)),
      ];
      const live = new Set<string>();
      for (const item of items) {
        const ref = `mem:work:${item.id}`;
        live.add(ref);
        const body = workItemBody(item);
        const hash = sha(body);
        if (db.hashOf(ref) === hash) continue;
        const ws = scopedWorkspace(item.workspace_id);
        put(db, {
          source_ref: ref,
          kind: "work_item",
          scope_kind: ws ? "workspace" : "agent",
          workspace_id: ws,
          agent_id: id,
          source_path: item.plan_artifact.path,
          title: item.objective.slice(0, 200),
          body,
          hash,
          updated_at: item.updated_at,
          metadata: { state: item.state, plan_status: item.plan_status },
        });
      }
      for (const ref of db.refsOfKind("work_item")) if (!live.has(ref)) db.remove(ref);
    });
  }
}

function put(db: MemoryIndexDb, doc: IndexedDoc): void {
  db.upsert(doc, expandTerms(doc.body).join(" "));
}

function workItemBody(item: WorkItemRecord): string {
  const lines = [`Objective: ${item.objective}`, `State: ${item.state}; plan: ${item.plan_status}`];
  if (item.plan_artifact.preview.trim()) lines.push("Plan:", item.plan_artifact.preview.trim());
  for (const t of item.todo_list) lines.push(`- [${t.state}] ${t.text}`);
  if (item.blocked_by) lines.push(`Blocked by: ${item.blocked_by}`);
  if (item.result_summary) lines.push(`Result: ${item.result_summary}`);
  return lines.join("\n");
}

function activeWorkspace(agent: AgentRecord): string | null {
  return scopedWorkspace(agent.active_workspace?.workspace_id);
}

/** Records written in the agent-home fallback workspace belong to the agent scope. */
function scopedWorkspace(id: string | undefined | null): string | null {
  return id && id !== AGENT_HOME_WORKSPACE_ID ? id : null;
}

/** A memory file's text (at most MAX_FILE_BYTES); a link or anything but a file is not read. */
function readBounded(path: string): string | undefined {
  let fd: number;
  try {
    if (!lstatSync(path).isFile()) return undefined;
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(Math.min(statSync(path).size, MAX_FILE_BYTES));
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** A window of the exact body around the first query term found in it. */
function snippet(body: string, query: string, terms: string[]): string {
  const lower = body.toLowerCase();
  let at = -1;
  for (const t of [query.toLowerCase().trim(), ...terms]) {
    if (!t) continue;
    at = lower.indexOf(t);
    if (at >= 0) break;
  }
  const start = Math.max(0, at < 0 ? 0 : at - SNIPPET_CHARS / 3);
  const text = body
    .slice(start, start + SNIPPET_CHARS)
    .replace(/\s+/g, " ")
    .trim();
  return (start > 0 ? "…" : "") + text + (start + SNIPPET_CHARS < body.length ? "…" : "");
}
