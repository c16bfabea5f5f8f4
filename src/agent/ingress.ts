// The ingress: the only way a message enters an agent's queue. Every producer (HTTP
// routes, the in-process CLI, task rejoin, the deadline scheduler, later callbacks, wake
// hints and child agents) hands it a draft; it derives provenance (admission.ts), checks
// the agent may receive it, commits message and `message_admitted` in one transaction,
// and only then signals the agent. Nothing is acknowledged before it is durable.
import type { MessageEnvelope } from "../domain/message.ts";
import { HolonError, agentStopped, unknownAgent } from "../domain/errors.ts";
import type { Store } from "../store/db.ts";
import { buildEnvelope, previewBody, provenanceOf, type AdmissionRequest } from "./admission.ts";
import type { AgentSignals } from "./signals.ts";
import { transition } from "./status.ts";

/** What a producer describes; the ingress derives everything else. */
export type MessageDraft = AdmissionRequest;

type Pending = {
  draft: MessageDraft;
  resolve: (m: MessageEnvelope) => void;
  reject: (err: unknown) => void;
};

export class Ingress {
  private readonly store: Store;
  private readonly signals: AgentSignals;
  private pending: Pending[] = [];
  private lastBatch = 0;
  private gathered = false;
  private closed = false;

  constructor(store: Store, signals: AgentSignals) {
    this.store = store;
    this.signals = signals;
  }

  /** Admit now, in the caller's transaction when there is one; signal after the commit. */
  admit(draft: MessageDraft): Promise<MessageEnvelope> {
    try {
      this.refuseWhenClosed();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.store.tx(() => this.insert(draft));
  }

  /**
   * Admit with group commit: drafts arriving in the same event-loop turn share one
   * transaction, and each promise settles only after that commit. A draft that fails its
   * own checks is refused alone (the checks run before anything is written).
   */
  admitBatched(draft: MessageDraft): Promise<MessageEnvelope> {
    try {
      this.refuseWhenClosed();
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ draft, resolve, reject });
      // flushOrGather never rejects: flush hands every failure to the batch's callers.
      if (this.pending.length === 1) setImmediate(() => void this.flushOrGather());
    });
  }

  /**
   * A commit costs the same few pages of WAL however many messages it holds. When the last
   * batch held more than one draft (requests are arriving faster than one per loop turn),
   * the batch waits one more loop turn, so the requests already read from other sockets join
   * it; a lone request is committed at once.
   */
  private async flushOrGather(): Promise<void> {
    if (this.lastBatch > 1 && !this.gathered) {
      this.gathered = true;
      setImmediate(() => void this.flushOrGather()); // never rejects (see admitBatched)
      return;
    }
    this.gathered = false;
    await this.flush();
  }

  /** Stop taking new messages; drafts already waiting for their batch are still committed. */
  async close(): Promise<void> {
    if (this.pending.length > 0) await this.flush();
    this.closed = true;
  }

  private refuseWhenClosed(): void {
    if (this.closed) {
      throw new HolonError("runtime_shutting_down", "the runtime is shutting down", {
        status: 503,
      });
    }
  }

  private async flush(): Promise<void> {
    const items = this.pending;
    if (items.length === 0) return; // close() committed them already
    this.pending = [];
    this.lastBatch = items.length;
    const outcomes: ({ ok: true; envelope: MessageEnvelope } | { ok: false; err: unknown })[] = [];
    try {
      await this.store.tx(async () => {
        for (const item of items) {
          try {
            outcomes.push({ ok: true, envelope: await this.insert(item.draft) });
          } catch (err) {
            if (!(err instanceof HolonError)) throw err; // unexpected: fail the whole batch
            outcomes.push({ ok: false, err });
          }
        }
      });
    } catch (err) {
      for (const item of items) item.reject(err);
      return;
    }
    items.forEach((item, i) => {
      const o = outcomes[i]!;
      if (o.ok) item.resolve(o.envelope);
      else item.reject(o.err);
    });
  }

  /**
   * Write one admitted message; runs inside the caller's transaction (admit opens or joins
   * one, flush holds one for its batch), so a batch pays no nested join per message.
   */
  private async insert(draft: MessageDraft): Promise<MessageEnvelope> {
    const store = this.store;
    const envelope = buildEnvelope(draft, store.ids.next("msg"), store.clock.now().toISOString());
    const agent = await store.agents.get(draft.agent_id);
    if (!agent) throw unknownAgent(draft.agent_id);
    if (agent.status === "stopped" && draft.admission !== "runtime_owned") {
      throw agentStopped(draft.agent_id);
    }
    const seq = await store.messages.insert(envelope);
    await store.appendEvent(draft.agent_id, {
      type: "message_admitted",
      provenance: provenanceOf(envelope),
      payload: {
        message_id: envelope.id,
        queue_seq: seq,
        kind: envelope.kind,
        priority: envelope.priority,
        trigger_kind: envelope.trigger_kind,
        admitted_at: envelope.created_at,
        body_preview: previewBody(envelope.body),
      },
    });
    if (agent.status === "asleep") {
      await transition(store, draft.agent_id, "awake_idle", `woken by ${envelope.kind}`, {
        last_wake_reason: envelope.kind,
        clear: ["sleeping_until"],
      });
    }
    // The loop reads the queue, so it may look only once the message is committed: after
    // the outermost transaction this admission is part of (ours, or the caller's).
    store.afterCommit(() => this.signals.notify(draft.agent_id));
    return envelope;
  }
}
