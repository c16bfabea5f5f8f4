// The presentation layer: how a runtime event or transcript entry looks to an operator.
// Every surface (tail, transcript, run's human output, the TUI) renders from here, so they
// cannot drift. A raw event is a fact; a presentation item says what it means for the
// operator: its category, the lowest display level that shows it (`visibility`), a title,
// a one-line summary and an optional body. Display levels (operator-display-levels):
// `info` results, failures and what needs attention; `verbose` activity (assistant text,
// tools, tasks, work); `debug` adds runtime detail (provider rounds, state changes, ids);
// `trace` is the raw event, for inspection only. The switch is exhaustive over the catalog:
// a new event kind does not compile until it says how it is shown.
import { styleText } from "node:util";
import { assertNever } from "../domain/errors.ts";
import { parseEvent, type CatalogEvent, type EventEnvelope } from "../domain/events.ts";
import type { TokenUsage } from "../domain/provider.ts";
import type { TaskSnapshot } from "../domain/task.ts";
import { parseTranscriptEntry, type StoredTranscriptEntry } from "../domain/transcript.ts";

export const DISPLAY_LEVELS = ["info", "verbose", "debug", "trace"] as const;
export type DisplayLevel = (typeof DISPLAY_LEVELS)[number];

export type Category =
  | "operator"
  | "input"
  | "result"
  | "assistant"
  | "tool"
  | "task"
  | "work"
  | "waiting"
  | "workspace"
  | "lifecycle"
  | "provider"
  | "failure"
  | "runtime"
  | "security";

/** How an item should stand out; the renderer maps it to a colour. */
export type Tone = "plain" | "good" | "warn" | "bad" | "dim" | "accent";

export type PresentationItem = {
  source_event_kind: string;
  /** Event seq, or transcript seq for transcript items. */
  seq: number;
  ts: string;
  agent_id: string;
  /** The lowest display level that shows this item. */
  visibility: DisplayLevel;
  category: Category;
  tone: Tone;
  title: string;
  summary: string;
  /** Longer text (assistant text, a brief, a tool result), shown under the title. */
  body: string | null;
  /** Extra detail for `debug`: ids, durations, token usage. */
  detail: string | null;
};

const RANK: Record<DisplayLevel, number> = { info: 0, verbose: 1, debug: 2, trace: 3 };

/** Whether `item` belongs on a surface showing `level`. */
export function shows(item: PresentationItem, level: DisplayLevel): boolean {
  return RANK[item.visibility] <= RANK[level];
}

/** `/display 3|4|5` and `--display` accept the level names or the TUI's numbers. */
export function parseDisplayLevel(text: string): DisplayLevel | undefined {
  const byNumber: Record<string, DisplayLevel> = { "3": "info", "4": "verbose", "5": "debug" };
  if (byNumber[text]) return byNumber[text];
  return (DISPLAY_LEVELS as readonly string[]).includes(text) ? (text as DisplayLevel) : undefined;
}

function usageText(u: TokenUsage | null | undefined): string {
  if (!u) return "tokens unknown";
  const cached = u.cache_read_input_tokens ? `, ${u.cache_read_input_tokens} cached` : "";
  return `${u.input_tokens} in${cached} / ${u.output_tokens} out`;
}

function ms(n: number): string {
  return n < 1000 ? `${Math.round(n)}ms` : `${(n / 1000).toFixed(1)}s`;
}

type Shape = Omit<PresentationItem, "source_event_kind" | "seq" | "ts" | "agent_id">;

function item(
  visibility: DisplayLevel,
  category: Category,
  title: string,
  summary: string,
  more: { tone?: Tone; body?: string | null; detail?: string | null } = {},
): Shape {
  return {
    visibility,
    category,
    tone: more.tone ?? "plain",
    title,
    summary,
    body: more.body ?? null,
    detail: more.detail ?? null,
  };
}

