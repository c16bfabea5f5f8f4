// Response bodies of the HTTP API as zod schemas, for `/openapi.json` (openapi.ts). Request
// bodies are the schemas the routes validate with; responses reuse the domain schemas
// (agents, tasks, briefs, the event and transcript catalogs) so the document cannot drift
// from the records it describes.
import {
  ExternalEvidenceMode,
  HookSettings,
  PermissionMode,
  PermissionSettings,
} from "../domain/policy.ts";
import { z } from "zod";
import {
  AgentKind,
  AgentOwnership,
  AgentRecord,
  AgentStatus,
  AgentVisibility,
  ProfilePreset,
} from "../domain/agent.ts";
import { BriefRecord } from "../domain/brief.ts";
import { BudgetHold, BudgetLimits, BudgetPeriod } from "../domain/budget.ts";
import { Deadline } from "../domain/deadline.ts";
import { catalogEventSchema, projectedCatalogEventSchema } from "../domain/events.ts";
import { MessageKind, Priority } from "../domain/message.ts";
import { FailureArtifact, ProviderAttemptTimeline, TokenUsage } from "../domain/provider.ts";
import { TaskKind, TaskSnapshot, TaskStatus } from "../domain/task.ts";
import { TranscriptEntry } from "../domain/transcript.ts";
import { ProjectionKind, WorktreeSession } from "../domain/workspace.ts";
import { AgentSandboxSettings, SandboxSummary } from "../domain/sandbox.ts";
import {
  ExternalTriggerDescriptor,
  TimerRecord,
  WaitingIntentView,
  WaitingSummary,
  WakeHintView,
} from "../domain/waiting.ts";
import { CurrentWorkItemSummary, WorkItemView, WorkPlanView } from "../domain/work-item.ts";

const Ok = z.literal(true);

/** Every error: `{"ok": false, "error": {kind, message, hint?, …details}}`. */
export const ErrorBody = z.object({
  ok: z.literal(false),
  error: z.looseObject({
    kind: z.string().describe("stable error kind, see docs/http-api.md"),
    message: z.string(),
    hint: z.string().optional(),
  }),
});

export const RootResponse = z.object({ ok: Ok, default_agent: z.string() });

export const HandshakeResponse = z.object({
  ok: Ok,
  protocol: z.object({ name: z.literal("holon-control"), version: z.number().int() }),
  auth: z.object({
    mode: z.enum(["local", "bearer"]),
    required: z.boolean(),
    access: z.enum(["local", "tunnel", "lan", "tailnet"]),
    transport: z.enum(["tcp", "unix"]),
  }),
  capabilities: z.array(z.string()),
  runtime: z.object({
    default_agent: z.string(),
    home_dir: z.string(),
    listen: z.string().nullable(),
    socket_path: z.string().nullable(),
    advertise_url: z.string().nullable(),
    pid: z.number().int(),
  }),
});

/** providers/resolve.ts AgentModelState. */
export const AgentModelState = z.object({
  source: z.enum(["runtime_default", "agent_override"]),
  runtime_default_model: z.string().nullable(),
  effective_model: z.string().nullable(),
  effective_fallback_models: z.array(z.string()),
  override_model: z.string().optional(),
  provider_fallback_disabled: z.boolean(),
});

/** providers/catalog.ts CatalogModel. */
const CatalogModel = z.object({
  id: z.string(),
  display_name: z.string(),
  provider: z.string(),
  model: z.string(),
  transport: z.string(),
  available: z.boolean(),
  unavailable_reason: z.string().optional(),
  credential_source: z.string().optional(),
  is_default: z.boolean(),
  is_fallback: z.boolean(),
  metadata_source: z.enum(["config_catalog", "builtin", "unknown_fallback"]),
  context_window_tokens: z.number().int().optional(),
  runtime_max_output_tokens: z.number().int().optional(),
  prompt_budget_estimated_tokens: z.number().int().optional(),
  capabilities: z.record(z.string(), z.boolean()).optional(),
});

export const ModelsResponse = z.object({
  ok: Ok,
  available_models: z.array(CatalogModel),
  model_availability: z.record(z.string(), z.boolean()),
});

const AgentListEntry = z.object({
  agent_id: z.string(),
  kind: AgentKind,
  visibility: AgentVisibility,
  ownership: AgentOwnership,
  status: AgentStatus,
  pending: z.number().int(),
  is_default: z.boolean(),
  lineage_parent_agent_id: z.string().nullable(),
  /** The root of the agent's supervision chain (a private child: its supervisor's group). */
  group_id: z.string(),
  archived: z.boolean(),
});

