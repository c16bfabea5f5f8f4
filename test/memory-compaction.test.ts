// Turn-local compaction end to end: a scripted model with a 16k-token window drives 300
// tool rounds, each with 4 KB of command output, through the real `holon run`. Every request
// must fit the window (the fake refuses any that does not, as a real provider would), the
// final answer must arrive, and the transcript must keep every round in full.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Store } from "../src/store/db.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import { join } from "node:path";
import { cleanupHomes, runCli, tempHome } from "./helpers/home.ts";
import {
  fault,
  reply,
  startFakeProvider,
  type FakeProvider,
  type RecordedRequest,
} from "./fake-provider/server.ts";
import { configureFakeProvider } from "./helpers/provider.ts";

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
  cleanupHomes();
});

const WINDOW = 16_000;
/** What the fake charges for a request: its whole wire body at four bytes a token. */
const tokensOf = (r: RecordedRequest) => Math.ceil(Buffer.byteLength(r.raw) / 4);

async function setWindow(home: string, entry: Record<string, unknown>) {
  const r = await runCli(
    ["config", "set", "models.catalog.fake/test-model", JSON.stringify(entry)],
    {
      env: { HOLON_HOME: home },
    },
  );
  expect(r.code, r.stderr).toBe(0);
}

describe("turn-local compaction", () => {
  it("300 rounds of 4 KB outputs in a 16k window: every request fits, the answer arrives, the transcript keeps all", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    await setWindow(home, { context_window_tokens: WINDOW, runtime_max_output_tokens: 2_000 });
    const ROUNDS = 300;
    let calls = 0;
    let largest = 0;
    const before = fake.requests.length;
    fake.setFallback((req) => {
      const size = tokensOf(req);
      largest = Math.max(largest, size);
      if (size > WINDOW) return fault.contextLength();
      calls++;
      if (calls > ROUNDS) return reply.text(`All ${ROUNDS} rounds done.`);
      return reply.tools(
        [
          {
            name: "ExecCommand",
            arguments: { cmd: `head -c 4096 /dev/zero | tr '\\0' a; echo " round ${calls}"` },
            call_id: `call_${calls}`,
          },
        ],
        { text: `Round ${calls}: checking the output again.` },
      );
    });
    try {
      const r = await runCli(["run", "--json", "--max-turns", "400", "loop"], {
        env: { HOLON_HOME: home },
        timeoutMs: 180_000,
      });
      expect(r.code, r.stderr + r.stdout.slice(0, 2000)).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.final_text).toBe(`All ${ROUNDS} rounds done.`);
      const sent = fake.requests.slice(before);
      expect(sent.length).toBe(ROUNDS + 1);
      expect(largest).toBeLessThanOrEqual(WINDOW - 2_000);
      // The last request still carries the recap and the newest round exactly.
      const last = JSON.stringify(sent.at(-1)!.body.input);
      expect(last).toContain("turn-local recap");
      expect(last).toContain(`round ${ROUNDS}`);
      expect(last).toMatch(/Rounds 1–\d+/);

      const store = new Store(join(home, "holon.db"), systemClock, randomIds);
      try {
        const agent = out.agent_id as string;
        const entries = store.transcript.recent(agent, 100_000);
        const tools = entries.filter((e) => e.kind === "tool_execution");
        expect(tools.length).toBe(ROUNDS);
        // compaction changed only the projection: every round's full output is on record
        expect(tools.every((e) => String(e.data.rendered).includes("a".repeat(4096)))).toBe(true);
        expect(entries.filter((e) => e.kind === "assistant_round").length).toBe(ROUNDS + 1);
        const events = store.events
          .after(agent, 0, 100_000)
          .filter((e) => e.type === "context_compacted");
        expect(events.length).toBeGreaterThan(1);
        for (const e of events) {
          const p = e.payload as {
            before_tokens: number;
            after_tokens: number;
            budget_tokens: number;
          };
          expect(p.after_tokens).toBeLessThan(p.before_tokens);
          expect(p.after_tokens).toBeLessThanOrEqual(p.budget_tokens);
        }
      } finally {
        store.close();
      }
    } finally {
      fake.setFallback(null);
    }
  }, 240_000);

  it("fails the turn with an explicit error when even the newest round cannot fit", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    await setWindow(home, { context_window_tokens: 2_000 });
    const before = fake.requests.length;
    const r = await runCli(["run", "--json", "hello"], { env: { HOLON_HOME: home } });
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.outcome).toBe("failed");
    expect(JSON.stringify(out)).toContain("context_budget_exceeded");
    // nothing oversized was sent
    expect(fake.requests.length).toBe(before);
  });
});
