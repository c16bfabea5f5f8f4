// A turn whose every model is rate-limited beyond the in-place cap ends as a wait: the
// closure says awaiting_timer, a durable deadline holds the message, and at the deadline
// (driven with an injected clock and `scheduler.fireDue()`) the message is admitted again
// and its turn runs from the start; the same deadline survives a restart and fires at start.
import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { PROVIDER_RETRY } from "../src/waiting/provider-retry.ts";
import { startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { fault, reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

type TestClock = Clock & { advance(ms: number): void };
function testClock(): TestClock {
  let t = Date.now();
  return { now: () => new Date(t), sleep: systemClock.sleep, advance: (ms) => (t += ms) };
}

async function prompt(rt: TestRuntime, text: string): Promise<string> {
  const res = await rt.req("POST", "/control/agents/main/prompt", { text });
  expect(res.status).toBe(202);
  return res.json.message_id as string;
}
function settled(rt: TestRuntime, id: string) {
  return waitFor(
    async () => {
      const s = (await rt.host.store.messages.get(id))?.status;
      return s && s !== "queued" && s !== "processing" ? s : undefined;
    },
    { what: `message ${id} to settle` },
  );
}
async function events(rt: TestRuntime, type: string) {
  return (await rt.host.store.events.query("main", { limit: 100_000, order: "asc" })).filter(
    (e) => e.type === type,
  );
}
/** The message admitted again for `originalId`, once it exists. */
function retryOf(rt: TestRuntime, originalId: string) {
  return waitFor(
    async () =>
      (await rt.host.store.messages.recent("main", 50)).find(
        (m) => m.metadata?.provider_retry_of === originalId,
      ),
    { what: `the retry of ${originalId}` },
  );
}

describe("rate-limited beyond the cap", () => {
  it("ends the turn as awaiting_timer and runs the message again at the deadline, also after a restart", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const clock = testClock();
    let rt = await startRuntime({ home, clock });
    try {
      // retry-after 120 s is past the default 60 s cap: no in-place wait, no failure.
      fake.enqueue(fault.status(429, { headers: { "retry-after": "120" } }));
      const m1 = await prompt(rt, "summarise the logs");
      await settled(rt, m1);
      const expectedAt = new Date(clock.now().getTime() + 120_000).toISOString();
      const closure = (await events(rt, "closure_decided")).at(-1)!.payload as Record<
        string,
        unknown
      >;
      expect(closure).toMatchObject({
        outcome: "waiting",
        waiting_reason: "awaiting_timer",
        turn_outcome: "retry_at",
      });
      expect(closure.evidence).toContain(`retry_at:${expectedAt}`);
      expect(await events(rt, "runtime_error")).toHaveLength(0);
      expect((await events(rt, "provider_retry_scheduled")).at(-1)?.payload).toMatchObject({
        message_id: m1,
        retry_at: expectedAt,
      });
      const terminal = (await events(rt, "turn_terminal")).at(-1)!.payload;
      expect(terminal).toMatchObject({ reason: "provider_rate_limited", retry_at: expectedAt });

      // Visible where an operator looks.
      const state = (await rt.req("GET", "/agents/main/state")).json;
      expect(state.agent.closure).toMatchObject({ waiting_reason: "awaiting_timer" });
      expect(state.deadlines).toEqual([
        expect.objectContaining({ kind: PROVIDER_RETRY, due_at: expectedAt }),
      ]);

      // Not due yet: nothing fires.
      clock.advance(60_000);
      expect(await rt.host.services.scheduler.fireDue()).toBe(0);

      // At the deadline the same prompt runs again from the start of its turn.
      fake.enqueue(reply.text("logs summarised"));
      clock.advance(60_001);
      expect(await rt.host.services.scheduler.fireDue()).toBe(1);
      const again = await retryOf(rt, m1);
      expect(again.body).toEqual((await rt.host.store.messages.get(m1))!.body);
      expect(again.kind).toBe("operator_prompt");
      expect(again.trust).toBe((await rt.host.store.messages.get(m1))!.trust);
      await settled(rt, again.id);
      expect((await events(rt, "closure_decided")).at(-1)!.payload).toMatchObject({
        outcome: "completed",
      });
      const resent = fake.requests.at(-1)!.body as { input: { role?: string; content?: string }[] };
      expect(JSON.stringify(resent.input)).toContain("summarise the logs");

      // Rate-limited again, then the host goes down past the deadline.
      fake.enqueue(fault.status(429, { headers: { "retry-after-ms": "300000" } }));
      const m2 = await prompt(rt, "and the metrics");
      await settled(rt, m2);
      expect(await rt.host.store.deadlines.forAgent("main")).toHaveLength(1);
      await rt.close();
      clock.advance(301_000);
      fake.enqueue(reply.text("metrics done"));
      rt = await startRuntime({ home, clock }); // the scheduler fires what fell due at start
      const second = await retryOf(rt, m2);
      await settled(rt, second.id);
      expect(await rt.host.store.deadlines.forAgent("main")).toHaveLength(0);
      expect((await events(rt, "closure_decided")).at(-1)!.payload).toMatchObject({
        outcome: "completed",
      });
    } finally {
      await rt.close();
    }
  });
});

describe("the retry-after cap", () => {
  it("comes from HOLON_PROVIDER_RETRY_AFTER_CAP_MS: under it the wait is in place, past it the turn waits on a deadline", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const clock = testClock();
    const env = { ...process.env, HOLON_PROVIDER_RETRY_AFTER_CAP_MS: "5000" };
    const rt = await startRuntime({ home, clock, env });
    try {
      // 50 ms is under the cap: waited out in place, the same turn answers.
      fake.enqueue(fault.status(429, { headers: { "retry-after-ms": "50" } }), reply.text("fine"));
      const m1 = await prompt(rt, "first");
      expect(await settled(rt, m1)).toBe("processed");
      expect((await events(rt, "closure_decided")).at(-1)!.payload).toMatchObject({
        outcome: "completed",
      });
      expect(await events(rt, "provider_retry_scheduled")).toHaveLength(0);

      // 10 s is within the default 60 s cap but past this one: the turn ends as a wait.
      fake.enqueue(fault.status(429, { headers: { "retry-after": "10" } }));
      const m2 = await prompt(rt, "second");
      await settled(rt, m2);
      const expectedAt = new Date(clock.now().getTime() + 10_000).toISOString();
      expect((await events(rt, "closure_decided")).at(-1)!.payload).toMatchObject({
        outcome: "waiting",
        waiting_reason: "awaiting_timer",
        turn_outcome: "retry_at",
      });
      expect((await events(rt, "provider_retry_scheduled")).at(-1)?.payload).toMatchObject({
        message_id: m2,
        retry_at: expectedAt,
      });
    } finally {
      await rt.close();
    }
  });
});
