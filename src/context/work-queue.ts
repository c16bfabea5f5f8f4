// The work queue in the prompt: the current work item in full (objective, plan preview,
// todos, blocker, recheck), what was recently done for it in the runs bound to it, and the
// other items by readiness class. Nothing at all when the agent has no work items, so the
// plain message-driven path stays as it was. Reads the store; the plane's own service is
// in src/work/ (a sibling layer), so the derivations it shares live in domain/work-item.ts.
import {
  readiness,
  schedulingState,
  todoProgress,
  type WorkItemRecord,
} from "../domain/work-item.ts";
import type { Store } from "../store/db.ts";
import type { PromptContributor } from "./section.ts";

const OTHER_ITEMS = 12;
const COMPLETED_RECENT = 3;
const TRACE_ENTRIES = 8;
const CLIP = 400;

export const workQueueContributor: PromptContributor = {
  id: "work_queue",
  contribute: async ({ store, agent }) => {
    if (!(await store.workItems.hasAny(agent.agent_id))) return [];
    const now = store.clock.now().toISOString();
    const open = await store.workItems.withState(agent.agent_id, "open");
    const current = open.find((i) => i.id === agent.current_work_item_id);
    const lines: string[] = ["Work queue (your durable work items; the store is the truth):"];
    if (current) {
      lines.push("", "Current work item:", ...currentLines(current, now));
      const trace = await processTrace(store, agent.agent_id, current.id);
      if (trace.length) lines.push("Recent progress on it (oldest first):", ...trace);
    } else {
      lines.push("", "No current work item. Pick one with PickWorkItem before working on it.");
    }
    const classes: Record<string, string[]> = {
      triggered_blocked: [],
      queued_runnable: [],
      waiting_for_operator: [],
      blocked: [],
    };
    for (const item of open.filter((i) => i.id !== current?.id).slice(0, OTHER_ITEMS)) {
      const state = schedulingState(item);
      const due = item.recheck_at !== undefined && item.recheck_at <= now;
      const cls =
        state === "blocked"
          ? due
            ? "triggered_blocked"
            : "blocked"
          : state === "waiting_operator"
            ? "waiting_for_operator"
            : "queued_runnable";
      classes[cls]!.push(otherLine(item));
    }
    if (open.length - (current ? 1 : 0) > OTHER_ITEMS) {
      lines.push(`(${open.length - OTHER_ITEMS} more open items: ListWorkItems)`);
    }
    for (const [cls, items] of Object.entries(classes)) {
      if (items.length) lines.push("", `${cls}:`, ...items);
    }
    const done: { i: WorkItemRecord; report: string | undefined }[] = [];
    for (const i of await store.workItems.recentWithState(
      agent.agent_id,
      "completed",
      COMPLETED_RECENT * 3,
    )) {
      if (done.length === COMPLETED_RECENT) break;
      const report = i.result_summary || (await store.workItems.newestSummary(i.id))?.text;
      if (report) done.push({ i, report });
    }
    if (done.length) {
      lines.push(
        "",
        "completed_recent:",
        ...done.map((x) => `- ${x.i.id}: ${clip(x.i.objective)} — report: ${clip(x.report!)}`),
      );
    }
    return [{ placement: "context", stability: "turn_scoped", text: lines.join("\n") }];
  },
};

function currentLines(item: WorkItemRecord, now: string): string[] {
  const p = todoProgress(item.todo_list);
  const lines = [
    `id: ${item.id}`,
    `objective: ${item.objective}`,
    `state: ${item.state}; plan_status: ${item.plan_status}; readiness: ${readiness(schedulingState(item))}`,
    `plan file: ${item.plan_artifact.path} (${item.plan_artifact.bytes} bytes${item.plan_artifact.preview_complete ? "" : "; preview truncated, read the file"})`,
  ];
  if (item.plan_artifact.preview.trim()) {
    lines.push(
      "plan preview:",
      ...item.plan_artifact.preview
        .trimEnd()
        .split("\n")
        .map((l) => `  ${l}`),
    );
  }
  if (item.todo_list.length) {
    lines.push(
      `todos (${p.done}/${p.total} done):`,
      ...item.todo_list.map((t) => `  - [${t.state}] ${t.text}`),
    );
  }
  if (item.blocked_by) {
    const due = item.recheck_at && item.recheck_at <= now ? " (recheck due now)" : "";
    lines.push(
      `blocked_by: ${item.blocked_by}${item.recheck_at ? `; recheck at ${item.recheck_at}${due}` : ""}`,
    );
  }
  lines.push(
    "The objective says what this is, the plan file how, the todos how far. If they disagree, the plan wins.",
  );
  return lines;
}

function otherLine(item: WorkItemRecord): string {
  const p = todoProgress(item.todo_list);
  const next =
    item.todo_list.find((t) => t.state === "in_progress") ??
    item.todo_list.find((t) => t.state === "pending");
  const parts = [
    `- ${item.id}: ${clip(item.objective)} [plan ${item.plan_status}, todos ${p.done}/${p.total}]`,
  ];
  if (next) parts.push(`next: ${clip(next.text, 120)}`);
  if (item.blocked_by) parts.push(`blocked_by: ${clip(item.blocked_by, 200)}`);
  const preview = item.plan_artifact.preview.replace(/\s+/g, " ").trim();
  if (preview) parts.push(`plan: ${clip(preview, 160)}`);
  return parts.join("; ");
}

/**
 * What happened in the newest runs bound to this item: the agent's own text and tool calls,
 * from the transcript (never provider reasoning, never other agents' records).
 */
async function processTrace(store: Store, agentId: string, workItemId: string): Promise<string[]> {
  const runs = ((await store.workItems.agentState(agentId)).bound_runs ?? [])
    .filter((r) => r.work_item_id === workItemId)
    .map((r) => r.run_id)
    .slice(-2);
  const out: string[] = [];
  for (const runId of runs) {
    for (const e of await store.transcript.forRun(agentId, runId)) {
      if (e.kind === "assistant_round" && typeof e.data.text === "string" && e.data.text.trim()) {
        out.push(`- said: ${clip(e.data.text)}`);
      } else if (e.kind === "tool_execution") {
        const env = e.data.envelope as { status?: string; summary_text?: string } | undefined;
        out.push(
          `- ${String(e.data.tool_name)} (${env?.status ?? "?"}): ${clip(env?.summary_text ?? "", 200)}`,
        );
      }
    }
  }
  return out.slice(-TRACE_ENTRIES);
}

function clip(text: string, n = CLIP): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > n ? flat.slice(0, n) + "…" : flat;
}
