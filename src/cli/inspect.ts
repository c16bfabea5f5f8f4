// Agent-scoped inspection and prompting: status, prompt, tail, transcript.
import { assertNever } from "../domain/errors.ts";
import { parseEvent, type CatalogEvent, type EventEnvelope } from "../domain/events.ts";
import { call, connect, type ClientFlags } from "./connect.ts";
import { CliError, printJson } from "./output.ts";
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
  const agentId =
    flags.agent ??
    (await call(() => client.call<{ default_agent: string }>("GET", "/"))).default_agent;
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

/** The one-line detail `tail` shows for a catalog event. */
function eventDetail(e: CatalogEvent): string {
  switch (e.type) {
    case "agent_state_changed":
      return `${e.payload.from} → ${e.payload.to}: ${e.payload.reason}`;
    case "control_applied":
      return `${e.payload.action}: ${e.payload.disposition}`;
    case "wake_requested":
      return e.payload.disposition;
    case "message_admitted":
      return e.payload.body_preview;
    case "message_processed":
      return e.payload.reason ? `${e.payload.outcome}: ${e.payload.reason}` : e.payload.outcome;
    case "closure_decided":
      return e.payload.waiting_reason
        ? `${e.payload.outcome}: ${e.payload.waiting_reason}`
        : e.payload.outcome;
    case "continuation_resolved":
      return e.payload.class;
    case "assistant_round_recorded":
      return e.payload.text_preview;
    case "tool_executed":
    case "tool_execution_failed":
      return `${e.payload.tool_name}: ${e.payload.summary_text}`;
    case "turn_terminal":
      return e.payload.reason ? `${e.payload.kind}: ${e.payload.reason}` : e.payload.kind;
    case "brief_created":
      return e.payload.brief.text;
    case "runtime_error":
      return e.payload.summary;
    case "task_created":
    case "task_status_updated":
      return `${e.payload.task.task_id} ${e.payload.task.status}`;
    case "wake_scheduled":
      return `until ${e.payload.wake_at}`;
    case "message_interrupted":
    case "wake_cancelled":
    case "deadline_dropped":
      return e.payload.reason;
    case "agent_model_changed":
      return e.payload.override_model ?? "runtime default";
    case "workspace_attached":
      return e.payload.workspace_root;
    case "workspace_detached":
      return e.payload.workspace_id;
    case "workspace_activated":
      return `${e.payload.workspace_id} (${e.payload.mode}) at ${e.payload.execution_root}`;
    case "worktree_created":
      return `${e.payload.branch} at ${e.payload.path}`;
    case "worktree_removed":
      return `${e.payload.path} (${e.payload.reason})`;
    case "worktree_retained":
      return `${e.payload.path}: ${e.payload.changed_files.length} changed file(s)`;
    case "skill_activated":
      return `${e.payload.skill_name} (${e.payload.load_reason})`;
    case "http_request_refused":
      return `${e.payload.method} ${e.payload.path}: ${e.payload.kind}`;
    case "timer_created":
      return `${e.payload.timer.timer_id} ${e.payload.timer.kind}, first ${e.payload.timer.next_fire_at}`;
    case "timer_fired":
      return `${e.payload.timer_id}${e.payload.delivered ? "" : " (not delivered)"}${e.payload.skipped ? `, ${e.payload.skipped} skipped` : ""}`;
    case "timer_cancelled":
      return `${e.payload.timer_id}: ${e.payload.reason}`;
    case "wake_hint_received":
      return `${e.payload.source} → ${e.payload.disposition} (×${e.payload.count})`;
    case "wake_hint_converted":
      return `system tick ${e.payload.message_id} (×${e.payload.count})`;
    case "external_trigger_provisioned":
    case "external_trigger_revoked":
      return e.payload.external_trigger_id;
    case "external_trigger_refused":
      return `${e.payload.reason} from ${e.payload.peer ?? "?"}`;
    case "work_item_created":
      return `${e.payload.work_item_id}: ${e.payload.objective}`;
    case "work_item_updated":
      return `${e.payload.work_item_id} (${e.payload.changes.join(", ")})`;
    case "work_item_focus_changed":
      return e.payload.work_item_id ?? "no current work item";
    case "work_item_completed":
      return e.payload.report_id ? `${e.payload.work_item_id} with report` : e.payload.work_item_id;
    case "work_item_bound":
      return e.payload.work_item_id;
    case "work_recheck_due":
      return e.payload.work_item_ids.join(", ");
    case "work_activation":
      return `${e.payload.mode} ${e.payload.work_item_id}: ${e.payload.disposition}`;
    case "agent_created":
    case "current_run_abort_requested":
    case "message_processing_started":
    case "operator_interjection_admitted":
    case "turn_context_built":
    case "provider_round_completed":
    case "task_reattached_after_restart":
    case "runtime_service_shutdown_requested":
    case "retention_applied":
      return "";
    default:
      return assertNever(e, "event type");
  }
}

function eventLine(e: EventLike): string {
  // An event this version does not know (another version wrote it) is shown without detail.
  const known = parseEvent(e);
  const detail = known ? eventDetail(known) : "";
  return `${String(e.event_seq).padStart(6)}  ${e.ts}  ${e.type}${detail ? `  ${detail.replace(/\s+/g, " ").slice(0, 120)}` : ""}`;
}

export async function tail(
  agent: string | undefined,
  flags: Flags & { limit: string; follow?: boolean },
): Promise<void> {
  const client = connect(flags);
  const agentId =
    agent ?? (await call(() => client.call<{ default_agent: string }>("GET", "/"))).default_agent;
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new CliError("--limit must be a positive integer");
  const res = await call(() =>
    client.call<{ events: EventLike[]; newest_seq: number }>(
      "GET",
      `/agents/${encodeURIComponent(agentId)}/events?limit=${limit}&order=desc`,
    ),
  );
  const events = res.events.reverse();
  if (flags.json && !flags.follow) return printJson(events);
  for (const e of events)
    process.stdout.write((flags.json ? JSON.stringify(e) : eventLine(e)) + "\n");
  if (!flags.follow) return;
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort());
  await client.stream(
    `/agents/${encodeURIComponent(agentId)}/events/stream?after_seq=${res.newest_seq}`,
    (_type, data) => {
      const e = JSON.parse(data) as EventLike;
      process.stdout.write((flags.json ? JSON.stringify(e) : eventLine(e)) + "\n");
    },
    controller.signal,
  );
}

export async function transcript(
  agent: string | undefined,
  flags: Flags & { limit: string },
): Promise<void> {
  const client = connect(flags);
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new CliError("--limit must be a positive integer");
  const res = await call(() =>
    client.call<{
      entries: { seq: number; created_at: string; kind: string; data: Record<string, unknown> }[];
    }>("GET", `${agentPath(agent)}/transcript?limit=${limit}`),
  );
  if (flags.json) return printJson(res.entries);
  for (const e of res.entries) {
    const d = e.data;
    const text =
      (d.text as string | undefined) ??
      (d.summary as string | undefined) ??
      (d.summary_text as string | undefined) ??
      JSON.stringify(d);
    process.stdout.write(`#${e.seq} ${e.created_at} ${e.kind}: ${String(text).slice(0, 400)}\n`);
  }
}
