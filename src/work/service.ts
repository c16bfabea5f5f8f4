// The work service: every change to an agent's work items and its focus pointer, each in
// one transaction with the event that explains it. Tools (agent) and control routes
// (operator) both come here; nothing else writes work items. Progress (a todo changing
// state, a new plan hash, a pick, a block, a completion) resets the runaway guard.
import type { AgentRecord } from "../domain/agent.ts";
import type { AuthorityClass } from "../domain/message.ts";
import type { BudgetLimits } from "../domain/budget.ts";
import type { EventProvenance } from "../domain/events.ts";
export type { WorkItemView } from "../domain/work-item.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import {
  DEFAULT_RECHECK_MS,
  WORK_LIMITS,
  readiness,
  schedulingState,
  todoProgress,
  viewOf,
  type DeliverySummaryRecord,
  type PlanStatus,
  type TodoItem,
  type WorkItemRecord,
  type WorkItemView,
} from "../domain/work-item.ts";
import { createBrief } from "../agent/briefs.ts";
import type { Ingress } from "../agent/ingress.ts";
import type { AskService } from "../asks/service.ts";
import type { Store } from "../store/db.ts";
import { describePlan, planPath, removePlanDir, writePlan } from "./plan.ts";

export const WORK_RECHECK = "work_recheck";
export const recheckKey = (workItemId: string) => `work_recheck:${workItemId}`;

/** The deadline scheduler as the work plane uses it (waiting/scheduler.ts satisfies it). */
export interface WorkDeadlines {
  add(d: {
    agent_id: string;
    kind: string;
    key: string;
    due_at: string;
    payload: Record<string, unknown>;
  }): Promise<unknown>;
  cancelKey(key: string): Promise<boolean>;
}

export type Actor = "agent" | "operator" | "runtime";

export type CreateInput = {
  objective: string;
  plan_status?: PlanStatus | undefined;
  plan?: string | undefined;
  todo_list?: TodoItem[] | undefined;
  /** The operator's budget for the item (control route only). */
  budget?: BudgetLimits | undefined;
};

export type UpdateInput = {
  objective?: string | undefined;
  plan_status?: PlanStatus | undefined;
  todo_list?: TodoItem[] | undefined;
  /** A string sets the blocker, null clears it, undefined leaves it. */
  blocked_by?: string | null | undefined;
  recheck_after?: number | undefined;
};

export type CompletionReport = NonNullable<WorkItemView["completion_report"]>;

export type ListFilter =
  "current" | "open" | "queued" | "blocked" | "waiting_for_operator" | "completed" | "all";

export type CompleteResult = {
  item: WorkItemRecord;
  report: DeliverySummaryRecord | undefined;
  warning: string | undefined;
};

export class WorkService {
  private readonly store: Store;
  private readonly deadlines: WorkDeadlines;
  private readonly ingress: Ingress;
  /** Asks about an item are withdrawn when it completes (src/asks/). */
  private readonly asks: AskService | undefined;

  constructor(deps: {
    store: Store;
    deadlines: WorkDeadlines;
    ingress: Ingress;
    asks?: AskService | undefined;
  }) {
    this.store = deps.store;
    this.deadlines = deps.deadlines;
    this.ingress = deps.ingress;
    this.asks = deps.asks;
  }

  private now(): string {
    return this.store.clock.now().toISOString();
  }

  private async agent(agentId: string): Promise<AgentRecord> {
    const agent = await this.store.agents.get(agentId);
    if (!agent) throw unknownAgent(agentId);
    return agent;
  }

  /** The agent's own item; an unknown id and another agent's item are the same refusal. */
  async item(agentId: string, id: string): Promise<WorkItemRecord> {
    const item = await this.store.workItems.get(id);
    if (!item || item.agent_id !== agentId) {
      throw new HolonError("unknown_work_item", `no work item '${id}' for agent '${agentId}'`, {
        status: 404,
        hint: "list your work items (ListWorkItems) and use one of their ids",
        operatorHint: `list the agent's work items: holon work list ${agentId}`,
        details: { work_item_id: id, field: "work_item_id" },
      });
    }
    return item;
  }

