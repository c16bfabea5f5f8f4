// Inspection projections: the concise AgentSummary (`/status`) and the bootstrap
// snapshot (`/state`). Both are derived from durable records, never stored.
import { isRunAgent, lifecycleHint, type AgentRecord } from "../domain/agent.ts";
import { TERMINAL_TASK_STATUSES } from "../domain/task.ts";
import { executionBinding } from "../workspace/roots.ts";
import { taskSnapshot } from "../tasks/service.ts";
import { waitingState, waitingSummary } from "../waiting/inspect.ts";
import type { RuntimeHost } from "./host.ts";

/** The active workspace as inspection surfaces show it (one resolver: executionBinding). */
function workspaceView(agent: AgentRecord) {
  const b = executionBinding(agent);
  return {
    workspace_root: b.workspace_root,
    cwd: b.cwd,
    execution_root: b.execution_root,
    workspace_id: b.workspace_id,
    workspace_anchor: b.workspace_anchor,
    execution_root_id: b.execution_root_id,
    projection_kind: b.projection_kind,
    worktree_session: agent.worktree_session ?? null,
  };
}

export async function agentSummary(host: RuntimeHost, agent: AgentRecord) {
  const store = host.store;
  const tasks = await store.tasks.forAgent(agent.agent_id, 50);
  const summary: Record<string, unknown> = {
    agent_id: agent.agent_id,
    kind: agent.kind,
    visibility: agent.visibility,
    ownership: agent.ownership,
    profile_preset: agent.profile_preset,
    agent_home: agent.agent_home,
    is_default: agent.agent_id === host.defaultAgentId,
    status: agent.status,
    lifecycle_hint: lifecycleHint(agent.agent_id, agent.status, { runAgent: isRunAgent(agent) }),
    current_run_id: agent.current_run_id ?? null,
    pending: await store.messages.pendingCount(agent.agent_id),
    sleeping_until: agent.sleeping_until ?? null,
    last_wake_reason: agent.last_wake_reason ?? null,
    last_brief_at: agent.last_brief_at ?? null,
    created_at: agent.created_at,
    updated_at: agent.updated_at,
    total_message_count: agent.total_message_count,
    token_usage: {
      total_input_tokens: agent.total_input_tokens,
      total_output_tokens: agent.total_output_tokens,
      total_tokens: agent.total_input_tokens + agent.total_output_tokens,
      total_model_rounds: agent.total_model_rounds,
      last_turn: agent.last_turn_token_usage ?? null,
    },
    model: host.services.config.modelState(agent.model_override ?? null),
    workspace: workspaceView(agent),
    sandbox: {
      ...host.services.sandbox.summary(agent),
      settings: agent.sandbox ?? {},
      enabled_at: agent.sandbox_enabled_at ?? null,
    },
    active_task_ids: tasks.filter((t) => !TERMINAL_TASK_STATUSES.has(t.status)).map((t) => t.id),
    last_failure: agent.last_failure ?? null,
    // Whether the runtime can write at all (a full disk refuses writes: store/health.ts).
    storage: host.store.health.status(),
    closure: agent.closure ?? null,
    last_continuation: agent.last_continuation ?? null,
    current_work_item: await currentWorkItemSummary(host, agent),
    waiting: await waitingSummary(host.services, agent),
    prompt_cache: host.services.cacheHealth.statusOf(agent.agent_id),
    leash: await host.services.leash.status(agent),
    // Each MCP server of the agent: where from, consent, state (src/mcp/).
    mcp: (await host.services.mcp.status(agent)).map((v) => ({
      name: v.name,
      source: v.source,
      transport: v.transport,
      consent: v.consent,
      state: v.state,
      pid: v.pid,
      tool_count: v.tools.filter((t) => t.enabled).length,
      last_error: v.last_error,
    })),
    // Spent / reserved / limit per budget scope, and the hold that stops it, if any.
    budget: await host.services.budgets.view(agent.agent_id),
  };
  if (agent.lineage_parent_agent_id)
    summary.lineage_parent_agent_id = agent.lineage_parent_agent_id;
  if (agent.supervisor_agent_id) summary.supervisor_agent_id = agent.supervisor_agent_id;
  summary.group_id = agent.group_id;
  summary.archived = agent.archived_at !== undefined;
  // Private children are not listed publicly; their parent's summary shows them.
  summary.children = await host.services.agentPlane.childrenSummary(agent.agent_id);
  return summary;
}

