// The message envelope: every input that can affect an agent, normalized with its provenance.
import { z } from "zod";

export const MessageKind = z.enum([
  "operator_prompt",
  "channel_event",
  "webhook_event",
  "callback_event",
  "timer_tick",
  "system_tick",
  "task_result",
  "task_status",
  "control",
  "brief_ack",
  "brief_result",
  "internal_followup",
]);
export type MessageKind = z.infer<typeof MessageKind>;

/** Kinds only the runtime itself may produce. */
export const RUNTIME_OWNED_KINDS: ReadonlySet<MessageKind> = new Set([
  "system_tick",
  "task_result",
  "task_status",
  "control",
  "internal_followup",
]);

export const MessageOrigin = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("operator"), actor_id: z.string().optional() }),
  z.strictObject({
    kind: z.literal("channel"),
    channel_id: z.string().min(1),
    sender_id: z.string().optional(),
  }),
  z.strictObject({
    kind: z.literal("webhook"),
    source: z.string().min(1),
    event_type: z.string().optional(),
  }),
  z.strictObject({
    kind: z.literal("callback"),
    descriptor_id: z.string().min(1),
    source: z.string().optional(),
  }),
  z.strictObject({ kind: z.literal("timer"), timer_id: z.string().min(1) }),
  z.strictObject({ kind: z.literal("system"), subsystem: z.string().min(1) }),
  z.strictObject({ kind: z.literal("task"), task_id: z.string().min(1) }),
]);
export type MessageOrigin = z.infer<typeof MessageOrigin>;

export const TrustLevel = z.enum([
  "trusted_operator",
  "trusted_system",
  "trusted_integration",
  "untrusted_external",
]);
export type TrustLevel = z.infer<typeof TrustLevel>;

export const AuthorityClass = z.enum([
  "operator_instruction",
  "runtime_instruction",
  "integration_signal",
  "external_evidence",
]);
export type AuthorityClass = z.infer<typeof AuthorityClass>;

export const Priority = z.enum(["interject", "next", "normal", "background"]);
export type Priority = z.infer<typeof Priority>;

/** Lower rank is dequeued first. */
export const PRIORITY_RANK: Record<Priority, number> = {
  interject: 0,
  next: 1,
  normal: 2,
  background: 3,
};

export const BriefAttachment = z.strictObject({
  kind: z.enum(["file", "log", "diff", "image", "json"]),
  name: z.string(),
  uri: z.string().optional(),
  value: z.unknown().optional(),
});
export type BriefAttachment = z.infer<typeof BriefAttachment>;

export const MessageBody = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text"), text: z.string() }),
  z.strictObject({ type: z.literal("json"), value: z.unknown() }),
  z.strictObject({
    type: z.literal("brief"),
    title: z.string().optional(),
    text: z.string(),
    attachments: z.array(BriefAttachment).optional(),
  }),
]);
export type MessageBody = z.infer<typeof MessageBody>;

export const MessageDeliverySurface = z.enum([
  "cli_prompt",
  "run_once",
  "http_public_enqueue",
  "http_webhook",
  "http_callback_enqueue",
  "http_callback_wake",
  "http_control_prompt",
  "web_console",
  "remote_operator_transport",
  /** `holon mcp serve` or the host's `/mcp` route: an MCP client (Claude Code, Codex, …). */
  "mcp_server",
  "timer_scheduler",
  "runtime_system",
  "task_rejoin",
]);
export type MessageDeliverySurface = z.infer<typeof MessageDeliverySurface>;

export const AdmissionContext = z.enum([
  "public_unauthenticated",
  "control_authenticated",
  "external_trigger_capability",
  "operator_transport_authenticated",
  "local_process",
  "runtime_owned",
]);
export type AdmissionContext = z.infer<typeof AdmissionContext>;

export const ContinuationTriggerKind = z.enum([
  "operator_input",
  "task_result",
  "external_event",
  "timer_fire",
  "internal_followup",
  "system_tick",
]);
export type ContinuationTriggerKind = z.infer<typeof ContinuationTriggerKind>;

/** Where a queued message is in its life. Processed messages stay for audit. */
export const MessageStatus = z.enum([
  "queued",
  "processing",
  "processed",
  "aborted",
  "interrupted",
  "interjected",
]);
export type MessageStatus = z.infer<typeof MessageStatus>;

export const MessageEnvelope = z.strictObject({
  id: z.string(),
  agent_id: z.string(),
  created_at: z.string(),
  kind: MessageKind,
  origin: MessageOrigin,
  trust: TrustLevel,
  authority_class: AuthorityClass,
  priority: Priority,
  trigger_kind: ContinuationTriggerKind,
  work_item_id: z.string().optional(),
  task_id: z.string().optional(),
  source_refs: z.record(z.string(), z.string()).optional(),
  body: MessageBody,
  metadata: z.record(z.string(), z.unknown()).optional(),
  delivery_surface: MessageDeliverySurface.optional(),
  admission_context: AdmissionContext.optional(),
  correlation_id: z.string().optional(),
  causation_id: z.string().optional(),
});
export type MessageEnvelope = z.infer<typeof MessageEnvelope>;

/** A message as stored in the queue: the envelope plus its queue position and state. */
export type QueuedMessage = MessageEnvelope & {
  seq: number;
  status: MessageStatus;
  processed_at?: string;
};

export function triggerKindFor(kind: MessageKind): ContinuationTriggerKind {
  switch (kind) {
    case "operator_prompt":
      return "operator_input";
    case "task_result":
    case "task_status":
      return "task_result";
    case "timer_tick":
      return "timer_fire";
    case "system_tick":
    case "control":
      return "system_tick";
    case "internal_followup":
      return "internal_followup";
    case "channel_event":
    case "webhook_event":
    case "callback_event":
    case "brief_ack":
    case "brief_result":
      return "external_event";
  }
}

/**
 * The trust an origin gets when nobody may choose it. A webhook or callback counts as an
 * integration only when something proved who sent it (a token, a capability, a signature);
 * one that arrived unauthenticated on a public route is external evidence, nothing more.
 */
export function defaultTrustFor(origin: MessageOrigin, admission?: AdmissionContext): TrustLevel {
  if (admission === "public_unauthenticated" && origin.kind !== "channel") {
    return "untrusted_external";
  }
  switch (origin.kind) {
    case "operator":
      return "trusted_operator";
    case "system":
    case "task":
    case "timer":
      return "trusted_system";
    case "callback":
    case "webhook":
      return "trusted_integration";
    case "channel":
      return "untrusted_external";
  }
}

export function authorityForTrust(trust: TrustLevel): AuthorityClass {
  switch (trust) {
    case "trusted_operator":
      return "operator_instruction";
    case "trusted_system":
      return "runtime_instruction";
    case "trusted_integration":
      return "integration_signal";
    case "untrusted_external":
      return "external_evidence";
  }
}

/** Plain text view of a body, for prompts and previews. */
export function bodyText(body: MessageBody): string {
  switch (body.type) {
    case "text":
      return body.text;
    case "json":
      return JSON.stringify(body.value);
    case "brief":
      return body.title ? `${body.title}\n\n${body.text}` : body.text;
  }
}
