// The agent plane's delegation and removal: SpawnAgent (a private child supervised through
// a `child_agent_task` of its parent, or a public named agent with lineage only), the
// supervision verbs the task tools route here for child tasks (status, output, input, stop),
// AgentGet, archive and delete.
//
// The one invariant: a child's terminal closure (completed or failed) settles its
// supervision task, admits the parent's `task_result` and archives the child in the very
// transaction that records the closure (ChildClosureObserver), so a crash can neither lose
// the result nor deliver it twice. After a restart, a live child whose run was cut short
// is asked to continue (recover), so a supervised child is never silently dropped.
import { rmSync } from "node:fs";
import type { AgentRecord } from "../domain/agent.ts";
import type { AuthorityClass } from "../domain/message.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import { TERMINAL_TASK_STATUSES, type TaskRecord, type TaskStatus } from "../domain/task.ts";
import type { WorkItemRecord } from "../domain/work-item.ts";
import type { AgentDirectory } from "../agent/directory.ts";
import type { Ingress } from "../agent/ingress.ts";
import type { AgentLoops } from "../agent/loops.ts";
import type { RunInfo, RunObserver, SleepDeadlines } from "../agent/runtime.ts";
import { transition } from "../agent/status.ts";
import type { ClosureDecision, TurnOutcome } from "../domain/closure.ts";
import type { Store } from "../store/db.ts";
import type { BudgetLimits } from "../domain/budget.ts";
import type { WorkspaceService } from "../workspace/registry.ts";
import { executionBinding } from "../workspace/roots.ts";
import { AGENT_HOME_WORKSPACE_ID } from "../domain/workspace.ts";
import { childSupervision, taskSnapshot, type TaskService } from "./service.ts";
import type { AskService } from "../asks/service.ts";
import { matchOption } from "../domain/ask.ts";

/** Limits from config (`agents.*`). */
export type AgentLimits = { max_spawn_depth: number; max_live_children: number };

export const MAX_INITIAL_MESSAGE_CHARS = 32_000;
const RESULT_CHARS = 8_000;

/** What the agent plane needs of the work plane (work/service.ts satisfies it). */
export interface WorkReader {
  currentItem(agentId: string): Promise<WorkItemRecord | undefined>;
  completionReport(item: WorkItemRecord): Promise<{ text: string } | null>;
}

/** Waiting-plane records an agent owns, cancelled when it is deleted. */
export interface OwnedWaits {
  cancelForAgent(
    agentId: string,
    reason: string,
  ): Promise<{ timers: string[]; triggers: string[] }>;
}

export type SpawnRequest = {
  parent_agent_id: string;
  preset: "private_child" | "public_named";
  initial_message?: string | undefined;
  agent_id?: string | undefined;
  workspace_mode: "inherit" | "worktree";
  context_mode: "fresh" | "fork";
  template?: string | undefined;
  parent_message_id?: string | undefined;
  /** Taint: the spawning turn's policy authority; the child's turns inherit it. */
  policy_authority?: AuthorityClass | undefined;
  /** A budget carved from the parent's remainder (private children only). */
  budget?: unknown;
};

/** The budget plane as the agent plane needs it: carve a child's reservation, give it back. */
export type ChildBudgets = {
  checkCarve(parent: AgentRecord, input: unknown): Promise<BudgetLimits>;
  reserved(parentId: string): void;
  returned(childId: string): void;
};

type ChildDeps = {
  store: Store;
  ingress: Ingress;
  tasks: TaskService;
  workspaces: WorkspaceService;
  work: WorkReader;
  budgets?: ChildBudgets | undefined;
};

/**
 * Settle a child's supervision task exactly once (inside the caller's transaction): the
 * terminal record, its event, the parent's task_result, the child's archive.
 */
