// Cross-turn continuity: working memory and context episodes.
//
// At each turn boundary (the run settled; RunObserver.afterRun, inside the settle
// transaction) the runtime derives the agent's working memory deterministically from its
// work items, the turn's briefs, the tool evidence of the turn's tool calls (handed over in
// memory by the runtime, as the transcript recorded them: never read back) and the way the
// turn ended (a wait or sleep). A changed snapshot gets a new revision and a short delta the
// next model-visible turn is shown once. The same evidence merges into the open episode
// builder; on a semantic boundary (active work switched, a work item completed, the agent
// went to wait or sleep, or the builder reached its cap) the builder is finalized into an
// immutable episode. The database is the record; `agent_home/.holon/ledger/
// context_episodes.jsonl` is an append-only mirror, rewritten from the database whenever
// the two disagree.
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import type { RunInfo, RunObserver, RunToolCall } from "../agent/runtime.ts";
import type { TurnOutcome } from "../domain/closure.ts";
import type {
  EpisodeBuilder,
  EpisodeRecord,
  WorkingMemoryRecord,
  WorkingMemorySnapshot,
} from "../domain/memory.ts";
import { bodyText } from "../domain/message.ts";
import { todoProgress } from "../domain/work-item.ts";
import type { Store } from "../store/db.ts";
import { atomicWriteFile } from "../store/files.ts";
import { clip } from "./recap.ts";

const KEEP_FILES = 12;
const KEEP_COMMANDS = 8;
const KEEP_ERRORS = 4;
const KEEP_TURN_TOOLS = 24;
const EPISODE_TURN_CAP = 8;
const EPISODE_SUMMARY_CHARS = 1_200;
const TEST_COMMAND =
  /\b(test|vitest|jest|pytest|cargo test|go test|npm run (test|check|lint|typecheck)|make check|tsc)\b/;

export type TurnEvidence = {
  files: string[];
  commands: string[];
  verification: string[];
  errors: string[];
  /** The tools the turn ran, with counts and failures (`ExecCommand 3× (1 failed)`). */
  tools: string;
};

export function episodesMirrorPath(agentHome: string): string {
  return join(agentHome, ".holon", "ledger", "context_episodes.jsonl");
}

export class ContinuityService {
  private readonly store: Store;
  /**
   * Runs in flight. Their prompt was built from the working memory as it is at their end:
   * only this service writes it, at a run's end, and an agent runs one message at a time.
   */
  private readonly prompting = new Set<string>();
  /** Each mirror's size and line count as this host last wrote it, by path. */
  private readonly mirrorSize = new Map<string, number>();

  private readonly compactionStats: (runId: string) => {
    compactions: number;
    rounds_compacted: number;
  };

  constructor(
    store: Store,
    compactionStats: (runId: string) => { compactions: number; rounds_compacted: number } = () => ({
      compactions: 0,
      rounds_compacted: 0,
    }),
  ) {
    this.store = store;
    this.compactionStats = compactionStats;
  }

  observer(): RunObserver {
    return {
      beforeRun: (run) => {
        this.prompting.add(run.run_id);
      },
      afterRun: async (run) => {
        // Memory is derived state: a failure here is recorded, never allowed to break the
        // settle transaction of the run.
        try {
          await this.store.memory.atomically(async () => await this.settle(run));
        } catch (err) {
          await this.store.appendEvent(run.agent_id, {
            type: "runtime_error",
            payload: {
              run_id: run.run_id,
              phase: "working_memory",
              summary:
                `working memory was not updated: ${err instanceof Error ? err.message : String(err)}`.slice(
                  0,
                  500,
                ),
              kind: "working_memory_failed",
            },
          });
        }
      },
    };
  }

  workingMemory(agentId: string): Promise<WorkingMemoryRecord | undefined> {
    return this.store.memory.workingMemory(agentId);
  }

