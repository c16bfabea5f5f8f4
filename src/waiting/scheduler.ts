// The deadline scheduler: the one owner of "something must happen at time T". Deadlines
// live in the database (store/deadlines.ts); this keeps a single timer for the nearest
// one, re-armed at start and after every change. When a deadline falls due its handler
// turns it into a message draft, and the deadline's removal and the message's admission
// commit together, so each deadline fires exactly once, even across a crash. A deadline
// missed while the host was down is simply due at start and fires then, once.
//
// Due times are wall-clock times, but Node timers run on a monotonic clock; so the timer
// never waits longer than REARM_MS before reading the clock again. A clock set forward
// makes deadlines due at the next re-arm (late by at most that, never lost); a clock set
// back finds nothing due yet and waits again (never fired twice: the row is gone once fired).
import type { Clock, IdSource } from "../domain/clock.ts";
import type { Deadline } from "../domain/deadline.ts";
import type { MessageEnvelope } from "../domain/message.ts";
import type { Ingress, MessageDraft } from "../agent/ingress.ts";
import type { Store } from "../store/db.ts";
import { classifyStorageError } from "../store/health.ts";

/** A draft plus what the handler records once its message is admitted (same transaction). */
export type HandledDeadline = {
  draft: MessageDraft;
  admitted(envelope: MessageEnvelope): Promise<unknown>;
};

/**
 * Turns a due deadline into what the agent receives; null drops it (recorded); "handled"
 * says the handler did all there was to do itself (an ask that expires without a message).
 */
export type DeadlineHandler = (
  deadline: Deadline,
) => Promise<MessageDraft | HandledDeadline | "handled" | null>;

export type NewDeadline = {
  agent_id: string;
  kind: string;
  key?: string;
  due_at: string;
  payload?: Record<string, unknown>;
};

/** A deadline row as `add` records it (handlers that re-arm inside a fire use it too). */
export function deadlineRecord(clock: Clock, ids: IdSource, d: NewDeadline): Deadline {
  const deadline: Deadline = {
    id: ids.next("dl"),
    agent_id: d.agent_id,
    kind: d.kind,
    due_at: d.due_at,
    payload: d.payload ?? {},
    created_at: clock.now().toISOString(),
  };
  if (d.key !== undefined) deadline.key = d.key;
  return deadline;
}

/** The longest the scheduler goes without looking at the wall clock (see the header). */
const REARM_MS = 60_000;
const BATCH = 100;

export class DeadlineScheduler {
  private readonly store: Store;
  private readonly ingress: Ingress;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  private readonly handlers: ReadonlyMap<string, DeadlineHandler>;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedFor: string | undefined;
  private running = false;

  constructor(opts: {
    store: Store;
    ingress: Ingress;
    handlers: ReadonlyMap<string, DeadlineHandler>;
  }) {
    this.store = opts.store;
    this.ingress = opts.ingress;
    this.clock = opts.store.clock;
    this.ids = opts.store.ids;
    this.handlers = opts.handlers;
  }

  /** Record a deadline (joins the caller's transaction); the timer is re-armed after it. */
  async add(d: NewDeadline): Promise<Deadline> {
    const deadline = deadlineRecord(this.clock, this.ids, d);
    await this.store.tx(async () => {
      await this.store.deadlines.put(deadline);
      this.changed();
    });
    return deadline;
  }

  /** Drop the deadline with this key (joins the caller's transaction). */
  cancelKey(key: string): Promise<boolean> {
    return this.store.tx(async () => {
      const dropped = await this.store.deadlines.dropKey(key);
      if (dropped) this.changed();
      return dropped;
    });
  }

  byKey(key: string): Promise<Deadline | undefined> {
    return this.store.deadlines.byKey(key);
  }

  /** Arm for the nearest deadline. Called at start; due ones fire right away. */
  async start(): Promise<void> {
    this.running = true;
    await this.rearm();
  }

  close(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = undefined;
  }

  /**
   * Fire everything due now. Each deadline is removed and its message admitted in the same
   * transaction (due ones are taken in batches, one transaction per batch, so a burst of
   * deadlines due together is admitted quickly). Exposed for tests that drive a fake clock.
   */
  async fireDue(): Promise<number> {
    let fired = 0;
    for (;;) {
      const due = await this.store.deadlines.due(this.clock.now().toISOString(), BATCH);
      if (due.length === 0) break;
      try {
        await this.store.tx(async () => {
          for (const d of due) await this.fireOne(d);
        });
      } catch (err) {
        if (classifyStorageError(err)) throw err; // not the handler's fault: fire later
        // One handler broke the batch (rolled back whole): go one by one, so only the
        // deadline that fails is dropped, with a record, and the rest still fire.
        for (const d of due) await this.fireAlone(d);
      }
      fired += due.length;
      if (due.length < BATCH) break;
    }
    return fired;
  }

  private async fireOne(d: Deadline): Promise<void> {
    if (!(await this.store.deadlines.delete(d.id))) return; // already cancelled or fired
    const handler = this.handlers.get(d.kind);
    const out = handler ? await handler(d) : null;
    if (out === "handled") return;
    if (out && "draft" in out && "admitted" in out) {
      await out.admitted(await this.ingress.admit(out.draft));
    } else if (out) {
      await this.ingress.admit(out);
    } else {
      await this.dropped(d, handler ? "handler_declined" : "no_handler");
    }
  }

  private async fireAlone(d: Deadline): Promise<void> {
    try {
      await this.store.tx(async () => await this.fireOne(d));
    } catch (err) {
      if (classifyStorageError(err)) throw err;
      await this.store.tx(async () => {
        if (await this.store.deadlines.delete(d.id)) await this.dropped(d, "handler_failed");
      });
    }
  }

  private async dropped(d: Deadline, reason: "handler_declined" | "no_handler" | "handler_failed") {
    await this.store.appendEvent(d.agent_id, {
      type: "deadline_dropped",
      payload: { deadline_id: d.id, kind: d.kind, due_at: d.due_at, reason },
    });
  }

  /**
   * After a change (inside its transaction): re-arm once the outermost transaction has
   * committed, so the timer is set from committed rows; once per transaction however many
   * deadlines it changed (the store runs one hook once), and not at all if it rolls back.
   */
  private changed(): void {
    this.store.afterCommit(this.rearmAfterCommit);
  }

  private readonly rearmAfterCommit = async (): Promise<void> => await this.rearm();

  private async rearm(): Promise<void> {
    if (!this.running) return;
    const next = await this.store.deadlines.nextDue();
    if (next === this.armedFor && this.timer) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = next;
    if (next === undefined) return;
    const delay = Math.max(0, Date.parse(next) - this.clock.now().getTime());
    // onTimer rethrows a handler's unexpected error: fatal, as a throw in this timer was.
    this.timer = setTimeout(() => void this.onTimer(), Math.min(delay, REARM_MS));
    this.timer.unref?.();
  }

  private async onTimer(): Promise<void> {
    this.timer = undefined;
    this.armedFor = undefined;
    if (!this.running) return;
    try {
      await this.fireDue();
    } catch (err) {
      // The store cannot be written (a full disk): nothing fired, nothing was dropped. The
      // due deadlines fire once it can, instead of the timer spinning on them meanwhile.
      if (classifyStorageError(err)) {
        void this.store.health.whenWritableAfter(err).then(async () => await this.rearm());
        return;
      }
      await this.rearm();
      throw err;
    }
    await this.rearm();
  }
}