async function settleChildTask(
  deps: ChildDeps,
  task: TaskRecord,
  status: TaskStatus,
  result: { source: "completion_report" | "result_brief" | "failure_brief" | "none"; text: string },
  why: string,
): Promise<void> {
  const { store } = deps;
  const fresh = await store.tasks.get(task.id);
  if (!fresh || TERMINAL_TASK_STATUSES.has(fresh.status) || !fresh.child) return;
  const now = store.clock.now().toISOString();
  const child = fresh.child;
  const next: TaskRecord = {
    ...fresh,
    status,
    updated_at: now,
    finished_at: now,
    child: { ...child, needs_input: false, result },
  };
  if (status === "failed") {
    next.failure_artifact = {
      category: "task",
      kind: "child_agent_failed",
      summary: result.text.slice(0, 500) || "the child agent failed",
      task_id: task.id,
    };
  }
  await store.tasks.put(next);
  await store.appendEvent(task.agent_id, {
    type: "task_status_updated",
    provenance: { task_id: task.id },
    payload: { task: taskSnapshot(next) },
  });
  // The child settled: what it did not spend of a carved budget is the parent's again.
  deps.budgets?.returned(child.child_agent_id);
  const headline =
    status === "completed"
      ? `Child agent ${child.child_agent_id} finished (task ${task.id}).`
      : status === "failed"
        ? `Child agent ${child.child_agent_id} failed (task ${task.id}).`
        : `Child agent ${child.child_agent_id} was stopped (task ${task.id}).`;
  const label =
    result.source === "completion_report"
      ? "Completion report"
      : result.source === "none"
        ? "Result"
        : "Final brief";
  if (await store.agents.get(task.agent_id)) {
    await deps.ingress.admit({
      agent_id: task.agent_id,
      kind: "task_result",
      origin: { kind: "task", task_id: task.id },
      body: {
        type: "text",
        text: `${headline}\nJob: ${child.label}\n${label}:\n${result.text || "(no text)"}`,
      },
      surface: "task_rejoin",
      admission: "runtime_owned",
      task_id: task.id,
      ...(child.parent_work_item_id ? { work_item_id: child.parent_work_item_id } : {}),
      source_refs: {
        task_result_id: `${task.id}:terminal`,
        child_agent_id: child.child_agent_id,
        delegation_id: child.delegation_id,
      },
      metadata: { child_supervision: childSupervision(next) },
      ...(task.parent_message_id ? { causation_id: task.parent_message_id } : {}),
    });
  }
  await archiveInTx(store, child.child_agent_id, why);
  if (child.worktree) {
    try {
      await deps.workspaces.releaseTaskWorktree(child.worktree.worktree_id);
    } catch {
      // a worktree that cannot be released is retained and shown by `workspace worktrees`
    }
  }
  deps.tasks.notifySettled(task.id);
}

/** Stop and hide an agent, keeping its data (inside the caller's transaction). */
async function archiveInTx(store: Store, agentId: string, reason: string): Promise<void> {
  const agent = await store.agents.get(agentId);
  if (!agent || agent.archived_at) return;
  await transition(store, agentId, "stopped", `archived: ${reason}`, { clear: ["current_run_id"] });
  const now = store.clock.now().toISOString();
  await store.agents.put({ ...(await store.agents.get(agentId))!, archived_at: now });
  await store.appendEvent(agentId, { type: "agent_archived", payload: { reason } });
}

/** The live supervision task of a private child, if it has one. */
async function supervisionTask(store: Store, child: AgentRecord): Promise<TaskRecord | undefined> {
  if (!child.supervisor_agent_id) return undefined;
  return (await store.tasks.activeForAgent(child.supervisor_agent_id)).find(
    (t) => t.child?.child_agent_id === child.agent_id,
  );
}

/** The child's result: its completion report when it completed a work item, else its last brief. */
async function childResult(
  deps: ChildDeps,
  childId: string,
  failed: boolean,
): Promise<{
  source: "completion_report" | "result_brief" | "failure_brief" | "none";
  text: string;
}> {
  const done = (await deps.store.workItems.recentWithState(childId, "completed", 1))[0];
  const report = done ? await deps.work.completionReport(done) : null;
  if (report && !failed) return { source: "completion_report", text: clip(report.text) };
  const briefs = await deps.store.briefs.recent(childId, 5);
  const wanted = failed ? "failure" : "result";
  const last = [...briefs].reverse().find((b) => b.kind === wanted);
  if (last) {
    return { source: failed ? "failure_brief" : "result_brief", text: clip(last.text) };
  }
  return { source: "none", text: "" };
}

/**
 * Watches every child's closures (a RunObserver): terminal → settle the supervision task;
 * waiting for its operator → the task shows `needs_input`; anything else → running.
 */
export class ChildClosureObserver implements RunObserver {
  private readonly deps: ChildDeps;

  constructor(deps: ChildDeps) {
    this.deps = deps;
  }

  async onClosure(
    run: RunInfo & { outcome: TurnOutcome; closure: ClosureDecision },
  ): Promise<void> {
    const store = this.deps.store;
    const child = await store.agents.get(run.agent_id);
    if (!child?.supervisor_agent_id) return;
    const task = await supervisionTask(store, child);
    if (!task?.child) return;
    const closure = run.closure;
    // A follow-up that arrived during the turn is still to be handled: not finished yet.
    const pending = (await store.messages.pendingCount(child.agent_id)) > 0;
    if ((closure.outcome === "completed" || closure.outcome === "failed") && !pending) {
      const failed = closure.outcome === "failed";
      await settleChildTask(
        this.deps,
        task,
        failed ? "failed" : "completed",
        await childResult(this.deps, child.agent_id, failed),
        failed ? "child_failed" : "child_completed",
      );
      return;
    }
    const needsInput = closure.waiting_reason === "awaiting_operator_input";
    const next: TaskRecord = {
      ...task,
      updated_at: store.clock.now().toISOString(),
      child: {
        ...task.child,
        needs_input: needsInput,
        closure_outcome: closure.outcome,
        ...(closure.waiting_reason ? { waiting_reason: closure.waiting_reason } : {}),
        ...(child.current_work_item_id ? { current_work_item_id: child.current_work_item_id } : {}),
      },
    };
    if (!closure.waiting_reason) delete next.child!.waiting_reason;
    await store.tasks.put(next);
    if (needsInput !== task.child.needs_input) {
      await store.appendEvent(task.agent_id, {
        type: "task_status_updated",
        provenance: { task_id: task.id },
        payload: { task: taskSnapshot(next) },
      });
    }
  }
}

