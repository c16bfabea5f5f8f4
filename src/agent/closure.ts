// Closure derivation and continuation resolution: pure functions over runtime facts.
// The loop gathers the facts (turn outcome, pending deadline, live tasks, queue depth; later
// work items and waiting intents) and stores the results with the agent record in the same
// transaction as the state change they explain. Precedence follows the scheduler contract:
// failure, operator wait, blocking tasks, external waits, timers, runnable work, completion.
import type {
  ClosureDecision,
  ContinuationResolution,
  TurnOutcome,
  WaitingReason,
  WorkSignal,
} from "../domain/closure.ts";
import type { QueuedMessage } from "../domain/message.ts";
import { isExternalWakeHint } from "../domain/waiting.ts";

export type ClosureFacts = {
  /** The closure before this turn and how the turn's trigger related to it. */
  prior: ClosureDecision | undefined;
  continuation: ContinuationResolution | undefined;
  /** The agent's pending sleep deadline, if one is armed. */
  sleep_wake_at: string | undefined;
  /** Live tasks whose terminal result re-enters this agent's queue. */
  reentry_task_ids: string[];
  /** Messages still queued for the agent after this one. */
  pending_messages: number;
  /** Runnable work (the work plane fills this in). */
  work_signal: WorkSignal | undefined;
  /** Why the agent waits for the operator, when a plane says it does (a needs-input item). */
  operator_wait?: string | undefined;
  /** Outside conditions the agent waits on (waiting intents, trigger subscriptions). */
  external_waits?: string[] | undefined;
  now: string;
  run_id?: string | undefined;
  message_id?: string | undefined;
};

/** What the planes contribute to a closure (RunObserver.closureFacts). */
export type PlaneFacts = Pick<
  Partial<ClosureFacts>,
  "work_signal" | "operator_wait" | "external_waits"
>;

/** Combine the planes' facts: the first work signal and operator wait win; waits add up. */
export function mergePlaneFacts(parts: PlaneFacts[]): Required<PlaneFacts> {
  const out: Required<PlaneFacts> = {
    work_signal: undefined,
    operator_wait: undefined,
    external_waits: [],
  };
  for (const p of parts) {
    out.work_signal ??= p.work_signal;
    out.operator_wait ??= p.operator_wait;
    if (p.external_waits) out.external_waits = [...(out.external_waits ?? []), ...p.external_waits];
  }
  return out;
}

export function deriveClosure(outcome: TurnOutcome, facts: ClosureFacts): ClosureDecision {
  const evidence: string[] = [];
  const decide = (
    d: Pick<ClosureDecision, "outcome" | "waiting_reason" | "work_signal">,
  ): ClosureDecision => {
    const awake = facts.pending_messages > 0 || d.outcome === "continuable";
    const out: ClosureDecision = {
      outcome: d.outcome,
      runtime_posture: awake ? "awake" : "sleeping",
      evidence,
      decided_at: facts.now,
    };
    if (d.waiting_reason) out.waiting_reason = d.waiting_reason;
    if (d.work_signal) out.work_signal = d.work_signal;
    if (facts.run_id) out.run_id = facts.run_id;
    if (facts.message_id) out.message_id = facts.message_id;
    if (facts.pending_messages > 0) evidence.push(`queued_messages:${facts.pending_messages}`);
    return out;
  };
  const waiting = (reason: WaitingReason) => decide({ outcome: "waiting", waiting_reason: reason });

  // 1. terminal runtime failure
  if (outcome.kind === "failed") {
    evidence.push(`turn_failed:${outcome.summary.slice(0, 200)}`);
    return decide({ outcome: "failed" });
  }
  if (outcome.kind === "aborted") {
    evidence.push(`turn_aborted:${outcome.reason}`);
    return decide({ outcome: "failed" });
  }

  // A wait the prior closure declared survives a trigger that neither satisfied nor
  // overrode it, as long as its facts still hold.
  const carried = carriedWait(facts);

  // 2. explicit operator wait
  if (facts.operator_wait && outcome.kind !== "liveness_only") {
    evidence.push(`operator_wait:${facts.operator_wait}`);
    return waiting("awaiting_operator_input");
  }
  // A turn that ended on an ask about one work item leaves the agent free for other
  // runnable items; only when none is left does it wait for the operator.
  const itemAsk =
    outcome.kind === "await_operator" && outcome.scope === "work_item" && facts.work_signal;
  if ((outcome.kind === "await_operator" && !itemAsk) || carried === "awaiting_operator_input") {
    evidence.push(
      outcome.kind === "await_operator"
        ? `await_operator:${outcome.detail}`
        : "prior_wait:operator",
    );
    return waiting("awaiting_operator_input");
  }
  // 3. blocking tasks: an explicit wait on tasks, or resting while re-entering tasks run
  const resting = outcome.kind === "rest" || outcome.kind === "sleep_until";
  if (
    outcome.kind === "await_tasks" ||
    (resting && facts.reentry_task_ids.length > 0) ||
    carried === "awaiting_task_result"
  ) {
    const ids = outcome.kind === "await_tasks" ? outcome.task_ids : facts.reentry_task_ids;
    for (const id of ids) evidence.push(`task_running:${id}`);
    return waiting("awaiting_task_result");
  }
  // 4. external waits
  if (facts.external_waits?.length) {
    for (const w of facts.external_waits) evidence.push(`external_wait:${w}`);
    return waiting("awaiting_external_change");
  }
  if (outcome.kind === "await_external" || carried === "awaiting_external_change") {
    evidence.push(
      outcome.kind === "await_external"
        ? `await_external:${outcome.detail}`
        : "prior_wait:external",
    );
    return waiting("awaiting_external_change");
  }
  // 5. timers: this turn's sleep deadline, a provider's "not before", or one still armed
  if (outcome.kind === "retry_at") {
    evidence.push(`retry_at:${outcome.retry_at}`, `retry_reason:${outcome.reason}`);
    return waiting("awaiting_timer");
  }
  if (outcome.kind === "sleep_until") {
    evidence.push(`sleep_until:${outcome.wake_at}`);
    return waiting("awaiting_timer");
  }
  if (carried === "awaiting_timer" && facts.sleep_wake_at) {
    evidence.push(`sleep_until:${facts.sleep_wake_at}`);
    return waiting("awaiting_timer");
  }
  // 6. runnable work: only a turn that settled is continued by work state alone; an
  // explicit rest, a sleep, any wait or a failure is not re-activated.
  if (facts.work_signal && (outcome.kind === "settled" || itemAsk)) {
    evidence.push(`work_item:${facts.work_signal.work_item_id}`);
    return decide({ outcome: "continuable", work_signal: facts.work_signal });
  }
  // 7. completion: only from an observed terminal turn (or a trigger that needed none)
  if (outcome.kind === "rest") evidence.push("sleep_requested");
  if (outcome.kind === "liveness_only") evidence.push("liveness_only");
  else evidence.push("turn_completed");
  return decide({ outcome: "completed" });
}

