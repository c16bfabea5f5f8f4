// Rate-limit waits on the deadline scheduler. When every model of a turn answered "not
// before T" with a wait beyond what the retry loop honours in place, the turn ends as
// `retry_at` (closure: waiting, awaiting_timer). This plane then arms one durable deadline
// for that message; at T (or at the next start, if T passed while the host was down) the
// message is admitted again as a copy of itself, through the same door it first came
// through, and its turn runs again from the start.
import type { Deadline } from "../domain/deadline.ts";
import type { TurnOutcome } from "../domain/closure.ts";
import type { MessageDraft } from "../agent/ingress.ts";
import type { RunInfo, RunObserver } from "../agent/runtime.ts";
import type { Store } from "../store/db.ts";
import type { DeadlineScheduler } from "./scheduler.ts";

export const PROVIDER_RETRY = "provider_retry";

const keyOf = (messageId: string) => `provider-retry:${messageId}`;

/** Admissions that may set trust themselves (the rest get the origin's default again). */
const TRUST_SETTING = new Set(["local_process", "control_authenticated", "runtime_owned"]);

/**
 * The scheduler's handler: the message the deadline names, admitted again. Dropped (and
 * recorded by the scheduler) when the agent is gone or stopped, or the message is gone.
 */
export function providerRetryHandler(store: Store) {
  return async (d: Deadline): Promise<MessageDraft | null> => {
    const agent = await store.agents.get(d.agent_id);
    if (!agent || agent.status === "stopped") return null;
    const original = await store.messages.get(String(d.payload.message_id ?? ""));
    if (!original) return null;
    const admission = original.admission_context ?? "runtime_owned";
    const retries = Number(original.metadata?.provider_retry_count ?? 0) + 1;
    const draft: MessageDraft = {
      agent_id: original.agent_id,
      kind: original.kind,
      origin: original.origin,
      body: original.body,
      surface: original.delivery_surface ?? "runtime_system",
      admission,
      priority: original.priority,
      metadata: {
        ...original.metadata,
        provider_retry_of: (original.metadata?.provider_retry_of as string) ?? original.id,
        provider_retry_count: retries,
        deadline_id: d.id,
      },
      causation_id: original.id,
    };
    if (TRUST_SETTING.has(admission)) draft.trust = original.trust;
    if (original.work_item_id !== undefined) draft.work_item_id = original.work_item_id;
    if (original.task_id !== undefined) draft.task_id = original.task_id;
    if (original.correlation_id !== undefined) draft.correlation_id = original.correlation_id;
    if (original.source_refs !== undefined) draft.source_refs = original.source_refs;
    if (original.kind === "system_tick" && admission !== "runtime_owned")
      draft.from_wake_hint = true;
    return draft;
  };
}

/** Arms the deadline when a run ends as `retry_at` (inside the run's settle transaction). */
export class ProviderRetryObserver implements RunObserver {
  private readonly store: Store;
  private readonly scheduler: DeadlineScheduler;

  constructor(opts: { store: Store; scheduler: DeadlineScheduler }) {
    this.store = opts.store;
    this.scheduler = opts.scheduler;
  }

  async afterRun(run: RunInfo & { outcome: TurnOutcome }): Promise<void> {
    if (run.outcome.kind !== "retry_at") return;
    const deadline = await this.scheduler.add({
      agent_id: run.agent_id,
      kind: PROVIDER_RETRY,
      key: keyOf(run.message.id),
      due_at: run.outcome.retry_at,
      payload: { message_id: run.message.id, run_id: run.run_id },
    });
    await this.store.appendEvent(run.agent_id, {
      type: "provider_retry_scheduled",
      payload: {
        message_id: run.message.id,
        run_id: run.run_id,
        retry_at: run.outcome.retry_at,
        deadline_id: deadline.id,
      },
    });
  }
}