  /** The turn boundary: derive working memory, merge the episode builder, finalize on a boundary. */
  async settle(
    run: RunInfo & { outcome: TurnOutcome; tools: readonly RunToolCall[] },
  ): Promise<void> {
    const started = this.prompting.delete(run.run_id);
    if (run.outcome.kind === "liveness_only") return;
    const { store } = this;
    const agent = await store.agents.get(run.agent_id);
    if (!agent) return;
    const now = store.clock.now().toISOString();
    const prev = await store.memory.workingMemory(run.agent_id);
    // The revision the run's prompt was built from (see `prompting`).
    const prompted = started ? (prev?.revision ?? 0) : undefined;
    const evidence = turnEvidence(run.tools);
    const stats = this.compactionStats(run.run_id);
    const brief = (await store.briefs.recent(run.agent_id, 8))
      .filter((b) => b.related_message_id === run.message.id)
      .at(-1);
    const request = clip(bodyText(run.message.body), 300);
    const snapshot = await deriveSnapshot(store, run.agent_id, prev?.current, {
      request,
      result: brief ? clip(brief.text, 400) : undefined,
      evidence,
      outcome: run.outcome,
    });
    const changed = !prev || JSON.stringify(prev.current) !== JSON.stringify(snapshot);
    const lastPrompted = Math.max(prev?.last_prompted_revision ?? 0, prompted ?? 0);
    const revision = (prev?.revision ?? 0) + (changed ? 1 : 0);
    const delta = changed
      ? deltaLines(prev?.current, snapshot)
      : lastPrompted >= revision
        ? []
        : (prev?.pending_delta ?? []);

    // Episodes.
    let builder = prev?.active_episode ?? null;
    let archived = prev?.archived_episode_count ?? (await store.memory.episodeCount(run.agent_id));
    // The settle transaction counts the message after the observers ran.
    const turn = agent.total_message_count + 1;
    const workItemId = agent.current_work_item_id ?? null;
    const workspaceId = agent.active_workspace?.workspace_id ?? null;
    const finalize = async (b: EpisodeBuilder, boundary: EpisodeRecord["boundary"]) => {
      const episode = await finalizeEpisode(store, run.agent_id, b, boundary, snapshot, now);
      await store.memory.addEpisode(episode);
      archived++;
      await this.mirror(agent.agent_home, run.agent_id, episode);
    };
    if (builder && builder.work_item_id !== workItemId && builder.turns > 0) {
      await finalize(builder, "work_switch");
      builder = null;
    }
    builder ??= {
      id: store.ids.next("ep"),
      started_at: now,
      first_turn: turn,
      last_turn: turn,
      first_message_count: turn,
      last_message_count: turn,
      work_item_id: workItemId,
      workspace_id: workspaceId,
      turns: 0,
      requests: [],
      results: [],
      files: [],
      commands: [],
      verification: [],
      errors: [],
    };
    builder = {
      ...builder,
      last_turn: turn,
      last_message_count: turn,
      turns: builder.turns + 1,
      requests: newest([...builder.requests, clip(request, 160)], 6),
      results: brief ? newest([...builder.results, clip(brief.text, 240)], 6) : builder.results,
      files: newestUnique([...builder.files, ...evidence.files], 16),
      commands: newestUnique([...builder.commands, ...evidence.commands], 10),
      verification: newestUnique([...builder.verification, ...evidence.verification], 6),
      errors: newest([...builder.errors, ...evidence.errors], 4),
    };
    const completed = run.tools.some(
      (t) =>
        t.tool_name === "CompleteWorkItem" &&
        (t.envelope as { status?: string } | undefined)?.status === "success",
    );
    const waiting =
      run.outcome.kind === "sleep_until" ||
      run.outcome.kind === "rest" ||
      run.outcome.kind === "await_tasks" ||
      run.outcome.kind === "await_external" ||
      run.outcome.kind === "await_operator";
    const boundary: EpisodeRecord["boundary"] | undefined = completed
      ? "result_checkpoint"
      : waiting
        ? "waiting"
        : builder.turns >= EPISODE_TURN_CAP
          ? "cap"
          : undefined;
    if (boundary) {
      await finalize(builder, boundary);
      builder = null;
    }
    await store.memory.putWorkingMemory({
      agent_id: run.agent_id,
      revision,
      updated_at: changed ? now : (prev?.updated_at ?? now),
      current: snapshot,
      pending_delta: delta,
      last_prompted_revision: lastPrompted,
      active_episode: builder,
      archived_episode_count: archived,
      compactions_total: (prev?.compactions_total ?? 0) + stats.compactions,
      turn_tools: evidence.tools
        ? [
            ...(prev?.turn_tools ?? []).filter((t) => t.message_id !== run.message.id),
            { message_id: run.message.id, tools: evidence.tools },
          ].slice(-KEEP_TURN_TOOLS)
        : (prev?.turn_tools ?? []),
      compacted_rounds_total: (prev?.compacted_rounds_total ?? 0) + stats.rounds_compacted,
    });
  }

