// Sleep wakes on the deadline scheduler: `Sleep(duration_ms)` becomes one keyed deadline
// per agent, so `sleeping_until` is the truth and a restart wakes the agent at the same
// time (a deadline that passed while the host was down fires once at start). The wake
// itself is a runtime-owned `system_tick` admitted through the ingress.
import type { Deadline } from "../domain/deadline.ts";
import type { MessageDraft } from "../agent/ingress.ts";
import type { SleepDeadlines } from "../agent/runtime.ts";
import type { Store } from "../store/db.ts";
import type { DeadlineScheduler } from "./scheduler.ts";

export const SLEEP_WAKE = "sleep_wake";

const keyOf = (agentId: string) => `sleep:${agentId}`;

/** The scheduler's handler for a due sleep wake. A stopped agent's wake is dropped. */
export function sleepWakeHandler(store: Store) {
  return async (d: Deadline): Promise<MessageDraft | null> => {
    const agent = await store.agents.get(d.agent_id);
    if (!agent || agent.status === "stopped") return null;
    const ms = Number(d.payload.duration_ms ?? 0);
    return {
      agent_id: d.agent_id,
      kind: "system_tick",
      origin: { kind: "system", subsystem: "sleep" },
      body: {
        type: "text",
        text: `Scheduled wake: you asked to be woken ${ms} ms after resting (due ${d.due_at}). Check on what you were waiting for and continue.`,
      },
      surface: "runtime_system",
      admission: "runtime_owned",
      metadata: { deadline_id: d.id, due_at: d.due_at },
    };
  };
}

export class SleepWakes implements SleepDeadlines {
  private readonly store: Store;
  private readonly scheduler: DeadlineScheduler;

  constructor(store: Store, scheduler: DeadlineScheduler) {
    this.store = store;
    this.scheduler = scheduler;
  }

  async pending(agentId: string): Promise<string | undefined> {
    return (await this.scheduler.byKey(keyOf(agentId)))?.due_at;
  }

  async arm(agentId: string, wakeAt: string, durationMs: number): Promise<void> {
    await this.store.tx(async () => {
      await this.scheduler.add({
        agent_id: agentId,
        kind: SLEEP_WAKE,
        key: keyOf(agentId),
        due_at: wakeAt,
        payload: { duration_ms: durationMs },
      });
      await this.store.appendEvent(agentId, {
        type: "wake_scheduled",
        payload: { wake_at: wakeAt, duration_ms: durationMs },
      });
    });
  }

  async cancel(agentId: string, why: string): Promise<void> {
    await this.store.tx(async () => {
      const wakeAt = await this.pending(agentId);
      if (wakeAt === undefined) return;
      await this.scheduler.cancelKey(keyOf(agentId));
      await this.store.appendEvent(agentId, {
        type: "wake_cancelled",
        payload: { wake_at: wakeAt, reason: why },
      });
    });
  }
}
