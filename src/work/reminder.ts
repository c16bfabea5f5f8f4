// The stale-progress reminder: during a long turn, after many provider rounds without a
// successful work-item tool call, the next request carries a short provider-only note with
// the current item's state, asking the model to update it if real progress happened. It is
// never stored in the transcript and marks no progress by itself. Three env knobs:
// HOLON_WORK_ITEM_STALE_REMINDER_ROUNDS (rounds before the first reminder),
// HOLON_WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS (rounds between reminders) and
// HOLON_WORK_ITEM_STALE_REMINDER_MAX_TOKENS (size bound, 4 characters a token).
import type { AgentRecord } from "../domain/agent.ts";
import type { ProviderRequest } from "../providers/model.ts";
import type { Store } from "../store/db.ts";
import type { WorkService } from "./service.ts";

export const WORK_TOOLS = new Set([
  "CreateWorkItem",
  "PickWorkItem",
  "UpdateWorkItem",
  "CompleteWorkItem",
]);

export type ReminderSettings = { rounds: number; cooldown: number; max_tokens: number };

export function reminderSettings(env: NodeJS.ProcessEnv): ReminderSettings {
  const num = (name: string, dflt: number) => {
    const v = Number(env[name]);
    return Number.isInteger(v) && v > 0 ? v : dflt;
  };
  return {
    rounds: num("HOLON_WORK_ITEM_STALE_REMINDER_ROUNDS", 12),
    cooldown: num("HOLON_WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS", 6),
    max_tokens: num("HOLON_WORK_ITEM_STALE_REMINDER_MAX_TOKENS", 400),
  };
}

/** Rounds of this run since the last successful work-item tool call (or since it began). */
export async function staleRounds(store: Store, agentId: string, runId: string): Promise<number> {
  let stale = 0;
  for (const e of await store.transcript.forRun(agentId, runId)) {
    if (e.kind === "assistant_round") stale++;
    if (
      e.kind === "tool_execution" &&
      WORK_TOOLS.has(String(e.data.tool_name)) &&
      (e.data.envelope as { status?: string } | undefined)?.status === "success"
    ) {
      stale = 0;
    }
  }
  return stale;
}

/** The reminder text for this round, or undefined when none is due. */
export async function staleReminder(
  store: Store,
  work: WorkService,
  settings: ReminderSettings,
  ctx: { agent: AgentRecord; run_id: string },
): Promise<string | undefined> {
  const item = await work.currentItem(ctx.agent.agent_id);
  if (!item) return undefined;
  const stale = await staleRounds(store, ctx.agent.agent_id, ctx.run_id);
  if (stale < settings.rounds || (stale - settings.rounds) % settings.cooldown !== 0) {
    return undefined;
  }
  const open = item.todo_list.filter((t) => t.state !== "completed");
  const lines = [
    `[Runtime reminder, not from the user: ${stale} model rounds without a work-item update.]`,
    `Current work item ${item.id}: ${item.objective}`,
    `plan_status: ${item.plan_status}; plan file: ${item.plan_artifact.path}`,
  ];
  if (item.blocked_by) lines.push(`blocked_by: ${item.blocked_by}`);
  if (open.length) {
    lines.push("Open todos:", ...open.map((t) => `- [${t.state}] ${t.text}`));
  }
  lines.push(
    "If you made material progress, changed scope, hit a blocker or finished a todo, update the work item (UpdateWorkItem with the full todo list). Otherwise carry on; this note needs no answer.",
  );
  const max = settings.max_tokens * 4;
  const text = lines.join("\n");
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

/** The reminder as a pre-provider-call hook (turn/turn.ts `beforeProviderCall`). */
export function staleReminderHook(store: Store, work: WorkService, settings: ReminderSettings) {
  return async (
    request: ProviderRequest,
    ctx: { agent: AgentRecord; run_id: string },
  ): Promise<ProviderRequest> => {
    const note = await staleReminder(store, work, settings, ctx);
    if (!note) return request;
    return {
      ...request,
      conversation: [...request.conversation, { type: "user_text", text: note }],
    };
  };
}