  private async open(agentId: string, id: string, action: string): Promise<WorkItemRecord> {
    const item = await this.item(agentId, id);
    if (item.state === "completed") {
      throw new HolonError(
        "work_item_completed",
        `work item '${id}' is already completed; it cannot be ${action}`,
        {
          status: 409,
          hint: "create a new work item for follow-up work (CreateWorkItem)",
          operatorHint: `queue a new one for follow-up work: holon work add ${agentId} "<objective>"`,
          details: { work_item_id: id, field: "work_item_id" },
        },
      );
    }
    return item;
  }

  async currentItem(agentId: string): Promise<WorkItemRecord | undefined> {
    const id = (await this.store.agents.get(agentId))?.current_work_item_id;
    const item = id ? await this.store.workItems.get(id) : undefined;
    return item && item.state === "open" ? item : undefined;
  }

  // ---------------------------------------------------------------------------
  // Mutations

  /** `authority`: the creating turn's policy authority (taint); stored when below operator. */
  async create(
    agentId: string,
    input: CreateInput,
    by: "agent" | "operator",
    authority?: AuthorityClass,
    /** Who asked and through which door, for the event (an operator's enqueue names them). */
    provenance: EventProvenance = {},
  ): Promise<WorkItemRecord> {
    const agent = await this.agent(agentId);
    const objective = checkObjective(input.objective);
    const todos = checkTodos(input.todo_list ?? []);
    const plan = input.plan ?? "";
    if (Buffer.byteLength(plan) > WORK_LIMITS.plan_bytes) {
      throw invalid("plan", `the plan is larger than ${WORK_LIMITS.plan_bytes} bytes`);
    }
    if ((await this.store.workItems.count(agentId, "open")) >= WORK_LIMITS.open_items) {
      throw new HolonError(
        "too_many_work_items",
        `agent '${agentId}' already has ${WORK_LIMITS.open_items} open work items`,
        { status: 409, hint: "complete or close open work items before creating more" },
      );
    }
    const id = this.store.ids.next("wi");
    const now = this.now();
    const path = planPath(agent.agent_home, id);
    writePlan(path, plan);
    const item: WorkItemRecord = {
      id,
      agent_id: agentId,
      workspace_id: "agent_home",
      objective,
      state: "open",
      plan_status: input.plan_status ?? "draft",
      plan_artifact: describePlan(path, now),
      todo_list: todos,
      created_by: by,
      ...(authority && authority !== "operator_instruction" ? { policy_authority: authority } : {}),
      revision: 1,
      created_at: now,
      updated_at: now,
      ...(input.budget ? { budget: input.budget } : {}),
    };
    try {
      await this.store.tx(async () => {
        await this.store.workItems.put(item);
        await this.store.appendEvent(agentId, {
          type: "work_item_created",
          provenance: { ...provenance, work_item_id: id },
          payload: {
            work_item_id: id,
            objective,
            plan_status: item.plan_status,
            created_by: by,
            plan_path: path,
            ...(input.budget ? { budget: input.budget } : {}),
          },
        });
      });
    } catch (err) {
      removePlanDir(path);
      throw err;
    }
    return item;
  }

  /**
   * The operator's enqueue: a new queued item, and a wake for an idle agent with nothing to do.
   * `provenance` (origin, delivery surface, admission context) goes on `work_item_created`.
   */
  enqueue(
    agentId: string,
    objective: string,
    budget?: BudgetLimits,
    provenance?: EventProvenance,
  ): Promise<WorkItemRecord> {
    return this.store.tx(async () => {
      const item = await this.create(
        agentId,
        { objective, ...(budget ? { budget } : {}) },
        "operator",
        undefined,
        provenance,
      );
      await this.noteProgress(agentId, "operator_enqueued_work");
      await this.wakeIdle(agentId);
      return item;
    });
  }

