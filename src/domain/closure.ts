// Closure and continuation: the runtime's own answer to "is this agent done, waiting, or
// failed, and why?" (ClosureDecision), and "what does this new trigger mean given that
// answer?" (ContinuationResolution). Derived from runtime facts, never from prose; both
// are stored with the agent and surfaced on /state, `holon status` and as events.
import { z } from "zod";
import { ContinuationTriggerKind } from "./message.ts";

export const ClosureOutcome = z.enum(["completed", "continuable", "failed", "waiting"]);
export type ClosureOutcome = z.infer<typeof ClosureOutcome>;

export const WaitingReason = z.enum([
  "awaiting_operator_input",
  "awaiting_external_change",
  "awaiting_task_result",
  "awaiting_timer",
]);
export type WaitingReason = z.infer<typeof WaitingReason>;

export const WorkSignal = z.object({
  work_item_id: z.string(),
  status: z.enum(["active", "queued"]),
  reactivation_mode: z.enum(["continue_active", "activate_queued"]),
});
export type WorkSignal = z.infer<typeof WorkSignal>;

export const RuntimePosture = z.enum(["awake", "sleeping"]);
export type RuntimePosture = z.infer<typeof RuntimePosture>;

/**
 * Invariants (enforced by the schema): `waiting_reason` only with `waiting`,
 * `work_signal` only with `continuable`.
 */
export const ClosureDecision = z
  .object({
    outcome: ClosureOutcome,
    waiting_reason: WaitingReason.optional(),
    work_signal: WorkSignal.optional(),
    runtime_posture: RuntimePosture,
    evidence: z.array(z.string()),
    decided_at: z.string(),
    run_id: z.string().optional(),
    message_id: z.string().optional(),
  })
  .refine((c) => (c.waiting_reason !== undefined) === (c.outcome === "waiting"), {
    message: "waiting_reason is present exactly when the outcome is waiting",
  })
  .refine((c) => c.work_signal === undefined || c.outcome === "continuable", {
    message: "work_signal is present only when the outcome is continuable",
  });
export type ClosureDecision = z.infer<typeof ClosureDecision>;

export const ContinuationClass = z.enum([
  "resume_expected_wait",
  "resume_override",
  "local_continuation",
  "liveness_only",
]);
export type ContinuationClass = z.infer<typeof ContinuationClass>;

export const ContinuationResolution = z.object({
  trigger_kind: ContinuationTriggerKind,
  class: ContinuationClass,
  model_visible: z.boolean(),
  prior_closure_outcome: ClosureOutcome,
  prior_waiting_reason: WaitingReason.optional(),
  matched_waiting_reason: z.boolean(),
  evidence: z.array(z.string()),
  message_id: z.string(),
  resolved_at: z.string(),
});
export type ContinuationResolution = z.infer<typeof ContinuationResolution>;

/**
 * What one turn says happens next, as data. The loop hands it to agent/closure.ts; a
 * deadline it names is armed by the waiting plane, never by the turn itself.
 */
export type TurnOutcome =
  /** The model finished with its answer. */
  | { kind: "settled" }
  /** An explicit Sleep without a deadline: rest until something arrives. */
  | { kind: "rest" }
  /** An explicit Sleep with a deadline. */
  | { kind: "sleep_until"; wake_at: string; duration_ms: number }
  /**
   * The provider asked every model to wait longer than Holon waits in place (rate limits):
   * the turn ends unfinished and its message is admitted again at `retry_at`, from the start.
   */
  | { kind: "retry_at"; retry_at: string; reason: string }
  /** Rest until these tasks report back. */
  | { kind: "await_tasks"; task_ids: string[] }
  /** Rest until something outside changes (a waiting intent or trigger). */
  | { kind: "await_external"; detail: string }
  /**
   * Rest until the operator answers: an ask (src/asks/) holds the agent (`scope: agent`) or
   * only a work item (`scope: work_item`, other runnable items may still be worked on).
   * `cause: max_turns` is a turn bound to a work item that reached its round limit: the
   * work plane opens the item's ask.
   */
  | {
      kind: "await_operator";
      detail: string;
      ask_id?: string | undefined;
      scope?: "agent" | "work_item" | undefined;
      cause?: "max_turns" | undefined;
      rounds?: number | undefined;
    }
  | { kind: "failed"; summary: string }
  /** Aborted by the operator, a stop, or shutdown (shutdown leaves the message interrupted). */
  | { kind: "aborted"; reason: string }
  /** A trigger that needed no model turn (observational task status, liveness tick). */
  | { kind: "liveness_only" };
