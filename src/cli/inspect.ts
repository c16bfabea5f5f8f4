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
import { checkPromptSize, readPrompt } from "./prompt-input.ts";
import { formatCost } from "./usage.ts";
import { waitingLines } from "./timer.ts";

type Flags = ClientFlags & { json?: boolean };

/**
 * The operator's read path for an agent: the /control twin, which names any agent
 * `agent list --all` shows (private children, finished run agents), not only public ones.
 */
function operatorPath(agentId: string): string {
  return `/control/agents/${encodeURIComponent(agentId)}`;
}

export async function status(agent: string | undefined, flags: Flags): Promise<void> {
  const client = connect(flags);
  const agentId = await agentOrDefault(client, agent);
  const s = await call(() =>
    client.call<Record<string, any>>("GET", `${operatorPath(agentId)}/status`),
  );
  if (flags.json) return printJson(s);
  const usage = s.token_usage ?? {};
  const lines = [
    `agent:    ${s.agent_id}${s.is_default ? " (default)" : ""}  [${s.kind}, ${s.visibility}]`,
    `status:   ${s.status}`,
    `group:    ${s.group_id}`,
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
  if (s.storage && s.storage.state !== "ok") {
    lines.push(
      `storage:  ${String(s.storage.state).toUpperCase()} since ${s.storage.since}: ${s.storage.error}` +
        (s.storage.state === "lost"
          ? "  → restore the database file and restart the runtime"
          : `  (${s.storage.refused_writes} write(s) refused; resumes by itself once it can write)`),
    );
  }
  if (s.budget && (s.budget.scopes?.length || s.budget.hold)) {
    const { budgetLines } = await import("./budget.ts");
    lines.push(
      ...budgetLines(s.budget).map((l, i) => (i === 0 ? `budget:   ${l}` : `          ${l}`)),
    );
  }
  if (s.model)
    lines.push(`model:    ${s.model.effective_model ?? "(none)"} (${s.model.source ?? "?"})`);
  lines.push(...sandboxLines(s));
  for (const m of (s.mcp ?? []) as Record<string, any>[]) {
    const consent = m.consent === "operator" ? "" : `, ${m.consent}`;
    lines.push(
      `mcp:      ${m.name} (${m.transport}, ${m.source}${consent}) ${m.state}${m.pid ? ` pid ${m.pid}` : ""}, ${m.tool_count} tools${m.last_error ? ` — ${m.last_error}` : ""}`,
    );
  }
  if (s.leash) {
    const l = s.leash;
    lines.push(
      `leash:    ${l.advisory ? "advisory" : l.mode === "trusted" ? "trusted" : "enforced"} (mode ${l.mode}; rules ${l.rules.allow} allow / ${l.rules.ask} ask / ${l.rules.deny} deny; hooks ${l.hooks.host + l.hooks.agent})` +
        (l.workspace.hooks_awaiting_approval
          ? `; ${l.workspace.hooks_awaiting_approval} workspace hook(s) await approval and do not run`
          : "") +
        (l.workspace.error
          ? `; ${l.workspace.config_path}: ${l.workspace.error} (asking for everything)`
          : ""),
    );
  }
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
  if (s.prompt_cache) {
    const pc = s.prompt_cache;
    const pct = (x: number) => `${Math.round(x * 100)}%`;
    lines.push(
      `cache:    degraded since ${pc.since}: cached share ${pct(pc.baseline_share)} → ${pct(pc.current_share)} on ${pc.model_ref}; first changed at ${pc.first_changed.run_id} round ${pc.first_changed.round}`,
    );
  }
  process.stdout.write(lines.join("\n") + "\n");
}

const WEEK_MS = 7 * 24 * 3600_000;

/** The sandbox line of `holon status`, and for a week after an upgrade, what changed. */
function sandboxLines(s: Record<string, any>): string[] {
  const sb = s.sandbox;
  if (!sb) return [];
  const out = [
    sb.state === "enforced"
      ? `sandbox:  enforced (${sb.backend}, mode ${sb.mode} from ${sb.mode_source}; network ${sb.network}: ${sb.enforcement?.network ?? "not_enforced"})`
      : `sandbox:  not_enforced (mode ${sb.mode} from ${sb.mode_source}): ${sb.reason}`,
  ];
  const at = sb.enabled_at as string | null;
  if (at && at !== s.created_at && Date.now() - Date.parse(at) < WEEK_MS) {
    out.push(
      sb.state === "enforced"
        ? `changed:  since ${at} this agent's commands run inside bubblewrap: they can write only its workspace, home and caches, and no longer see HOLON_HOME or ~/.ssh-style credentials`
        : `changed:  since ${at} the sandbox is available but not enforced for this agent (see above)`,
    );
  }
  return out;
}

export async function prompt(
  words: string[],
  flags: Flags & { agent?: string; priority?: string; file?: string },
): Promise<void> {
  const text = await readPrompt({ words, file: flags.file });
  const body: Record<string, unknown> = { text, surface: "cli_prompt" };
  if (flags.priority) body.priority = flags.priority;
  checkPromptSize(text, body);
  const client = connect(flags);
  const agentId = await agentOrDefault(client, flags.agent);
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
      `${operatorPath(agentId)}/events?limit=${limit}&order=desc`,
    ),
  );
  const events = res.events.reverse();
  if (flags.json && !flags.follow) return printJson(events);
  const print = (e: EventLike) => {
    const text = flags.json ? JSON.stringify(e) : eventText(e, level, paint);
    if (text !== undefined) process.stdout.write(text + "\n");
  };
  if (!flags.follow) {
    for (const e of events) print(e);
    return;
  }
  // Ctrl-C ends the follow cleanly from the first line printed on: a watcher that sees output
  // may press it at once, before the stream is open.
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort());
  process.once("SIGTERM", () => controller.abort());
  for (const e of events) print(e);
  const note = (text: string) =>
    process.stderr.write(painter(process.stderr)("meta", `holon: ${text}`) + "\n");
  await followEvents({
    connect: () => tryConnect(flags),
    agentId,
    operator: true,
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
  const agentId = await agentOrDefault(client, agent);
  const res = await call(() =>
    client.call<{ entries: StoredTranscriptEntry[] }>(
      "GET",
      `${operatorPath(agentId)}/transcript?limit=${limit}`,
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