  pick(
    agentId: string,
    id: string,
    by: Actor = "agent",
  ): Promise<{ current: WorkItemRecord; previous: WorkItemRecord | undefined }> {
    return this.store.tx(async () => {
      const item = await this.open(agentId, id, "picked");
      const agent = await this.agent(agentId);
      const prevId = agent.current_work_item_id;
      const previous = prevId && prevId !== id ? await this.store.workItems.get(prevId) : undefined;
      if (prevId !== id) await this.setFocus(agentId, id, by);
      await this.noteProgress(agentId, "picked");
      return { current: item, previous };
    });
  }

  update(
    agentId: string,
    id: string,
    patch: UpdateInput,
    by: Actor = "agent",
  ): Promise<WorkItemRecord> {
    return this.store.tx(async () => {
      const item = await this.open(agentId, id, "updated");
      const next: WorkItemRecord = { ...item };
      const changes: string[] = [];
      let progress: string | undefined;
      // An operator's update re-confirms a tainted item: its ticks run at full authority again.
      if (by === "operator" && item.policy_authority !== undefined) {
        delete next.policy_authority;
        changes.push("policy_authority");
      }
      if (patch.objective !== undefined) {
        next.objective = checkObjective(patch.objective);
        if (next.objective !== item.objective) changes.push("objective");
      }
      if (patch.plan_status !== undefined && patch.plan_status !== item.plan_status) {
        next.plan_status = patch.plan_status;
        changes.push("plan_status");
      }
      if (patch.todo_list !== undefined) {
        next.todo_list = checkTodos(patch.todo_list);
        if (JSON.stringify(next.todo_list) !== JSON.stringify(item.todo_list)) {
          changes.push("todo_list");
          if (todoStatesChanged(item.todo_list, next.todo_list)) progress = "todo_state_changed";
        }
      }
      if (patch.recheck_after !== undefined && (patch.blocked_by ?? null) === null) {
        throw invalid(
          "recheck_after",
          "recheck_after applies only when setting a non-empty blocked_by",
          "pass blocked_by with the reason together with recheck_after",
        );
      }
      if (patch.blocked_by !== undefined && by === "agent") {
        const held = (await this.asks?.holdingItem(id))?.[0];
        if (held) {
          throw new HolonError(
            "held_by_ask",
            `work item '${id}' is held by ask ${held.id} (${held.about}); only its decision lifts the blocker`,
            {
              status: 409,
              hint: "work on another runnable item meanwhile; the decision arrives as a message",
              details: { work_item_id: id, ask_id: held.id, field: "blocked_by" },
            },
          );
        }
      }
      if (patch.blocked_by !== undefined) {
        if (patch.blocked_by === null) {
          if (item.blocked_by !== undefined) {
            delete next.blocked_by;
            delete next.recheck_at;
            delete next.recheck_consumed_at;
            await this.deadlines.cancelKey(recheckKey(id));
            changes.push("blocked_by");
            progress ??= "unblocked";
          }
        } else {
          next.blocked_by = checkBlocker(patch.blocked_by);
          const ms = patch.recheck_after ?? DEFAULT_RECHECK_MS;
          const due = new Date(this.store.clock.now().getTime() + ms).toISOString();
          next.recheck_at = due;
          delete next.recheck_consumed_at;
          await this.deadlines.add({
            agent_id: agentId,
            kind: WORK_RECHECK,
            key: recheckKey(id),
            due_at: due,
            payload: { work_item_id: id },
          });
          changes.push("blocked_by", "recheck");
          progress = "blocked";
        }
      }
      // The plan file may have changed by hand or by the agent's file tools.
      const plan = describePlan(item.plan_artifact.path, this.now());
      if (plan.hash !== item.plan_artifact.hash) {
        next.plan_artifact = plan;
        changes.push("plan_artifact");
        progress ??= "plan_changed";
      }
      if (changes.length === 0) return item;
      await this.commit(next, changes, by);
      if (progress) await this.noteProgress(agentId, progress);
      return next;
    });
  }

