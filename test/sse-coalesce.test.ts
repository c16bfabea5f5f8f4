// An SSE stream writes at most once per interval: the first event after a quiet spell goes
// out at once, and events committed in separate transactions within the interval after a
// write go out together in the next write (one system call on the subscriber's socket
// instead of one per transaction). Nothing is lost, reordered or repeated by the wait.
import { describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import { Store } from "../src/store/db.ts";
import { EventHub } from "../src/http/sse.ts";

const decoder = new TextDecoder();

async function commit(store: Store, n: number): Promise<void> {
  await store.tx(
    async () =>
      await store.appendEvent("a", {
        type: "runtime_error",
        payload: { run_id: null, phase: "test", summary: `event ${n}` },
      }),
  );
}

/** A macrotask later: the previous write is on its way before the next commit. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function seqsOf(chunk: Uint8Array): number[] {
  return [...decoder.decode(chunk).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

/** A store, a hub with the write interval, and one operator stream of agent `a`. */
async function withStream(
  writeIntervalMs: number,
  body: (store: Store, reader: ReadableStreamDefaultReader<Uint8Array>) => Promise<void>,
): Promise<void> {
  const store = new Store(":memory:", systemClock, randomIds);
  const hub = new EventHub(store, { writeIntervalMs });
  const abort = new AbortController();
  const reader = (
    await hub.open(store, "a", {
      afterSeq: undefined,
      projection: "operator",
      heartbeatMs: 60_000,
      signal: abort.signal,
    })
  ).getReader();
  try {
    await body(store, reader);
  } finally {
    abort.abort();
    await reader.cancel();
    hub.close();
    store.close();
  }
}

describe("SSE write coalescing", () => {
  it("sends the first event at once and gathers the next transactions into one write", async () => {
    // Long enough that the commits below, a few macrotasks apart, all fall inside it.
    await withStream(400, async (store, reader) => {
      const hello = await reader.read();
      expect(decoder.decode(hello.value)).toContain(": connected");

      await commit(store, 1);
      const first = await reader.read();
      expect(seqsOf(first.value!)).toEqual([1]);

      // Three transactions, each in a macrotask of its own: without the interval each would
      // be a write of its own (as the first one was).
      for (const n of [2, 3, 4]) {
        await tick();
        await commit(store, n);
      }
      const next = await reader.read();
      expect(seqsOf(next.value!)).toEqual([2, 3, 4]);
    });
  });

  it("with no interval every transaction is a write of its own", async () => {
    await withStream(0, async (store, reader) => {
      await reader.read();
      const seen: number[][] = [];
      for (const n of [1, 2, 3]) {
        await commit(store, n);
        seen.push(seqsOf((await reader.read()).value!));
        await tick();
      }
      expect(seen).toEqual([[1], [2], [3]]);
    });
  });
});