export type AgentPlaneDeps = ChildDeps & {
  /** A supervisor's input answers its child's pending input ask (src/asks/). */
  asks?: AskService | undefined;
  agents: AgentDirectory;
  loops: AgentLoops;
  sleep: SleepDeadlines;
  waits: OwnedWaits;
  limits: () => AgentLimits;
  defaultAgentId: string;
};

export class AgentPlane {
  private readonly deps: AgentPlaneDeps;

  constructor(deps: AgentPlaneDeps) {
    this.deps = deps;
  }

  private get store(): Store {
    return this.deps.store;
  }

  // -- SpawnAgent ----------------------------------------------------------------------

  async spawn(req: SpawnRequest) {
    const parent = await this.deps.agents.get(req.parent_agent_id);
    const limits = this.deps.limits();
    const depth = (parent.spawn_depth ?? 0) + 1;
    if (depth > limits.max_spawn_depth) {
      // A supervised child at the limit (the default: children never spawn) is told plainly.
      if (parent.ownership === "parent_supervised") {
        throw new HolonError(
          "spawn_not_allowed",
          "a private child agent cannot spawn agents of its own",
          {
            hint: "do the work yourself, or report back to your parent and let it delegate (agents.max_spawn_depth)",
            details: { max_spawn_depth: limits.max_spawn_depth, depth },
          },
        );
      }
      throw new HolonError(
        "spawn_depth_exceeded",
        `spawning here would nest agents ${depth} deep (agents.max_spawn_depth is ${limits.max_spawn_depth})`,
        { details: { max_spawn_depth: limits.max_spawn_depth, depth } },
      );
    }
    if (
      req.initial_message !== undefined &&
      req.initial_message.length > MAX_INITIAL_MESSAGE_CHARS
    ) {
      throw new HolonError(
        "invalid_request",
        `initial_message is longer than ${MAX_INITIAL_MESSAGE_CHARS} characters`,
      );
    }
    return req.preset === "public_named"
      ? await this.spawnPublic(parent, req)
      : await this.spawnPrivate(parent, req, depth, limits);
  }

  private async spawnPublic(parent: AgentRecord, req: SpawnRequest) {
    if (req.budget !== undefined) {
      throw new HolonError("invalid_request", "budget is only for private children", {
        hint: "a public agent's budget is set by the operator (holon budget set)",
      });
    }
    if (!req.agent_id) {
      throw new HolonError("invalid_request", "public_named needs an agent_id", {
        hint: "name the new agent with agent_id (lower-case letters, digits, . _ -)",
      });
    }
    if (req.workspace_mode === "worktree") {
      throw new HolonError("invalid_request", "workspace_mode worktree is for private children", {
        hint: "public agents get their own workspace; omit workspace_mode",
      });
    }
    const agent = await this.deps.agents.create(
      req.agent_id,
      {
        lineage_parent_agent_id: parent.agent_id,
        ...(req.template ? { template: req.template } : {}),
        policy_authority_floor: req.policy_authority,
      },
      "named",
    );
    // The caller's attached workspaces come along; its active entry and worktree do not.
    for (const a of await this.store.workspaces.attached(parent.agent_id)) {
      const ws = await this.store.workspaces.get(a.workspace_id);
      if (!ws) continue;
      try {
        await this.deps.workspaces.attach(agent.agent_id, ws.workspace_anchor, "operator");
      } catch {
        // a workspace that went away is simply not inherited
      }
    }
    await this.store.tx(
      async () =>
        await this.store.appendEvent(parent.agent_id, {
          type: "agent_spawned",
          payload: {
            child_agent_id: agent.agent_id,
            profile_preset: "public_named",
            workspace_mode: "inherit",
            context_mode: req.context_mode,
          },
        }),
    );
    if (req.initial_message) {
      await this.deps.ingress.admit({
        agent_id: agent.agent_id,
        kind: "internal_followup",
        origin: { kind: "system", subsystem: "agent_spawn" },
        body: { type: "text", text: await this.handoff(parent, req) },
        surface: "runtime_system",
        admission: "runtime_owned",
        metadata: { creator_agent_id: parent.agent_id, bootstrap: true },
      });
    }
    return { agent_id: agent.agent_id, profile_preset: "public_named" as const };
  }

