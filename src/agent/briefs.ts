// Brief creation and the failure record a failed turn must leave behind.
import type { BriefKind, BriefRecord } from "../domain/brief.ts";
import type { TranscriptData } from "../domain/transcript.ts";
import type { Store } from "../store/db.ts";

export function createBrief(
  store: Store,
  b: {
    agent_id: string;
    kind: BriefKind;
    text: string;
    related_message_id?: string | undefined;
    related_task_id?: string | undefined;
    work_item_id?: string | undefined;
  },
): Promise<BriefRecord> {
  return store.tx(async () => {
    const brief: BriefRecord = {
      id: store.ids.next("brief"),
      agent_id: b.agent_id,
      kind: b.kind,
      created_at: store.clock.now().toISOString(),
      text: b.text,
    };
    if (b.related_message_id) brief.related_message_id = b.related_message_id;
    if (b.related_task_id) brief.related_task_id = b.related_task_id;
    if (b.work_item_id) brief.work_item_id = b.work_item_id;
    const agent = await store.agents.get(b.agent_id);
    // The workspace the brief was written in (memory search scopes by it).
    const workspaceId = agent?.active_workspace?.workspace_id;
    if (workspaceId) brief.workspace_id = workspaceId;
    await store.briefs.insert(brief);
    if (agent) await store.agents.put({ ...agent, last_brief_at: brief.created_at });
    const provenance: Record<string, string> = {};
    if (brief.related_message_id) provenance.message_id = brief.related_message_id;
    if (brief.related_task_id) provenance.task_id = brief.related_task_id;
    if (brief.work_item_id) provenance.work_item_id = brief.work_item_id;
    await store.appendEvent(b.agent_id, {
      type: "brief_created",
      provenance,
      payload: { brief },
    });
    return brief;
  });
}

export type RuntimeFailureInput = {
  agent_id: string;
  run_id?: string | undefined;
  message_id?: string | undefined;
  /** Operator-facing sentence: why the turn failed. */
  summary: string;
  /** Structured diagnostics (failure artifact, attempt timeline, token usage, ...). */
  diagnostics?: Record<string, unknown>;
  phase?: string;
};

/**
 * A failed turn leaves three records: a failure brief tied to the triggering message,
 * a `runtime_failure` transcript entry and a `runtime_error` event.
 */
export function recordRuntimeFailure(store: Store, f: RuntimeFailureInput): Promise<BriefRecord> {
  return store.tx(async () => {
    const now = store.clock.now().toISOString();
    const data: TranscriptData<"runtime_failure"> = { summary: f.summary, ...f.diagnostics };
    const entry: Parameters<Store["transcript"]["append"]>[0] = {
      id: store.ids.next("tr"),
      agent_id: f.agent_id,
      created_at: now,
      kind: "runtime_failure",
      data,
    };
    if (f.run_id) entry.run_id = f.run_id;
    if (f.message_id) entry.message_id = f.message_id;
    await store.transcript.append(entry);
    const provenance: Record<string, string> = {};
    if (f.message_id) provenance.message_id = f.message_id;
    await store.appendEvent(f.agent_id, {
      type: "runtime_error",
      provenance,
      payload: { run_id: f.run_id ?? null, phase: f.phase ?? "runtime_turn", ...data },
    });
    const agent = await store.agents.get(f.agent_id);
    if (agent) {
      await store.agents.put({
        ...agent,
        last_failure: { occurred_at: now, summary: f.summary, phase: f.phase ?? "runtime_turn" },
      });
    }
    return await createBrief(store, {
      agent_id: f.agent_id,
      kind: "failure",
      text: f.summary,
      related_message_id: f.message_id,
    });
  });
}
