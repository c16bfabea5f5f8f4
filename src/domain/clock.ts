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

export const randomIds: IdSource = {
  next: (prefix) => `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 20)}`,
};
