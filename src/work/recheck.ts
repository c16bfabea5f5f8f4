// Recheck reminders for blocked work items, on the deadline scheduler (kind
// "work_recheck", one keyed deadline per item). When one falls due, every due item of the
// same agent is marked consumed (`recheck_consumed_at`) and one low-priority system tick
// names them all. The reminder never clears or interprets the blocker. An agent that is
// busy, or already has something queued, gets no extra tick: the markers are consumed and
// the prompt projection shows the due items on its next turn. Missed while the host was
// down: the deadline is due at start and fires then, once.
import type { Deadline } from "../domain/deadline.ts";
import type { MessageDraft } from "../agent/ingress.ts";
import type { Store } from "../store/db.ts";
import { recheckKey } from "./service.ts";

export function workRecheckHandler(store: Store) {
  return async (d: Deadline): Promise<MessageDraft | null> => {
    const agent = await store.agents.get(d.agent_id);
    if (!agent) return null;
    const now = store.clock.now().toISOString();
    const due = (await store.workItems.withState(d.agent_id, "open"))
      .filter(
        (i) =>
          i.blocked_by !== undefined &&
          i.recheck_at !== undefined &&
          i.recheck_at <= now &&
          i.recheck_consumed_at === undefined,
      )
      .sort((a, b) => a.recheck_at!.localeCompare(b.recheck_at!));
    if (due.length === 0) return null;
    for (const item of due) {
      await store.workItems.put({
        ...item,
        recheck_consumed_at: now,
        revision: item.revision + 1,
        updated_at: now,
      });
      await store.deadlines.dropKey(recheckKey(item.id));
    }
    const ids = due.map((i) => i.id);
    const busy =
      agent.current_run_id !== undefined || (await store.messages.pendingCount(d.agent_id)) > 0;
    const deliver = agent.status !== "stopped" && agent.status !== "paused" && !busy;
    await store.appendEvent(d.agent_id, {
      type: "work_recheck_due",
      payload: {
        work_item_ids: ids,
        delivered: deliver,
        reason: deliver ? "idle" : agent.status === "stopped" ? "stopped" : "busy_or_paused",
      },
    });
    if (!deliver) return null;
    const lines = due.map((i) => `- ${i.id} ("${i.objective}"): blocked by: ${i.blocked_by}`);
    return {
      agent_id: d.agent_id,
      kind: "system_tick",
      origin: { kind: "system", subsystem: "work_recheck" },
      body: {
        type: "text",
        text: [
          "Recheck reminder: these blocked work items asked to be looked at again.",
          ...lines,
          "Check whether each blocker still holds. If it is resolved, clear it (UpdateWorkItem with blocked_by: null) and continue; if not, keep it (set blocked_by again with a new recheck_after if you want another reminder). This reminder changes nothing by itself.",
        ].join("\n"),
      },
      surface: "runtime_system",
      admission: "runtime_owned",
      priority: "background",
      work_item_id: ids[0],
      metadata: { work_item_ids: ids, deadline_id: d.id },
    };
  };
}
