// The deadline scheduler: the one owner of "something must happen at time T". Deadlines
// live in the database (store/deadlines.ts); this keeps a single timer for the nearest
// one, re-armed at start and after every change. When a deadline falls due its handler
// turns it into a message draft, and the deadline's removal and the message's admission
// commit together, so each deadline fires exactly once, even across a crash. A deadline
// missed while the host was down is simply due at start and fires then, once.
import type { Clock, IdSource } from "../domain/clock.ts";
import type { Deadline } from "../domain/deadline.ts";
import type { Ingress, MessageDraft } from "../agent/ingress.ts";
import type { Store } from "../store/db.ts";

/** Turns a due deadline into what the agent receives; null drops it (recorded). */
export type DeadlineHandler = (deadline: Deadline) => MessageDraft | null;

export type NewDeadline = {
  agent_id: string;
  kind: string;
  key?: string;
  due_at: string;
  payload?: Record<string, unknown>;
};

/** Node timers cannot wait longer than this; a farther deadline re-arms on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const BATCH = 100;

export class DeadlineScheduler {
  private readonly store: Store;
  private readonly ingress: Ingress;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  private readonly handlers: ReadonlyMap<string, DeadlineHandler>;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedFor: string | undefined;
  private rearmQueued = false;
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
  add(d: NewDeadline): Deadline {
    const deadline: Deadline = {
      id: this.ids.next("dl"),
      agent_id: d.agent_id,
      kind: d.kind,
      due_at: d.due_at,
      payload: d.payload ?? {},
      created_at: this.clock.now().toISOString(),
    };
    if (d.key !== undefined) deadline.key = d.key;
    this.store.tx(() => this.store.deadlines.put(deadline));
    this.changed();
    return deadline;
  }

  /** Drop the deadline with this key (joins the caller's transaction). */
  cancelKey(key: string): boolean {
    const dropped = this.store.tx(() => this.store.deadlines.dropKey(key));
    if (dropped) this.changed();
    return dropped;
  }

  byKey(key: string): Deadline | undefined {
    return this.store.deadlines.byKey(key);
  }

  /** Arm for the nearest deadline. Called at start; due ones fire right away. */
  start(): void {
    this.running = true;
    this.rearm();
  }

  close(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = undefined;
  }

  /**
   * Fire everything due now. Each deadline is removed and its message admitted in one
   * transaction. Exposed for tests that drive a fake clock.
   */
  fireDue(): number {
    let fired = 0;
    for (;;) {
      const due = this.store.deadlines.due(this.clock.now().toISOString(), BATCH);
      if (due.length === 0) break;
      for (const d of due) {
        const handler = this.handlers.get(d.kind);
        this.store.tx(() => {
          if (!this.store.deadlines.delete(d.id)) return; // already cancelled or fired
          const draft = handler ? handler(d) : null;
          if (draft) {
            this.ingress.admit(draft);
          } else {
            this.store.appendEvent(d.agent_id, {
              type: "deadline_dropped",
              payload: {
                deadline_id: d.id,
                kind: d.kind,
                due_at: d.due_at,
                reason: handler ? "handler_declined" : "no_handler",
              },
            });
          }
        });
        fired++;
      }
      if (due.length < BATCH) break;
    }
    return fired;
  }

  /** After a change: re-arm once the current transaction has committed. */
  private changed(): void {
    if (this.rearmQueued) return;
    this.rearmQueued = true;
    queueMicrotask(() => {
      this.rearmQueued = false;
      this.rearm();
    });
  }

  private rearm(): void {
    if (!this.running) return;
    const next = this.store.deadlines.nextDue();
    if (next === this.armedFor && this.timer) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = next;
    if (next === undefined) return;
    const delay = Math.max(0, Date.parse(next) - this.clock.now().getTime());
    this.timer = setTimeout(() => this.onTimer(), Math.min(delay, MAX_TIMER_MS));
    this.timer.unref?.();
  }

  private onTimer(): void {
    this.timer = undefined;
    this.armedFor = undefined;
    if (!this.running) return;
    try {
      this.fireDue();
    } finally {
      this.rearm();
    }
  }
}