  /**
   * Complete an item. The agent's report is the assistant text of the round that called the
   * tool (read from the run's transcript); the operator's is its note. Without one, the item
   * completes with a warning and no report.
   */
  complete(
    agentId: string,
    id: string,
    how:
      | { by: "agent"; run_id: string; message_id: string }
      | { by: "operator"; note?: string | undefined },
  ): Promise<CompleteResult> {
    return this.store.tx(async () => {
      const item = await this.open(agentId, id, "completed again");
      const now = this.now();
      let text = "";
      let warning: string | undefined;
      if (how.by === "agent") {
        const round = (await this.store.transcript.forRun(agentId, how.run_id))
          .filter((e) => e.kind === "assistant_round")
          .at(-1);
        const calls = Array.isArray(round?.data.tool_calls)
          ? (round.data.tool_calls as { name?: string }[]).filter(
              (c) => c.name === "CompleteWorkItem",
            ).length
          : 0;
        text = typeof round?.data.text === "string" ? round.data.text.trim() : "";
        if (calls > 1) {
          text = "";
          warning =
            "several CompleteWorkItem calls in one round: no completion report was promoted; complete one work item per round, with its report as your text in that round";
        } else if (!text) {
          warning =
            "no completion report: this round had no assistant text, so the item completed without a report; next time write the report as your text in the same round as CompleteWorkItem";
        }
      } else {
        text = (how.note ?? "").trim();
        if (text.length > WORK_LIMITS.note_chars) {
          throw invalid("note", `the note is longer than ${WORK_LIMITS.note_chars} characters`);
        }
      }
      const next: WorkItemRecord = { ...item, state: "completed", completed_at: now };
      delete next.blocked_by;
      delete next.recheck_at;
      delete next.recheck_consumed_at;
      await this.deadlines.cancelKey(recheckKey(id));
      const plan = describePlan(item.plan_artifact.path, now);
      next.plan_artifact = plan;
      let report: DeliverySummaryRecord | undefined;
      if (text) {
        next.result_summary = text;
        report = {
          id: this.store.ids.next("ds"),
          agent_id: agentId,
          work_item_id: id,
          text,
          source: how.by === "agent" ? "same_round_report" : "operator_note",
          created_at: now,
        };
        if (how.by === "agent") {
          report.run_id = how.run_id;
          report.message_id = how.message_id;
        }
        await this.store.workItems.insertSummary(report);
        await createBrief(this.store, {
          agent_id: agentId,
          kind: "result",
          text,
          work_item_id: id,
          related_message_id: how.by === "agent" ? how.message_id : undefined,
        });
      }
      await this.commit(next, ["state"], how.by, false);
      const payload: {
        work_item_id: string;
        revision: number;
        source: "agent" | "operator";
        report_id: string | null;
        warning?: string;
      } = {
        work_item_id: id,
        revision: next.revision,
        source: how.by,
        report_id: report?.id ?? null,
      };
      if (warning) payload.warning = warning;
      await this.store.appendEvent(agentId, {
        type: "work_item_completed",
        provenance: { work_item_id: id },
        payload,
      });
      if ((await this.store.agents.get(agentId))?.current_work_item_id === id) {
        await this.setFocus(agentId, undefined, how.by);
      }
      await this.noteProgress(agentId, "completed");
      // Whatever an ask about this item waited for no longer matters.
      await this.asks?.withdrawForItem(id, "work_item_completed");
      const pruned = await this.store.workItems.pruneCompleted(agentId, WORK_LIMITS.completed_kept);
      const agentHome = (await this.agent(agentId)).agent_home;
      for (const old of pruned) removePlanDir(planPath(agentHome, old));
      return { item: next, report, warning };
    });
  }

  /** The operator parks an item (block) or lets it go again (unblock). */
  async operatorBlock(agentId: string, id: string, reason: string, recheckAfter?: number) {
    const patch: UpdateInput = { blocked_by: reason };
    if (recheckAfter !== undefined) patch.recheck_after = recheckAfter;
    return await this.store.tx(async () => {
      const item = await this.update(agentId, id, patch, "operator");
      await this.noteProgress(agentId, "operator_blocked");
      return item;
    });
  }

