// Prompt-cache health: when the share of input a provider serves from its prompt cache falls
// (a prefix that changes every round), an event names the first request that missed within
// three rounds, and `holon status` shows it until the share recovers.
import { afterAll, describe, expect, it } from "vitest";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

describe("prompt-cache health", () => {
  let rt: TestRuntime | undefined;
  afterAll(async () => {
    await rt?.close();
  });

  it("a drop in the cached share is an event within three rounds, shown by holon status", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    rt = await startRuntime({ home });
    const round = (i: number, cached: number) =>
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "true" }, call_id: `c${i}` }], {
        usage: { input_tokens: 4000, cached_tokens: cached, output_tokens: 10 },
      });
    // Four warm rounds, then the prefix changes on every request: nothing is cached.
    fake.enqueue(
      round(1, 3600),
      round(2, 3600),
      round(3, 3600),
      round(4, 3600),
      round(5, 0),
      round(6, 0),
      round(7, 0),
      reply.text("done", { input_tokens: 4000, cached_tokens: 0, output_tokens: 1 }),
    );
    expect((await rt.req("POST", "/control/agents/main/prompt", { text: "go" })).status).toBe(202);
    const events = async () =>
      await rt!.host.store.events.query("main", { limit: 500, order: "asc" });
    await waitFor(async () => (await events()).some((e) => e.type === "turn_terminal"), {
      what: "the turn",
    });

    const rounds = (await events()).filter((e) => e.type === "provider_round_completed");
    const degraded = (await events()).filter((e) => e.type === "prompt_cache_degraded");
    expect(degraded.length).toBe(1);
    const d = degraded[0]!;
    const firstLow = rounds[4]!.payload as { run_id: string; round: number };
    expect(d.payload).toMatchObject({
      baseline_share: 0.9,
      current_share: 0,
      first_changed: { run_id: firstLow.run_id, round: firstLow.round },
    });
    // Raised no later than the third low round.
    expect(d.event_seq).toBeLessThan(rounds[7]!.event_seq);

    const status = await rt.req("GET", "/agents/main/status");
    expect(status.json.prompt_cache).toMatchObject({ state: "degraded", current_share: 0 });
    const cli = await runCli(["status"], { env: { HOLON_HOME: home } });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/cache: +degraded since .*90% → 0%.*round \d+/);

    // A warm round again clears it.
    fake.enqueue(reply.text("warm", { input_tokens: 4000, cached_tokens: 3800, output_tokens: 1 }));
    expect((await rt.req("POST", "/control/agents/main/prompt", { text: "again" })).status).toBe(
      202,
    );
    await waitFor(async () => (await events()).some((e) => e.type === "prompt_cache_recovered"), {
      what: "recovery",
    });
    expect((await rt.req("GET", "/agents/main/status")).json.prompt_cache).toBeNull();
  });

  it("small requests and a single cold round raise nothing", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const local = await startRuntime({ home });
    try {
      const tool = (i: number, input: number, cached: number) =>
        reply.tools([{ name: "ExecCommand", arguments: { cmd: "true" }, call_id: `s${i}` }], {
          usage: { input_tokens: input, cached_tokens: cached, output_tokens: 1 },
        });
      fake.enqueue(
        tool(1, 4000, 3600),
        tool(2, 4000, 3600),
        tool(3, 4000, 3600),
        tool(4, 4000, 0), // one cold round (a cache that expired)
        tool(5, 4000, 3600),
        tool(6, 500, 0), // too small to judge
        reply.text("done", { input_tokens: 600, cached_tokens: 0, output_tokens: 1 }),
      );
      await local.req("POST", "/control/agents/main/prompt", { text: "go" });
      const events = async () =>
        await local.host.store.events.query("main", { limit: 500, order: "asc" });
      await waitFor(async () => (await events()).some((e) => e.type === "turn_terminal"), {
        what: "the turn",
      });
      expect((await events()).some((e) => e.type === "prompt_cache_degraded")).toBe(false);
    } finally {
      await local.close();
    }
  });
});