/** tasks/children.ts childrenSummary: an agent's children as its summary shows them. */
export const ChildrenSummary = z.object({
  total: z.number().int(),
  live: z.number().int(),
  entries: z.array(
    z.object({
      agent_id: z.string(),
      visibility: AgentVisibility,
      profile_preset: ProfilePreset,
      status: AgentStatus,
      archived: z.boolean(),
      supervision_task_id: z.string().nullable(),
      supervision_state: z.string().nullable(),
    }),
  ),
});
export const AgentsListResponse = z.object({ ok: Ok, agents: z.array(AgentListEntry) });

const Workspace = z.object({
  workspace_root: z.string().nullable(),
  cwd: z.string().nullable(),
  execution_root: z.string(),
  workspace_id: z.string(),
  workspace_anchor: z.string(),
  execution_root_id: z.string(),
  projection_kind: ProjectionKind,
  worktree_session: WorktreeSession.nullable(),
});

/** store/health.ts StorageStatus: whether the runtime can write (a full disk refuses writes). */
export const StorageStatus = z.object({
  state: z.enum(["ok", "full", "unavailable", "lost"]),
  since: z.string().nullable(),
  error: z.string().nullable(),
  refused_writes: z.number().int(),
  refused_requests: z.number().int(),
  last_outage: z
    .object({
      state: z.enum(["full", "unavailable"]),
      from: z.string(),
      to: z.string(),
      duration_ms: z.number().int(),
      error: z.string(),
      refused_writes: z.number().int(),
      refused_requests: z.record(z.string(), z.number().int()),
    })
    .nullable(),
});

/** The action leash as status shows it (policy/leash.ts `status`). */
export const LeashStatus = z.object({
  mode: PermissionMode,
  external_evidence_mode: ExternalEvidenceMode,
  sandbox_enforced: z.boolean(),
  /** True when the mode restricts but nothing confines a command that ignores it. */
  advisory: z.boolean(),
  rules: z.object({ allow: z.number().int(), ask: z.number().int(), deny: z.number().int() }),
  rules_digest: z.string(),
  hooks: z.object({ host: z.number().int(), agent: z.number().int() }),
  workspace: z.object({
    config_path: z.string(),
    error: z.string().nullable(),
    ignored_allow_rules: z.array(z.string()),
    hooks_awaiting_approval: z.number().int(),
  }),
});

/** `POST /control/agents/:id/settings`. */
/** `POST /control/agents/:id/settings`: the agent's own settings after the change. */
export const AgentSettingsResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  key: z.string(),
  settings: z.object({ sandbox: AgentSandboxSettings }),
  sandbox: SandboxSummary,
  permissions: PermissionSettings.nullable(),
  hooks: HookSettings.nullable(),
  leash: LeashStatus,
});

/** host/inspect.ts agentSummary: `GET /agents/:id/status`. */
/** Spent / reserved / limit per budget scope (budget/control.ts `view`). */
const BudgetSpend = z.object({
  tokens: z.number(),
  input_tokens: z.number(),
  cached_input_tokens: z.number(),
  cache_write_tokens: z.number(),
  output_tokens: z.number(),
  reasoning_tokens: z.number(),
  usd: z.number(),
  unpriced_rounds: z.number(),
  rounds: z.number(),
  time_ms: z.number(),
});
export const AgentBudgetView = z.object({
  agent_id: z.string(),
  time_zone: z.string(),
  hold: BudgetHold.nullable(),
  reservation: z.unknown().nullable(),
  scopes: z.array(
    z.object({
      scope: z.string(),
      period: BudgetPeriod.optional(),
      limits: BudgetLimits,
      spent: BudgetSpend,
      reserved: z.record(z.string(), z.number()),
      window: z.object({ start: z.string(), end: z.string() }).optional(),
    }),
  ),
  spent_total: BudgetSpend,
});

