// The presentation layer: how a runtime event or transcript entry looks to an operator.
// Every surface (tail, transcript, run's human output, the TUI) renders from here, so they
// cannot drift. A raw event is a fact; a presentation item says what it means for the
// operator: its category, the lowest display level that shows it (`visibility`), a title,
// a one-line summary and an optional body. Display levels (operator-display-levels):
// `info` results, failures and what needs attention; `verbose` activity (assistant text,
// tools, tasks, work); `debug` adds runtime detail (provider rounds, state changes, ids);
// `trace` is the raw event, for inspection only. The switch is exhaustive over the catalog:
// a new event kind does not compile until it says how it is shown. Two things more live
// here so that every surface agrees: what a tool call is about (`toolSubject`: the command,
// the patched files, the work item or child), and the live activity line folded from the
// stream (`nextActivity`, `renderActivity`) that `run`'s progress and the TUI draw.
import type { styleText } from "node:util";
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
  /** Text shown only at `debug` (under the body): a tool call's full command or arguments. */
  debug_body: string | null;
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
  more: {
    tone?: Tone;
    body?: string | null;
    detail?: string | null;
    debugBody?: string | null;
  } = {},
): Shape {
  return {
    visibility,
    category,
    tone: more.tone ?? "plain",
    title,
    summary,
    body: more.body ?? null,
    detail: more.detail ?? null,
    debug_body: more.debugBody ?? null,
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
    case "agent_setting_changed":
      return item(
        "info",
        "runtime",
        "Setting",
        `${e.payload.key} = ${JSON.stringify(e.payload.value ?? null)}`,
        {
          detail: `was ${JSON.stringify(e.payload.previous ?? null)}`,
        },
      );
    case "sandbox_enabled":
      return item(
        "info",
        "runtime",
        "Sandbox",
        e.payload.state === "enforced"
          ? `commands now run confined (${e.payload.backend}, mode ${e.payload.mode})`
          : `not enforced (mode ${e.payload.mode}): ${e.payload.reason ?? ""}`,
      );
    case "sandbox_network_refused":
      return item(
        "info",
        "runtime",
        "Network refused",
        `${e.payload.host}:${e.payload.port} (${e.payload.protocol}): ${e.payload.reason}` +
          (e.payload.suppressed > 0 ? ` (+${e.payload.suppressed} more not recorded)` : ""),
      );
    case "hook_failed":
      return item("info", "runtime", `${e.payload.hook_event} hook failed`, e.payload.reason, {
        detail: e.payload.detail,
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
      const calls = e.payload.tool_calls
        ? e.payload.tool_calls.map((c) => callLabel(c.tool_name, c.arguments_preview))
        : e.payload.tool_requests;
      if (!text) {
        return item("debug", "assistant", "Tool calls", calls.join(", "), { tone: "dim" });
      }
      return item("verbose", "assistant", "Assistant", firstLine(text), {
        body: text,
        detail: calls.length ? `then ${calls.join(", ")}` : null,
      });
    }
    case "tool_executed":
    case "tool_execution_failed": {
      const p = e.payload;
      const subject = toolSubject(p.tool_name, p.arguments_preview, p.envelope.result);
      const failed = e.type === "tool_execution_failed";
      return item("verbose", "tool", p.tool_name, withSubject(subject.short, p.summary_text), {
        tone: failed ? "warn" : "plain",
        body: failed ? (p.tool_error?.recovery_hint ?? null) : null,
        detail: failed
          ? `${ms(p.duration_ms)}, ${p.tool_error?.kind ?? p.error ?? "error"}, call ${p.call_id}`
          : `${ms(p.duration_ms)}, call ${p.call_id}`,
        debugBody: subject.full,
      });
    }
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
    case "prompt_cache_degraded": {
      const p = e.payload;
      const pct = (x: number) => `${Math.round(x * 100)}%`;
      return item(
        "info",
        "failure",
        "Prompt cache degraded",
        `cached share ${pct(p.baseline_share)} → ${pct(p.current_share)} on ${p.model_ref}`,
        {
          tone: "warn",
          detail: `first at ${p.first_changed.run_id} round ${p.first_changed.round}`,
        },
      );
    }
    case "prompt_cache_recovered":
      return item("verbose", "failure", "Prompt cache recovered", e.payload.model_ref, {
        detail: `cached share ${Math.round(e.payload.share * 100)}%`,
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
    case "storage_outage":
      return item(
        "info",
        "runtime",
        e.payload.state === "full" ? "Disk was full" : "Home was not writable",
        `${e.payload.from} → ${e.payload.to}`,
        {
          tone: "warn",
          detail: `${Math.round(e.payload.duration_ms / 1000)} s, ${e.payload.refused_writes} write(s) refused: ${e.payload.error}`,
        },
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
    case "ask_opened":
      return item("info", "operator", "Asks you", `${e.payload.ask.id}: ${e.payload.ask.about}`, {
        tone: "accent",
        body: e.payload.ask.detail,
        detail: [
          `${e.payload.ask.kind}, ${e.payload.ask.scope}`,
          e.payload.ask.options.length ? `options: ${e.payload.ask.options.join(" | ")}` : "",
          `answer: holon asks answer ${e.payload.ask.id} <answer>`,
        ]
          .filter(Boolean)
          .join("; "),
      });
    case "ask_decided":
      return item(
        "info",
        "operator",
        "Ask decided",
        `${e.payload.ask.id}: ${e.payload.ask.decision ?? ""}`,
        {
          tone: "good",
          detail: e.payload.ask.reason ?? null,
        },
      );
    case "ask_expired":
      return item(
        "info",
        "operator",
        "Ask expired",
        `${e.payload.ask.id}: ${e.payload.ask.about}`,
        {
          tone: "warn",
        },
      );
    case "ask_withdrawn":
      return item(
        "verbose",
        "operator",
        "Ask withdrawn",
        `${e.payload.ask.id}: ${e.payload.ask.reason ?? ""}`,
        {
          tone: "dim",
        },
      );
    case "ask_delivery_recorded":
      return item(
        e.payload.status === "accepted_by_transport" ? "verbose" : "info",
        e.payload.status === "accepted_by_transport" ? "result" : "failure",
        e.payload.status === "accepted_by_transport" ? "Ask delivered" : "Ask delivery failed",
        `${e.payload.ask_id} to ${e.payload.binding_id}${e.payload.failure ? `: ${e.payload.failure}` : ""}`,
        {
          tone: e.payload.status === "accepted_by_transport" ? "dim" : "warn",
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

// ---------------------------------------------------------------------------
// What a tool call is about. Shared by tool rows (tail, transcript, run --display, the TUI)
// and the live activity line (run's progress, the TUI), so every surface names a call the
// same way. Arguments arrive as the JSON text the model sent, possibly cut short (events carry
// a bounded preview), so every reader here tolerates text that does not parse.

const SUBJECT_CHARS = 80;

/** A command or text on one line: whitespace runs become one space, cut with an ellipsis. */
export function oneLine(text: string, max = SUBJECT_CHARS): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? line.slice(0, max - 1) + "…" : line;
}

function parseArgs(raw: string | undefined): Record<string, unknown> | undefined {
  if (!raw) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    return v && typeof v === "object" && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const text = (v: unknown): string | undefined => (typeof v === "string" && v ? v : undefined);

/** The files a patch names (`*** Update File:` headers or unified `---`/`+++` lines). */
export function patchFiles(patch: string): string[] {
  const files: string[] = [];
  const add = (f: string | undefined) => {
    const name = f?.trim().replace(/\t.*$/, "");
    if (name && name !== "/dev/null" && !files.includes(name)) files.push(name);
  };
  // a deleted file shows only on its `---` line
  const deletes = patch.includes("\n+++ /dev/null");
  for (const line of patch.split("\n")) {
    const codex = /^\*\*\* (?:Add|Update|Delete) File: (.+)$/.exec(line);
    if (codex) add(codex[1]);
    const plus = /^\+\+\+ (?:b\/)?(.+)$/.exec(line);
    if (plus) add(plus[1]);
    const minus = deletes ? /^--- (?:a\/)?(.+)$/.exec(line) : null;
    if (minus) add(minus[1]);
  }
  return files;
}

function fileList(files: string[]): string {
  const shown = files.slice(0, 4).join(", ");
  return files.length > 4 ? `${shown} and ${files.length - 4} more` : shown;
}

/**
 * What a call of `tool` is about: `short` for one line (the command shortened, the files a
 * patch touches, the work item, task or child named), `full` for `debug` (the whole command,
 * the patch as far as it was kept), or null when `short` says it all.
 */
export function toolSubject(
  tool: string,
  rawArgs: string | undefined,
  result?: Record<string, unknown> | null,
): { short: string; full: string | null } {
  const a = parseArgs(rawArgs);
  const done = (short: string, full: string | null = null) => ({
    short,
    full: full && full.trim() !== short ? full : null,
  });
  if (!a) {
    // Cut short or freeform: say what can be read from the raw text.
    if (!rawArgs) return done("");
    if (tool === "ApplyPatch") {
      const files = patchFiles(rawArgs.replaceAll("\\n", "\n"));
      if (files.length) return done(fileList(files), rawArgs);
    }
    return done(oneLine(rawArgs), rawArgs);
  }
  const workdir = text(a.workdir);
  switch (tool) {
    case "ExecCommand": {
      const cmd = text(a.cmd) ?? "";
      return done(
        oneLine(cmd),
        `command:\n${cmd}` + (workdir ? `\nworkdir: ${workdir}` : "") + (a.tty ? "\ntty" : ""),
      );
    }
    case "ExecCommandBatch": {
      const cmds = (Array.isArray(a.items) ? a.items : []).map(
        (i) => text((i as Record<string, unknown> | null)?.cmd) ?? "?",
      );
      return done(
        `${cmds.length} command${cmds.length === 1 ? "" : "s"}: ${oneLine(cmds.join("; "))}`,
        cmds.map((c, i) => `${i + 1}. ${c}`).join("\n"),
      );
    }
    case "ApplyPatch": {
      const fromResult = Array.isArray(result?.files)
        ? (result.files as { path?: unknown; operation?: unknown }[])
            .map((f) => text(f.path))
            .filter((f): f is string => Boolean(f))
        : [];
      const patch = text(a.patch) ?? "";
      const files = fromResult.length ? fromResult : patchFiles(patch);
      return done(files.length ? fileList(files) : "(no file named)", patch);
    }
    case "CreateWorkItem":
      return done(oneLine(text(a.objective) ?? "", 60));
    case "UpdateWorkItem":
    case "PickWorkItem":
    case "CompleteWorkItem":
    case "GetWorkItem": {
      const id = text(a.work_item_id) ?? "the current work item";
      const objective = text(a.objective);
      return done(objective ? `${id}: ${oneLine(objective, 50)}` : id);
    }
    case "SpawnAgent": {
      const child = text(result?.agent_id) ?? text(result?.child_agent_id) ?? text(a.agent_id);
      const job = text(a.initial_message);
      const parts = [child, job ? `"${oneLine(job, 50)}"` : undefined].filter(Boolean);
      return done(parts.join(" ") || text(a.preset) || "", job ?? null);
    }
    case "AgentGet":
      return done(text(a.agent_id) ?? "itself");
    case "TaskInput":
    case "TaskStop":
    case "TaskStatus":
    case "TaskOutput":
      return done(text(a.task_id) ?? "");
    case "UseWorkspace":
      return done(
        [text(a.path) ?? text(a.workspace_id), text(a.mode)].filter(Boolean).join(" ") || "",
      );
    case "MemorySearch":
      return done(a.query !== undefined ? `"${oneLine(String(a.query), 60)}"` : "");
    case "MemoryGet":
      return done(text(a.source_ref) ?? "");
    case "Sleep":
      return done(typeof a.duration_ms === "number" ? ms(a.duration_ms) : "");
    default: {
      // A tool this version does not know (or one without arguments): its first text field.
      const first = Object.values(a).find((v) => typeof v === "string" && v.trim());
      return done(first ? oneLine(first as string) : "", Object.keys(a).length ? rawArgs : null);
    }
  }
}

/** `ExecCommand (npm test)`: a call named with its subject, for lists of calls. */
function callLabel(tool: string, rawArgs: string | undefined): string {
  const { short } = toolSubject(tool, rawArgs);
  return short ? `${tool} (${short})` : tool;
}

function withSubject(subject: string, summary: string): string {
  return subject ? `${subject} · ${summary}` : summary;
}

// ---------------------------------------------------------------------------
// The live activity line: what the agent is doing right now and since when, folded from the
// event stream. `run`'s progress line and the TUI draw it with a clock that keeps moving.

export type Activity = {
  /** `running ExecCommand: npm test`, `asking the model`, … */
  label: string;
  /** When it started (the event's time). */
  since: string;
};

export type ActivityState = {
  current: Activity | null;
  /** The calls of the last model round that have not finished yet, in order. */
  pending: { call_id: string; label: string }[];
};

export const IDLE: ActivityState = { current: null, pending: [] };

function runningLabel(tool: string, rawArgs: string | undefined): string {
  const { short } = toolSubject(tool, rawArgs);
  return `running ${tool}${short ? `: ${short}` : ""}`;
}

/** The activity after event `e`; events that change nothing return `s` itself. */
export function nextActivity(s: ActivityState, e: EventEnvelope): ActivityState {
  const known = parseEvent(e);
  if (!known) return s;
  const at = (label: string, pending = s.pending): ActivityState => ({
    current: { label, since: e.ts },
    pending,
  });
  switch (known.type) {
    case "message_processing_started":
      return at("working", []);
    case "turn_context_built":
      return at("asking the model", []);
    case "provider_retry_scheduled":
      return { current: null, pending: [] };
    case "assistant_round_recorded": {
      const p = known.payload;
      const pending = p.tool_calls
        ? p.tool_calls.map((c) => ({
            call_id: c.call_id,
            label: runningLabel(c.tool_name, c.arguments_preview),
          }))
        : p.tool_requests.map((name, i) => ({ call_id: `#${i}`, label: `running ${name}` }));
      return pending.length ? at(pending[0]!.label, pending) : at("answering", []);
    }
    case "tool_executed":
    case "tool_execution_failed": {
      const id = known.payload.call_id;
      const i = s.pending.findIndex((c) => c.call_id === id || c.call_id.startsWith("#"));
      const pending = i >= 0 ? [...s.pending.slice(0, i), ...s.pending.slice(i + 1)] : s.pending;
      return pending.length ? at(pending[0]!.label, pending) : at("asking the model", []);
    }
    case "turn_terminal":
    case "message_processed":
    case "message_interrupted":
    case "closure_decided":
    case "runtime_error":
      return s.current || s.pending.length ? IDLE : s;
    default:
      return s;
  }
}

/** `4.2 s`, `3 min 07 s`. */
export function elapsed(msCount: number): string {
  const n = Math.max(0, msCount);
  if (n < 60_000) return `${(n / 1000).toFixed(1)} s`;
  const secs = Math.floor(n / 1000);
  return `${Math.floor(secs / 60)} min ${String(secs % 60).padStart(2, "0")} s`;
}

/**
 * The activity line at `nowMs`: `running ExecCommand: npm test · 4.2 s`, or null when idle.
 * With `maxChars`, the label is cut so that the clock always shows.
 */
export function renderActivity(s: ActivityState, nowMs: number, maxChars?: number): string | null {
  if (!s.current) return null;
  const clock = ` · ${elapsed(nowMs - Date.parse(s.current.since))}`;
  let label = s.current.label;
  if (maxChars !== undefined && label.length + clock.length > maxChars) {
    label = label.slice(0, Math.max(1, maxChars - clock.length - 1)) + "…";
  }
  return label + clock;
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
      const tools = d.tool_calls
        .map((c) => (c.name ? callLabel(c.name, c.arguments) : c.type))
        .join(", ");
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
      const subject = toolSubject(d.tool_name, d.arguments, d.envelope.result);
      return {
        ...head,
        ...item(
          "verbose",
          "tool",
          d.tool_name,
          withSubject(subject.short, d.envelope.summary_text),
          {
            tone: d.envelope.status === "error" ? "warn" : "plain",
            body: d.rendered,
            detail: `${ms(d.duration_ms)}, call ${d.call_id}`,
            debugBody: subject.full,
          },
        ),
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
  // Taken at the first coloured text, not imported: Node builds the ESM view of node:util by
  // reading every export, and its lazy ones load half a dozen builtin modules that a
  // `holon run --json` (which paints nothing) never needs.
  let style: typeof styleText | undefined;
  return (tone, text) => {
    if (tone === "plain") return text;
    style ??= process.getBuiltinModule("node:util").styleText;
    return style(TONE_STYLE[tone], text, { validateStream: true, stream });
  };
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
  // A body that says no more than the summary is not repeated under it; a summary that is
  // the body's first line is not repeated above it. A tool row keeps both: what the call
  // was about, then what it returned.
  const body = it.body?.trim() && it.body.trim() !== it.summary ? it.body.trimEnd() : null;
  const opensBody = body !== null && body.trimStart().startsWith(it.summary.replace(/…$/, ""));
  const head =
    paint("meta", clock(it.ts)) +
    " " +
    paint(it.tone === "dim" ? "dim" : it.tone, it.title) +
    (it.summary && !opensBody ? "  " + it.summary : "");
  const lines = [head];
  if (body) {
    const bodyLines = body.split("\n");
    const max = level === "debug" || level === "trace" ? Infinity : level === "verbose" ? 12 : 40;
    for (const l of bodyLines.slice(0, max)) lines.push("  " + l);
    if (bodyLines.length > max)
      lines.push(paint("meta", `  … ${bodyLines.length - max} more line(s)`));
  }
  if ((level === "debug" || level === "trace") && it.debug_body) {
    for (const l of it.debug_body.trimEnd().split("\n")) lines.push(paint("dim", "  " + l));
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
