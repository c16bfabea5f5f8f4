// A live event stream that outlives the host it reads from. `followEvents` keeps the last
// event_seq it delivered and, whenever the stream ends (host restart, `stream_overflow`, a
// dropped connection), finds the host again and resumes with Last-Event-ID, so no event is
// missed or repeated. When retention has already removed the events it would resume after
// (410 `replay_unavailable`), it says so and continues from the oldest event still kept.
import type { EventEnvelope } from "../domain/events.ts";
import { ClientError, type HolonClient } from "./client.ts";

export type FollowNotice =
  | { kind: "disconnected"; after_seq: number }
  | { kind: "reconnected"; after_seq: number }
  | { kind: "overflow"; after_seq: number }
  | { kind: "replay_unavailable"; after_seq: number; resumed_after_seq: number };

export type FollowOptions = {
  /** Find the host (again): a restarted host may have a new address or token. */
  connect: () => HolonClient | undefined;
  agentId: string;
  /**
   * Read through the operator's /control twin of the stream, which names any agent (private
   * children, finished run agents); the public stream names public agents only.
   */
  operator?: boolean;
  afterSeq: number;
  onEvent: (e: EventEnvelope) => void;
  onNotice?: (n: FollowNotice) => void;
  signal: AbortSignal;
  /** Delay before reconnecting, doubled up to maxDelayMs while the host stays away. */
  minDelayMs?: number;
  maxDelayMs?: number;
};

/** Follow until `signal` aborts. Resolves then; never rejects on connection loss. */
export async function followEvents(opts: FollowOptions): Promise<void> {
  let last = opts.afterSeq;
  const minDelay = opts.minDelayMs ?? 200;
  const maxDelay = opts.maxDelayMs ?? 2_000;
  let delay = minDelay;
  let connectedOnce = false;
  let disconnected = false;
  while (!opts.signal.aborted) {
    const client = opts.connect();
    let overflowed = false;
    if (client) {
      try {
        await client.stream(
          `${opts.operator ? "/control" : ""}/agents/${encodeURIComponent(opts.agentId)}/events/stream`,
          (type, data) => {
            if (type === "stream_overflow") {
              overflowed = true;
              return;
            }
            const e = JSON.parse(data) as EventEnvelope;
            if (e.event_seq <= last) return;
            last = e.event_seq;
            opts.onEvent(e);
          },
          opts.signal,
          { "last-event-id": String(last) },
          () => {
            if (disconnected) opts.onNotice?.({ kind: "reconnected", after_seq: last });
            disconnected = false;
            connectedOnce = true;
            delay = minDelay;
          },
        );
      } catch (err) {
        if (opts.signal.aborted) break;
        if (err instanceof ClientError && err.kind === "replay_unavailable") {
          const refusal = (err.body as { error?: { removed_through_seq?: number } })?.error;
          const resumed = refusal?.removed_through_seq ?? last;
          opts.onNotice?.({
            kind: "replay_unavailable",
            after_seq: last,
            resumed_after_seq: resumed,
          });
          last = resumed;
          continue;
        }
        if (err instanceof ClientError && err.status >= 400 && err.status !== 503) throw err;
      }
    }
    if (opts.signal.aborted) break;
    if (overflowed) {
      opts.onNotice?.({ kind: "overflow", after_seq: last });
      continue;
    }
    if (!disconnected && connectedOnce) {
      disconnected = true;
      opts.onNotice?.({ kind: "disconnected", after_seq: last });
    }
    await sleep(delay, opts.signal);
    delay = Math.min(maxDelay, delay * 2);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
