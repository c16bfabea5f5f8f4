// Timers: an operator (or, later, an agent) asks for a `timer_tick` at a time, every
// interval, or on a cron schedule in a time zone. Each active timer is one keyed deadline
// on the scheduler; when it falls due the handler below turns it into the tick and, for a
// recurring timer, records the next deadline in the same transaction, so a fire is never
// lost or doubled across a crash. Periods missed while the host was down fire once, and
// the record counts how many were skipped. Cron expressions are read by `croner`.
import { Cron } from "croner";
import { HolonError, agentStopped, unknownAgent } from "../domain/errors.ts";
import type { Deadline } from "../domain/deadline.ts";
import type { TimerRecord } from "../domain/waiting.ts";
import type { Store } from "../store/db.ts";
import { deadlineRecord, type DeadlineHandler, type DeadlineScheduler } from "./scheduler.ts";

export const TIMER_FIRE = "timer_fire";

/** Active timers one agent may hold; finished ones kept per agent for inspection. */
export const MAX_ACTIVE_TIMERS = 10_000;
export const KEEP_FINISHED_TIMERS = 100;
const MAX_SUMMARY = 4_000;
const MIN_INTERVAL_MS = 1_000;
const MAX_DELAY_MS = 10 * 366 * 24 * 3600_000;
/** Catch-up walks missed cron periods one by one up to this many, then jumps. */
const MAX_CATCH_UP_STEPS = 10_000;

const keyOf = (timerId: string) => `timer:${timerId}`;

/** What a caller may ask for: a first fire (`duration_ms` or `at`), an interval, or a cron. */
export type TimerSpec = {
  summary: string;
  duration_ms?: number | undefined;
  at?: string | undefined;
  interval_ms?: number | null | undefined;
  cron?: string | undefined;
  tz?: string | undefined;
};

function invalid(message: string, hint?: string): HolonError {
  return new HolonError("invalid_timer", message, hint ? { status: 400, hint } : { status: 400 });
}

function cronOf(expr: string, tz: string | undefined): Cron {
  try {
    return new Cron(expr, { paused: true, ...(tz ? { timezone: tz } : {}) });
  } catch (err) {
    throw invalid(
      `cron '${expr}' is not a valid expression: ${err instanceof Error ? err.message : String(err)}`,
      'five fields (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5"',
    );
  }
}

/** The first cron fire strictly after `after`, or null when the expression never fires again. */
export function nextCronFire(expr: string, tz: string | undefined, after: Date): Date | null {
  return cronOf(expr, tz).nextRun(after) ?? null;
}

function checkZone(tz: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
  } catch {
    throw invalid(`'${tz}' is not a time zone`, "use an IANA name such as Europe/Berlin or UTC");
  }
}

/**
 * Where a recurring timer goes after firing for `scheduledFor` at `now`: the next period
 * after now, and how many periods between the two were skipped (fired as this one).
 */
export function nextAfterFire(
  timer: Pick<TimerRecord, "kind" | "interval_ms" | "cron" | "tz">,
  scheduledFor: Date,
  now: Date,
): { next: Date | null; skipped: number } {
  switch (timer.kind) {
    case "one_shot":
      return { next: null, skipped: 0 };
    case "interval": {
      const every = timer.interval_ms!;
      const behind = Math.max(0, now.getTime() - scheduledFor.getTime());
      const skipped = Math.floor(behind / every);
      return { next: new Date(scheduledFor.getTime() + (skipped + 1) * every), skipped };
    }
    case "cron": {
      const cron = cronOf(timer.cron!, timer.tz);
      let skipped = 0;
      let next = cron.nextRun(scheduledFor);
      while (next && next.getTime() <= now.getTime()) {
        if (++skipped >= MAX_CATCH_UP_STEPS) {
          next = cron.nextRun(now);
          break;
        }
        next = cron.nextRun(next);
      }
      return { next: next ?? null, skipped };
    }
  }
}