export async function agentState(host: RuntimeHost, agent: AgentRecord) {
  const store = host.store;
  const current = host.services.loops.get(agent.agent_id)?.currentRun;
  const sleepWake = await host.services.sleep.pending(agent.agent_id);
  const waiting = await waitingState(host.services, agent);
  return {
    agent: await agentSummary(host, agent),
    session: {
      status: agent.status,
      current_run_id: agent.current_run_id ?? null,
      current_message_id: current?.message_id ?? null,
      pending: await store.messages.pendingCount(agent.agent_id),
      queued_messages: (await store.messages.withStatus(agent.agent_id, "queued"))
        .slice(0, 20)
        .map((m) => ({
          message_id: m.id,
          kind: m.kind,
          priority: m.priority,
          created_at: m.created_at,
        })),
    },
    tasks: (await store.tasks.forAgent(agent.agent_id, 20)).map(taskSnapshot),
    transcript_tail: await store.transcript.recent(agent.agent_id, 20),
    closure: agent.closure ?? null,
    last_continuation: agent.last_continuation ?? null,
    sleep_wake_at: sleepWake ?? null,
    deadlines: await store.deadlines.forAgent(agent.agent_id),
    timers: waiting.timers,
    work_items: await host.services.work.list(agent.agent_id, "all", { limit: 50 }),
    work_plan: await workPlan(host, agent),
    waiting_intents: waiting.waiting_intents,
    external_triggers: waiting.external_triggers,
    pending_wake_hint: waiting.pending_wake_hint,
    waiting: waiting.waiting,
    workspace: workspaceView(agent),
    memory: await memoryState(host, agent),
    newest_seq: await store.events.newestSeq(agent.agent_id),
  };
}

/** Working memory, episodes and compaction counts (`/state` `memory`). */
async function memoryState(host: RuntimeHost, agent: AgentRecord) {
  const wm = await host.store.memory.workingMemory(agent.agent_id);
  return {
    working_memory_revision: wm?.revision ?? 0,
    last_prompted_working_memory_revision: wm?.last_prompted_revision ?? 0,
    pending_working_memory_delta:
      wm && wm.revision > wm.last_prompted_revision ? wm.pending_delta : [],
    working_memory_updated_at: wm?.updated_at ?? null,
    active_episode_id: wm?.active_episode?.id ?? null,
    archived_episode_count: await host.store.memory.episodeCount(agent.agent_id),
    compactions_total: wm?.compactions_total ?? 0,
    compacted_rounds_total: wm?.compacted_rounds_total ?? 0,
  };
}

/** Runtime-wide activity summary for `GET /control/runtime/status` and `daemon status`. */
export async function runtimeStatus(host: RuntimeHost) {
  const store = host.store;
  const agents = (await store.agents.list()).filter((a) => a.visibility === "public");
  const processing = agents.filter((a) => a.status === "awake_running" || a.status === "booting");
  const waiting = agents.filter((a) => a.status === "awaiting_task");
  const activeTasks = (await store.tasks.active()).length;
  const lastFailure = agents
    .map((a) => a.last_failure)
    .filter((f) => f !== undefined)
    .sort((a, b) => b.occurred_at.localeCompare(a.occurred_at))[0];
  return {
    pid: process.pid,
    home_dir: host.home,
    started_at: host.startedAt,
    default_agent: host.defaultAgentId,
    storage: host.store.health.status(),
    activity: {
      active_agent_count: agents.filter((a) => a.status !== "stopped").length,
      active_task_count: activeTasks,
      processing_agent_count: processing.length,
      waiting_agent_count: waiting.length,
      state:
        processing.length > 0
          ? "processing"
          : waiting.length > 0 || activeTasks > 0
            ? "waiting"
            : "idle",
    },
    last_failure: lastFailure ?? null,
  };
}

/** The agent's current work item, briefly (`/status`, `holon status`). */
async function currentWorkItemSummary(host: RuntimeHost, agent: AgentRecord) {
  const item = await host.services.work.currentItem(agent.agent_id);
  if (!item) return null;
  const v = await host.services.work.view(item, { include_todo_list: false });
  return {
    id: v.id,
    objective: v.objective,
    plan_status: v.plan_status,
    readiness: v.readiness,
    todo_progress: v.todo_progress,
    blocked_by: v.blocked_by ?? null,
    recheck_at: v.recheck_at ?? null,
  };
}

/** The current item's plan descriptor and todo list (`/state` work_plan), or null. */
async function workPlan(host: RuntimeHost, agent: AgentRecord) {
  const item = await host.services.work.currentItem(agent.agent_id);
  if (!item) return null;
  const v = await host.services.work.view(item);
  return {
    work_item_id: v.id,
    plan_status: v.plan_status,
    plan_artifact: v.plan_artifact,
    todo_list: v.todo_list ?? [],
  };
}
