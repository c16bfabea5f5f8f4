// Live event fan-out for SSE subscribers. The store publishes committed events; the hub
// encodes each one once and hands it to every subscriber of that agent. A subscriber
// that falls too far behind is disconnected (it resumes with Last-Event-ID) so a slow
// client can never hold the runtime back or grow memory without bound.
import type { EventEnvelope, EventProjectionName, ProjectedEvent } from "../domain/events.ts";
import type { Store } from "../store/db.ts";
import { HolonError } from "../domain/errors.ts";

export const MAX_SUBSCRIBER_BACKLOG = 20_000;
/**
 * A stream writes at most once per this many milliseconds: the first event after a quiet
 * spell goes out at once, and what commits within the interval after a write (the other
 * transactions of the same turn, on a busy host the turns after it) goes out together in
 * the next write. Each write is a system call on the subscriber's socket, which on loopback
 * also does the receiving side's work; under a busy host these writes were some 7% of its
 * CPU, one per transaction per subscriber.
 */
export const SSE_WRITE_INTERVAL_MS = 25;
const HEARTBEAT = new TextEncoder().encode(": heartbeat\n\n");

export function project(e: EventEnvelope, name: EventProjectionName): ProjectedEvent {
  return { ...e, projection: { name, raw_payload_included: true, redactions: [] } };
}

const encoder = new TextEncoder();

/** One event as SSE bytes, encoded once and shared by every subscriber. */
export function sseFrame(e: EventEnvelope, name: EventProjectionName): Uint8Array {
  return encoder.encode(
    `id: ${e.event_seq}\nevent: ${e.type}\ndata: ${JSON.stringify(project(e, name))}\n\n`,
  );
}

type Subscriber = {
  projection: EventProjectionName;
  push(frame: Uint8Array, seq: number): void;
};

export class EventHub {
  private readonly subs = new Map<string, Set<Subscriber>>();
  private readonly unlisten: () => void;
  private readonly writeIntervalMs: number;

  constructor(store: Store, opts: { writeIntervalMs?: number } = {}) {
    this.writeIntervalMs = opts.writeIntervalMs ?? SSE_WRITE_INTERVAL_MS;
    this.unlisten = store.onEvents((events) => this.publish(events));
  }

  private publish(events: EventEnvelope[]): void {
    for (const e of events) {
      const set = this.subs.get(e.agent_id);
      if (!set || set.size === 0) continue;
      const frames: Partial<Record<EventProjectionName, Uint8Array>> = {};
      for (const sub of set) {
        const frame = (frames[sub.projection] ??= sseFrame(e, sub.projection));
        sub.push(frame, e.event_seq);
      }
    }
  }