  /**
   * Appends to the JSONL mirror; rewrites it from the database when the two disagree. When
   * the file is the size this host last left it at, its line count is known and the episode
   * is appended (a stat, no read). Otherwise its lines are counted against the episodes the
   * database keeps, which retention may have trimmed: never against the number ever archived,
   * which after a trim would rewrite the whole mirror at every episode.
   */
  private async mirror(agentHome: string, agentId: string, episode: EpisodeRecord): Promise<void> {
    const path = episodesMirrorPath(agentHome);
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const size = existsSync(path) ? statSync(path).size : 0;
      const inSync =
        this.mirrorSize.get(path) === size ||
        (size === 0 ? 0 : readFileSync(path, "utf8").split("\n").filter(Boolean).length) ===
          (await this.store.memory.episodeCount(agentId)) - 1;
      if (inSync) {
        const line = JSON.stringify(episode) + "\n";
        appendFileSync(path, line, { mode: 0o600 });
        this.remember(path, size + Buffer.byteLength(line));
      } else {
        await this.rebuildMirror(agentHome, agentId, episode);
      }
    } catch {
      // The mirror is for people and tools; the database stays the record.
      this.mirrorSize.delete(path);
    }
  }

  /** The mirror's size as this host last left it (the newest 1,024 mirrors). */
  private remember(path: string, size: number): void {
    this.mirrorSize.delete(path);
    this.mirrorSize.set(path, size);
    if (this.mirrorSize.size > 1024) this.mirrorSize.delete(this.mirrorSize.keys().next().value!);
  }

  /** Rewrites the mirror from the database (plus an episode not committed yet). */
  async rebuildMirror(agentHome: string, agentId: string, pending?: EpisodeRecord): Promise<void> {
    const out: string[] = [];
    let seq = 0;
    for (;;) {
      const page = await this.store.memory.episodesAfter(agentId, seq, 500);
      if (page.length === 0) break;
      for (const p of page) out.push(JSON.stringify(p.episode));
      seq = page.at(-1)!.seq;
    }
    if (pending && !out.some((l) => l.includes(`"id":"${pending.id}"`))) {
      out.push(JSON.stringify(pending));
    }
    const path = episodesMirrorPath(agentHome);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const text = out.map((l) => l + "\n").join("");
    atomicWriteFile(path, text, { mode: 0o600 });
    this.remember(path, Buffer.byteLength(text));
  }
}