function carriedWait(facts: ClosureFacts): WaitingReason | undefined {
  const prior = facts.prior;
  if (prior?.outcome !== "waiting" || !prior.waiting_reason) return undefined;
  const cls = facts.continuation?.class;
  if (cls === "resume_expected_wait" || cls === "resume_override") return undefined;
  switch (prior.waiting_reason) {
    case "awaiting_task_result":
      return facts.reentry_task_ids.length > 0 ? prior.waiting_reason : undefined;
    case "awaiting_timer":
      return facts.sleep_wake_at ? prior.waiting_reason : undefined;
    case "awaiting_operator_input":
      // Held by an ask (a plane says so); once it is decided or withdrawn the wait is over.
      return facts.operator_wait ? prior.waiting_reason : undefined;
    default:
      return prior.waiting_reason;
  }
}

/** Whether a message can change anything the model should see. */
export type Visibility = { model_visible: boolean; why: string };

/**
 * Resolve what a dequeued trigger means against the closure that stood before it. The
 * caller says whether the message carries content for the model (a task status, or a task
 * result that did not ask for re-entry, does not).
 */
export function resolveContinuation(
  message: QueuedMessage,
  prior: ClosureDecision | undefined,
  visibility: Visibility,
  now: string,
): ContinuationResolution {
  const priorOutcome = prior?.outcome ?? "completed";
  const priorReason = prior?.outcome === "waiting" ? prior.waiting_reason : undefined;
  const trigger = message.trigger_kind;
  const evidence = [`trigger:${message.kind}`];
  if (!prior) evidence.push("no_prior_closure");
  if (priorReason) evidence.push(`prior_wait:${priorReason}`);

  const satisfies: Record<WaitingReason, boolean> = {
    // A supervised child's operator is its parent: supervisor input answers its question.
    awaiting_operator_input:
      trigger === "operator_input" ||
      (message.kind === "internal_followup" && message.metadata?.supervisor_input === true),
    awaiting_task_result: trigger === "task_result" && visibility.model_visible,
    awaiting_timer: trigger === "timer_fire" || (trigger === "system_tick" && isSleepWake(message)),
    awaiting_external_change:
      trigger === "external_event" ||
      (trigger === "system_tick" && visibility.model_visible && isExternalWakeHint(message)),
  };
  const matched = priorReason !== undefined && satisfies[priorReason];

  let cls: ContinuationResolution["class"];
  if (!visibility.model_visible) {
    cls = "liveness_only";
    evidence.push(visibility.why);
  } else if (matched) {
    cls = "resume_expected_wait";
  } else if (priorReason !== undefined && trigger === "operator_input") {
    // Operator input is the one default override of any wait.
    cls = "resume_override";
  } else {
    cls = "local_continuation";
  }
  // Why a trigger without content of its own reaches the model (a plain wake, runnable work).
  if (visibility.model_visible && visibility.why !== "contentful") evidence.push(visibility.why);
  const out: ContinuationResolution = {
    trigger_kind: trigger,
    class: cls,
    model_visible: visibility.model_visible,
    prior_closure_outcome: priorOutcome,
    matched_waiting_reason: matched,
    evidence,
    message_id: message.id,
    resolved_at: now,
  };
  if (priorReason) out.prior_waiting_reason = priorReason;
  return out;
}

function isSleepWake(message: QueuedMessage): boolean {
  return message.origin.kind === "system" && message.origin.subsystem === "sleep";
}