  private async spawnPrivate(
    parent: AgentRecord,
    req: SpawnRequest,
    depth: number,
    limits: AgentLimits,
  ) {
    if (req.budget !== undefined && !this.deps.budgets) {
      throw new HolonError("invalid_request", "budgets are not available on this runtime");
    }
    if (!req.initial_message?.trim()) {
      throw new HolonError("invalid_request", "private_child needs an initial_message", {
        hint: "say what the child should do and what it should report back",
      });
    }
    if (req.agent_id !== undefined) {
      throw new HolonError("invalid_request", "agent_id is only for public_named agents", {
        hint: "private children get a runtime-chosen id",
      });
    }
    const store = this.store;
    const live = (await store.tasks.activeForAgent(parent.agent_id)).filter(
      (t) => t.kind === "child_agent_task",
    ).length;
    if (live >= limits.max_live_children) {
      throw new HolonError(
        "too_many_children",
        `${parent.agent_id} already supervises ${live} live children (agents.max_live_children is ${limits.max_live_children})`,
        {
          status: 409,
          hint: "wait for a child to finish (TaskOutput block) or stop one with TaskStop",
          details: { live_children: live, max_live_children: limits.max_live_children },
        },
      );
    }
    // A carved budget is checked whole before anything exists (refused: nothing created).
    const carved =
      req.budget !== undefined
        ? await this.deps.budgets?.checkCarve(parent, req.budget)
        : undefined;
    const childId = await this.childId(parent.agent_id);
    const taskId = store.ids.next("task");
    const workItem = parent.current_work_item_id;
    const label = clipLine(req.initial_message, 120);
    const child = await this.deps.agents.create(
      childId,
      {
        visibility: "private",
        lineage_parent_agent_id: parent.agent_id,
        supervisor_agent_id: parent.agent_id,
        spawn_depth: depth,
        ...(req.template ? { template: req.template } : {}),
        policy_authority_floor: req.policy_authority,
        start: true,
      },
      "child",
    );
    let worktree: { worktree_id: string; path: string; branch: string } | undefined;
    try {
      const binding = executionBinding(parent);
      if (req.workspace_mode === "worktree") {
        if (binding.workspace_id === AGENT_HOME_WORKSPACE_ID || binding.workspace_id === "legacy") {
          throw new HolonError(
            "isolation_unavailable",
            "worktree mode needs an attached git workspace as the parent's active workspace",
            { hint: "UseWorkspace a git repository first, or use workspace_mode inherit" },
          );
        }
        const w = await this.deps.workspaces.createTaskWorktree({
          agent_id: parent.agent_id,
          workspace_id: binding.workspace_id,
          task_id: taskId,
          label: childId,
        });
        worktree = { worktree_id: w.worktree_id, path: w.path, branch: w.branch };
        await this.deps.workspaces.holdTaskWorktree(childId, w.worktree_id);
      } else if (binding.workspace_id !== AGENT_HOME_WORKSPACE_ID) {
        await this.deps.workspaces.use(
          childId,
          { path: binding.execution_root, mode: "direct" },
          "operator",
        );
      }
    } catch (err) {
      await this.removeNow(childId);
      throw err;
    }
    const now = store.clock.now().toISOString();
    if (carved || workItem) {
      // The ledger's work item chain, and the reservation the child's calls are checked on.
      await store.tx(async () => {
        const rec = (await store.agents.get(childId))!;
        await store.agents.put({
          ...rec,
          ...(workItem ? { spawn_work_item_id: workItem } : {}),
          ...(carved
            ? {
                budget_reservation: {
                  from_agent_id: parent.agent_id,
                  limits: carved,
                  reserved_at: now,
                },
              }
            : {}),
        });
      });
      if (carved) this.deps.budgets?.reserved(parent.agent_id);
    }
    const childAgent = await this.deps.agents.get(childId);
    const task: TaskRecord = {
      id: taskId,
      agent_id: parent.agent_id,
      kind: "child_agent_task",
      status: "running",
      created_at: now,
      updated_at: now,
      summary: label,
      // Command fields do not apply to a child; they hold neutral values.
      cmd: `agent:${childId}`,
      cmd_digest: "",
      workdir: executionBinding(childAgent).execution_root,
      shell: "",
      login: false,
      tty: false,
      accepts_input: true,
      output_path: child.agent_home,
      process_dir: child.agent_home,
      terminal_reentry: true,
      child: {
        child_agent_id: childId,
        parent_agent_id: parent.agent_id,
        workspace_mode: req.workspace_mode,
        context_mode: req.context_mode,
        delegation_id: store.ids.next("dlg"),
        needs_input: false,
        label,
        ...(workItem ? { parent_work_item_id: workItem } : {}),
        ...(worktree ? { worktree } : {}),
      },
    };
    if (req.parent_message_id) task.parent_message_id = req.parent_message_id;
    await store.tx(async () => {
      await store.tasks.put(task);
      await store.appendEvent(parent.agent_id, {
        type: "task_created",
        provenance: {
          task_id: taskId,
          ...(req.parent_message_id ? { message_id: req.parent_message_id } : {}),
        },
        payload: { task: taskSnapshot(task) },
      });
      await store.appendEvent(parent.agent_id, {
        type: "agent_spawned",
        payload: {
          child_agent_id: childId,
          profile_preset: "private_child",
          supervision_task_id: taskId,
          workspace_mode: req.workspace_mode,
          context_mode: req.context_mode,
          ...(workItem ? { parent_work_item_id: workItem } : {}),
        },
      });
      await this.deps.ingress.admit({
        agent_id: childId,
        kind: "internal_followup",
        origin: { kind: "task", task_id: taskId },
        body: { type: "text", text: await this.handoff(parent, req) },
        surface: "runtime_system",
        admission: "runtime_owned",
        task_id: taskId,
        metadata: {
          delegation: {
            parent_agent_id: parent.agent_id,
            supervision_task_id: taskId,
            delegation_id: task.child!.delegation_id,
          },
        },
      });
    });
    const snapshot = taskSnapshot(task);
    return {
      agent_id: childId,
      child_agent_id: childId,
      supervision_task_id: taskId,
      profile_preset: "private_child" as const,
      task_handle: {
        task_id: taskId,
        task_kind: "child_agent_task",
        status: task.status,
        initial_output: null,
      },
      child_supervision: snapshot.child_supervision!,
    };
  }