/** Files, commands, verification and errors from one run's tool calls. */
export function turnEvidence(calls: readonly RunToolCall[]): TurnEvidence {
  const ev: TurnEvidence = { files: [], commands: [], verification: [], errors: [], tools: "" };
  const counts = new Map<string, { n: number; failed: number }>();
  for (const e of calls) {
    const name = e.tool_name;
    const c = counts.get(name) ?? { n: 0, failed: 0 };
    counts.set(name, c);
    c.n++;
    const env = e.envelope as
      | { status?: string; summary_text?: string; error?: { kind?: string; message?: string } }
      | undefined;
    let args: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(e.arguments);
      if (parsed && typeof parsed === "object") args = parsed as Record<string, unknown>;
    } catch {
      // a cut or malformed argument text: no key fields
    }
    const cmd = typeof args.cmd === "string" ? args.cmd : undefined;
    if (cmd) {
      const c = clip(cmd, 120);
      ev.commands.push(c);
      if (TEST_COMMAND.test(cmd))
        ev.verification.push(`${c} → ${env?.summary_text ?? env?.status ?? "?"}`);
    }
    // Files a successful edit reports (ApplyPatch's result lists them).
    const files = (env as { result?: { files?: { path?: unknown }[] } } | undefined)?.result?.files;
    if (env?.status === "success" && Array.isArray(files)) {
      for (const f of files) if (typeof f.path === "string") ev.files.push(f.path);
    }
    if (env?.status === "error") {
      c.failed++;
      ev.errors.push(
        clip(
          `${name}: ${env.error?.kind ?? "error"}: ${env.error?.message ?? env.summary_text ?? ""}`,
          200,
        ),
      );
    }
  }
  ev.tools = [...counts]
    .map(([name, c]) => `${name} ${c.n}×${c.failed ? ` (${c.failed} failed)` : ""}`)
    .join(", ");
  return ev;
}

async function deriveSnapshot(
  store: Store,
  agentId: string,
  prev: WorkingMemorySnapshot | undefined,
  turn: {
    request: string;
    result: string | undefined;
    evidence: TurnEvidence;
    outcome: TurnOutcome;
  },
): Promise<WorkingMemorySnapshot> {
  const agent = (await store.agents.get(agentId))!;
  const current = agent.current_work_item_id
    ? await store.workItems.get(agent.current_work_item_id)
    : undefined;
  let currentView: WorkingMemorySnapshot["current_work_item"] = null;
  if (current && current.state === "open") {
    const p = todoProgress(current.todo_list);
    const next =
      current.todo_list.find((t) => t.state === "in_progress") ??
      current.todo_list.find((t) => t.state === "pending");
    currentView = {
      id: current.id,
      objective: clip(current.objective, 300),
      plan_status: current.plan_status,
      todos: `${p.done}/${p.total} done`,
    };
    if (next) currentView.next_todo = clip(next.text, 160);
    if (current.blocked_by) currentView.blocked_by = clip(current.blocked_by, 200);
  }
  const o = turn.outcome;
  const waiting =
    o.kind === "sleep_until"
      ? `sleeping until ${o.wake_at}`
      : o.kind === "await_tasks"
        ? `waiting for tasks ${o.task_ids.slice(0, 4).join(", ")}`
        : o.kind === "await_external" || o.kind === "await_operator"
          ? clip(
              `${o.kind === "await_operator" ? "waiting for the operator" : "waiting"}: ${o.detail}`,
              200,
            )
          : o.kind === "retry_at"
            ? `provider rate-limited; retrying at ${o.retry_at}`
            : null;
  return {
    current_work_item: currentView,
    open_work_items: await store.workItems.count(agentId, "open"),
    last_request: turn.request,
    last_result:
      turn.result ??
      (o.kind === "failed" ? clip(`failed: ${o.summary}`, 400) : (prev?.last_result ?? "")),
    files_touched: newestUnique(
      [...(prev?.files_touched ?? []), ...turn.evidence.files],
      KEEP_FILES,
    ),
    commands: newestUnique([...(prev?.commands ?? []), ...turn.evidence.commands], KEEP_COMMANDS),
    recent_errors: newest([...(prev?.recent_errors ?? []), ...turn.evidence.errors], KEEP_ERRORS),
    waiting,
  };
}

