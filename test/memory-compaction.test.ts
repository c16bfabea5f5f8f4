// Turn-local compaction end to end: a scripted model with a 16k-token window drives 300
// tool rounds, each with 4 KB of command output, through the real `holon run`. Every request
// must fit the window (the fake refuses any that does not, as a real provider would), the
// final answer must arrive, and the transcript must keep every round in full.
import { openHomeStore } from "./helpers/raw-store.ts";
import { describe, expect, it } from "vitest";
import { runCli, tempHome } from "./helpers/home.ts";
import { fault, reply, type RecordedRequest } from "./fake-provider/server.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

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
      // Between compactions the projection only grows at its end, so most requests go out
      // incrementally (previous_response_id); the newest full one carries the recap.
      const fullRequests = sent.filter((x) => !x.body.previous_response_id);
      expect(fullRequests.length).toBeLessThan(ROUNDS / 2);
      const last = JSON.stringify(fullRequests.at(-1)!.body.input);
      expect(last).toContain("turn-local recap");
      expect(JSON.stringify(sent.at(-1)!.body.input)).toContain(`round ${ROUNDS}`);
      expect(last).toMatch(/Rounds 1–\d+/);

      const store = openHomeStore(home);
      try {
        const agent = out.agent_id as string;
        const entries = await store.transcript.recent(agent, 100_000);
        const tools = entries.filter((e) => e.kind === "tool_execution");
        expect(tools.length).toBe(ROUNDS);
        // compaction changed only the projection: every round's full output is on record
        expect(tools.every((e) => String(e.data.rendered).includes("a".repeat(4096)))).toBe(true);
        expect(entries.filter((e) => e.kind === "assistant_round").length).toBe(ROUNDS + 1);
        const events = (await store.events.after(agent, 0, 100_000)).filter(
          (e) => e.type === "context_compacted",
        );
        expect(events.length).toBeGreaterThan(1);
        // every full request after the first says why it could not continue incrementally
        const misses = (await store.events.after(agent, 0, 100_000))
          .filter((e) => e.type === "provider_round_completed")
          .map((e) => (e.payload as { continuation?: { reason: string } }).continuation?.reason)
          .filter(Boolean);
        const intentional = (await store.events.after(agent, 0, 100_000))
          .filter((e) => e.type === "provider_round_completed")
          .map(
            (e) =>
              (e.payload as { continuation?: { intentional: boolean } }).continuation?.intentional,
          )
          .filter((x) => x !== undefined);
        expect(intentional.slice(1).every((x) => x === true)).toBe(true);
        expect(misses[0]).toBe("no_previous_exchange");
        // ...and each of those was an intentional compaction, not unexpected drift
        expect(misses.slice(1).every((r) => r === "compaction_reset")).toBe(true);
        expect(misses.length).toBe(events.length + 1);
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

  it("the same holds over the Anthropic Messages wire (80 rounds)", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "anthropic_messages", fake.baseUrl("anthropic"));
    await setWindow(home, { context_window_tokens: WINDOW, runtime_max_output_tokens: 2_000 });
    const ROUNDS = 80;
    let calls = 0;
    let largest = 0;
    fake.setFallback((req) => {
      largest = Math.max(largest, tokensOf(req));
      if (tokensOf(req) > WINDOW) return fault.contextLength();
      calls++;
      if (calls > ROUNDS) return reply.text("done");
      return reply.tools([
        {
          name: "ExecCommand",
          arguments: { cmd: `head -c 4096 /dev/zero | tr '\\0' a; echo " r${calls}"` },
          call_id: `toolu_${calls}`,
        },
      ]);
    });
    try {
      const r = await runCli(["run", "--json", "--max-turns", "200", "loop"], {
        env: { HOLON_HOME: home },
        timeoutMs: 120_000,
      });
      expect(r.code, r.stderr + r.stdout.slice(0, 2000)).toBe(0);
      expect(JSON.parse(r.stdout).final_text).toBe("done");
      expect(largest).toBeLessThanOrEqual(WINDOW - 2_000);
    } finally {
      fake.setFallback(null);
    }
  }, 180_000);

  it("a provider that refuses a request as too long gets the round again, compacted harder", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    // the catalog claims 16k, but this provider refuses anything above 11,000 (wire bytes / 4);
    // it reports usage as it counts, so calibration learns its ratio too
    await setWindow(home, { context_window_tokens: WINDOW, runtime_max_output_tokens: 2_000 });
    const ROUNDS = 40;
    let calls = 0;
    let refused = 0;
    fake.setFallback((req) => {
      if (tokensOf(req) > 11_000 && !req.body.previous_response_id) {
        refused++;
        return fault.contextLength();
      }
      calls++;
      if (calls > ROUNDS) return reply.text("finished");
      return reply.tools(
        [
          {
            name: "ExecCommand",
            arguments: { cmd: `head -c 4096 /dev/zero | tr '\\0' a; echo " r${calls}"` },
            call_id: `call_${calls}`,
          },
        ],
        { usage: { input_tokens: tokensOf(req), output_tokens: 20 } },
      );
    });
    try {
      const r = await runCli(["run", "--json", "--max-turns", "100", "loop"], {
        env: { HOLON_HOME: home },
        timeoutMs: 120_000,
      });
      expect(r.code, r.stderr + r.stdout.slice(-2500)).toBe(0);
      expect(JSON.parse(r.stdout).final_text).toBe("finished");
      expect(refused).toBeGreaterThan(0);
      expect(refused).toBeLessThanOrEqual(2);
    } finally {
      fake.setFallback(null);
    }
  }, 180_000);

  it("validates the context settings", async () => {
    const home = tempHome();
    const env = { HOLON_HOME: home };
    for (const [key, value] of [
      ["context.keep_recent_rounds", "0"],
      ["context.keep_recent_rounds", "51"],
      ["context.recap_share_percent", "abc"],
      ["context.remote_compaction", "maybe"],
    ] as const) {
      const r = await runCli(["config", "set", key, value], { env });
      expect(r.code, `${key}=${value}`).not.toBe(0);
    }
    const ok = await runCli(["config", "set", "context.keep_recent_rounds", "3"], { env });
    expect(ok.code, ok.stderr).toBe(0);
    const get = await runCli(["config", "get", "context.keep_recent_rounds"], { env });
    expect(get.stdout).toContain("3");
  });

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

  it("with remote compaction on, an OpenAI Responses turn compacts through the provider when the local projection is not enough", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    await setWindow(home, { context_window_tokens: WINDOW, runtime_max_output_tokens: 2_000 });
    const on = await runCli(["config", "set", "context.remote_compaction", "true"], {
      env: { HOLON_HOME: home },
    });
    expect(on.code, on.stderr).toBe(0);
    const before = fake.requests.length;
    let compactInput: any[] = [];
    fake.setCompact((req) => {
      compactInput = req.body.input;
      return [
        { type: "message", role: "user", content: [{ type: "input_text", text: "big" }] },
        { type: "compaction", id: "cmp_item_1", encrypted_content: "ENCRYPTED-WINDOW-1" },
      ];
    });
    fake.enqueue(
      reply.tools([
        { name: "ExecCommand", arguments: { cmd: "head -c 30000 /dev/zero | tr '\\0' b" } },
      ]),
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "echo small" }, call_id: "c_small" }]),
      reply.text("Done with the big output."),
    );
    try {
      const r = await runCli(["run", "--json", "big"], { env: { HOLON_HOME: home } });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.final_text).toBe("Done with the big output.");
      const sent = fake.requests.slice(before);
      const compacts = sent.filter((x) => x.path.endsWith("/responses/compact"));
      expect(compacts).toHaveLength(1);
      // the compact call got the whole window, and the next request replays its output as-is
      expect(JSON.stringify(compactInput)).toContain("b".repeat(1000));
      const responses = sent.filter((x) => x.path.endsWith("/responses"));
      expect(responses).toHaveLength(3);
      const next = responses[1]!;
      const input = JSON.stringify(next.body.input);
      expect(next.body.previous_response_id).toBeUndefined();
      expect(input).toContain("ENCRYPTED-WINDOW-1");
      expect(input).not.toContain("b".repeat(1000));
      expect(tokensOf(next)).toBeLessThan(WINDOW);
      // the compacted window is now the provider window: the next round builds on it
      const third = responses[2]!;
      expect(third.body.previous_response_id).toBeTruthy();
      expect(third.body.input).toEqual([
        { type: "function_call_output", call_id: "c_small", output: expect.any(String) },
      ]);

      const store = openHomeStore(home);
      try {
        const ev = (await store.events.after(out.agent_id, 0, 10_000)).find(
          (e) => e.type === "context_compacted",
        );
        expect(ev?.payload).toMatchObject({
          strategy: "remote_compaction",
          remote: { compaction_items: 1, encrypted_bytes: 18 },
        });
        const rounds = (await store.events.after(out.agent_id, 0, 10_000))
          .filter((e) => e.type === "provider_round_completed")
          .map((e) => (e.payload as { continuation?: Record<string, unknown> }).continuation);
        expect(rounds).toHaveLength(3);
        expect(rounds[1]).toMatchObject({
          reason: "compaction_reset",
          compaction: "remote_compaction",
          intentional: true,
          window_replayed: true,
          compaction_items: 1,
        });
        expect(rounds[2]).toBeUndefined(); // incremental
        // the transcript keeps the full output
        const tool = (await store.transcript.recent(out.agent_id, 100)).find(
          (e) => e.kind === "tool_execution",
        );
        expect(String(tool?.data.rendered)).toContain("b".repeat(20_000));
      } finally {
        store.close();
      }
    } finally {
      fake.setCompact(null);
    }
  });

  it("a context-window refusal triggers remote compaction when it is on", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    await setWindow(home, { context_window_tokens: WINDOW, runtime_max_output_tokens: 2_000 });
    await runCli(["config", "set", "context.remote_compaction", "true"], {
      env: { HOLON_HOME: home },
    });
    let compacts = 0;
    fake.setCompact(() => {
      compacts++;
      return [{ type: "compaction", id: `cmp_${compacts}`, encrypted_content: "ENC" }];
    });
    let calls = 0;
    let refused = 0;
    fake.setFallback((req) => {
      if (tokensOf(req) > 9_500 && !req.body.previous_response_id) {
        refused++;
        return fault.contextLength();
      }
      calls++;
      if (calls > 30) return reply.text("finished");
      return reply.tools([
        {
          name: "ExecCommand",
          arguments: { cmd: `head -c 4096 /dev/zero | tr '\\0' a; echo " r${calls}"` },
          call_id: `call_${calls}`,
        },
      ]);
    });
    try {
      const r = await runCli(["run", "--json", "--max-turns", "100", "loop"], {
        env: { HOLON_HOME: home },
        timeoutMs: 120_000,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.code, r.stderr + r.stdout.slice(-2500)).toBe(0);
      expect(JSON.parse(r.stdout).final_text).toBe("finished");
      expect(refused).toBeGreaterThan(0);
      expect(compacts).toBeGreaterThan(0);
    } finally {
      fake.setCompact(null);
      fake.setFallback(null);
    }
  }, 120_000);

  it("an endpoint without the compact route is remembered as unsupported and not asked again", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    await setWindow(home, { context_window_tokens: WINDOW, runtime_max_output_tokens: 2_000 });
    await runCli(["config", "set", "context.remote_compaction", "true"], {
      env: { HOLON_HOME: home },
    });
    const before = fake.requests.length;
    const big = { name: "ExecCommand", arguments: { cmd: "head -c 30000 /dev/zero | tr '\\0' b" } };
    fake.enqueue(reply.tools([big]), reply.tools([{ ...big, call_id: "c2" }]), reply.text("ok"));
    const r = await runCli(["run", "--json", "big twice"], { env: { HOLON_HOME: home } });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    const sent = fake.requests.slice(before);
    expect(sent.filter((x) => x.path.endsWith("/responses/compact"))).toHaveLength(1);
    const store = openHomeStore(home);
    try {
      const skipped = (await store.events.after(out.agent_id, 0, 10_000))
        .filter((e) => e.type === "remote_compaction_skipped")
        .map((e) => (e.payload as { reason: string }).reason);
      expect(skipped).toEqual(["unsupported_endpoint", "skipped_unsupported_endpoint"]);
    } finally {
      store.close();
    }
  });
});
