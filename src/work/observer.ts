// The work plane's part in every run (agent/runtime.ts RunObserver): bind the run to the
// current item when it starts; at its end refresh the bound item's plan descriptor and
// commit its blocker state from runtime facts (never completion); tell the closure whether
// runnable work remains (`work_signal`) or the operator is needed (`operator_wait`); and
// when the closure is `continuable`, admit the runtime-owned tick that continues the work.
// Asks (src/asks/) are how this plane waits on a person, always about one item: an item the
// agent left `needs_input` at a turn's end becomes an input ask with the turn's question;
// the runaway guard (too many self-continuations without progress) and a turn that hit its
// round limit halt the item with an input ask offering `continue N`, `block item` or
// `cancel item`. A held item is blocked; other runnable items still run. The halt lasts
// until the ask is answered: an ordinary prompt no longer restarts the loop.
import type { ClosureDecision, TurnOutcome, WorkSignal } from "../domain/closure.ts";
import { schedulingState, type WorkItemRecord } from "../domain/work-item.ts";
import type { PlaneFacts } from "../agent/closure.ts";
import type { RunInfo, RunObserver } from "../agent/runtime.ts";
import type { Store } from "../store/db.ts";
import type { AskService } from "../asks/service.ts";
import { RUNAWAY_OPTIONS } from "../domain/ask.ts";
import type { WorkService } from "./service.ts";

/** Consecutive self-continuations without progress before the guard stops them. */
export const DEFAULT_MAX_CONTINUATIONS = 20;

export class WorkRunObserver implements RunObserver {
  private readonly store: Store;
  private readonly work: WorkService;
  private readonly maxContinuations: () => number;
  /** run id → the item the run was bound to at its start. */
  private readonly bound = new Map<string, string>();
  private readonly asks: AskService | undefined;

  constructor(deps: {
    store: Store;
    work: WorkService;
    maxContinuations: () => number;
    asks?: AskService | undefined;
  }) {
    this.store = deps.store;
    this.work = deps.work;
    this.maxContinuations = deps.maxContinuations;
    this.asks = deps.asks;
  }

  async beforeRun(run: RunInfo): Promise<void> {
    // An operator message is progress, except the one carrying an ask's decision: a
    // `continue N` must not be turned into a fresh full allowance by its own message.
    if (run.message.kind === "operator_prompt" && run.message.metadata?.ask_id === undefined) {
      await this.work.noteProgress(run.agent_id, "operator_message");
    }
    const current = await this.work.currentItem(run.agent_id);
    if (!current) return;
    this.bound.set(run.run_id, current.id);
    const state = await this.store.workItems.agentState(run.agent_id);
    const runs = [...(state.bound_runs ?? []), { run_id: run.run_id, work_item_id: current.id }];
    await this.store.workItems.putAgentState(run.agent_id, {
      ...state,
      bound_runs: runs.slice(-4),
    });
    await this.store.appendEvent(run.agent_id, {
      type: "work_item_bound",
      provenance: { work_item_id: current.id, message_id: run.message.id },
      payload: { run_id: run.run_id, work_item_id: current.id },
    });
  }

  async afterRun(run: RunInfo & { outcome: TurnOutcome }): Promise<void> {
    const id = this.bound.get(run.run_id);
    this.bound.delete(run.run_id);
    if (id) await this.commitTurnEnd(run, id);
    await this.askForInput(run, id);
  }