/** The scheduler's handler for a due timer (runs inside the fire's transaction). */
export function timerFireHandler(store: Store): DeadlineHandler {
  return async (d: Deadline) => {
    const timer = await store.timers.get(String(d.payload.timer_id ?? ""));
    if (!timer || timer.status !== "active") return null;
    const now = store.clock.now();
    const scheduledFor = new Date(d.due_at);
    const { next, skipped } = nextAfterFire(timer, scheduledFor, now);
    const agent = await store.agents.get(timer.agent_id);
    // A stopped agent takes nothing: the fire counts as skipped and the schedule goes on.
    const deliver = agent !== undefined && agent.status !== "stopped";
    const updated: TimerRecord = {
      ...timer,
      updated_at: now.toISOString(),
      next_fire_at: next ? next.toISOString() : null,
      status: next ? "active" : "completed",
      fire_count: timer.fire_count + (deliver ? 1 : 0),
      skipped_count: timer.skipped_count + skipped + (deliver ? 0 : 1),
      last_scheduled_for: d.due_at,
    };
    if (deliver) updated.last_fired_at = now.toISOString();
    await store.timers.put(updated);
    if (next) {
      await store.deadlines.put(
        deadlineRecord(store.clock, store.ids, {
          agent_id: timer.agent_id,
          kind: TIMER_FIRE,
          key: keyOf(timer.timer_id),
          due_at: next.toISOString(),
          payload: { timer_id: timer.timer_id },
        }),
      );
    } else {
      await store.timers.pruneFinished(timer.agent_id, KEEP_FINISHED_TIMERS);
    }
    const fired = {
      timer_id: timer.timer_id,
      scheduled_for: d.due_at,
      skipped,
      delivered: deliver,
      next_fire_at: updated.next_fire_at,
    };
    if (!deliver) {
      if (agent) await store.appendEvent(agent.agent_id, { type: "timer_fired", payload: fired });
      return null;
    }
    return {
      draft: {
        agent_id: timer.agent_id,
        kind: "timer_tick",
        origin: { kind: "timer", timer_id: timer.timer_id },
        body: { type: "text", text: timer.summary },
        surface: "timer_scheduler",
        admission: "runtime_owned",
        metadata: {
          timer_id: timer.timer_id,
          timer_kind: timer.kind,
          scheduled_for: d.due_at,
          fire_count: updated.fire_count,
          skipped,
          next_fire_at: updated.next_fire_at,
        },
      },
      admitted: async (m) =>
        await store.appendEvent(timer.agent_id, {
          type: "timer_fired",
          payload: { ...fired, message_id: m.id },
        }),
    };
  };
}

export class TimerService {
  private readonly store: Store;
  private readonly scheduler: DeadlineScheduler;

  constructor(store: Store, scheduler: DeadlineScheduler) {
    this.store = store;
    this.scheduler = scheduler;
  }

  /** Validate the request, record the timer and arm its first deadline (one transaction). */
  async create(agentId: string, spec: TimerSpec, createdBy = "operator"): Promise<TimerRecord> {
    const store = this.store;
    const now = store.clock.now();
    const summary = spec.summary.trim();
    if (summary === "") throw invalid("summary must not be empty");
    if (summary.length > MAX_SUMMARY) throw invalid(`summary exceeds ${MAX_SUMMARY} characters`);
    const interval = spec.interval_ms ?? undefined;
    if (spec.duration_ms !== undefined && spec.at !== undefined) {
      throw invalid("give duration_ms or at, not both");
    }
    if (spec.tz !== undefined && spec.cron === undefined) {
      throw invalid("tz applies to cron timers only");
    }
    if (spec.duration_ms !== undefined) {
      if (
        !Number.isInteger(spec.duration_ms) ||
        spec.duration_ms < 0 ||
        spec.duration_ms > MAX_DELAY_MS
      )
        throw invalid("duration_ms must be a whole number of milliseconds, 0 to ten years");
    }
    if (interval !== undefined) {
      if (!Number.isInteger(interval) || interval < MIN_INTERVAL_MS || interval > MAX_DELAY_MS)
        throw invalid(`interval_ms must be a whole number from ${MIN_INTERVAL_MS} ms to ten years`);
    }

    let first: Date;
    const record: Partial<TimerRecord> = {};
    if (spec.cron !== undefined) {
      if (spec.duration_ms !== undefined || spec.at !== undefined || interval !== undefined) {
        throw invalid("a cron timer takes cron (and tz) only, not duration_ms, at or interval_ms");
      }
      if (spec.cron.length > 200) throw invalid("cron expression is too long");
      if (spec.tz !== undefined) checkZone(spec.tz);
      const next = nextCronFire(spec.cron, spec.tz, now);
      if (!next) throw invalid(`cron '${spec.cron}' never fires after now`);
      first = next;
      record.kind = "cron";
      record.cron = spec.cron;
      if (spec.tz !== undefined) record.tz = spec.tz;
    } else {
      if (spec.at !== undefined) {
        const t = Date.parse(spec.at);
        if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(spec.at))
          throw invalid(`at '${spec.at}' is not an ISO 8601 time`, "e.g. 2026-05-01T09:00:00Z");
        if (t - now.getTime() > MAX_DELAY_MS) throw invalid("at is more than ten years away");
        first = new Date(t);
      } else if (spec.duration_ms !== undefined) {
        first = new Date(now.getTime() + spec.duration_ms);
      } else if (interval !== undefined) {
        first = new Date(now.getTime() + interval);
      } else {
        throw invalid(
          "say when: duration_ms, at, interval_ms or cron",
          'e.g. {"duration_ms": 600000, "summary": "check the deploy"}',
        );
      }
      record.kind = interval !== undefined ? "interval" : "one_shot";
      if (interval !== undefined) record.interval_ms = interval;
    }

