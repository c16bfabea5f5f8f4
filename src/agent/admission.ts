// Admission policy: the pure half of the ingress. The runtime derives trust, authority,
// trigger kind, delivery surface and admission context here; callers only describe what
// arrived and through which door. Nothing here touches the store (see ingress.ts).
import {
  RUNTIME_OWNED_KINDS,
  type MessageEnvelope,
  authorityForTrust,
  defaultTrustFor,
  triggerKindFor,
  type AdmissionContext,
  type MessageBody,
  type MessageDeliverySurface,
  type MessageKind,
  type MessageOrigin,
  type Priority,
  type TrustLevel,
} from "../domain/message.ts";
import { HolonError } from "../domain/errors.ts";

export type AdmissionRequest = {
  agent_id: string;
  kind: MessageKind;
  origin: MessageOrigin;
  body: MessageBody;
  surface: MessageDeliverySurface;
  admission: AdmissionContext;
  priority?: Priority | undefined;
  /** Only local or runtime-owned ingress may choose trust; everyone else gets the origin default. */
  trust?: TrustLevel | undefined;
  metadata?: Record<string, unknown> | undefined;
  source_refs?: Record<string, string> | undefined;
  work_item_id?: string | undefined;
  task_id?: string | undefined;
  correlation_id?: string | undefined;
  causation_id?: string | undefined;
  /**
   * A SystemTick the waiting plane converted from a wake hint. It keeps the hint's own door
   * (operator control, or an external trigger capability) instead of `runtime_owned`, so its
   * provenance is not flattened; only the runtime sets this, never a request body.
   */
  from_wake_hint?: boolean | undefined;
};

const OPERATOR_ADMISSIONS: ReadonlySet<AdmissionContext> = new Set([
  "local_process",
  "control_authenticated",
  "operator_transport_authenticated",
]);

function reject(kind: string, message: string, hint?: string): never {
  throw new HolonError(kind, message, hint ? { status: 400, hint } : { status: 400 });
}

/** Check the request against admission policy and build the envelope. Pure; stores nothing. */
export function buildEnvelope(
  req: AdmissionRequest,
  id: string,
  createdAt: string,
): MessageEnvelope {
  const runtimeOwned = req.admission === "runtime_owned";
  const operatorAdmission = OPERATOR_ADMISSIONS.has(req.admission);

  const wakeHintTick = req.kind === "system_tick" && req.from_wake_hint === true;
  if (RUNTIME_OWNED_KINDS.has(req.kind) && !runtimeOwned && !wakeHintTick) {
    reject(
      "forbidden_kind",
      `message kind '${req.kind}' is produced only by the runtime itself`,
      "send channel_event or webhook_event from integrations",
    );
  }
  if (req.kind === "operator_prompt" && (req.origin.kind !== "operator" || !operatorAdmission)) {
    reject(
      "forbidden_kind",
      "operator_prompt is accepted only from the authenticated operator control surface",
      "use POST /control/agents/:id/prompt (or `holon prompt`) for operator input",
    );
  }
  if (req.origin.kind === "operator" && !operatorAdmission) {
    reject(
      "forbidden_origin",
      "public ingress cannot claim the operator origin",
      "use a channel or webhook origin",
    );
  }
  if (req.trust !== undefined && !operatorAdmission && !runtimeOwned) {
    reject("forbidden_trust_override", "trust is derived by the runtime and cannot be set here");
  }
  const priority = req.priority ?? "normal";
  if (priority === "interject" && !(operatorAdmission && req.origin.kind === "operator")) {
    reject(
      "forbidden_priority",
      "interject priority is reserved for the operator through the control plane",
      "use next, normal or background",
    );
  }
  if ((req.work_item_id !== undefined || req.task_id !== undefined) && !runtimeOwned) {
    reject(
      "forbidden_binding",
      "only runtime-owned ingress may bind a message to a work item or task",
    );
  }

  const trust = req.trust ?? defaultTrustFor(req.origin, req.admission);
  const sourceRefs: Record<string, string> = { ...originRefs(req.origin), ...req.source_refs };

  const envelope: MessageEnvelope = {
    id,
    agent_id: req.agent_id,
    created_at: createdAt,
    kind: req.kind,
    origin: req.origin,
    trust,
    authority_class: authorityForTrust(trust),
    priority,
    trigger_kind: triggerKindFor(req.kind),
    body: req.body,
    delivery_surface: req.surface,
    admission_context: req.admission,
  };
  if (Object.keys(sourceRefs).length > 0) envelope.source_refs = sourceRefs;
  if (req.work_item_id !== undefined) envelope.work_item_id = req.work_item_id;
  if (req.task_id !== undefined) envelope.task_id = req.task_id;
  if (req.metadata !== undefined) envelope.metadata = req.metadata;
  if (req.correlation_id !== undefined) envelope.correlation_id = req.correlation_id;
  if (req.causation_id !== undefined) envelope.causation_id = req.causation_id;
  return envelope;
}

function originRefs(origin: MessageOrigin): Record<string, string> {
  switch (origin.kind) {
    case "channel":
      return { channel_id: origin.channel_id };
    case "callback":
      return { descriptor_id: origin.descriptor_id };
    case "timer":
      return { timer_id: origin.timer_id };
    case "task":
      return { task_id: origin.task_id };
    case "webhook":
      return { webhook_source: origin.source };
    default:
      return {};
  }
}

export function provenanceOf(m: MessageEnvelope) {
  const p: Record<string, unknown> = {
    origin: m.origin,
    trust: m.trust,
    authority_class: m.authority_class,
    message_id: m.id,
  };
  if (m.delivery_surface) p.delivery_surface = m.delivery_surface;
  if (m.admission_context) p.admission_context = m.admission_context;
  if (m.task_id) p.task_id = m.task_id;
  if (m.work_item_id) p.work_item_id = m.work_item_id;
  if (m.correlation_id) p.correlation_id = m.correlation_id;
  if (m.causation_id) p.causation_id = m.causation_id;
  return p;
}

export function previewBody(body: MessageBody): string {
  const text = body.type === "json" ? JSON.stringify(body.value) : body.text;
  return text.length > 200 ? text.slice(0, 200) + "…" : text;
}