/** The presentation of one catalog event. */
function presentCatalogEvent(e: CatalogEvent): Shape {
  switch (e.type) {
    case "agent_created":
      return item("verbose", "lifecycle", "Agent created", `${e.agent_id} (${e.payload.kind})`, {
        detail: `home ${e.payload.agent_home}`,
      });
    case "agent_state_changed":
      return item("debug", "lifecycle", "State", `${e.payload.from} → ${e.payload.to}`, {
        tone: "dim",
        detail: e.payload.reason,
      });
    case "agent_spawned":
      return item("info", "lifecycle", "Agent spawned", e.payload.child_agent_id, {
        detail: `${e.payload.profile_preset}${e.payload.supervision_task_id ? ` (task ${e.payload.supervision_task_id})` : ""}`,
      });
    case "agent_template_applied":
      return item("verbose", "lifecycle", "Template applied", e.payload.template);
    case "agent_archived":
      return item("info", "lifecycle", "Agent archived", e.payload.reason, { tone: "dim" });
    case "agent_deleted":
      return item("info", "lifecycle", "Agent deleted", e.payload.forced ? "forced" : "", {
        tone: "dim",
      });
    case "agent_model_changed":
      return item("info", "runtime", "Model", e.payload.override_model ?? "runtime default", {
        detail: e.payload.previous ? `was ${e.payload.previous}` : null,
      });
    case "workspace_attached":
      return item("verbose", "workspace", "Workspace attached", e.payload.workspace_root);
    case "workspace_detached":
      return item("verbose", "workspace", "Workspace detached", e.payload.workspace_anchor);
    case "workspace_activated":
      return item(
        "verbose",
        "workspace",
        "Entered workspace",
        `${e.payload.workspace_anchor} (${e.payload.mode})`,
        { detail: `execution root ${e.payload.execution_root}, cwd ${e.payload.cwd}` },
      );
    case "worktree_created":
      return item("verbose", "workspace", "Worktree created", `${e.payload.branch}`, {
        detail: e.payload.path,
      });
    case "worktree_removed":
      return item("verbose", "workspace", "Worktree removed", e.payload.branch, {
        detail: `${e.payload.path} (${e.payload.reason})`,
      });
    case "worktree_retained":
      return item(
        "info",
        "workspace",
        "Worktree kept",
        `${e.payload.branch}: ${e.payload.changed_files.length} changed file(s), ${e.payload.commits_ahead} commit(s) ahead`,
        { tone: "warn", detail: `${e.payload.path}: ${e.payload.reason}` },
      );
    case "skill_activated":
      return item("verbose", "tool", "Skill", `${e.payload.skill_name} (${e.payload.load_reason})`);
    case "control_applied":
      return item("info", "lifecycle", `Agent ${e.payload.action}`, e.payload.disposition, {
        detail: `${e.payload.from} → ${e.payload.to}`,
      });
    case "wake_requested":
      return item("verbose", "waiting", "Wake requested", e.payload.disposition, {
        detail: e.payload.source,
      });
    case "wake_scheduled":
      return item("verbose", "waiting", "Sleeping", `until ${e.payload.wake_at}`, { tone: "dim" });
    case "wake_cancelled":
      return item("debug", "waiting", "Sleep cancelled", e.payload.reason, { tone: "dim" });
    case "provider_retry_scheduled":
      return item("info", "waiting", "Rate-limited", `runs again at ${e.payload.retry_at}`, {
        tone: "warn",
      });
    case "deadline_dropped":
      return item(
        "debug",
        "waiting",
        "Deadline dropped",
        `${e.payload.kind}: ${e.payload.reason}`,
        {
          tone: "warn",
        },
      );
    case "current_run_abort_requested":
      return item("info", "lifecycle", "Abort requested", e.payload.run_id, { tone: "warn" });
    case "message_admitted":
      if (e.payload.kind === "operator_prompt") {
        return item("info", "operator", "You", firstLine(e.payload.body_preview), {
          tone: "accent",
          body: e.payload.body_preview,
          detail: `${e.payload.message_id}, ${e.payload.priority}`,
        });
      }
      return item(
        "verbose",
        "input",
        `Input (${e.payload.kind})`,
        firstLine(e.payload.body_preview),
        {
          tone: "dim",
          detail: `${e.payload.message_id}, ${e.payload.trigger_kind}`,
        },
      );
    case "continuation_resolved":
      return item("debug", "lifecycle", "Continuation", e.payload.class, { tone: "dim" });
    case "message_processing_started":
      return item("debug", "lifecycle", "Working", e.payload.message_id, {
        tone: "dim",
        detail: `run ${e.payload.run_id}, waited ${ms(e.payload.queue_wait_ms)} in the queue`,
      });
    case "message_processed":
      return item(
        "debug",
        "lifecycle",
        "Done",
        e.payload.reason ? `${e.payload.outcome}: ${e.payload.reason}` : e.payload.outcome,
        {
          tone: e.payload.outcome === "completed" ? "dim" : "warn",
          detail: `${e.payload.turn_outcome} in ${ms(e.payload.duration_ms)}`,
        },
      );
    case "closure_decided": {
      const waiting = e.payload.waiting_reason;
      return item(
        waiting === "awaiting_operator_input" ? "info" : "verbose",
        "waiting",
        waiting ? "Waiting" : "Settled",
        waiting ?? e.payload.outcome,
        { tone: "dim", detail: e.payload.runtime_posture },
      );
    }
    case "message_interrupted":
      return item("info", "failure", "Interrupted", e.payload.reason, { tone: "warn" });
    case "operator_interjection_admitted":
      return item("verbose", "operator", "Interjected", `at ${e.payload.boundary}`, {
        tone: "accent",
      });
    case "turn_context_built":
      return item("debug", "provider", "Context", `${e.payload.tool_count} tools`, {
        tone: "dim",
        detail: `built in ${ms(e.payload.context_build_ms)}, cwd ${e.payload.cwd}`,
      });
    case "provider_round_completed":
      return item(
        "debug",
        "provider",
        `Model round ${e.payload.round}`,
        `${e.payload.model_ref}, ${usageText(e.payload.token_usage)}, ${ms(e.payload.provider_round_ms)}`,
        { tone: "dim" },
      );
    case "context_compacted":
      return item(
        "verbose",
        "provider",
        "Context compacted",
        `${e.payload.before_tokens} → ${e.payload.after_tokens} tokens`,
        {
          tone: "dim",
          detail: `${e.payload.compacted_rounds} rounds in the recap, ${e.payload.retained_rounds} kept exactly (${e.payload.strategy})`,
        },
      );
    case "remote_compaction_skipped":
      return item("debug", "provider", "Remote compaction skipped", e.payload.reason, {
        tone: "dim",
        detail: e.payload.message,
      });
    case "assistant_round_recorded": {
      const text = e.payload.text_preview.trim();
      if (!text) {
        return item("debug", "assistant", "Tool calls", e.payload.tool_requests.join(", "), {
          tone: "dim",
        });
      }
      return item("verbose", "assistant", "Assistant", firstLine(text), {
        body: text,
        detail: e.payload.tool_requests.length
          ? `then ${e.payload.tool_requests.join(", ")}`
          : null,
      });
    }
    case "tool_executed":
      return item("verbose", "tool", e.payload.tool_name, e.payload.summary_text, {
        detail: `${ms(e.payload.duration_ms)}, call ${e.payload.call_id}`,
      });
    case "tool_execution_failed":
      return item("verbose", "tool", e.payload.tool_name, e.payload.summary_text, {
        tone: "warn",
        body: e.payload.tool_error?.recovery_hint ?? null,
        detail: `${ms(e.payload.duration_ms)}, ${e.payload.tool_error?.kind ?? e.payload.error ?? "error"}`,
      });
    case "turn_terminal":
      return item(
        e.payload.kind === "aborted" ? "info" : "debug",
        "lifecycle",
        e.payload.kind === "aborted" ? "Turn aborted" : "Turn finished",
        e.payload.reason ??
          `${e.payload.model_rounds} model round(s) in ${ms(e.payload.duration_ms)}`,
        {
          tone: e.payload.kind === "aborted" ? "warn" : "dim",
          detail: usageText(e.payload.token_usage),
        },
      );
    case "brief_created": {
      const b = e.payload.brief;
      const tone: Tone =
        b.kind === "failure" ? "bad" : b.kind === "action_required" ? "warn" : "good";
      const title =
        b.kind === "failure"
          ? "Failed"
          : b.kind === "action_required"
            ? "Needs you"
            : b.kind === "ack"
              ? "Acknowledged"
              : "Result";
      return item(b.kind === "ack" ? "verbose" : "info", "result", title, firstLine(b.text), {
        tone,
        body: b.text,
        detail: b.work_item_id ? `work item ${b.work_item_id}` : null,
      });
    }
    case "runtime_error":
      return item("info", "failure", "Error", e.payload.summary, {
        tone: "bad",
        detail: `${e.payload.phase}${e.payload.kind ? `, ${e.payload.kind}` : ""}`,
      });
    case "task_created":
      return item("verbose", "task", "Task started", taskLabel(e.payload.task), {
        detail: e.payload.task.task_id,
      });
    case "task_status_updated": {
      const t = e.payload.task;
      const tone: Tone =
        t.status === "completed"
          ? "good"
          : t.status === "failed"
            ? "bad"
            : t.status === "cancelled"
              ? "warn"
              : "plain";
      return item("verbose", "task", `Task ${t.status}`, taskLabel(t), {
        tone,
        detail: t.task_id,
      });
    }
    case "task_reattached_after_restart":
      return item("verbose", "task", "Task reattached", e.payload.task_id);
    case "work_item_created":
      return item("verbose", "work", "Work item", e.payload.objective, {
        detail: e.payload.work_item_id,
      });
    case "work_item_updated":
      return item(
        "verbose",
        "work",
        "Work item updated",
        `${e.payload.changes.join(", ")}; plan ${e.payload.plan_status}, todos ${e.payload.todo_done}/${e.payload.todo_total}` +
          (e.payload.blocked_by ? `; blocked: ${e.payload.blocked_by}` : ""),
        { detail: e.payload.work_item_id },
      );
    case "work_item_focus_changed":
      return item("verbose", "work", "Focus", e.payload.work_item_id ?? "no current work item", {
        tone: "dim",
      });
    case "work_item_completed":
      return item("info", "work", "Work item completed", e.payload.work_item_id, {
        tone: "good",
        body: e.payload.warning ?? null,
      });
    case "work_item_bound":
      return item("debug", "work", "Working on", e.payload.work_item_id, { tone: "dim" });
    case "work_item_turn_end_committed":
      return item("debug", "work", "Turn left item", e.payload.work_item_id, {
        tone: "dim",
        detail:
          e.payload.transition +
          (e.payload.runtime_blocker ? ` (runtime: ${e.payload.runtime_blocker})` : ""),
      });
    case "work_item_turn_end_commit_skipped":
      return item("debug", "work", "No turn-end commit", e.payload.work_item_id, {
        tone: "dim",
        detail: `${e.payload.reason} (${e.payload.turn_outcome})`,
      });
    case "work_recheck_due":
      return item("verbose", "work", "Recheck due", e.payload.work_item_ids.join(", "), {
        detail: e.payload.reason,
      });
    case "work_activation":
      return item(
        e.payload.disposition === "halted" ? "info" : "debug",
        "work",
        e.payload.disposition === "halted" ? "Work halted" : "Work continues",
        e.payload.work_item_id,
        {
          tone: e.payload.disposition === "halted" ? "warn" : "dim",
          detail: `${e.payload.mode}, ${e.payload.continuations_without_progress} continuation(s) without progress`,
        },
      );
    case "budget_set":
      return item(
        "info",
        "runtime",
        "Budget set",
        `${e.payload.scope}${e.payload.period ? ` per ${e.payload.period}` : ""}: ${limitsText(e.payload.limits)}`,
      );
    case "budget_raised":
      return item(
        "info",
        "runtime",
        "Budget raised",
        `${e.payload.scope}: +${limitsText(e.payload.added)}`,
        { tone: "good" },
      );
    case "budget_exhausted":
      return item("info", "runtime", "Budget exhausted", e.payload.hold.summary, { tone: "warn" });
    case "budget_hold_cleared":
      return item(
        "info",
        "runtime",
        "Budget hold cleared",
        `${e.payload.scope} (${e.payload.reason})`,
        { tone: "good" },
      );
    case "budget_warning":
      return item(
        "verbose",
        "runtime",
        "Budget 80% spent",
        `${e.payload.scope} ${e.payload.dimension}: ${e.payload.spent} of ${e.payload.limit}`,
        { tone: "warn" },
      );
    case "budget_reservation_returned":
      return item(
        "verbose",
        "runtime",
        "Reservation returned",
        `${e.payload.child_agent_id}: ${limitsText(e.payload.limits)}`,
        { tone: "dim" },
      );
    case "retention_applied":
      return item(
        "debug",
        "runtime",
        "Retention",
        Object.entries(e.payload.removed)
          .map(([k, n]) => `${n} ${k}`)
          .join(", ") || "nothing removed",
        { tone: "dim" },
      );
    case "operator_delivery_recorded":
      return e.payload.status === "accepted_by_transport"
        ? item(
            "verbose",
            "result",
            "Delivered",
            `${e.payload.brief_kind} to ${e.payload.binding_id}`,
            {
              tone: "dim",
              detail: `${e.payload.attempts} attempt(s)`,
            },
          )
        : item(
            "info",
            "failure",
            "Delivery failed",
            `${e.payload.brief_kind} to ${e.payload.binding_id}: ${e.payload.failure ?? "?"}`,
            {
              tone: "warn",
              detail: `${e.payload.attempts} attempt(s)`,
            },
          );
    case "runtime_service_shutdown_requested":
      return item("info", "runtime", "Runtime shutting down", "requested over the control plane", {
        tone: "warn",
      });
    case "http_request_refused":
      return item(
        "debug",
        "security",
        "Request refused",
        `${e.payload.method} ${e.payload.path}: ${e.payload.kind}`,
        { tone: "warn", detail: `${e.payload.transport} from ${e.payload.peer ?? "?"}` },
      );
    case "timer_created":
      return item(
        "verbose",
        "waiting",
        "Timer",
        `${e.payload.timer.kind}, first ${e.payload.timer.next_fire_at}`,
        {
          detail: e.payload.timer.timer_id,
        },
      );
    case "timer_fired":
      return item(
        "verbose",
        "waiting",
        "Timer fired",
        e.payload.timer_id + (e.payload.delivered ? "" : " (not delivered)"),
        { tone: "dim", detail: e.payload.skipped ? `${e.payload.skipped} skipped` : null },
      );
    case "timer_cancelled":
      return item(
        "verbose",
        "waiting",
        "Timer cancelled",
        `${e.payload.timer_id}: ${e.payload.reason}`,
        {
          tone: "dim",
        },
      );
    case "wake_hint_received":
      return item(
        "verbose",
        "waiting",
        "Wake hint",
        `${e.payload.source} → ${e.payload.disposition}`,
        {
          tone: "dim",
          detail: `×${e.payload.count}`,
        },
      );
    case "wake_hint_converted":
      return item("debug", "waiting", "Wake hint delivered", e.payload.message_id, { tone: "dim" });
    case "external_trigger_provisioned":
      return item("verbose", "waiting", "Trigger provisioned", e.payload.external_trigger_id);
    case "external_trigger_revoked":
      return item(
        "verbose",
        "waiting",
        "Trigger revoked",
        `${e.payload.external_trigger_id}: ${e.payload.reason}`,
      );
    case "external_trigger_refused":
      return item(
        "debug",
        "security",
        "Trigger refused",
        `${e.payload.reason} from ${e.payload.peer ?? "?"}`,
        {
          tone: "warn",
        },
      );
    default:
      return assertNever(e, "event type");
  }
}

