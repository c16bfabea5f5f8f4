// The event catalog: every event kind the runtime writes, as one zod discriminated union on
// `type`, plus the envelope the store wraps around it. Writers take the typed `NewEvent`, so
// the compiler checks every payload; readers switch on `type` with an `assertNever` default.
// Adding a kind is one entry here plus the places the compiler then points at.
//
// Rows read back from SQLite stay loose (`EventEnvelope`, `type: string`): a log written by
// another version may hold kinds or payloads this catalog does not know, and a reader must
// not crash on them. `parseEvent()` narrows a stored envelope to the catalog, or says no.
import { z } from "zod";
import { AgentKind, AgentOwnership, AgentStatus, AgentVisibility, ProfilePreset } from "./agent.ts";
import { AskRecord } from "./ask.ts";
import { BriefRecord } from "./brief.ts";
import { ClosureDecision, ContinuationResolution } from "./closure.ts";
import {
  AdmissionContext,
  AuthorityClass,
  ContinuationTriggerKind,
  MessageDeliverySurface,
  MessageKind,
  MessageOrigin,
  Priority,
  TrustLevel,
} from "./message.ts";
import { FailureArtifact, ProviderAttemptTimeline, TokenUsage } from "./provider.ts";
import { AgentBudgets, BudgetHold, BudgetLimits, BudgetPeriod } from "./budget.ts";
import { TaskSnapshot } from "./task.ts";
import { TimerRecord } from "./waiting.ts";
import { SandboxMode } from "./sandbox.ts";
import {
  ExecutionSnapshot,
  ProjectionKind,
  RootOwnership,
  SkillLoadReason,
  SkillScope,
  WorkspaceKind,
  WorkspaceMode,
} from "./workspace.ts";

// ---------------------------------------------------------------------------
// Envelope

/** Provenance carried beside the payload so replay clients can index events. */
export const EventProvenance = z.object({
  origin: MessageOrigin.optional(),
  trust: TrustLevel.optional(),
  authority_class: AuthorityClass.optional(),
  delivery_surface: MessageDeliverySurface.optional(),
  admission_context: AdmissionContext.optional(),
  source: z.string().optional(),
  reply_route: z.string().optional(),
  message_id: z.string().optional(),
  task_id: z.string().optional(),
  work_item_id: z.string().optional(),
  correlation_id: z.string().optional(),
  causation_id: z.string().optional(),
});
export type EventProvenance = z.infer<typeof EventProvenance>;

export const EventProjectionName = z.enum(["operator", "local_debug"]);
export type EventProjectionName = z.infer<typeof EventProjectionName>;

export const EventProjection = z.object({
  name: EventProjectionName,
  raw_payload_included: z.boolean(),
  redactions: z.array(z.string()),
});
export type EventProjection = z.infer<typeof EventProjection>;

/** What the store assigns to every event: id, per-agent sequence number, time, owner. */
const EventHead = z.object({
  id: z.string(),
  event_seq: z.number().int().positive(),
  ts: z.string(),
  agent_id: z.string(),
  provenance: EventProvenance,
});
type EventHead = z.infer<typeof EventHead>;