  /** The child's first message: the parent's handoff, plus the derived view for `fork`. */
  private async handoff(parent: AgentRecord, req: SpawnRequest): Promise<string> {
    const lines = [
      `You were started by agent ${parent.agent_id} to do a delegated job. Your result goes back to it when you finish: end with a clear report of what you did and found.`,
      "",
      "Job:",
      req.initial_message ?? "",
    ];
    if (req.context_mode === "fork") {
      const ctx = await this.forkContext(parent);
      if (ctx) lines.push("", "Context inherited from your parent (a bounded view):", ctx);
    }
    return lines.join("\n");
  }

  /**
   * Fork context: anchored on the parent's active work item (objective, plan, progress),
   * plus a short tail of the parent's recent briefs; never the raw transcript.
   */
  private async forkContext(parent: AgentRecord): Promise<string> {
    const out: string[] = [];
    const item = await this.deps.work.currentItem(parent.agent_id);
    if (item) {
      out.push(`Active work item ${item.id}: ${clip(item.objective, 2_000)}`);
      const todo = (item as { todo_list?: { text: string; state: string }[] }).todo_list ?? [];
      for (const t of todo.slice(0, 20)) out.push(`  - [${t.state}] ${clipLine(t.text, 200)}`);
      if (item.blocked_by) out.push(`Blocked by: ${clipLine(item.blocked_by, 300)}`);
    }
    const briefs = await this.store.briefs.recent(parent.agent_id, 3);
    if (briefs.length) {
      out.push("Recent reports of your parent:");
      for (const b of briefs) out.push(`  - (${b.kind}) ${clipLine(b.text, 400)}`);
    }
    return out.join("\n");
  }

  private async childId(parentId: string): Promise<string> {
    const base = parentId.slice(0, 40);
    for (;;) {
      const suffix = this.store.ids
        .next("c")
        .replace(/[^a-z0-9]/gi, "")
        .slice(-8)
        .toLowerCase();
      const id = `${base}.child-${suffix}`;
      if (!(await this.store.agents.get(id))) return id;
    }
  }

  // -- supervision verbs (the task tools route child_agent_task here) ---------------------