export const AgentSummary = z.object({
  agent_id: z.string(),
  kind: AgentKind,
  visibility: AgentVisibility,
  ownership: AgentOwnership,
  profile_preset: ProfilePreset,
  agent_home: z.string(),
  lineage_parent_agent_id: z.string().optional(),
  supervisor_agent_id: z.string().optional(),
  /** The root of the agent's supervision chain (a private child: its supervisor's group). */
  group_id: z.string(),
  archived: z.boolean(),
  children: ChildrenSummary,
  is_default: z.boolean(),
  status: AgentStatus,
  lifecycle_hint: z.object({
    resume_required: z.boolean(),
    message: z.string(),
    resume_command: z.string().optional(),
  }),
  current_run_id: z.string().nullable(),
  pending: z.number().int(),
  sleeping_until: z.string().nullable(),
  last_wake_reason: z.string().nullable(),
  last_brief_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  total_message_count: z.number().int(),
  token_usage: z.object({
    total_input_tokens: z.number().int(),
    total_output_tokens: z.number().int(),
    total_tokens: z.number().int(),
    total_model_rounds: z.number().int(),
    last_turn: AgentRecord.shape.last_turn_token_usage.unwrap().nullable(),
  }),
  model: AgentModelState,
  workspace: Workspace,
  /** What the sandbox holds for this agent's commands, its own settings, its first start. */
  sandbox: SandboxSummary.extend({
    settings: AgentSandboxSettings,
    enabled_at: z.string().nullable(),
  }),
  active_task_ids: z.array(z.string()),
  last_failure: AgentRecord.shape.last_failure.unwrap().nullable(),
  storage: StorageStatus,
  closure: AgentRecord.shape.closure.unwrap().nullable(),
  last_continuation: AgentRecord.shape.last_continuation.unwrap().nullable(),
  current_work_item: CurrentWorkItemSummary.nullable(),
  waiting: WaitingSummary,
  /** telemetry/cache-health.ts: an open prompt-cache degradation, or null. */
  prompt_cache: z
    .object({
      state: z.literal("degraded"),
      model_ref: z.string(),
      since: z.string(),
      baseline_share: z.number(),
      current_share: z.number(),
      first_changed: z.object({ run_id: z.string(), round: z.number().int(), at: z.string() }),
    })
    .nullable(),
  leash: LeashStatus,
  /** src/mcp/: each MCP server of the agent and its state. */
  mcp: z.array(
    z.object({
      name: z.string(),
      source: z.enum(["host", "agent", "workspace"]),
      transport: z.string(),
      consent: z.enum(["operator", "approved", "pending", "denied"]),
      state: z.enum(["stopped", "starting", "running", "backoff", "failed"]),
      pid: z.number().int().nullable(),
      tool_count: z.number().int(),
      last_error: z.string().nullable(),
    }),
  ),
  budget: AgentBudgetView,
});

/** host/inspect.ts agentState: `GET /agents/:id/state`, the bootstrap snapshot. */
export const AgentStateResponse = z.object({
  agent: AgentSummary,
  session: z.object({
    status: AgentStatus,
    current_run_id: z.string().nullable(),
    current_message_id: z.string().nullable(),
    pending: z.number().int(),
    queued_messages: z.array(
      z.object({
        message_id: z.string(),
        kind: MessageKind,
        priority: Priority,
        created_at: z.string(),
      }),
    ),
  }),
  tasks: z.array(TaskSnapshot),
  transcript_tail: z.array(TranscriptEntry),
  closure: AgentRecord.shape.closure.unwrap().nullable(),
  last_continuation: AgentRecord.shape.last_continuation.unwrap().nullable(),
  sleep_wake_at: z.string().nullable(),
  deadlines: z.array(Deadline),
  timers: z.array(TimerRecord),
  work_items: z.array(WorkItemView),
  work_plan: WorkPlanView.nullable(),
  waiting_intents: z.array(WaitingIntentView),
  external_triggers: z.array(ExternalTriggerDescriptor),
  pending_wake_hint: WakeHintView.nullable(),
  waiting: WaitingSummary,
  workspace: Workspace,
  memory: z.object({
    working_memory_revision: z.number().int(),
    last_prompted_working_memory_revision: z.number().int(),
    pending_working_memory_delta: z.array(z.string()),
    working_memory_updated_at: z.string().nullable(),
    active_episode_id: z.string().nullable(),
    archived_episode_count: z.number().int(),
    compactions_total: z.number().int(),
    compacted_rounds_total: z.number().int(),
  }),
  newest_seq: z.number().int(),
});

export const BriefsResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  briefs: z.array(BriefRecord),
});

export const TranscriptResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  entries: z
    .array(TranscriptEntry)
    .describe("entries this version writes; a log kept from another version may hold other kinds"),
});

export const TasksResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  tasks: z.array(TaskSnapshot),
});

export const EventsResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  newest_seq: z.number().int(),
  removed_through_seq: z.number().int().optional(),
  oldest_available_seq: z.number().int().optional(),
  events: z
    .array(projectedCatalogEventSchema())
    .describe("the event catalog; a log kept from another version may hold other types"),
});

/** 202 from every ingress route: the message is committed. */
export const AcceptedResponse = z.object({ ok: Ok, agent_id: z.string(), message_id: z.string() });

/** 202 from an operator prompt: also the priority it was queued with. */
export const PromptAcceptedResponse = AcceptedResponse.extend({
  priority: Priority,
  /** Set when an interjection arrived while the run was being aborted. */
  delivery: z.literal("queued").optional(),
  note: z.string().optional(),
});

