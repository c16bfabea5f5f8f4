// Agent-scoped inspection and prompting: status, prompt, tail, transcript.
import { assertNever } from "../domain/errors.ts";
import type { EventEnvelope } from "../domain/events.ts";
import type { StoredTranscriptEntry } from "../domain/transcript.ts";
import { followEvents } from "../client/follow.ts";
import {
  painter,
  parseDisplayLevel,
  presentEvent,
  presentTranscriptEntry,
  renderItem,
  renderTrace,
  shows,
  type DisplayLevel,
  type Paint,
} from "../client/presentation.ts";
import { call, connect, tryConnect, type ClientFlags, agentOrDefault } from "./connect.ts";
import { CliError, printJson } from "./output.ts";
import { formatCost } from "./usage.ts";
import { waitingLines } from "./timer.ts";

type Flags = ClientFlags & { json?: boolean };

function agentPath(agent: string | undefined): string {
  return agent ? `/agents/${encodeURIComponent(agent)}` : "";
}

export async function status(agent: string | undefined, flags: Flags): Promise<void> {
  const client = connect(flags);
  const s = await call(() => client.call<Record<string, any>>("GET", `${agentPath(agent)}/status`));
  if (flags.json) return printJson(s);
  const usage = s.token_usage ?? {};
  const lines = [
    `agent:    ${s.agent_id}${s.is_default ? " (default)" : ""}  [${s.kind}, ${s.visibility}]`,
    `status:   ${s.status}`,
    `hint:     ${s.lifecycle_hint?.message ?? ""}${s.lifecycle_hint?.resume_command ? `  → ${s.lifecycle_hint.resume_command}` : ""}`,
    `queue:    ${s.pending} pending${s.current_run_id ? `, running ${s.current_run_id}` : ""}`,
    `tokens:   ${usage.total_input_tokens ?? 0} in / ${usage.total_output_tokens ?? 0} out over ${usage.total_model_rounds ?? 0} model rounds`,
  ];
  const spent = await client
    .call<{ total: { cost_usd: number | null } }>(
      "GET",
      `/agents/${encodeURIComponent(s.agent_id)}/usage`,
    )
    .catch(() => null);
  if (spent)
    lines.push(`cost:     ${formatCost(spent.total.cost_usd)} (all kept history; holon usage)`);
  if (s.budget && (s.budget.scopes?.length || s.budget.hold)) {
    const { budgetLines } = await import("./budget.ts");
    lines.push(
      ...budgetLines(s.budget).map((l, i) => (i === 0 ? `budget:   ${l}` : `          ${l}`)),
    );
  }
  if (s.model)
    lines.push(`model:    ${s.model.effective_model ?? "(none)"} (${s.model.source ?? "?"})`);
  if (s.sleeping_until) lines.push(`wakes at: ${s.sleeping_until}`);
  if (s.closure) {
    const c = s.closure;
    lines.push(
      `closure:  ${c.outcome}${c.waiting_reason ? ` (${c.waiting_reason})` : ""}, ${c.runtime_posture}` +
        (c.work_signal
          ? `, work ${c.work_signal.work_item_id} ${c.work_signal.reactivation_mode}`
          : "") +
        (c.evidence?.length ? `  [${c.evidence.join("; ")}]` : ""),
    );
  }
  if (s.children?.total) {
    lines.push(`children: ${s.children.live} live of ${s.children.total}`);
    for (const ch of s.children.entries ?? []) {
      lines.push(
        `  ${ch.agent_id}  [${ch.profile_preset}, ${ch.status}${ch.archived ? ", archived" : ""}]` +
          (ch.supervision_task_id
            ? `  task ${ch.supervision_task_id} ${ch.supervision_state}`
            : ""),
      );
    }
  }
  if (s.current_work_item) {
    const w = s.current_work_item;
    lines.push(
      `work:     ${w.id} [${w.readiness}, plan ${w.plan_status}, todos ${w.todo_progress.done}/${w.todo_progress.total}] ${w.objective}` +
        (w.blocked_by ? `  (blocked: ${w.blocked_by})` : ""),
    );
  }
  if (s.last_continuation) {
    const k = s.last_continuation;
    lines.push(
      `last trigger: ${k.trigger_kind} → ${k.class}${k.model_visible ? "" : " (not shown to the model)"}`,
    );
  }
  if (s.active_task_ids?.length) lines.push(`tasks:    ${s.active_task_ids.join(", ")}`);
  lines.push(...waitingLines(s.waiting));
  if (s.last_failure)
    lines.push(`failure:  ${s.last_failure.occurred_at} ${s.last_failure.summary}`);
  process.stdout.write(lines.join("\n") + "\n");
}