  /** TaskInput on a child task: a follow-up message from the supervisor into the child. */
  async input(
    task: TaskRecord,
    text: string,
  ): Promise<{ accepted: boolean; reason?: string; message_id?: string }> {
    const store = this.store;
    if (TERMINAL_TASK_STATUSES.has(task.status))
      return { accepted: false, reason: "task_not_running" };
    if (!text.trim()) return { accepted: false, reason: "empty_input" };
    const child = await store.agents.get(task.child!.child_agent_id);
    if (!child || child.archived_at) return { accepted: false, reason: "child_gone" };
    if (child.status === "stopped") return { accepted: false, reason: "child_stopped" };
    const envelope = await store.tx(async () => {
      // The child asked a question: the supervisor's input is its answer (a parent may
      // decide its child's input asks, never a budget ask).
      const asked = (await this.deps.asks?.pendingFor(child.agent_id))?.find(
        (a) =>
          a.kind === "input" &&
          a.state === "pending" &&
          (a.free_text || matchOption(a.options, text) !== undefined),
      );
      const m = asked
        ? await this.answerAsk(asked.id, task, text)
        : await this.deps.ingress.admit({
            agent_id: child.agent_id,
            kind: "internal_followup",
            origin: { kind: "task", task_id: task.id },
            body: {
              type: "text",
              text: `Follow-up from your supervisor ${task.agent_id}:\n${text}`,
            },
            surface: "runtime_system",
            admission: "runtime_owned",
            task_id: task.id,
            metadata: { supervisor_input: true },
          });
      const current = (await store.tasks.get(task.id))!;
      if (current.child?.needs_input) {
        const next = { ...current, child: { ...current.child, needs_input: false } };
        await store.tasks.put(next);
        await store.appendEvent(task.agent_id, {
          type: "task_status_updated",
          provenance: { task_id: task.id },
          payload: { task: taskSnapshot(next) },
        });
      }
      return m;
    });
    return { accepted: true, message_id: envelope.id };
  }

  private async answerAsk(askId: string, task: TaskRecord, text: string): Promise<{ id: string }> {
    const asks = this.deps.asks!;
    const r = await asks.decide(
      askId,
      { decision: text },
      { kind: "agent", agent_id: task.agent_id, task_id: task.id },
    );
    if (!r.message_id) throw new HolonError("child_stopped", "the child no longer takes input");
    return { id: r.message_id };
  }

  /** TaskStop on a child task: abort its run, stop it, settle the task as cancelled. */
  async stop(task: TaskRecord): Promise<{ task: TaskRecord; stop_requested: boolean }> {
    const store = this.store;
    if (TERMINAL_TASK_STATUSES.has(task.status)) return { task, stop_requested: false };
    const childId = task.child!.child_agent_id;
    const rt = this.deps.loops.get(childId);
    if (rt?.currentRun) {
      try {
        rt.abortCurrentRun("supervisor_stopped", { stopAfter: true });
      } catch {
        // the run ended meanwhile
      }
    }
    await store.tx(async () => {
      if (await store.agents.get(childId)) await this.deps.sleep.cancel(childId, "agent_stopped");
      const partial = await childResult(this.deps, childId, false);
      await settleChildTask(
        this.deps,
        task,
        "cancelled",
        partial.source === "none"
          ? { source: "none", text: "The supervisor stopped the child before it reported." }
          : partial,
        "supervisor_stopped",
      );
    });
    void this.deps.tasks.cancelForAgent(childId, "agent_stopped");
    return { task: (await store.tasks.get(task.id))!, stop_requested: true };
  }

  /** TaskOutput on a child task: the child's briefs and progress, with the projection. */
  async output(task: TaskRecord, chars: number, waited: boolean) {
    const store = this.store;
    const terminal = TERMINAL_TASK_STATUSES.has(task.status);
    const c = task.child!;
    const child = await store.agents.get(c.child_agent_id);
    const briefs = await store.briefs.recent(c.child_agent_id, 10);
    const progress = briefs.map((b) => `[${b.kind} ${b.created_at}] ${b.text}`).join("\n\n");
    const text = c.result ? c.result.text : progress;
    const cut = text.length > chars;
    return {
      retrieval_status: terminal ? "success" : waited ? "timeout" : "not_ready",
      task: {
        task_id: task.id,
        kind: task.kind,
        status: task.status,
        summary: task.summary ?? null,
        output_preview: cut ? text.slice(-chars) : text,
        output_truncated: cut,
        output_bytes: Buffer.byteLength(text),
        output_dropped_bytes: 0,
        output_source: c.result ? "child_result" : "child_briefs",
        artifacts: [],
        result_summary: terminal ? `child ${c.child_agent_id} ${task.status}` : null,
        result_source: c.result?.source ?? null,
        exit_status: null,
        failure_artifact: task.failure_artifact ?? null,
        child_status: child?.status ?? null,
        child_supervision: childSupervision(task),
      },
    };
  }

  /** Agent stop: stop every live child task the agent supervises. */
  async cancelForAgent(agentId: string, _reason: string): Promise<string[]> {
    const live = (await this.store.tasks.activeForAgent(agentId)).filter(
      (t) => t.kind === "child_agent_task",
    );
    for (const t of live) await this.stop(t);
    return live.map((t) => t.id);
  }