  /**
   * Open a stream for `agentId`: replay everything after `afterSeq` from the durable log,
   * then continue live with no gap or duplicate at the seam.
   */
  async open(
    store: Store,
    agentId: string,
    opts: {
      afterSeq: number | undefined;
      projection: EventProjectionName;
      heartbeatMs: number;
      signal: AbortSignal;
    },
  ): Promise<ReadableStream<Uint8Array>> {
    if (opts.afterSeq !== undefined) await assertReplayable(store, agentId, opts.afterSeq);
    const queue: Uint8Array[] = [];
    let lastSeq = opts.afterSeq ?? (await store.events.newestSeq(agentId));
    let replaying = true;
    const pendingLive: { frame: Uint8Array; seq: number }[] = [];
    let notify: (() => void) | undefined;
    let overflowed = false;
    let closed = false;
    let lastWrite = Number.NEGATIVE_INFINITY;
    const interval = this.writeIntervalMs;

    const sub: Subscriber = {
      projection: opts.projection,
      push: (frame, seq) => {
        if (closed) return;
        if (replaying) {
          pendingLive.push({ frame, seq });
        } else if (seq > lastSeq) {
          lastSeq = seq;
          queue.push(frame);
        }
        if (queue.length + pendingLive.length > MAX_SUBSCRIBER_BACKLOG) overflowed = true;
        const n = notify;
        notify = undefined;
        n?.();
      },
    };
    // Subscribe before reading the log, so nothing committed in between is missed.
    let set = this.subs.get(agentId);
    if (!set) this.subs.set(agentId, (set = new Set()));
    set.add(sub);
    const detach = () => {
      closed = true;
      set.delete(sub);
      const n = notify;
      notify = undefined;
      n?.();
    };
    opts.signal.addEventListener("abort", detach, { once: true });

    const replay = async () => {
      if (opts.afterSeq !== undefined) {
        for (;;) {
          const page = await store.events.after(agentId, lastSeq, 500);
          for (const e of page) queue.push(sseFrame(e, opts.projection));
          if (page.length > 0) lastSeq = page[page.length - 1]!.event_seq;
          if (page.length < 500) break;
        }
      }
      for (const p of pendingLive) {
        if (p.seq > lastSeq) {
          lastSeq = p.seq;
          queue.push(p.frame);
        }
      }
      pendingLive.length = 0;
      replaying = false;
    };

    let heartbeat: ReturnType<typeof setInterval> | undefined;
    return new ReadableStream<Uint8Array>(
      {
        start: async (controller) => {
          controller.enqueue(encoder.encode(`: connected\nretry: 1000\n\n`));
          await replay();
          heartbeat = setInterval(() => {
            queue.push(HEARTBEAT);
            const n = notify;
            notify = undefined;
            n?.();
          }, opts.heartbeatMs);
          heartbeat.unref?.();
        },
        pull: async (controller) => {
          while (queue.length === 0 && !closed && !overflowed) {
            await new Promise<void>((resolve) => (notify = resolve));
          }
          const wait = lastWrite + interval - performance.now();
          if (wait > 0 && !closed && !overflowed) {
            // Gather what else commits meanwhile into this write (see SSE_WRITE_INTERVAL_MS).
            await new Promise<void>((resolve) => setTimeout(resolve, wait).unref?.());
          }
          if (overflowed || closed) {
            if (overflowed) {
              controller.enqueue(
                encoder.encode(
                  `event: stream_overflow\ndata: {"reason":"client too slow; reconnect with Last-Event-ID"}\n\n`,
                ),
              );
            }
            clearInterval(heartbeat);
            detach();
            controller.close();
            return;
          }
          // Batch what is waiting into one chunk.
          const chunk = queue.length === 1 ? queue[0]! : Buffer.concat(queue);
          queue.length = 0;
          lastWrite = performance.now();
          controller.enqueue(chunk);
        },
        cancel: () => {
          clearInterval(heartbeat);
          detach();
        },
      },
      { highWaterMark: 1 },
    );
  }

  close(): void {
    this.unlisten();
  }
}

/**
 * Replay can only start where the log still begins. A cursor older than the oldest event
 * retention kept is refused with 410 `replay_unavailable` (never answered with a stream
 * that silently skips the removed events): the client rebuilds its view from
 * `/agents/:id/state` and resumes from that snapshot's `newest_seq`.
 */
export async function assertReplayable(
  store: Store,
  agentId: string,
  afterSeq: number,
): Promise<void> {
  const removedThrough = await store.events.removedThrough(agentId);
  if (afterSeq >= removedThrough) return;
  throw new HolonError(
    "replay_unavailable",
    `events up to ${removedThrough} of agent '${agentId}' were removed by retention, so the stream cannot resume after ${afterSeq}`,
    {
      status: 410,
      hint: `rebuild from GET /agents/${agentId}/state, then reconnect with after_seq set to its newest_seq`,
      details: {
        requested_after_seq: afterSeq,
        removed_through_seq: removedThrough,
        oldest_available_seq: removedThrough + 1,
        newest_seq: await store.events.newestSeq(agentId),
        snapshot: `/agents/${agentId}/state`,
      },
    },
  );
}