export async function prompt(
  text: string,
  flags: Flags & { agent?: string; priority?: string },
): Promise<void> {
  if (!text.trim()) throw new CliError("the prompt is empty");
  const client = connect(flags);
  const agentId = await agentOrDefault(client, flags.agent);
  const body: Record<string, unknown> = { text, surface: "cli_prompt" };
  if (flags.priority) body.priority = flags.priority;
  const res = await call(() =>
    client.call<{ message_id: string; agent_id: string }>(
      "POST",
      `/control/agents/${encodeURIComponent(agentId)}/prompt`,
      body,
    ),
  );
  if (flags.json) return printJson(res);
  process.stdout.write(`queued ${res.message_id} for ${res.agent_id}\n`);
  // Queued is not worked on: say so plainly when the agent has no model to work with.
  const status = await client
    .call<{ model?: { effective_model?: string | null } | null }>(
      "GET",
      `/agents/${encodeURIComponent(res.agent_id)}/status`,
    )
    .catch(() => null);
  if (status?.model && !status.model.effective_model) process.stderr.write(NO_PROVIDER_NOTE);
}

export const NO_PROVIDER_NOTE =
  "holon: no model provider is configured, so the agent cannot work on this message yet.\n" +
  "  Configure one with:  holon config set model.default <provider>/<model>   (e.g. openai/gpt-5.4)\n" +
  "  and its credential:  holon config credentials set <provider>:default --stdin   (or export e.g. OPENAI_API_KEY)\n";

type EventLike = EventEnvelope;

type DisplayFlags = { display?: string };

/** `--display info|verbose|debug|trace` (or 3|4|5); tail defaults to verbose. */
function displayLevel(flags: DisplayFlags, fallback: DisplayLevel): DisplayLevel {
  if (flags.display === undefined) return fallback;
  const level = parseDisplayLevel(flags.display);
  if (!level) throw new CliError("--display must be info, verbose, debug or trace (or 3, 4, 5)");
  return level;
}

/** The text of one event at `level`, or undefined when the level hides it. */
function eventText(e: EventLike, level: DisplayLevel, paint: Paint): string | undefined {
  if (level === "trace") return renderTrace(e, paint);
  const it = presentEvent(e);
  return shows(it, level) ? renderItem(it, level, paint) : undefined;
}

export async function tail(
  agent: string | undefined,
  flags: Flags & DisplayFlags & { limit: string; follow?: boolean },
): Promise<void> {
  const client = connect(flags);
  const agentId = await agentOrDefault(client, agent);
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new CliError("--limit must be a positive integer");
  const level = displayLevel(flags, "verbose");
  const paint = painter(process.stdout);
  const res = await call(() =>
    client.call<{ events: EventLike[]; newest_seq: number }>(
      "GET",
      `/agents/${encodeURIComponent(agentId)}/events?limit=${limit}&order=desc`,
    ),
  );
  const events = res.events.reverse();
  if (flags.json && !flags.follow) return printJson(events);
  const print = (e: EventLike) => {
    const text = flags.json ? JSON.stringify(e) : eventText(e, level, paint);
    if (text !== undefined) process.stdout.write(text + "\n");
  };
  for (const e of events) print(e);
  if (!flags.follow) return;
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort());
  process.once("SIGTERM", () => controller.abort());
  const note = (text: string) =>
    process.stderr.write(painter(process.stderr)("meta", `holon: ${text}`) + "\n");
  await followEvents({
    connect: () => tryConnect(flags),
    agentId,
    afterSeq: res.newest_seq,
    signal: controller.signal,
    onEvent: print,
    onNotice: (n) => {
      switch (n.kind) {
        case "disconnected":
          return note(`lost the runtime after event ${n.after_seq}; reconnecting…`);
        case "reconnected":
          return note(`reconnected; resuming after event ${n.after_seq}`);
        case "overflow":
          return note(`fell behind the stream; resuming after event ${n.after_seq}`);
        case "replay_unavailable":
          return note(
            `events ${n.after_seq + 1}–${n.resumed_after_seq} were removed by retention; continuing from ${n.resumed_after_seq + 1}`,
          );
        default:
          return assertNever(n, "follow notice");
      }
    },
  });
}

export async function transcript(
  agent: string | undefined,
  flags: Flags & DisplayFlags & { limit: string },
): Promise<void> {
  const client = connect(flags);
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new CliError("--limit must be a positive integer");
  const level = displayLevel(flags, "verbose");
  const res = await call(() =>
    client.call<{ entries: StoredTranscriptEntry[] }>(
      "GET",
      `${agentPath(agent)}/transcript?limit=${limit}`,
    ),
  );
  if (flags.json) return printJson(res.entries);
  const paint = painter(process.stdout);
  for (const e of res.entries) {
    if (level === "trace") {
      process.stdout.write(`#${e.seq} ${e.created_at} ${e.kind} ${JSON.stringify(e.data)}\n`);
      continue;
    }
    const it = presentTranscriptEntry(e);
    if (shows(it, level)) process.stdout.write(renderItem(it, level, paint) + "\n");
  }
}