function taskLabel(t: TaskSnapshot): string {
  return t.summary ?? firstLine(t.command?.cmd ?? t.child_supervision?.child_agent_id ?? t.task_id);
}

function firstLine(text: string): string {
  const line = text.trim().split("\n", 1)[0] ?? "";
  return line.length > 160 ? line.slice(0, 159) + "…" : line;
}

/**
 * The presentation of a stored event. One another version wrote (unknown kind or shape)
 * is shown only at `trace`, never crashing the reader.
 */
export function presentEvent(e: EventEnvelope): PresentationItem {
  const known = parseEvent(e);
  const shape: Shape = known
    ? presentCatalogEvent(known)
    : item("trace", "runtime", e.type, "", { tone: "dim" });
  return { source_event_kind: e.type, seq: e.event_seq, ts: e.ts, agent_id: e.agent_id, ...shape };
}

/** The presentation of a transcript entry (what the model saw and did). */
export function presentTranscriptEntry(e: StoredTranscriptEntry): PresentationItem {
  const head = { source_event_kind: e.kind, seq: e.seq, ts: e.created_at, agent_id: e.agent_id };
  const known = parseTranscriptEntry(e);
  if (!known) return { ...head, ...item("trace", "runtime", e.kind, "", { tone: "dim" }) };
  switch (known.kind) {
    case "incoming_message": {
      const d = known.data;
      const operator = d.kind === "operator_prompt";
      return {
        ...head,
        ...item(
          operator ? "info" : "verbose",
          operator ? "operator" : "input",
          operator ? "You" : `Input (${d.kind})`,
          firstLine(d.text),
          {
            tone: operator ? "accent" : "dim",
            body: d.text,
            detail: d.trust ? `trust ${d.trust}` : null,
          },
        ),
      };
    }
    case "assistant_round": {
      const d = known.data;
      const tools = d.tool_calls.map((c) => c.name ?? c.type).join(", ");
      const detail = `round ${d.round}, ${d.model_ref}, ${usageText(d.token_usage)}, stop ${d.stop_reason}`;
      if (!d.text.trim()) {
        return {
          ...head,
          ...item("debug", "assistant", "Tool calls", tools || "(empty round)", {
            tone: "dim",
            detail,
          }),
        };
      }
      return {
        ...head,
        ...item("info", "assistant", "Assistant", firstLine(d.text), {
          body: d.text,
          detail: tools ? `${detail}; then ${tools}` : detail,
        }),
      };
    }
    case "tool_execution": {
      const d = known.data;
      return {
        ...head,
        ...item("verbose", "tool", d.tool_name, d.envelope.summary_text, {
          tone: d.envelope.status === "error" ? "warn" : "plain",
          body: d.rendered,
          detail: `${ms(d.duration_ms)}, arguments ${d.arguments.length > 400 ? d.arguments.slice(0, 400) + "…" : d.arguments}`,
        }),
      };
    }
    case "turn_terminal": {
      const d = known.data;
      return {
        ...head,
        ...item(
          d.kind === "aborted" ? "info" : "debug",
          "lifecycle",
          d.kind === "aborted" ? "Turn aborted" : "Turn finished",
          d.reason ?? `${d.model_rounds ?? "?"} model round(s)`,
          {
            tone: d.kind === "aborted" ? "warn" : "dim",
            detail: d.token_usage !== undefined ? usageText(d.token_usage) : null,
          },
        ),
      };
    }
    case "runtime_failure":
      return {
        ...head,
        ...item("info", "failure", "Error", known.data.summary, {
          tone: "bad",
          detail: known.data.kind ?? null,
        }),
      };
    default:
      return assertNever(known, "transcript entry kind");
  }
}

