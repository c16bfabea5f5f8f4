// The waiting plane's records: timers (one-shot, interval, cron with a time zone), wake
// hints (a pure "something changed" signal, coalesced on the agent until it can become one
// SystemTick) and external trigger capabilities (an agent's secret wake URL). Wire names
// are snake_case, as the spec shows them.
import { z } from "zod";
import {
  AdmissionContext,
  MessageDeliverySurface,
  MessageOrigin,
  type MessageEnvelope,
} from "./message.ts";

export const TimerKind = z.enum(["one_shot", "interval", "cron"]);
export type TimerKind = z.infer<typeof TimerKind>;

/** `completed`: a one-shot timer that fired (or was skipped); recurring timers stay active. */
export const TimerStatus = z.enum(["active", "completed", "cancelled"]);
export type TimerStatus = z.infer<typeof TimerStatus>;

export const TimerRecord = z.object({
  timer_id: z.string(),
  agent_id: z.string(),
  kind: TimerKind,
  status: TimerStatus,
  /** What the agent receives as the tick's content. */
  summary: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  /** Who asked for it (`operator` through the control plane). */
  created_by: z.string(),
  /** When it fires next; null once it will not fire again. */
  next_fire_at: z.string().nullable(),
  interval_ms: z.number().int().positive().optional(),
  cron: z.string().optional(),
  /** IANA time zone the cron expression is read in (default UTC). */
  tz: z.string().optional(),
  fire_count: z.number().int().nonnegative(),
  last_fired_at: z.string().optional(),
  /** The due time of the last fire (what it was scheduled for, before any catch-up). */
  last_scheduled_for: z.string().optional(),
  /** Periods missed while the host was down (or the agent stopped), fired as one. */
  skipped_count: z.number().int().nonnegative(),
  cancelled_at: z.string().optional(),
  cancel_reason: z.string().optional(),
});
export type TimerRecord = z.infer<typeof TimerRecord>;

/** A raw delivered body, kept as it came: UTF-8 text when it is text, base64 otherwise. */
export const HintBody = z.object({
  content_type: z.string(),
  encoding: z.enum(["utf8", "base64"]),
  data: z.string(),
  bytes: z.number().int().nonnegative(),
});
export type HintBody = z.infer<typeof HintBody>;

/** At most this many correlation ids are kept on a coalesced hint (the newest). */
export const MAX_HINT_CORRELATIONS = 20;

/**
 * A pending wake hint: the latest delivery's payload and provenance, how many deliveries
 * it stands for, and their correlation ids. It is not a message: it becomes one SystemTick
 * when the agent can take it.
 */
export const WakeHint = z.object({
  hint_id: z.string(),
  /** Who it came from: the operator (`holon agent wake`) or an external trigger. */
  source: z.enum(["operator", "external_trigger"]),
  origin: MessageOrigin,
  delivery_surface: MessageDeliverySurface,
  admission_context: AdmissionContext,
  reason: z.string().optional(),
  external_trigger_id: z.string().optional(),
  /** The trigger's own mode; the enqueue URL maps onto it (deprecated path). */
  delivery_mode: z.literal("wake_hint").optional(),
  /** Which callback path was used, when it was not the wake path. */
  requested_mode: z.enum(["wake", "enqueue"]).optional(),
  body: HintBody.optional(),
  count: z.number().int().positive(),
  correlation_ids: z.array(z.string()),
  first_received_at: z.string(),
  last_received_at: z.string(),
});
export type WakeHint = z.infer<typeof WakeHint>;

export const TriggerStatus = z.enum(["active", "revoked"]);
export type TriggerStatus = z.infer<typeof TriggerStatus>;

/**
 * An agent's external trigger capability. The token is kept (in the owner-only database)
 * so the URL can be shown again; it is looked up by its hash and compared in constant time.
 */
export const ExternalTriggerRecord = z.object({
  external_trigger_id: z.string(),
  agent_id: z.string(),
  delivery_mode: z.literal("wake_hint"),
  status: TriggerStatus,
  token: z.string(),
  token_hash: z.string(),
  created_at: z.string(),
  delivery_count: z.number().int().nonnegative(),
  last_delivery_at: z.string().optional(),
  revoked_at: z.string().optional(),
  revoke_reason: z.string().optional(),
  rotated_from: z.string().optional(),
});
export type ExternalTriggerRecord = z.infer<typeof ExternalTriggerRecord>;

/** What the spec calls the ExternalTriggerCapability, as surfaces show it. */
export const ExternalTriggerDescriptor = z.object({
  external_trigger_id: z.string(),
  /** Null when the host has no HTTP listener (an in-process `holon run`). */
  trigger_url: z.string().nullable(),
  target_agent_id: z.string(),
  delivery_mode: z.literal("wake_hint"),
  status: TriggerStatus,
  /** True when `trigger_url` hides the token. */
  redacted: z.boolean(),
  created_at: z.string(),
  delivery_count: z.number().int(),
  last_delivery_at: z.string().nullable(),
});
export type ExternalTriggerDescriptor = z.infer<typeof ExternalTriggerDescriptor>;

/** A pending wake hint as surfaces show it: the body previewed, not its full bytes. */
export const WakeHintView = WakeHint.omit({ body: true }).extend({
  body: z
    .object({
      content_type: z.string(),
      encoding: z.enum(["utf8", "base64"]),
      bytes: z.number().int(),
      preview: z.string(),
    })
    .nullable(),
});
export type WakeHintView = z.infer<typeof WakeHintView>;

/** The waiting block of `/status` and `/state`. */
export const WaitingSummary = z.object({
  waiting_reason: z
    .enum([
      "awaiting_operator_input",
      "awaiting_external_change",
      "awaiting_task_result",
      "awaiting_timer",
    ])
    .nullable(),
  sleep_wake_at: z.string().nullable(),
  timers: z.object({
    active: z.number().int(),
    next_fire_at: z.string().nullable(),
    next_timer_id: z.string().nullable(),
  }),
  pending_wake_hint: WakeHintView.nullable(),
  external_trigger: ExternalTriggerDescriptor.nullable(),
});
export type WaitingSummary = z.infer<typeof WaitingSummary>;

/** One thing the agent waits on, derived from closure, sleep, timers and the pending hint. */
export const WaitingIntentView = z.object({
  kind: z.enum(["closure_wait", "sleep_wake", "timer", "pending_wake_hint"]),
  waiting_reason: z.string().optional(),
  evidence: z.array(z.string()).optional(),
  since: z.string().optional(),
  due_at: z.string().nullable().optional(),
  timer_id: z.string().optional(),
  summary: z.string().optional(),
  hint_id: z.string().optional(),
  source: z.string().optional(),
  count: z.number().int().optional(),
});
export type WaitingIntentView = z.infer<typeof WaitingIntentView>;

/** The wake hint a SystemTick was converted from, if it was. */
export function wakeHintOf(message: MessageEnvelope): WakeHint | undefined {
  if (message.kind !== "system_tick") return undefined;
  const parsed = WakeHint.safeParse(message.metadata?.wake_hint);
  return parsed.success ? parsed.data : undefined;
}

/** A plain wake: a SystemTick from a wake hint that delivered no payload (liveness only). */
export function isBodylessWakeHint(message: MessageEnvelope): boolean {
  const hint = wakeHintOf(message);
  return hint !== undefined && hint.body === undefined;
}

/** A SystemTick carrying an external trigger's delivery (it answers an external wait). */
export function isExternalWakeHint(message: MessageEnvelope): boolean {
  return wakeHintOf(message)?.source === "external_trigger";
}