const ControlAction = z.enum(["pause", "resume", "start", "stop", "wake"]);
export const ControlResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  action: ControlAction,
  status: AgentStatus,
  disposition: z.string(),
  /** `wake`: the SystemTick it became, when the agent could take it at once. */
  message_id: z.string().optional(),
});

export const WakeResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  disposition: z.string(),
  status: AgentStatus,
  /** The SystemTick the wake became, when the agent could take it at once. */
  message_id: z.string().nullable(),
});

export const CreateAgentResponse = z.object({ ok: Ok, agent: AgentSummary });

export const AbortResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  run_id: z.string(),
  mode: z.literal("stop_after_abort"),
});

export const RuntimeStatusResponse = z.object({
  ok: Ok,
  pid: z.number().int(),
  home_dir: z.string(),
  started_at: z.string(),
  default_agent: z.string(),
  storage: StorageStatus,
  activity: z.object({
    active_agent_count: z.number().int(),
    active_task_count: z.number().int(),
    processing_agent_count: z.number().int(),
    waiting_agent_count: z.number().int(),
    state: z.enum(["processing", "waiting", "idle"]),
  }),
  last_failure: AgentRecord.shape.last_failure.unwrap().nullable(),
  http_addr: z.string().nullable(),
  socket_path: z.string().nullable(),
  control_token_configured: z.boolean(),
});

export const ShutdownResponse = z.object({ ok: Ok, shutting_down: z.literal(true) });

/** host/run-once.ts RunOnceResponse. */
const RunOnceResponse = z.object({
  ok: z.boolean(),
  outcome: z.enum(["completed", "failed", "aborted", "interrupted"]),
  agent_id: z.string(),
  message_id: z.string(),
  run_id: z.string().nullable(),
  final_text: z.string(),
  raw_final_text: z.string(),
  token_usage: TokenUsage.nullable(),
  provider_attempt_timeline: ProviderAttemptTimeline.nullable(),
  failure_artifact: z.record(z.string(), z.unknown()).optional(),
  turn_count: z.number().int(),
  duration_ms: z.number(),
  temporary_agent: z.boolean(),
  kept: z.boolean(),
  tasks_still_running: z.array(
    z.object({ task_id: z.string(), status: z.string(), summary: z.string().nullable() }),
  ),
});

/** One line of the `POST /control/run` NDJSON stream. */
export const RunLine = z.discriminatedUnion("type", [
  z.object({ type: z.literal("progress"), phase: z.string(), detail: z.string().optional() }),
  /** With `stream_events`: every event of the run's agent, as it is committed. */
  z.object({ type: z.literal("event"), event: catalogEventSchema() }),
  z.object({ type: z.literal("result"), result: RunOnceResponse }),
  z.object({ type: z.literal("error"), error: ErrorBody.shape.error }),
]);

export const ModelResponse = z.object({ ok: Ok, agent_id: z.string(), model: AgentModelState });
export const TaskStartResponse = z.object({ ok: Ok, agent_id: z.string(), task: TaskSnapshot });
export const TaskResponse = z.object({ ok: Ok, task: TaskSnapshot });

/** tasks/service.ts taskOutputView. */
export const TaskOutputResponse = z.object({
  ok: Ok,
  retrieval_status: z.enum(["success", "not_ready", "timeout", "unavailable"]),
  task: z.object({
    task_id: z.string(),
    kind: TaskKind,
    status: TaskStatus,
    summary: z.string().nullable(),
    output_preview: z.string(),
    output_truncated: z.boolean(),
    output_bytes: z.number().int(),
    output_dropped_bytes: z.number().int(),
    output_source: z.enum(["output_file", "terminal_snapshot", "none"]),
    artifacts: z.array(z.object({ path: z.string(), kind: z.string() })),
    /** Index into `artifacts`. */
    output_artifact: z.number().int().optional(),
    stderr_artifact: z.number().int().optional(),
    result_summary: z.string().nullable(),
    exit_status: TaskSnapshot.shape.exit_status,
    failure_artifact: FailureArtifact.nullable(),
  }),
});

export const TaskStopResponse = z.object({
  ok: Ok,
  task: TaskSnapshot,
  stop_requested: z.boolean(),
  escalated: z.boolean(),
});

export const TaskInputResponse = z.object({
  ok: Ok,
  task: TaskSnapshot,
  accepted_input: z.boolean(),
  input_target: z.enum(["tty", "stdin"]).nullable(),
  bytes_written: z.number().int(),
  reason: z.string().nullable(),
});

/** routes-work.ts: one work item, and an agent's items. */
export const WorkItemResponse = z.object({ ok: Ok, work_item: WorkItemView });
export const WorkItemCreatedResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  work_item: WorkItemView,
});
export const WorkItemsResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  state: z.string(),
  work_items: z.array(WorkItemView),
});