  operatorUnblock(agentId: string, id: string): Promise<WorkItemRecord> {
    return this.store.tx(async () => {
      await this.item(agentId, id);
      // The operator lifting the blocker also settles what an ask held it for.
      await this.asks?.withdrawForItem(id, "unblocked_by_operator");
      const item = await this.update(agentId, id, { blocked_by: null }, "operator");
      await this.noteProgress(agentId, "operator_unblocked");
      await this.wakeIdle(agentId);
      return item;
    });
  }

  /** Refresh the stored plan descriptor; true when the plan's content changed. */
  async refreshPlan(item: WorkItemRecord, by: Actor = "runtime"): Promise<boolean> {
    const plan = describePlan(item.plan_artifact.path, this.now());
    if (plan.hash === item.plan_artifact.hash) return false;
    await this.store.tx(async () => {
      await this.commit({ ...item, plan_artifact: plan }, ["plan_artifact"], by);
      await this.noteProgress(item.agent_id, "plan_changed");
    });
    return true;
  }

  /** Store a new snapshot and its `work_item_updated` event (inside the caller's tx). */
  async commit(
    next: WorkItemRecord,
    changes: string[],
    by: Actor,
    withEvent = true,
  ): Promise<void> {
    const stored: WorkItemRecord = { ...next, revision: next.revision + 1, updated_at: this.now() };
    Object.assign(next, stored);
    await this.store.tx(async () => {
      await this.store.workItems.put(stored);
      if (!withEvent) return;
      const p = todoProgress(stored.todo_list);
      await this.store.appendEvent(stored.agent_id, {
        type: "work_item_updated",
        provenance: { work_item_id: stored.id },
        payload: {
          work_item_id: stored.id,
          revision: stored.revision,
          source: by,
          changes,
          blocked_by: stored.blocked_by ?? null,
          recheck_at: stored.recheck_at ?? null,
          plan_status: stored.plan_status,
          todo_done: p.done,
          todo_total: p.total,
        },
      });
    });
  }

  private async setFocus(agentId: string, id: string | undefined, by: Actor): Promise<void> {
    const agent = await this.agent(agentId);
    const next: AgentRecord = { ...agent, updated_at: this.now() };
    if (id) next.current_work_item_id = id;
    else delete next.current_work_item_id;
    await this.store.agents.put(next);
    await this.store.appendEvent(agentId, {
      type: "work_item_focus_changed",
      provenance: id ? { work_item_id: id } : {},
      payload: {
        work_item_id: id ?? null,
        previous_work_item_id: agent.current_work_item_id ?? null,
        source: by,
      },
    });
  }

  /** Progress resets the runaway guard (and lifts a halt). Inside the caller's tx. */
  async noteProgress(agentId: string, why: string): Promise<void> {
    await this.store.tx(async () => {
      const {
        halted_at: _lifted,
        allowance: _spent,
        ...state
      } = await this.store.workItems.agentState(agentId);
      await this.store.workItems.putAgentState(agentId, {
        ...state,
        continuations_without_progress: 0,
        last_progress_at: this.now(),
        last_progress: why,
      });
    });
  }

  /**
   * Wake an agent that rests with nothing queued so it can pick runnable work. Not when it
   * waits on something, failed, is paused or stopped, or is busy.
   */
  private async wakeIdle(agentId: string): Promise<void> {
    const agent = await this.agent(agentId);
    if (agent.status === "paused" || agent.status === "stopped" || agent.current_run_id) return;
    if (agent.closure && agent.closure.outcome !== "completed") return;
    if ((await this.store.messages.pendingCount(agentId)) > 0) return;
    const current = await this.currentItem(agentId);
    if (current && schedulingState(current) === "runnable") return;
    const queued = await this.runnableQueued(agentId);
    if (queued.length === 0) return;
    await this.admitTick(agentId, "activate_queued", queued[0]!);
  }

  async runnableQueued(agentId: string): Promise<WorkItemRecord[]> {
    const currentId = (await this.store.agents.get(agentId))?.current_work_item_id;
    return (await this.store.workItems.withState(agentId, "open")).filter(
      (i) => i.id !== currentId && schedulingState(i) === "runnable",
    );
  }

