// What the waiting plane shows on `/status`, `/state` and `holon status`: active timers,
// the sleep deadline, the pending wake hint, the trigger descriptor (token redacted) and
// the closure's waiting reason; and, on `/state`, the waits derived from all of them.
import type { AgentRecord } from "../domain/agent.ts";
import type {
  WaitingIntentView,
  WaitingSummary,
  WakeHint,
  WakeHintView,
} from "../domain/waiting.ts";
import type { SleepDeadlines } from "../agent/runtime.ts";
import type { TimerService } from "./timers.ts";
import type { TriggerService } from "./triggers.ts";

export type WaitingDeps = {
  timers: TimerService;
  triggers: TriggerService;
  sleep: SleepDeadlines;
};

const HINT_PREVIEW = 2_000;

/** A pending hint as surfaces show it: the body previewed, never its full bytes. */
export function hintView(h: WakeHint | undefined): WakeHintView | null {
  if (!h) return null;
  const { body, ...rest } = h;
  return {
    ...rest,
    body: body
      ? {
          content_type: body.content_type,
          encoding: body.encoding,
          bytes: body.bytes,
          preview:
            body.data.length > HINT_PREVIEW ? body.data.slice(0, HINT_PREVIEW) + "…" : body.data,
        }
      : null,
  };
}

/** The short form for `/status` (reads only: nothing is provisioned here). */
export async function waitingSummary(
  deps: WaitingDeps,
  agent: AgentRecord,
): Promise<WaitingSummary> {
  const next = (await deps.timers.list(agent.agent_id, 1)).active[0];
  const trigger = await deps.triggers.current(agent.agent_id);
  return {
    waiting_reason: agent.closure?.waiting_reason ?? null,
    sleep_wake_at: (await deps.sleep.pending(agent.agent_id)) ?? null,
    timers: {
      active: await deps.timers.activeCount(agent.agent_id),
      next_fire_at: next?.next_fire_at ?? null,
      next_timer_id: next?.timer_id ?? null,
    },
    pending_wake_hint: hintView(agent.pending_wake_hint),
    external_trigger: trigger ? deps.triggers.describe(trigger, false) : null,
  };
}

/** The `/state` fields: timers, derived waiting intents, the external trigger (if any). */
export async function waitingState(deps: WaitingDeps, agent: AgentRecord) {
  const { active, finished } = await deps.timers.list(agent.agent_id, 50);
  const sleepAt = await deps.sleep.pending(agent.agent_id);
  const intents: WaitingIntentView[] = [];
  const closure = agent.closure;
  if (closure?.outcome === "waiting") {
    intents.push({
      kind: "closure_wait",
      waiting_reason: closure.waiting_reason,
      evidence: closure.evidence,
      since: closure.decided_at,
    });
  }
  if (sleepAt) intents.push({ kind: "sleep_wake", due_at: sleepAt });
  for (const t of active.slice(0, 20)) {
    intents.push({
      kind: "timer",
      timer_id: t.timer_id,
      due_at: t.next_fire_at,
      summary: t.summary,
    });
  }
  if (agent.pending_wake_hint) {
    intents.push({
      kind: "pending_wake_hint",
      hint_id: agent.pending_wake_hint.hint_id,
      source: agent.pending_wake_hint.source,
      count: agent.pending_wake_hint.count,
    });
  }
  const trigger =
    agent.visibility === "public" ? await deps.triggers.descriptor(agent.agent_id, false) : null;
  const triggers = trigger ? [trigger] : [];
  return {
    timers: [...active, ...finished],
    waiting_intents: intents,
    external_triggers: triggers,
    pending_wake_hint: hintView(agent.pending_wake_hint),
    waiting: await waitingSummary(deps, agent),
  };
}
