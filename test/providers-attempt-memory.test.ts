// Each provider attempt joins the run's abort signal with its own timeout. Node keeps such a
// joined signal alive, with whatever its listeners reach, until it aborts; one that outlives
// its attempt keeps that call's SDK client, stream and response reachable for as long as the
// run's signal lives. A host makes hundreds of thousands of calls over weeks.
import { setFlagsFromString, queryObjects } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, expect, it } from "vitest";
import OpenAI from "openai";
import { callProvider, createDefaultTransports } from "../src/providers/fallback.ts";
import { DEFAULT_RETRY_POLICY } from "../src/providers/retry.ts";
import { baseRequest, candidateFor, fakeClock } from "./fake-provider/fixtures.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
});

it("finished attempts keep nothing alive through the run's signal", async () => {
  const run = new AbortController(); // lives on, like a run's or a host's signal
  const calls = 40;
  for (let i = 0; i < calls; i++) {
    fake.enqueue(reply.text(`answer ${i}`));
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_responses")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
      policy: { ...DEFAULT_RETRY_POLICY, max_retries: 0 },
      signal: run.signal,
    });
    expect(result.ok).toBe(true);
  }
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
  gc();
  const clients = queryObjects(OpenAI, { format: "count" }) as number;
  const signals = queryObjects(AbortSignal, { format: "count" }) as number;
  // A client may be cached; one per call must not be, nor a signal per call.
  expect(clients).toBeLessThan(calls / 4);
  expect(signals).toBeLessThan(calls / 4);
  expect(run.signal.aborted).toBe(false);
});