/** A stored event as read back from SQLite: any type, any payload (the tolerant path). */
export const EventEnvelope = EventHead.extend({
  type: z.string(),
  payload: z.record(z.string(), z.unknown()),
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;

/** What replay surfaces return: the stored envelope plus the projection applied to it. */
export type ProjectedEvent = EventEnvelope & { projection: EventProjection };

// ---------------------------------------------------------------------------
// Shared payload parts

/** The lifecycle snapshot of a task (no output bytes), as task events carry it. */
const TaskPayload = z.object({ task: TaskSnapshot });

/** The canonical tool result as stored (tools/envelope.ts CanonicalToolResult). */
export const ToolError = z.object({
  kind: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
  recovery_hint: z.string().optional(),
  retryable: z.boolean(),
});
export const CanonicalToolResult = z.object({
  tool_name: z.string(),
  status: z.enum(["success", "error"]),
  summary_text: z.string(),
  result: z.record(z.string(), z.unknown()).nullable(),
  error: ToolError.nullable(),
});

const ToolExecutionPayload = z.object({
  run_id: z.string(),
  call_id: z.string(),
  tool_name: z.string(),
  status: z.enum(["success", "error"]),
  summary_text: z.string(),
  duration_ms: z.number(),
  envelope: CanonicalToolResult,
  tool_error: ToolError.optional(),
  /** What the model was shown for the failure. */
  error: z.string().optional(),
  /** The call's arguments as the model sent them, bounded (see `ToolCallPreview`). */
  arguments_preview: z.string().optional(),
});

/**
 * A tool call as events carry it: its arguments as the model sent them when they fit in
 * 4 KiB, otherwise re-serialized with long strings cut (still JSON when the model's was).
 * The transcript keeps the arguments whole; this is what operator surfaces summarize.
 */
export const ToolCallPreview = z.object({
  call_id: z.string(),
  tool_name: z.string(),
  arguments_preview: z.string(),
});
export type ToolCallPreview = z.infer<typeof ToolCallPreview>;

export const MAX_ARGUMENTS_PREVIEW_CHARS = 4096;
const MAX_PREVIEW_STRING_CHARS = 1024;

/** The bounded `arguments_preview` of a call's raw arguments (linear in their length). */
export function previewArguments(args: string): string {
  const max = MAX_ARGUMENTS_PREVIEW_CHARS;
  if (args.length <= max) return args;
  const clip = (v: unknown, depth: number): unknown => {
    if (typeof v === "string")
      return v.length > MAX_PREVIEW_STRING_CHARS ? v.slice(0, MAX_PREVIEW_STRING_CHARS) + "…" : v;
    if (depth > 4 || v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.slice(0, 32).map((x) => clip(x, depth + 1));
    return Object.fromEntries(
      Object.entries(v)
        .slice(0, 32)
        .map(([k, x]) => [k, clip(x, depth + 1)]),
    );
  };
  try {
    const shorter = JSON.stringify(clip(JSON.parse(args), 0));
    if (shorter.length <= max) return shorter;
  } catch {
    // not JSON (a freeform tool's input): cut below
  }
  return args.slice(0, max) + "…";
}

const TurnOutcomeKind = z.enum([
  "settled",
  "rest",
  "sleep_until",
  "retry_at",
  "await_tasks",
  "await_external",
  "await_operator",
  "failed",
  "aborted",
  "liveness_only",
]);

const ControlAction = z.enum(["pause", "resume", "start", "stop", "wake"]);

const LoadedInstructions = z.object({
  scope: z.enum(["agent", "workspace"]),
  path: z.string(),
  kind: z.string(),
});

// ---------------------------------------------------------------------------
// The catalog

function kind<const T extends string, S extends z.ZodRawShape>(type: T, payload: S) {
  return z.object({ type: z.literal(type), payload: z.object(payload) });
}

// The kinds as one schema, built at its first use (some 150 object schemas): writers are
// checked by the compiler, so only a reader that narrows a stored event needs it at run time.
const buildEventBody = () =>
  z.discriminatedUnion("type", [
    // Agents and their lifecycle
    kind("agent_created", {
      agent_id: z.string(),
      kind: AgentKind,
      visibility: AgentVisibility,
      ownership: AgentOwnership,
      profile_preset: ProfilePreset,
      agent_home: z.string(),
      /** The agent's group (the root of its supervision chain); absent in older events. */
      group_id: z.string().optional(),
    }),
    kind("agent_state_changed", {
      from: AgentStatus,
      to: AgentStatus,
      reason: z.string(),
      current_run_id: z.string().optional(),
    }),
    // The agent plane (issue 15): spawn, templates, archive and delete.
    kind("agent_spawned", {
      child_agent_id: z.string(),
      profile_preset: ProfilePreset,
      supervision_task_id: z.string().optional(),
      workspace_mode: z.enum(["inherit", "worktree"]),
      context_mode: z.enum(["fresh", "fork"]),
      parent_work_item_id: z.string().optional(),
    }),
    kind("agent_template_applied", {
      template: z.string(),
      source_kind: z.enum(["template_id", "absolute_path", "github_url", "builtin_default"]),
      skills: z.array(z.string()),
    }),
    kind("agent_archived", { reason: z.string() }),
    kind("agent_deleted", {
      forced: z.boolean(),
      stopped_task_ids: z.array(z.string()),
      cancelled_timer_ids: z.array(z.string()),
      revoked_trigger_ids: z.array(z.string()),
      retained_worktrees: z.array(z.string()),
      deleted_children: z.array(z.string()),
    }),
    kind("agent_model_changed", {
      previous: z.string().nullable(),
      override_model: z.string().nullable(),
    }),
    // An agent's own setting changed through the control route: the sandbox (src/sandbox/)
    // and the action leash (src/policy/) keys alike.
    kind("agent_setting_changed", {
      key: z.string(),
      previous: z.unknown(),
      value: z.unknown(),
    }),
    kind("sandbox_enabled", {
      backend: z.enum(["host_local", "host_bwrap"]),
      mode: SandboxMode,
      state: z.enum(["enforced", "not_enforced"]),
      reason: z.string().nullable(),
    }),
    // The sandbox's proxy refused a connection a confined command asked for (sandbox.network
    // allowlist): the host it named, why, and how many more were refused unrecorded since.
    kind("sandbox_network_refused", {
      host: z.string(),
      port: z.number().int(),
      protocol: z.enum(["http_connect", "http", "socks5"]),
      reason: z.string(),
      suppressed: z.number().int(),
    }),
    // A hook that failed, timed out or printed too much (PreToolUse then refused the call).
    kind("hook_failed", {
      hook_event: z.string(),
      command: z.string(),
      reason: z.enum([
        "timeout",
        "output_too_large",
        "exit_code",
        "spawn_failed",
        "invalid_output",
      ]),
      detail: z.string(),
      exit_code: z.number().int().nullable(),
      run_id: z.string().nullable(),
    }),
    kind("workspace_attached", {
      /** The workspace anchor (the only field older records carry). */
      workspace_root: z.string(),
      workspace_id: z.string().optional(),
      kind: WorkspaceKind.optional(),
      attached_by: z.enum(["operator", "agent"]).optional(),
    }),
    kind("workspace_detached", { workspace_id: z.string(), workspace_anchor: z.string() }),
    kind("workspace_activated", {
      workspace_id: z.string(),
      workspace_anchor: z.string(),
      execution_root: z.string(),
      execution_root_id: z.string(),
      cwd: z.string(),
      projection_kind: ProjectionKind,
      mode: WorkspaceMode,
      ownership: RootOwnership,
      previous_workspace_id: z.string(),
    }),
    kind("worktree_created", {
      worktree_id: z.string(),
      workspace_id: z.string(),
      path: z.string(),
      branch: z.string(),
      base_branch: z.string(),
      ownership: z.enum(["session_owned", "task_owned"]),
      task_id: z.string().optional(),
    }),
    kind("worktree_removed", {
      worktree_id: z.string(),
      path: z.string(),
      branch: z.string(),
      branch_deleted: z.boolean(),
      reason: z.string(),
    }),
    kind("worktree_retained", {
      worktree_id: z.string(),
      path: z.string(),
      branch: z.string(),
      changed_files: z.array(z.string()),
      commits_ahead: z.number().int(),
      reason: z.string(),
    }),
    kind("skill_activated", {
      skill_ids: z.array(z.string()),
      skill_name: z.string(),
      path: z.string(),
      entrypoint_path: z.string(),
      scope: SkillScope,
      load_reason: SkillLoadReason,
      turn_index: z.number().int().optional(),
      run_id: z.string().optional(),
    }),
    kind("control_applied", {
      action: ControlAction,
      disposition: z.string(),
      from: AgentStatus,
      to: AgentStatus,
    }),
    kind("wake_requested", { source: z.string(), disposition: z.string() }),
    kind("wake_scheduled", { wake_at: z.string(), duration_ms: z.number() }),
    kind("wake_cancelled", { wake_at: z.string(), reason: z.string() }),
    kind("deadline_dropped", {
      deadline_id: z.string(),
      kind: z.string(),
      due_at: z.string(),
      reason: z.enum(["handler_declined", "no_handler", "handler_failed"]),
    }),
    kind("current_run_abort_requested", {
      run_id: z.string(),
      mode: z.literal("stop_after_abort"),
    }),

    // Messages through the queue
    kind("message_admitted", {
      message_id: z.string(),
      queue_seq: z.number().int(),
      kind: MessageKind,
      priority: Priority,
      trigger_kind: ContinuationTriggerKind,
      admitted_at: z.string(),
      body_preview: z.string(),
    }),
    kind("continuation_resolved", ContinuationResolution.shape),
    kind("message_processing_started", {
      message_id: z.string(),
      run_id: z.string(),
      kind: MessageKind,
      queue_wait_ms: z.number(),
    }),
    kind("message_processed", {
      message_id: z.string(),
      run_id: z.string(),
      outcome: z.enum(["completed", "failed", "aborted", "interrupted"]),
      turn_outcome: TurnOutcomeKind,
      duration_ms: z.number(),
      reason: z.string().optional(),
    }),
    kind("closure_decided", { ...ClosureDecision.shape, turn_outcome: TurnOutcomeKind }),
    kind("message_interrupted", {
      message_id: z.string(),
      run_id: z.string().nullable(),
      reason: z.string(),
    }),
    kind("operator_interjection_admitted", {
      message_id: z.string(),
      into_message_id: z.string(),
      boundary: z.string(),
    }),

    // One turn
    kind("turn_context_built", {
      run_id: z.string(),
      context_build_ms: z.number(),
      turn_index: z.number().int(),
      tool_count: z.number().int(),
      prompt_cache_key: z.string().nullable(),
      context_fingerprint: z.string().nullable(),
      loaded_agents_md: z.array(LoadedInstructions),
      execution_root: z.string(),
      cwd: z.string(),
      execution_snapshot: ExecutionSnapshot.optional(),
    }),
    kind("provider_round_completed", {
      run_id: z.string(),
      round: z.number().int(),
      model_ref: z.string(),
      token_usage: TokenUsage.nullable(),
      provider_attempt_timeline: ProviderAttemptTimeline,
      context_build_ms: z.number(),
      provider_round_ms: z.number(),
      provider_started_at: z.string(),
      provider_completed_at: z.string(),
      /** OpenAI Responses: why the request went out in full instead of incrementally. */
      continuation: z.record(z.string(), z.unknown()).optional(),
    }),
    // Context management (src/memory/): turn-local compaction changed what the model sees.
    kind("context_compacted", {
      run_id: z.string(),
      round: z.number().int(),
      strategy: z.enum(["turn_local_recap", "remote_compaction"]),
      /** Rounds of the turn now represented by the recap (from the first). */
      compacted_rounds: z.number().int(),
      retained_rounds: z.number().int(),
      before_tokens: z.number().int(),
      after_tokens: z.number().int(),
      recap_tokens: z.number().int(),
      budget_tokens: z.number().int(),
      window_tokens: z.number().int(),
      full_conversation_tokens: z.number().int(),
      /** Remote compaction only: what the provider returned (opaque; sizes only). */
      remote: z
        .object({
          compaction_items: z.number().int(),
          encrypted_bytes: z.number().int(),
          input_items: z.number().int(),
        })
        .optional(),
    }),
    /** Remote compaction was due but did not happen (unsupported endpoint, refused input…). */
    kind("remote_compaction_skipped", {
      run_id: z.string(),
      round: z.number().int(),
      reason: z.string(),
      status: z.number().int().nullable(),
      message: z.string(),
    }),
    kind("assistant_round_recorded", {
      run_id: z.string(),
      round: z.number().int(),
      text_preview: z.string(),
      tool_requests: z.array(z.string()),
      /** The calls of this round with their arguments (absent in logs of older versions). */
      tool_calls: z.array(ToolCallPreview).optional(),
    }),
    kind("tool_executed", ToolExecutionPayload.shape),
    kind("tool_execution_failed", ToolExecutionPayload.shape),
    kind("turn_terminal", {
      run_id: z.string(),
      turn_index: z.number().int(),
      kind: z.enum(["completed", "aborted"]),
      last_assistant_message: z.string(),
      completed_at: z.string(),
      duration_ms: z.number(),
      model_rounds: z.number().int(),
      token_usage: TokenUsage.nullable(),
      reason: z.string().optional(),
      /** With reason `provider_rate_limited`: when the message runs again. */
      retry_at: z.string().optional(),
      provider_attempt_timeline: ProviderAttemptTimeline.optional(),
    }),
    /** Every model was rate-limited beyond the in-place cap: the message is admitted again at `retry_at`. */
    kind("provider_retry_scheduled", {
      message_id: z.string(),
      run_id: z.string(),
      retry_at: z.string(),
      deadline_id: z.string(),
    }),
    kind("brief_created", { brief: BriefRecord }),
    // Prompt-cache health (src/telemetry/cache-health.ts): the cached share of input dropped.
    kind("prompt_cache_degraded", {
      model_ref: z.string(),
      baseline_share: z.number(),
      current_share: z.number(),
      rounds_low: z.number().int(),
      first_changed: z.object({ run_id: z.string(), round: z.number().int(), at: z.string() }),
    }),
    kind("prompt_cache_recovered", {
      model_ref: z.string(),
      run_id: z.string(),
      round: z.number().int(),
      share: z.number(),
      since: z.string(),
    }),
    kind("runtime_error", {
      run_id: z.string().nullable(),
      phase: z.string(),
      summary: z.string(),
      // Diagnostics, as the failing path recorded them.
      kind: z.string().optional(),
      max_rounds: z.number().int().optional(),
      failure_artifact: FailureArtifact.optional(),
      provider_attempt_timeline: ProviderAttemptTimeline.optional(),
      token_usage: TokenUsage.optional(),
    }),

    // Tasks
    kind("task_created", TaskPayload.shape),
    kind("task_status_updated", TaskPayload.shape),
    // No pid: public views never expose raw process ids (issue 11).
    kind("task_reattached_after_restart", { task_id: z.string() }),

    // Work items (the work plane, src/work/)
    kind("work_item_created", {
      work_item_id: z.string(),
      objective: z.string(),
      plan_status: z.string(),
      created_by: z.enum(["agent", "operator"]),
      plan_path: z.string(),
      budget: BudgetLimits.optional(),
    }),
    kind("work_item_updated", {
      work_item_id: z.string(),
      revision: z.number().int(),
      source: z.enum(["agent", "operator", "runtime"]),
      /** Which fields changed (objective, plan_status, todo_list, blocked_by, plan_artifact, recheck). */
      changes: z.array(z.string()),
      blocked_by: z.string().nullable(),
      recheck_at: z.string().nullable(),
      plan_status: z.string(),
      todo_done: z.number().int(),
      todo_total: z.number().int(),
    }),
    kind("work_item_focus_changed", {
      work_item_id: z.string().nullable(),
      previous_work_item_id: z.string().nullable(),
      source: z.enum(["agent", "operator", "runtime"]),
    }),
    kind("work_item_completed", {
      work_item_id: z.string(),
      revision: z.number().int(),
      source: z.enum(["agent", "operator"]),
      /** The delivery summary promoted from the completion report, when there was one. */
      report_id: z.string().nullable(),
      warning: z.string().optional(),
    }),
    kind("work_item_bound", { run_id: z.string(), work_item_id: z.string() }),
    /** A model turn bound to an item ended: what it left the item as (never completed by the runtime). */
    kind("work_item_turn_end_committed", {
      run_id: z.string(),
      work_item_id: z.string(),
      turn_outcome: z.string(),
      /** completed (by CompleteWorkItem in the turn), blocked (by the turn's tools or the runtime), open. */
      transition: z.enum(["completed", "blocked", "open"]),
      /** Set when the runtime itself blocked the item from the turn's outcome. */
      runtime_blocker: z.string().optional(),
    }),
    /** The run bound to an item was no model turn (or never reached an end): nothing was committed. */
    kind("work_item_turn_end_commit_skipped", {
      run_id: z.string(),
      work_item_id: z.string(),
      turn_outcome: z.string(),
      reason: z.enum(["not_a_model_turn", "turn_did_not_finish", "item_gone"]),
    }),
    kind("work_recheck_due", {
      work_item_ids: z.array(z.string()),
      delivered: z.boolean(),
      reason: z.string(),
    }),
    kind("work_activation", {
      mode: z.enum(["continue_active", "activate_queued"]),
      work_item_id: z.string(),
      disposition: z.enum(["admitted", "already_queued", "halted"]),
      continuations_without_progress: z.number().int(),
      message_id: z.string().optional(),
    }),

    // Budgets (src/budget/): set and raised by the operator, exhausted and cleared by the gate
    kind("budget_set", {
      /** `agent` (its budgets as now stored) or `work_item`. */
      scope: z.string(),
      period: BudgetPeriod.optional(),
      work_item_id: z.string().optional(),
      limits: BudgetLimits,
      budgets: AgentBudgets.optional(),
      time_zone: z.string().optional(),
    }),
    kind("budget_raised", {
      scope: z.string(),
      added: BudgetLimits,
      limits: BudgetLimits,
      work_item_id: z.string().optional(),
    }),
    kind("budget_exhausted", {
      run_id: z.string().optional(),
      work_item_id: z.string().optional(),
      hold: BudgetHold,
    }),
    kind("budget_hold_cleared", {
      scope: z.string(),
      work_item_id: z.string().optional(),
      /** `raised`, `window_turned_over`, `unfrozen`, `limit_changed`. */
      reason: z.string(),
    }),
    /** The agent was told once that a budget is 80% spent. */
    kind("budget_warning", {
      run_id: z.string(),
      scope: z.string(),
      dimension: z.string(),
      spent: z.number(),
      limit: z.number(),
    }),
    /** A child's reservation returned its unspent rest to the parent when the child settled. */
    kind("budget_reservation_returned", {
      child_agent_id: z.string(),
      limits: BudgetLimits,
      spent: z.record(z.string(), z.number()),
    }),

    // The runtime and its control plane
    kind("retention_applied", {
      /** Rows removed per record family in this pass. */
      removed: z.record(z.string(), z.number().int()),
      /** Removed events per event type. */
      event_types: z.record(z.string(), z.number().int()),
      pass_started_at: z.string(),
      events_removed_through: z.number().int().optional(),
      oldest_available_seq: z.number().int().optional(),
    }),
    kind("runtime_service_shutdown_requested", { source: z.literal("control") }),
    /**
     * The store could not be written (a full disk, a read-only or failing file system) from
     * `from` to `to`; written once a write goes through again, on the default agent.
     */
    kind("storage_outage", {
      state: z.enum(["full", "unavailable"]),
      from: z.string(),
      to: z.string(),
      duration_ms: z.number().int(),
      error: z.string(),
      refused_writes: z.number().int(),
      /** Refused HTTP requests per route. */
      refused_requests: z.record(z.string(), z.number().int()),
    }),
    /** A brief submitted to an operator transport binding's callback (or given up on). */
    kind("operator_delivery_recorded", {
      delivery_intent_id: z.string(),
      binding_id: z.string(),
      brief_id: z.string(),
      brief_kind: z.string(),
      status: z.enum(["accepted_by_transport", "failed_to_submit"]),
      attempts: z.number().int(),
      transport_delivery_id: z.string().nullable(),
      failure: z.string().nullable(),
    }),
    kind("http_request_refused", {
      kind: z.string(),
      status: z.number().int(),
      method: z.string(),
      path: z.string(),
      transport: z.enum(["tcp", "unix"]),
      host: z.string().nullable(),
      origin: z.string().nullable(),
      peer: z.string().nullable(),
      /** Refusals of the same kind left unrecorded since the previous one (rate limit). */
      suppressed_before: z.number().int(),
    }),

    // Asks (src/asks/): durable requests to a person; each carries the ask as it now stands.
    kind("ask_opened", { ask: AskRecord }),
    /** Decided; the message that carried the decision to the agent. */
    kind("ask_decided", { ask: AskRecord, message_id: z.string().nullable() }),
    /** Expired unanswered; for an input ask, the message that told the agent. */
    kind("ask_expired", { ask: AskRecord, message_id: z.string().nullable() }),
    kind("ask_withdrawn", { ask: AskRecord }),
    /** The ask submitted to an operator transport binding's callback (or given up on). */
    kind("ask_delivery_recorded", {
      ask_id: z.string(),
      binding_id: z.string(),
      status: z.enum(["accepted_by_transport", "failed_to_submit"]),
      attempts: z.number().int(),
      failure: z.string().nullable(),
    }),

    // The waiting plane: timers, wake hints, external trigger capabilities
    kind("timer_created", { timer: TimerRecord }),
    kind("timer_fired", {
      timer_id: z.string(),
      /** When it was due; the event's `ts` is when it fired. */
      scheduled_for: z.string(),
      /** Periods missed before this fire (catch-up fires once). */
      skipped: z.number().int(),
      /** False when the agent was stopped: the fire was counted as skipped, not delivered. */
      delivered: z.boolean(),
      message_id: z.string().optional(),
      next_fire_at: z.string().nullable(),
    }),
    kind("timer_cancelled", { timer_id: z.string(), reason: z.string() }),
    kind("wake_hint_received", {
      hint_id: z.string(),
      source: z.enum(["operator", "external_trigger"]),
      /** `woken`: turned into a SystemTick at once; `pending`: kept until the agent can take it. */
      disposition: z.enum(["woken", "pending"]),
      count: z.number().int(),
      external_trigger_id: z.string().optional(),
      content_type: z.string().optional(),
      body_bytes: z.number().int().optional(),
      message_id: z.string().optional(),
    }),
    kind("wake_hint_converted", {
      hint_id: z.string(),
      message_id: z.string(),
      count: z.number().int(),
    }),
    kind("external_trigger_provisioned", {
      external_trigger_id: z.string(),
      rotated_from: z.string().optional(),
    }),
    kind("external_trigger_revoked", { external_trigger_id: z.string(), reason: z.string() }),
    kind("external_trigger_refused", {
      reason: z.enum(["unknown_token", "revoked"]),
      requested_mode: z.enum(["wake", "enqueue"]),
      peer: z.string().nullable(),
      external_trigger_id: z.string().optional(),
      /** Misses from this address left unrecorded since the previous one (rate limit). */
      suppressed_before: z.number().int(),
    }),
  ]);
let eventBody: ReturnType<typeof buildEventBody> | undefined;

/** Every event kind with its payload, as one discriminated union on `type`. */
export function eventBodySchema(): ReturnType<typeof buildEventBody> {
  return (eventBody ??= buildEventBody());
}
export type EventBody = z.infer<ReturnType<typeof buildEventBody>>;
export type EventType = EventBody["type"];
export type EventPayload<T extends EventType> = Extract<EventBody, { type: T }>["payload"];

/** Every event kind's `type`. */
export function eventTypes(): readonly EventType[] {
  return eventBodySchema().options.map((o) => o.shape.type.value);
}

/** An event as a writer hands it to `Store.appendEvent`: typed kind and payload. */
export type NewEvent = EventBody & { provenance?: EventProvenance };

/** A catalog event with its envelope: what writers produce and live listeners receive. */
export type CatalogEvent = EventHead & EventBody;

type AnyObject = z.ZodObject<z.ZodRawShape>;
function withHead(head: AnyObject) {
  const options = eventBodySchema().options.map((o) => head.extend(o.shape));
  return z.discriminatedUnion("type", options as unknown as [AnyObject, ...AnyObject[]]);
}

// The two schemas below copy every kind with its envelope (some 300 object schemas): each is
// built at its first use, so a process that reads no event back (a `holon run` before its
// first provider request) does not build them at start-up.
let catalogSchema: z.ZodType<CatalogEvent> | undefined;
let projectedSchema: z.ZodType<CatalogEvent & { projection: EventProjection }> | undefined;

/** The catalog with its envelope, as a schema (OpenAPI, tests). */
export function catalogEventSchema(): z.ZodType<CatalogEvent> {
  return (catalogSchema ??= withHead(EventHead) as unknown as z.ZodType<CatalogEvent>);
}

/** A catalog event as the replay surfaces (`/events`, SSE) return it. */
export function projectedCatalogEventSchema(): z.ZodType<
  CatalogEvent & { projection: EventProjection }
> {
  return (projectedSchema ??= withHead(
    EventHead.extend({ projection: EventProjection }),
  ) as unknown as z.ZodType<CatalogEvent & { projection: EventProjection }>);
}

/**
 * Narrow a stored envelope to the catalog. Undefined for a kind this version does not know
 * or a payload that does not fit it (written by another version): callers skip or show it raw.
 */
export function parseEvent(e: EventEnvelope): CatalogEvent | undefined {
  const r = catalogEventSchema().safeParse(e);
  return r.success ? r.data : undefined;
}