  /**
   * After a restart: every live supervised child runs again. One whose run was cut short
   * (its message interrupted) and that has nothing queued is asked to continue its job.
   * Only the children supervised by `agents` (the groups a host acquires: host.ts; a private
   * child is in its supervisor's group).
   */
  async recover(agents: ReadonlySet<string>): Promise<void> {
    const store = this.store;
    for (const task of await store.tasks.active()) {
      if (task.kind !== "child_agent_task" || !task.child) continue;
      if (!agents.has(task.agent_id)) continue;
      const child = await store.agents.get(task.child.child_agent_id);
      if (!child) {
        await store.tx(
          async () =>
            await settleChildTask(
              this.deps,
              task,
              "failed",
              { source: "none", text: "The child agent no longer exists." },
              "child_missing",
            ),
        );
        continue;
      }
      if (child.archived_at) continue;
      // Only the newest message counts: an old interruption the child got past is history.
      const interrupted =
        (await store.messages.recent(child.agent_id, 1))[0]?.status === "interrupted";
      const queued = (await store.messages.pendingCount(child.agent_id)) > 0;
      if (interrupted && !queued && child.status !== "stopped") {
        await this.deps.ingress.admit({
          agent_id: child.agent_id,
          kind: "internal_followup",
          origin: { kind: "task", task_id: task.id },
          body: {
            type: "text",
            text: `The runtime restarted while you were working, and your last run was cut short. Continue your delegated job and report when it is done.\nJob: ${task.child.label}`,
          },
          surface: "runtime_system",
          admission: "runtime_owned",
          task_id: task.id,
          metadata: { restart_resume: true },
        });
      }
      await this.deps.loops.start(child.agent_id);
    }
  }

  // -- AgentGet -------------------------------------------------------------------------

  /**
   * The AgentGetResult envelope. `viewer` (a tool call) may see itself, its own children
   * and public agents; operator surfaces pass no viewer. Never transcripts or prompts.
   */
  async get(agentId: string, viewer?: string) {
    const store = this.store;
    const agent = await store.agents.get(agentId);
    const visible =
      agent &&
      (viewer === undefined ||
        agent.agent_id === viewer ||
        agent.visibility === "public" ||
        agent.lineage_parent_agent_id === viewer);
    if (!agent || !visible) throw unknownAgent(agentId);
    const tasks = await store.tasks.activeForAgent(agentId);
    const children = await this.deps.agents.children(agentId);
    const item = agent.current_work_item_id
      ? await store.workItems.get(agent.current_work_item_id)
      : undefined;
    return {
      agent: {
        identity: {
          agent_id: agent.agent_id,
          kind: agent.kind,
          visibility: agent.visibility,
          ownership: agent.ownership,
          profile_preset: agent.profile_preset,
          lineage_parent_agent_id: agent.lineage_parent_agent_id ?? null,
          supervisor_agent_id: agent.supervisor_agent_id ?? null,
          group_id: agent.group_id,
          agent_home: agent.agent_home,
          is_default: agent.agent_id === this.deps.defaultAgentId,
          archived: agent.archived_at !== undefined,
        },
        status: agent.status,
        closure: agent.closure
          ? {
              outcome: agent.closure.outcome,
              waiting_reason: agent.closure.waiting_reason ?? null,
              decided_at: agent.closure.decided_at,
            }
          : null,
        current_work_item: item
          ? { work_item_id: item.id, objective: clip(item.objective, 500), state: item.state }
          : null,
        active_tasks: tasks.map((t) => ({
          task_id: t.id,
          kind: t.kind,
          status: t.status,
          summary: t.summary ?? null,
          child_agent_id: t.child?.child_agent_id ?? null,
        })),
        children: await this.childrenSummary(agentId, children),
        created_at: agent.created_at,
        updated_at: agent.updated_at,
      },
    };
  }

  async childrenSummary(agentId: string, known?: AgentRecord[]) {
    const children = known ?? (await this.deps.agents.children(agentId));
    const store = this.store;
    const tasks = (await store.tasks.forAgent(agentId, 200)).filter((t) => t.child);
    const entries = children.map((c) => {
      const t = tasks.find((x) => x.child!.child_agent_id === c.agent_id);
      return {
        agent_id: c.agent_id,
        visibility: c.visibility,
        profile_preset: c.profile_preset,
        status: c.status,
        archived: c.archived_at !== undefined,
        supervision_task_id: t?.id ?? null,
        supervision_state: t ? childSupervision(t).state : null,
      };
    });
    return {
      total: entries.length,
      live: entries.filter((e) => !e.archived).length,
      entries: entries.slice(0, 50),
    };
  }

  // -- archive and delete ---------------------------------------------------------------

  /** Stop the agent, keep its data, hide it from lists. Its private children go with it. */
  async archive(agentId: string) {
    const agent = await this.deps.agents.get(agentId);
    if (agentId === this.deps.defaultAgentId) {
      throw new HolonError("default_agent_protected", "the default agent cannot be archived", {
        status: 409,
      });
    }
    const stopped = await this.stopAll(agent);
    await this.store.tx(async () => await archiveInTx(this.store, agentId, "operator_archived"));
    await this.deps.loops.retire(agentId);
    return { agent_id: agentId, archived: true, stopped_task_ids: stopped };
  }

