// Time and ids are injected so tests can drive timers and retries without sleeping.
import { randomUUID } from "node:crypto";

export type Clock = {
  now(): Date;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
};

export type IdSource = { next(prefix: string): string };

export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * Ids as `<prefix>_` and 20 hex digits: 11 of the wall-clock millisecond, then 9 of a counter
 * that starts at a random value in each process and counts up. Ids are therefore unique in a
 * process and ordered by creation time, so a new row's id lands at the end of its unique
 * index: one leaf page per commit instead of one page per row (random ids touched a different
 * leaf for every insert, some 4 KB of write-ahead log each). They name rows, never grant
 * anything: tokens and capabilities come from `randomBytes` where they are minted.
 */
const ID_COUNTER_SPAN = 2 ** 36;
let idCounter = Number.parseInt(randomUUID().replaceAll("-", "").slice(0, 9), 16);

export const randomIds: IdSource = {
  next: (prefix) => {
    idCounter = (idCounter + 1) % ID_COUNTER_SPAN;
    const ms = Date.now().toString(16).padStart(11, "0").slice(-11);
    return `${prefix}_${ms}${idCounter.toString(16).padStart(9, "0")}`;
  },
};