// ---------------------------------------------------------------------------
// Rendering to text

export type Paint = (tone: Tone | "meta", text: string) => string;

const TONE_STYLE: Record<Tone | "meta", Parameters<typeof styleText>[0]> = {
  plain: "reset",
  good: "green",
  warn: "yellow",
  bad: "red",
  dim: "dim",
  accent: "cyan",
  meta: "gray",
};

/**
 * Colours for `stream`: none when NO_COLOR is set, the stream is not a TTY, or TERM is dumb
 * (styleText's own stream check, which also honours FORCE_COLOR).
 */
export function painter(stream: NodeJS.WritableStream = process.stdout): Paint {
  return (tone, text) =>
    tone === "plain" ? text : styleText(TONE_STYLE[tone], text, { validateStream: true, stream });
}

export const noPaint: Paint = (_tone, text) => text;

function clock(ts: string): string {
  return ts.length >= 19 ? ts.slice(11, 19) : ts;
}

/**
 * One item as text for `level`: `hh:mm:ss Title  summary`, its body indented (bounded below
 * debug), and at `debug` the detail and the source event kind. `trace` prints the raw
 * envelope instead: render it with `renderTrace`.
 */
export function renderItem(it: PresentationItem, level: DisplayLevel, paint: Paint): string {
  // A body that says no more than the summary is not repeated under it.
  const body = it.body?.trim() && it.body.trim() !== it.summary ? it.body.trimEnd() : null;
  const head =
    paint("meta", clock(it.ts)) +
    " " +
    paint(it.tone === "dim" ? "dim" : it.tone, it.title) +
    (it.summary && !body ? "  " + it.summary : "");
  const lines = [head];
  if (body) {
    const bodyLines = body.split("\n");
    const max = level === "debug" || level === "trace" ? Infinity : level === "verbose" ? 12 : 40;
    for (const l of bodyLines.slice(0, max)) lines.push("  " + l);
    if (bodyLines.length > max)
      lines.push(paint("meta", `  … ${bodyLines.length - max} more line(s)`));
  }
  if (level === "debug" || level === "trace") {
    const meta = [`#${it.seq} ${it.source_event_kind}`, it.detail].filter(Boolean).join("  ");
    lines.push(paint("meta", "  " + meta));
  }
  return lines.join("\n");
}

/** The raw `trace` line of an event: seq, time, kind and the payload as JSON. */
export function renderTrace(e: EventEnvelope, paint: Paint): string {
  return `${paint("meta", String(e.event_seq).padStart(6) + "  " + e.ts)}  ${e.type}  ${JSON.stringify(e.payload)}`;
}

function limitsText(l: Partial<Record<string, number>>): string {
  return (
    Object.entries(l)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ") || "no limits"
  );
}