function deltaLines(
  prev: WorkingMemorySnapshot | undefined,
  next: WorkingMemorySnapshot,
): string[] {
  if (!prev) return ["working memory started"];
  const out: string[] = [];
  const a = prev.current_work_item;
  const b = next.current_work_item;
  if (a?.id !== b?.id)
    out.push(
      b
        ? `current work item is now ${b.id}: ${clip(b.objective, 120)}`
        : `no current work item (was ${a!.id})`,
    );
  else if (a && b && a.todos !== b.todos) out.push(`todos of ${b.id}: ${a.todos} → ${b.todos}`);
  if (prev.open_work_items !== next.open_work_items)
    out.push(`open work items: ${prev.open_work_items} → ${next.open_work_items}`);
  const added = (x: string[], y: string[]) => y.filter((v) => !x.includes(v));
  const f = added(prev.files_touched, next.files_touched);
  if (f.length) out.push(`files touched: ${f.slice(0, 6).join(", ")}`);
  const e = added(prev.recent_errors, next.recent_errors);
  if (e.length) out.push(`new errors: ${e.slice(0, 2).join(" | ")}`);
  if (prev.waiting !== next.waiting)
    out.push(next.waiting ? `now ${next.waiting}` : "no longer waiting");
  if (prev.last_result !== next.last_result && next.last_result)
    out.push(`last result: ${clip(next.last_result, 160)}`);
  return out.slice(0, 8);
}

async function finalizeEpisode(
  store: Store,
  agentId: string,
  b: EpisodeBuilder,
  boundary: EpisodeRecord["boundary"],
  snapshot: WorkingMemorySnapshot,
  now: string,
): Promise<EpisodeRecord> {
  const item = b.work_item_id ? await store.workItems.get(b.work_item_id) : undefined;
  const carry =
    item && item.state === "open"
      ? item.todo_list
          .filter((t) => t.state !== "completed")
          .map((t) => clip(t.text, 120))
          .slice(0, 6)
      : [];
  const parts: string[] = [];
  parts.push(
    `Turns ${b.first_turn}–${b.last_turn}${item ? ` on ${item.id} (${clip(item.objective, 120)})` : ""}.`,
  );
  if (b.requests.length) parts.push(`Asked: ${b.requests.map((r) => clip(r, 100)).join(" / ")}.`);
  if (b.results.length) parts.push(`Answered: ${b.results.map((r) => clip(r, 160)).join(" / ")}.`);
  if (b.files.length) parts.push(`Files: ${b.files.slice(-8).join(", ")}.`);
  if (b.commands.length)
    parts.push(
      `Commands: ${b.commands
        .slice(-4)
        .map((c) => clip(c, 60))
        .join("; ")}.`,
    );
  if (b.verification.length) parts.push(`Verified: ${b.verification.slice(-2).join("; ")}.`);
  if (b.errors.length) parts.push(`Errors: ${b.errors.slice(-2).join("; ")}.`);
  if (carry.length) parts.push(`Still open: ${carry.join("; ")}.`);
  if (boundary === "waiting" && snapshot.waiting) parts.push(`Then ${snapshot.waiting}.`);
  return {
    id: b.id,
    agent_id: agentId,
    created_at: now,
    started_at: b.started_at,
    turn_range: [b.first_turn, b.last_turn],
    message_count_range: [b.first_message_count, b.last_message_count],
    work_item_id: b.work_item_id,
    workspace_id: b.workspace_id,
    files: b.files,
    commands: b.commands,
    verification: b.verification,
    decisions: b.results,
    carry_forward: carry,
    waiting: boundary === "waiting" ? snapshot.waiting : null,
    boundary,
    summary: clip(parts.join(" "), EPISODE_SUMMARY_CHARS),
  };
}

function newest(list: string[], n: number): string[] {
  return list.slice(-n);
}

function newestUnique(list: string[], n: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (let i = list.length - 1; i >= 0 && out.length < n; i--) {
    if (!seen.has(list[i]!)) {
      seen.add(list[i]!);
      out.unshift(list[i]!);
    }
  }
  return out;
}