  /** Admit a runtime-owned work-queue tick (low priority), counted by the runaway guard. */
  async admitTick(
    agentId: string,
    mode: "continue_active" | "activate_queued",
    item: WorkItemRecord,
  ): Promise<void> {
    await this.store.tx(async () => {
      const state = await this.store.workItems.agentState(agentId);
      const count = state.continuations_without_progress + 1;
      const queued = (await this.store.messages.withStatus(agentId, "queued")).some(
        (m) => m.origin.kind === "system" && m.origin.subsystem === "work_queue",
      );
      if (queued) {
        await this.store.appendEvent(agentId, {
          type: "work_activation",
          provenance: { work_item_id: item.id },
          payload: {
            mode,
            work_item_id: item.id,
            disposition: "already_queued",
            continuations_without_progress: state.continuations_without_progress,
          },
        });
        return;
      }
      const text =
        mode === "continue_active"
          ? `Work-queue tick: your current work item ${item.id} ("${clip(item.objective, 200)}") is still runnable. Continue it. Keep its todo list and plan up to date; when the objective is done, write the completion report as your text and call CompleteWorkItem in the same round; if you cannot advance it, set blocked_by with UpdateWorkItem.`
          : `Work-queue tick: you have no runnable current work item, and runnable queued work is waiting (oldest: ${item.id}, "${clip(item.objective, 200)}"). Look at your work queue, pick an item with PickWorkItem and work on it.`;
      const envelope = await this.ingress.admit({
        agent_id: agentId,
        kind: "system_tick",
        origin: { kind: "system", subsystem: "work_queue" },
        body: { type: "text", text },
        surface: "runtime_system",
        admission: "runtime_owned",
        priority: "background",
        work_item_id: item.id,
        metadata: { work_signal: mode, work_item_id: item.id, revision: item.revision },
      });
      await this.store.workItems.putAgentState(agentId, {
        ...state,
        continuations_without_progress: count,
      });
      await this.store.appendEvent(agentId, {
        type: "work_activation",
        provenance: { work_item_id: item.id, message_id: envelope.id },
        payload: {
          mode,
          work_item_id: item.id,
          disposition: "admitted",
          continuations_without_progress: count,
          message_id: envelope.id,
        },
      });
    });
  }

  // ---------------------------------------------------------------------------
  // Reads

  async view(
    item: WorkItemRecord,
    opts: { include_todo_list?: boolean } = {},
  ): Promise<WorkItemView> {
    const currentId = (await this.store.agents.get(item.agent_id))?.current_work_item_id;
    const { todo_list, ...rest } = item;
    const plan = describePlan(item.plan_artifact.path, this.now(), item.plan_artifact);
    const out: WorkItemView = {
      ...rest,
      plan_artifact: plan,
      view: viewOf(item, currentId),
      readiness: readiness(schedulingState(item)),
      is_current: item.id === currentId && item.state === "open",
      todo_progress: todoProgress(todo_list),
      completion_report: await this.completionReport(item),
    };
    if (item.state === "open" && this.asks) {
      const held = await this.asks.holdingItem(item.id);
      if (held.length > 0) {
        out.held_by_asks = held.map((a) => ({
          ask_id: a.id,
          kind: a.kind,
          source: a.source,
          state: a.state,
          about: a.about,
          options: a.options,
        }));
      }
    }
    if (opts.include_todo_list !== false) out.todo_list = todo_list;
    return out;
  }

  async completionReport(item: WorkItemRecord): Promise<CompletionReport | null> {
    if (item.state !== "completed") return null;
    const s = await this.store.workItems.newestSummary(item.id);
    if (s) {
      return {
        text: item.result_summary || s.text,
        source: s.source,
        delivery_summary_id: s.id,
        created_at: s.created_at,
      };
    }
    return null;
  }