  /**
   * Delete: refused for the default agent, and while tasks or children run unless `force`.
   * Stops its tasks and private children, cancels its timers, revokes its trigger, reports
   * its retained worktrees, removes its home and live rows; a tombstone and the audit
   * events stay.
   */
  async remove(agentId: string, opts: { force: boolean }) {
    const store = this.store;
    const agent = await this.deps.agents.get(agentId);
    if (agentId === this.deps.defaultAgentId) {
      throw new HolonError("default_agent_protected", "the default agent cannot be deleted", {
        status: 409,
      });
    }
    const activeTasks = await store.tasks.activeForAgent(agentId);
    const liveChildren = (await this.deps.agents.children(agentId)).filter(
      (c) => !c.archived_at && c.visibility === "private",
    );
    if (
      !opts.force &&
      (activeTasks.length > 0 || liveChildren.length > 0 || agent.current_run_id)
    ) {
      throw new HolonError(
        "agent_busy",
        `agent '${agentId}' has ${activeTasks.length} running task(s) and ${liveChildren.length} live child agent(s)`,
        {
          status: 409,
          hint: "stop them first, or delete with --force (force: true) to stop them",
          details: { active_task_ids: activeTasks.map((t) => t.id) },
        },
      );
    }
    const stopped = await this.stopAll(agent);
    const deletedChildren: string[] = [];
    for (const c of await this.deps.agents.children(agentId)) {
      if (c.visibility !== "private") continue;
      await this.remove(c.agent_id, { force: true });
      deletedChildren.push(c.agent_id);
    }
    const waits = await this.deps.waits.cancelForAgent(agentId, "agent_deleted");
    const retained = (await store.workspaces.worktrees(agentId)).map((w) => w.path);
    await this.deps.loops.retire(agentId);
    const now = store.clock.now().toISOString();
    const payload = {
      forced: opts.force,
      stopped_task_ids: stopped,
      cancelled_timer_ids: waits.timers,
      revoked_trigger_ids: waits.triggers,
      retained_worktrees: retained,
      deleted_children: deletedChildren,
    };
    await store.tx(async () => {
      await store.appendEvent(agentId, { type: "agent_deleted", payload });
      await store.agents.remove(agentId, now, {
        agent_id: agentId,
        deleted_at: now,
        kind: agent.kind,
        visibility: agent.visibility,
        ownership: agent.ownership,
        profile_preset: agent.profile_preset,
        lineage_parent_agent_id: agent.lineage_parent_agent_id ?? null,
        agent_home: agent.agent_home,
        created_at: agent.created_at,
        ...payload,
      });
    });
    rmSync(agent.agent_home, { recursive: true, force: true });
    return { agent_id: agentId, deleted: true, ...payload };
  }

  /** Remove a child that could not be set up (no tombstone needed: it never ran). */
  private async removeNow(agentId: string): Promise<void> {
    const agent = await this.store.agents.get(agentId);
    if (!agent) return;
    // Its loop ends before the record goes: a step it is part way through (each store call
    // an await now) would otherwise find the agent gone under it ("agent vanished").
    await this.deps.loops.retire(agentId);
    await this.store.tx(
      async () =>
        await this.store.agents.remove(agentId, this.store.clock.now().toISOString(), {
          agent_id: agentId,
          reason: "spawn_failed",
        }),
    );
    rmSync(agent.agent_home, { recursive: true, force: true });
  }

  private async stopAll(agent: AgentRecord): Promise<string[]> {
    const store = this.store;
    const rt = this.deps.loops.get(agent.agent_id);
    if (rt?.currentRun) {
      try {
        rt.abortCurrentRun("agent_removed", { stopAfter: true });
      } catch {
        // ended meanwhile
      }
    }
    await store.tx(async () => {
      await this.deps.sleep.cancel(agent.agent_id, "agent_stopped");
      if ((await store.agents.get(agent.agent_id))?.status !== "stopped")
        await transition(store, agent.agent_id, "stopped", "removal", {
          clear: ["current_run_id"],
        });
    });
    const children = await this.cancelForAgent(agent.agent_id, "agent_removed");
    const commands = await this.deps.tasks.cancelForAgent(agent.agent_id, "agent_removed");
    return [...children, ...commands];
  }
}

function clip(text: string, n = RESULT_CHARS): string {
  return text.length > n ? text.slice(0, n) + "\n[cut]" : text;
}

function clipLine(text: string, n: number): string {
  const line = text.trim().split("\n", 1)[0] ?? "";
  return line.length > n ? line.slice(0, n - 1) + "…" : line;
}
