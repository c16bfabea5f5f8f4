// The audit event envelope. Every state change appends one, in the same transaction.
import { z } from "zod";
import {
  AdmissionContext,
  AuthorityClass,
  MessageDeliverySurface,
  MessageOrigin,
  TrustLevel,
} from "./message.ts";

/** Provenance carried beside the payload so replay clients can index events. */
export const EventProvenance = z.object({
  origin: MessageOrigin.optional(),
  trust: TrustLevel.optional(),
  authority_class: AuthorityClass.optional(),
  delivery_surface: MessageDeliverySurface.optional(),
  admission_context: AdmissionContext.optional(),
  source: z.string().optional(),
  reply_route: z.string().optional(),
  message_id: z.string().optional(),
  task_id: z.string().optional(),
  work_item_id: z.string().optional(),
  correlation_id: z.string().optional(),
  causation_id: z.string().optional(),
});
export type EventProvenance = z.infer<typeof EventProvenance>;

export const EventProjectionName = z.enum(["operator", "local_debug"]);
export type EventProjectionName = z.infer<typeof EventProjectionName>;

export const EventEnvelope = z.object({
  id: z.string(),
  event_seq: z.number().int().positive(),
  ts: z.string(),
  agent_id: z.string(),
  type: z.string(),
  provenance: EventProvenance,
  payload: z.record(z.string(), z.unknown()),
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;

/** What replay surfaces return: the stored envelope plus the projection applied to it. */
export type ProjectedEvent = EventEnvelope & {
  projection: { name: EventProjectionName; raw_payload_included: boolean; redactions: string[] };
};

/** An event before the store assigns its id, sequence number and timestamp. */
export type NewEvent = {
  type: string;
  payload?: Record<string, unknown>;
  provenance?: EventProvenance;
};
