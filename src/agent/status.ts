// Status transitions. Every change of an agent's status is written together with the
// `agent_state_changed` event that explains it.
import type { AgentRecord, AgentStatus } from "../domain/agent.ts";
import type { EventPayload } from "../domain/events.ts";
import type { Store } from "../store/db.ts";

export type TransitionExtras = Partial<
  Pick<AgentRecord, "current_run_id" | "sleeping_until" | "last_wake_reason">
> & { clear?: ("current_run_id" | "sleeping_until")[] };

/** Write `to` for the agent (inside the caller's or a new transaction). Returns the new record. */
export function transition(
  store: Store,
  agentId: string,
  to: AgentStatus,
  reason: string,
  extras: TransitionExtras = {},
): Promise<AgentRecord> {
  return store.tx(async () => {
    const agent = await store.agents.get(agentId);
    if (!agent) throw new Error(`agent ${agentId} vanished`);
    const from = agent.status;
    const next: AgentRecord = { ...agent, status: to, updated_at: store.clock.now().toISOString() };
    for (const key of extras.clear ?? []) delete next[key];
    if (extras.current_run_id !== undefined) next.current_run_id = extras.current_run_id;
    if (extras.sleeping_until !== undefined) next.sleeping_until = extras.sleeping_until;
    if (extras.last_wake_reason !== undefined) next.last_wake_reason = extras.last_wake_reason;
    if (to === "awake_running" || to === "stopped") delete next.sleeping_until;
    await store.agents.put(next);
    if (from !== to) {
      const payload: EventPayload<"agent_state_changed"> = { from, to, reason };
      if (next.current_run_id) payload.current_run_id = next.current_run_id;
      await store.appendEvent(agentId, { type: "agent_state_changed", payload });
    }
    return next;
  });
}
