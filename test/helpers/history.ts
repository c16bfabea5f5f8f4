// History to fill an in-process host with, for the retention tests and the retention probe
// (bench/workers/retention-probe.ts): a parked executor and a settable fake clock, a round of
// message history, a context episode, a command task with its process directory. Plain
// functions over the real store, no vitest: the bench worker runs them under plain node.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { recordRuntimeFailure } from "../../src/agent/briefs.ts";
import type { TurnExecutor } from "../../src/agent/runtime.ts";
import { systemClock, type Clock } from "../../src/domain/clock.ts";
import type { EpisodeRecord } from "../../src/domain/memory.ts";
import type { TaskRecord } from "../../src/domain/task.ts";
import type { RuntimeHost } from "../../src/host/host.ts";
import { effectiveRetention, type RetentionPolicy } from "../../src/host/retention-config.ts";

/** A turn executor whose turns never end: the host keeps its agents still while a test fills them. */
export const parked: TurnExecutor = { run: () => new Promise(() => {}) };

/** A clock that stands at `t0` (epoch ms) until the test sets it. */
export function fakeClock(t0: number): Clock & { set(ms: number): void } {
  let now = t0;
  return { now: () => new Date(now), sleep: systemClock.sleep, set: (ms) => (now = ms) };
}

/**
 * One round of history at the clock's time: a processed channel message with `text`, its
 * failure brief, transcript entry and events. Returns the message's id.
 */
export async function historyRound(
  host: RuntimeHost,
  text: string,
  opts: { agent?: string; channel?: string; failure?: string } = {},
): Promise<string> {
  const store = host.store;
  const agentId = opts.agent ?? "main";
  const m = await host.ingress.admit({
    agent_id: agentId,
    kind: "channel_event",
    origin: { kind: "channel", channel_id: opts.channel ?? "test" },
    body: { type: "text", text },
    surface: "http_public_enqueue",
    admission: "public_unauthenticated",
  });
  await store.tx(
    async () => await store.messages.setStatus(m.id, "processed", store.clock.now().toISOString()),
  );
  await recordRuntimeFailure(store, {
    agent_id: agentId,
    message_id: m.id,
    summary: opts.failure ?? `failure ${text}`,
  });
  return m.id;
}

/**
 * Context episode `n` of an agent, made at `at`, its summary (about `topic`, when given)
 * padded to about `padding` characters.
 */
export function episodeRecord(
  agentId: string,
  n: number,
  at: Date,
  opts: { id?: string; padding?: number; topic?: string } = {},
): EpisodeRecord {
  return {
    id: opts.id ?? `ep_${agentId}_${n}`,
    agent_id: agentId,
    created_at: at.toISOString(),
    started_at: at.toISOString(),
    turn_range: [n, n],
    message_count_range: [n, n],
    work_item_id: null,
    workspace_id: null,
    files: [],
    commands: [],
    verification: [],
    decisions: [],
    carry_forward: [],
    waiting: null,
    boundary: "cap",
    summary: `episode ${n}${opts.topic ? ` about ${opts.topic}` : ""} ${"x".repeat(opts.padding ?? 400)}`,
  };
}

/**
 * A command task of `main`, stored, with its process directory under the agent's home holding
 * `files` (the first one is its output). Finished at `at` unless running or queued.
 */
export async function putCommandTask(
  host: RuntimeHost,
  t: {
    id: string;
    status: TaskRecord["status"];
    at: string;
    files: Record<string, string>;
    cmd: string;
    output_snapshot?: TaskRecord["output_snapshot"];
  },
): Promise<TaskRecord> {
  const store = host.store;
  const agentHome = (await store.agents.get("main"))!.agent_home;
  const dir = join(agentHome, ".holon", "processes", t.id);
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(t.files)) writeFileSync(join(dir, name), text);
  const record: TaskRecord = {
    id: t.id,
    agent_id: "main",
    kind: "command_task",
    status: t.status,
    created_at: t.at,
    updated_at: t.at,
    cmd: t.cmd,
    cmd_digest: "d",
    workdir: agentHome,
    shell: "/bin/sh",
    login: false,
    tty: false,
    accepts_input: false,
    output_path: join(dir, Object.keys(t.files)[0]!),
    process_dir: dir,
    terminal_reentry: false,
  };
  if (t.output_snapshot) record.output_snapshot = t.output_snapshot;
  if (t.status !== "running" && t.status !== "queued") record.finished_at = t.at;
  await store.tasks.put(record);
  return record;
}

/** A retention policy with every limit off except what the caller sets. */
export function onlyRetention(set: Partial<RetentionPolicy>): () => RetentionPolicy {
  const none = { max_age_days: 0, max_mb: 0 };
  const base = effectiveRetention({
    events: none,
    transcript: none,
    messages: none,
    briefs: none,
    episodes: none,
    tasks: none,
    task_output: none,
    ledger: none,
  });
  return () => ({ ...base, ...set });
}
