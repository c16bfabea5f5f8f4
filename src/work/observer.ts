// The work plane's part in every run (agent/runtime.ts RunObserver): bind the run to the
// current item when it starts; at its end refresh the bound item's plan descriptor and
// commit its blocker state from runtime facts (never completion); tell the closure whether
// runnable work remains (`work_signal`) or the operator is needed (`operator_wait`); and
// when the closure is `continuable`, admit the runtime-owned tick that continues the work,
// unless the runaway guard says the agent has continued too long without progress.
import type { ClosureDecision, TurnOutcome, WorkSignal } from "../domain/closure.ts";
import { schedulingState, type WorkItemRecord } from "../domain/work-item.ts";
import { createBrief } from "../agent/briefs.ts";
import type { PlaneFacts } from "../agent/closure.ts";
import type { RunInfo, RunObserver } from "../agent/runtime.ts";
import type { Store } from "../store/db.ts";
import type { WorkService } from "./service.ts";

/** Consecutive self-continuations without progress before the guard stops them. */
export const DEFAULT_MAX_CONTINUATIONS = 20;

type Decision = { signal: WorkSignal | undefined; halted: WorkSignal | undefined };

export class WorkRunObserver implements RunObserver {
  private readonly store: Store;
  private readonly work: WorkService;
  private readonly maxContinuations: () => number;
  /** run id → the item the run was bound to at its start. */
  private readonly bound = new Map<string, string>();
  /** run id → what closureFacts decided, for onClosure (same transaction). */
  private readonly decided = new Map<string, Decision>();

  constructor(deps: { store: Store; work: WorkService; maxContinuations: () => number }) {
    this.store = deps.store;
    this.work = deps.work;
    this.maxContinuations = deps.maxContinuations;
  }

  beforeRun(run: RunInfo): void {
    if (run.message.kind === "operator_prompt") {
      this.work.noteProgress(run.agent_id, "operator_message");
    }
    const current = this.work.currentItem(run.agent_id);
    if (!current) return;
    this.bound.set(run.run_id, current.id);
    const state = this.store.workItems.agentState(run.agent_id);
    const runs = [...(state.bound_runs ?? []), { run_id: run.run_id, work_item_id: current.id }];
    this.store.workItems.putAgentState(run.agent_id, { ...state, bound_runs: runs.slice(-4) });
    this.store.appendEvent(run.agent_id, {
      type: "work_item_bound",
      provenance: { work_item_id: current.id, message_id: run.message.id },
      payload: { run_id: run.run_id, work_item_id: current.id },
    });
  }

  afterRun(run: RunInfo & { outcome: TurnOutcome }): void {
    const id = this.bound.get(run.run_id);
    this.bound.delete(run.run_id);
    if (!id) return;
    const outcome = run.outcome.kind;
    const skip = (reason: "not_a_model_turn" | "turn_did_not_finish" | "item_gone"): void => {
      this.store.appendEvent(run.agent_id, {
        type: "work_item_turn_end_commit_skipped",
        provenance: { work_item_id: id, message_id: run.message.id },
        payload: { run_id: run.run_id, work_item_id: id, turn_outcome: outcome, reason },
      });
    };
    const item = this.store.workItems.get(id);
    if (!item) return skip("item_gone");
    // Only a real model turn that reached its end commits anything: a liveness tick or a
    // turn that failed, was aborted or is to be retried leaves the item as it was.
    const turnEnd = modelTurnEnd(run.outcome);
    if (turnEnd === "not_a_model_turn" || turnEnd === "turn_did_not_finish") return skip(turnEnd);
    const payload: {
      run_id: string;
      work_item_id: string;
      turn_outcome: string;
      transition: "completed" | "blocked" | "open";
      runtime_blocker?: string;
    } = { run_id: run.run_id, work_item_id: id, turn_outcome: outcome, transition: "open" };
    if (item.state !== "open") {
      // Completed in the turn: only CompleteWorkItem (or the operator) does that.
      payload.transition = "completed";
    } else {
      this.work.refreshPlan(item);
      const fresh = this.store.workItems.get(id)!;
      const blocker = runtimeBlocker(run.outcome);
      if (blocker && fresh.blocked_by === undefined) {
        this.work.update(run.agent_id, id, { blocked_by: blocker }, "runtime");
        payload.runtime_blocker = blocker;
      }
      if (blocker || fresh.blocked_by !== undefined) payload.transition = "blocked";
    }
    this.store.appendEvent(run.agent_id, {
      type: "work_item_turn_end_committed",
      provenance: { work_item_id: id, message_id: run.message.id },
      payload,
    });
  }