  private async commitTurnEnd(run: RunInfo & { outcome: TurnOutcome }, id: string): Promise<void> {
    const outcome = run.outcome.kind;
    const skip = async (
      reason: "not_a_model_turn" | "turn_did_not_finish" | "item_gone",
    ): Promise<void> => {
      await this.store.appendEvent(run.agent_id, {
        type: "work_item_turn_end_commit_skipped",
        provenance: { work_item_id: id, message_id: run.message.id },
        payload: { run_id: run.run_id, work_item_id: id, turn_outcome: outcome, reason },
      });
    };
    const item = await this.store.workItems.get(id);
    if (!item) return await skip("item_gone");
    // A turn that hit its round limit on this item halts it with an ask.
    if (run.outcome.kind === "await_operator" && run.outcome.cause === "max_turns") {
      await this.haltWithAsk(run, item, "max_turns", run.outcome.rounds ?? 0);
    }
    // Only a real model turn that reached its end commits anything: a liveness tick or a
    // turn that failed, was aborted or is to be retried leaves the item as it was.
    const turnEnd = modelTurnEnd(run.outcome);
    if (turnEnd === "not_a_model_turn" || turnEnd === "turn_did_not_finish")
      return await skip(turnEnd);
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
      await this.work.refreshPlan(item);
      const fresh = (await this.store.workItems.get(id))!;
      const blocker = runtimeBlocker(run.outcome);
      if (blocker && fresh.blocked_by === undefined) {
        await this.work.update(run.agent_id, id, { blocked_by: blocker }, "runtime");
        payload.runtime_blocker = blocker;
      }
      if (blocker || fresh.blocked_by !== undefined) payload.transition = "blocked";
    }
    await this.store.appendEvent(run.agent_id, {
      type: "work_item_turn_end_committed",
      provenance: { work_item_id: id, message_id: run.message.id },
      payload,
    });
  }

  /**
   * The `needs_input` path: an open item (the run's or the current one) left needing input
   * at the end of a model turn becomes an input ask, its question the turn's last text.
   */
  private async askForInput(
    run: RunInfo & { outcome: TurnOutcome },
    boundId: string | undefined,
  ): Promise<void> {
    if (!this.asks || modelTurnEnd(run.outcome) !== "ok") return;
    const ids = new Set<string>();
    if (boundId) ids.add(boundId);
    const current = (await this.store.agents.get(run.agent_id))?.current_work_item_id;
    if (current) ids.add(current);
    let question: string | undefined;
    for (const id of ids) {
      const item = await this.store.workItems.get(id);
      if (!item || item.state !== "open" || item.plan_status !== "needs_input") continue;
      if ((await this.asks.holdingItem(id)).length > 0) continue;
      question ??= await lastAssistantText(this.store, run.agent_id, run.run_id);
      await this.asks.open({
        agent_id: run.agent_id,
        kind: "input",
        source: "needs_input",
        scope: "work_item",
        work_item_id: id,
        about: `Question on work item ${id}: ${clip(item.objective, 200)}`,
        detail:
          question ||
          `The agent marked work item ${id} ("${item.objective}") as needing input without writing a question.`,
        free_text: true,
      });
    }
  }

  /** Halt an item with a runaway ask (guard or round limit), once. */
  private async haltWithAsk(
    run: RunInfo,
    item: WorkItemRecord,
    source: "runaway_guard" | "max_turns",
    n: number,
  ): Promise<boolean> {
    if (!this.asks || item.state !== "open") return false;
    if ((await this.asks.holdingItem(item.id)).length > 0) return false;
    const what =
      source === "runaway_guard"
        ? `the agent continued itself ${n} times in a row without progress (no todo changed state, the plan did not change, and no item was picked, blocked or completed)`
        : `a turn on it reached its limit of ${n} model rounds without finishing`;
    await this.asks.open({
      agent_id: run.agent_id,
      kind: "input",
      source,
      scope: "work_item",
      work_item_id: item.id,
      about: `Halted work item ${item.id}: ${source === "runaway_guard" ? `${n} continuations without progress` : `${n} model rounds in one turn`}`,
      detail:
        `Stopped working on ${item.id} ("${clip(item.objective, 300)}"): ${what}. ` +
        `It stays halted, across prompts and restarts, until you answer: ` +
        `"continue N" lets it go on for N more self-continuations, "block item" parks it, ` +
        `"cancel item" closes it. The agent may work on its other items meanwhile.`,
      options: [...RUNAWAY_OPTIONS],
      free_text: false,
      details: { continuations_without_progress: n, run_id: run.run_id },
    });
    return true;
  }

  async closureFacts(run: RunInfo & { outcome: TurnOutcome }): Promise<PlaneFacts> {
    const agentId = run.agent_id;
    if (!(await this.store.workItems.hasAny(agentId))) return {};
    const facts: PlaneFacts = {};
    let signal = await this.signal(agentId);
    const guard = await this.store.workItems.agentState(agentId);
    const limit = guard.allowance ?? this.maxContinuations();
    if (signal && guard.continuations_without_progress >= limit) {
      // Only a settled turn would have continued: that is where the guard halts the item
      // with an ask (then the agent may still go on with another runnable item).
      const item = await this.store.workItems.get(signal.work_item_id);
      if (
        run.outcome.kind === "settled" &&
        item &&
        (await this.haltWithAsk(run, item, "runaway_guard", guard.continuations_without_progress))
      ) {
        await this.recordHalt(run, signal, guard.continuations_without_progress);
        signal = await this.signal(agentId);
      } else {
        signal = undefined;
      }
    }
    if (!signal) {
      // Nothing runnable: the agent waits for the operator when an ask holds one of its
      // items (or an item still needs input).
      const held = (await this.asks?.pendingFor(agentId))?.[0];
      const current = await this.work.currentItem(agentId);
      if (held) facts.operator_wait = `ask:${held.id}`;
      else if (current && schedulingState(current) === "waiting_operator") {
        facts.operator_wait = `work_item:${current.id}:needs_input`;
      }
      return facts;
    }
    facts.work_signal = signal;
    return facts;
  }

  /** The runnable work that would continue next: the current item, else the oldest queued. */
  private async signal(agentId: string): Promise<WorkSignal | undefined> {
    const current = await this.work.currentItem(agentId);
    if (current && schedulingState(current) === "runnable") {
      return { work_item_id: current.id, status: "active", reactivation_mode: "continue_active" };
    }
    const queued = (await this.work.runnableQueued(agentId))[0];
    if (!queued) return undefined;
    return { work_item_id: queued.id, status: "queued", reactivation_mode: "activate_queued" };
  }

  async onClosure(
    run: RunInfo & { outcome: TurnOutcome; closure: ClosureDecision },
  ): Promise<void> {
    const signal = run.closure.work_signal;
    if (run.closure.outcome !== "continuable" || !signal) return;
    const item = await this.store.workItems.get(signal.work_item_id);
    if (!item) return;
    await this.work.admitTick(run.agent_id, signal.reactivation_mode, item);
  }

  /** The guard halted an item: its event, and a fresh count for the agent's other items. */
  private async recordHalt(run: RunInfo, signal: WorkSignal, n: number): Promise<void> {
    const agentId = run.agent_id;
    const state = await this.store.workItems.agentState(agentId);
    const { allowance: _spent, ...rest } = state;
    await this.store.workItems.putAgentState(agentId, {
      ...rest,
      continuations_without_progress: 0,
      halted_at: this.store.clock.now().toISOString(),
    });
    await this.store.appendEvent(agentId, {
      type: "work_activation",
      provenance: { work_item_id: signal.work_item_id, message_id: run.message.id },
      payload: {
        mode: signal.reactivation_mode,
        work_item_id: signal.work_item_id,
        disposition: "halted",
        continuations_without_progress: n,
      },
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
      // A wait on an ask is held by the ask itself (work/asks.ts), or holds the whole agent.
      if (outcome.scope !== undefined) return undefined;
      return `waiting for the operator: ${outcome.detail}`;
    case "await_external":
      return `waiting for an external change: ${outcome.detail}`;
    default:
      return undefined;
  }
}

/** The last non-empty assistant text of a run (the question a needs-input turn ends on). */
async function lastAssistantText(store: Store, agentId: string, runId: string): Promise<string> {
  const rounds = (await store.transcript.forRun(agentId, runId)).filter(
    (e) => e.kind === "assistant_round",
  );
  for (let i = rounds.length - 1; i >= 0; i--) {
    const text = rounds[i]!.data.text;
    if (typeof text === "string" && text.trim()) return text.trim();
  }
  return "";
}

function clip(text: string, n: number): string {
  return text.length > n ? text.slice(0, n) + "…" : text;
}