  async get(
    agentId: string,
    id: string,
    opts: { include_todo_list?: boolean } = {},
  ): Promise<WorkItemView> {
    return await this.view(await this.item(agentId, id), opts);
  }

  async list(
    agentId: string,
    filter: ListFilter = "all",
    opts: { limit?: number; include_todo_list?: boolean } = {},
  ): Promise<WorkItemView[]> {
    const agent = await this.agent(agentId);
    const limit = opts.limit ?? 50;
    const open =
      filter === "completed" ? [] : await this.store.workItems.withState(agentId, "open");
    const completed =
      filter === "all" || filter === "completed"
        ? await this.store.workItems.recentWithState(agentId, "completed", limit)
        : [];
    const items = [...open, ...completed].filter((i) => {
      const v = viewOf(i, agent.current_work_item_id);
      switch (filter) {
        case "all":
          return true;
        case "open":
          return i.state === "open";
        default:
          return v === filter;
      }
    });
    const rank = (i: WorkItemRecord) =>
      ["current", "queued", "waiting_for_operator", "blocked", "completed"].indexOf(
        viewOf(i, agent.current_work_item_id),
      );
    return await Promise.all(
      items
        .sort((a, b) => rank(a) - rank(b))
        .slice(0, limit)
        .map((i) => this.view(i, opts)),
    );
  }

  /** The `/state` projection: the current item in full and the others compactly. */
  async state(agentId: string) {
    const items = await this.list(agentId, "all", { limit: 50 });
    return {
      current_work_item_id: (await this.store.agents.get(agentId))?.current_work_item_id ?? null,
      items,
      guard: await this.store.workItems.agentState(agentId),
    };
  }
}

function invalid(field: string, message: string, hint?: string): HolonError {
  return new HolonError("invalid_work_item_input", message, {
    status: 400,
    details: { field },
    ...(hint ? { hint } : {}),
  });
}

function checkObjective(objective: string): string {
  const text = objective.trim();
  if (!text) {
    throw new HolonError("empty_objective", "the objective is empty", {
      status: 400,
      hint: "say in one short sentence what this work item is meant to achieve",
      details: { field: "objective" },
    });
  }
  if (text.length > WORK_LIMITS.objective_chars) {
    throw invalid(
      "objective",
      `the objective is longer than ${WORK_LIMITS.objective_chars} characters`,
      "keep the objective short; put detail in the plan file",
    );
  }
  return text;
}

function checkBlocker(text: string): string {
  const t = text.trim();
  if (!t) {
    throw new HolonError("empty_blocker", "blocked_by is empty", {
      status: 400,
      hint: "say what the item waits for, or pass blocked_by: null to clear the blocker",
      details: { field: "blocked_by" },
    });
  }
  if (t.length > WORK_LIMITS.blocker_chars) {
    throw invalid(
      "blocked_by",
      `blocked_by is longer than ${WORK_LIMITS.blocker_chars} characters`,
    );
  }
  return t;
}

function checkTodos(todos: TodoItem[]): TodoItem[] {
  if (todos.length > WORK_LIMITS.todo_items) {
    throw invalid("todo_list", `a todo list holds at most ${WORK_LIMITS.todo_items} items`);
  }
  const out: TodoItem[] = [];
  for (const t of todos) {
    const text = t.text.trim();
    if (!text) throw invalid("todo_list", "a todo item's text is empty");
    if (text.length > WORK_LIMITS.todo_text_chars) {
      throw invalid(
        "todo_list",
        `a todo item is longer than ${WORK_LIMITS.todo_text_chars} characters`,
      );
    }
    out.push({ text, state: t.state });
  }
  return out;
}

/** Progress in a todo list: some item's state changed (matched by text), or one was added done. */
function todoStatesChanged(before: TodoItem[], after: TodoItem[]): boolean {
  const prior = new Map(before.map((t) => [t.text, t.state]));
  return after.some((t) => {
    const was = prior.get(t.text);
    return was === undefined ? t.state !== "pending" : was !== t.state;
  });
}

function clip(text: string, n: number): string {
  return text.length > n ? text.slice(0, n) + "…" : text;
}