  closureFacts(run: RunInfo & { outcome: TurnOutcome }): PlaneFacts {
    const decision: Decision = { signal: undefined, halted: undefined };
    // closureFacts and onClosure run in one synchronous transaction, so nothing older is
    // still needed (a run that ended in a stop never reaches onClosure).
    this.decided.clear();
    this.decided.set(run.run_id, decision);
    const agentId = run.agent_id;
    if (!this.store.workItems.hasAny(agentId)) return {};
    const facts: PlaneFacts = {};
    const current = this.work.currentItem(agentId);
    let signal: WorkSignal | undefined;
    if (current && schedulingState(current) === "runnable") {
      signal = {
        work_item_id: current.id,
        status: "active",
        reactivation_mode: "continue_active",
      };
    } else {
      if (current && schedulingState(current) === "waiting_operator") {
        facts.operator_wait = `work_item:${current.id}:needs_input`;
      }
      const queued = this.work.runnableQueued(agentId)[0];
      if (queued && !facts.operator_wait) {
        signal = {
          work_item_id: queued.id,
          status: "queued",
          reactivation_mode: "activate_queued",
        };
      }
    }
    if (!signal) return facts;
    const guard = this.store.workItems.agentState(agentId);
    if (guard.continuations_without_progress >= this.maxContinuations()) {
      decision.halted = signal;
      return facts;
    }
    decision.signal = signal;
    facts.work_signal = signal;
    return facts;
  }

  onClosure(run: RunInfo & { outcome: TurnOutcome; closure: ClosureDecision }): void {
    const decision = this.decided.get(run.run_id);
    this.decided.delete(run.run_id);
    if (decision?.halted && run.outcome.kind === "settled") this.halt(run, decision.halted);
    const signal = run.closure.work_signal;
    if (run.closure.outcome !== "continuable" || !signal) return;
    const item = this.store.workItems.get(signal.work_item_id);
    if (!item) return;
    this.work.admitTick(run.agent_id, signal.reactivation_mode, item);
  }

  /** The guard stops continuing: once per halt, an action_required brief says why. */
  private halt(run: RunInfo, signal: WorkSignal): void {
    const agentId = run.agent_id;
    const state = this.store.workItems.agentState(agentId);
    if (state.halted_at) return;
    const now = this.store.clock.now().toISOString();
    this.store.workItems.putAgentState(agentId, { ...state, halted_at: now });
    const item: WorkItemRecord | undefined = this.store.workItems.get(signal.work_item_id);
    const n = state.continuations_without_progress;
    this.store.appendEvent(agentId, {
      type: "work_activation",
      provenance: { work_item_id: signal.work_item_id },
      payload: {
        mode: signal.reactivation_mode,
        work_item_id: signal.work_item_id,
        disposition: "halted",
        continuations_without_progress: n,
      },
    });
    createBrief(this.store, {
      agent_id: agentId,
      kind: "action_required",
      text:
        `Stopped continuing work item ${signal.work_item_id}${item ? ` ("${item.objective}")` : ""}: ` +
        `the agent continued itself ${n} times in a row without progress (no todo changed state, ` +
        `the plan did not change, and no item was picked, blocked or completed). ` +
        `Send it a message, or block or close the item (holon work block|done ${agentId} ${signal.work_item_id}).`,
      related_message_id: run.message.id,
      work_item_id: signal.work_item_id,
    });
  }
}

/** Whether a run's outcome is the end of a real model turn (the only kind that commits). */
function modelTurnEnd(outcome: TurnOutcome): "ok" | "not_a_model_turn" | "turn_did_not_finish" {
  switch (outcome.kind) {
    case "settled":
    case "rest":
    case "sleep_until":
    case "await_tasks":
    case "await_external":
    case "await_operator":
      return "ok";
    case "liveness_only":
      return "not_a_model_turn";
    case "failed":
    case "aborted":
    case "retry_at":
      return "turn_did_not_finish";
  }
}

/** A blocker the runtime can state from the turn's outcome alone. */
function runtimeBlocker(outcome: TurnOutcome): string | undefined {
  switch (outcome.kind) {
    case "await_operator":
      return `waiting for the operator: ${outcome.detail}`;
    case "await_external":
      return `waiting for an external change: ${outcome.detail}`;
    default:
      return undefined;
  }
}