    return await store.tx(async () => {
      const agent = await store.agents.get(agentId);
      if (!agent) throw unknownAgent(agentId);
      if (agent.status === "stopped") throw agentStopped(agentId);
      if ((await store.timers.activeCount(agentId)) >= MAX_ACTIVE_TIMERS) {
        throw new HolonError(
          "too_many_timers",
          `agent '${agentId}' already has ${MAX_ACTIVE_TIMERS} active timers`,
          { status: 409, hint: "cancel timers that are no longer needed" },
        );
      }
      const timer: TimerRecord = {
        timer_id: store.ids.next("tmr"),
        agent_id: agentId,
        kind: record.kind!,
        status: "active",
        summary,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
        created_by: createdBy,
        next_fire_at: first.toISOString(),
        fire_count: 0,
        skipped_count: 0,
        ...record,
      };
      await store.timers.put(timer);
      await this.scheduler.add({
        agent_id: agentId,
        kind: TIMER_FIRE,
        key: keyOf(timer.timer_id),
        due_at: timer.next_fire_at!,
        payload: { timer_id: timer.timer_id },
      });
      await store.appendEvent(agentId, { type: "timer_created", payload: { timer } });
      return timer;
    });
  }

  /** Cancel an active timer; cancelling a finished one says so (409). */
  async cancel(
    agentId: string,
    timerId: string,
    reason = "operator_cancelled",
  ): Promise<TimerRecord> {
    const store = this.store;
    return await store.tx(async () => {
      const timer = await store.timers.get(timerId);
      if (!timer || timer.agent_id !== agentId) {
        throw new HolonError("unknown_timer", `agent '${agentId}' has no timer '${timerId}'`, {
          status: 404,
          hint: `list them: holon timer list ${agentId}`,
        });
      }
      if (timer.status !== "active") {
        throw new HolonError("timer_not_active", `timer '${timerId}' is already ${timer.status}`, {
          status: 409,
        });
      }
      const now = store.clock.now().toISOString();
      const cancelled: TimerRecord = {
        ...timer,
        status: "cancelled",
        next_fire_at: null,
        updated_at: now,
        cancelled_at: now,
        cancel_reason: reason,
      };
      await store.timers.put(cancelled);
      await this.scheduler.cancelKey(keyOf(timerId));
      await store.appendEvent(agentId, {
        type: "timer_cancelled",
        payload: { timer_id: timerId, reason },
      });
      await store.timers.pruneFinished(agentId, KEEP_FINISHED_TIMERS);
      return cancelled;
    });
  }

  async get(agentId: string, timerId: string): Promise<TimerRecord | undefined> {
    const t = await this.store.timers.get(timerId);
    return t && t.agent_id === agentId ? t : undefined;
  }

  /** Active timers (soonest first), then the most recently finished ones. */
  async list(
    agentId: string,
    limit = 100,
  ): Promise<{ active: TimerRecord[]; finished: TimerRecord[] }> {
    return {
      active: await this.store.timers.active(agentId, limit),
      finished: await this.store.timers.finished(agentId, Math.min(limit, 20)),
    };
  }

  activeCount(agentId: string): Promise<number> {
    return this.store.timers.activeCount(agentId);
  }
}
