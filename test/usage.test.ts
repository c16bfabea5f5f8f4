// Usage and cost from the recorded model rounds: totals equal what the (fake) provider
// reported, and cost uses the prices configured for the model (cached input apart).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reply } from "./fake-provider/server.ts";
import { runCli, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

describe("usage and cost", () => {
  it("sums the provider's reported usage per agent, model and day, priced from the catalog", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    // Prices as a user sets them: a models.catalog entry in config.json.
    const cfgPath = join(home, "config.json");
    const cfg = JSON.parse(readFileSync(cfgPath, "utf8"));
    cfg.models = {
      catalog: {
        "fake/test-model": {
          pricing: { input_per_mtok: 2, cached_input_per_mtok: 0.5, output_per_mtok: 10 },
        },
      },
    };
    writeFileSync(cfgPath, JSON.stringify(cfg, null, 2));

    const rt = await startRuntime({ home });
    try {
      fake.enqueue(
        reply.text("one", { input_tokens: 1000, output_tokens: 200, cached_tokens: 400 }),
        reply.text("two", { input_tokens: 3000, output_tokens: 500 }),
      );
      for (const text of ["first", "second"]) {
        const r = await rt.req("POST", "/control/agents/main/prompt", { text });
        expect(r.status).toBe(202);
        const id = r.json.message_id;
        await waitFor(async () => (await rt.host.store.messages.get(id))?.status === "processed", {
          what: `${text} processed`,
        });
      }
      const u = await rt.req("GET", "/agents/main/usage?since=1d");
      expect(u.status).toBe(200);
      expect(u.json.total).toMatchObject({
        rounds: 2,
        input_tokens: 4000,
        cached_input_tokens: 400,
        output_tokens: 700,
      });
      // (600×2 + 400×0.5 + 200×10 + 3000×2 + 500×10) / 1e6
      expect(u.json.total.cost_usd).toBeCloseTo(0.0144, 10);
      expect(u.json.groups).toHaveLength(1);
      expect(u.json.groups[0]).toMatchObject({ agent_id: "main", model_ref: "fake/test-model" });
      expect(u.json.unpriced_models).toEqual([]);

      const all = await rt.req("GET", "/usage");
      expect(all.json.by_agent.main.cost_usd).toBeCloseTo(0.0144, 10);

      // Each round with its own cost: 600×2 + 400×0.5 + 200×10, then 3000×2 + 500×10.
      const rounds = await rt.req("GET", "/agents/main/usage/rounds");
      expect(rounds.status).toBe(200);
      expect(rounds.json.rounds.map((r: any) => r.model_ref)).toEqual([
        "fake/test-model",
        "fake/test-model",
      ]);
      expect(rounds.json.rounds[0].cost_usd).toBeCloseTo(0.0034, 10);
      expect(rounds.json.rounds[1].cost_usd).toBeCloseTo(0.011, 10);
      const newest = await rt.req("GET", "/agents/main/usage/rounds?limit=1");
      expect(newest.json.rounds).toHaveLength(1);
      expect(newest.json.rounds[0].cost_usd).toBeCloseTo(0.011, 10);
      expect((await rt.req("GET", "/agents/main/usage/rounds?limit=0")).status).toBe(400);
      expect((await rt.req("GET", "/agents/nobody/usage/rounds")).status).toBe(404);
      const perRound = await runCli(["usage", "--rounds"], { env: { HOLON_HOME: home } });
      expect(perRound.code, perRound.stderr).toBe(0);
      expect(perRound.stdout).toContain("1000 in (400 cached) / 200 out  $0.0034");
      expect(perRound.stdout).toContain("3000 in (0 cached) / 500 out  $0.0110");

      const bad = await rt.req("GET", "/usage?since=yesterday-ish");
      expect(bad.status).toBe(400);

      const cli = await runCli(["usage"], { env: { HOLON_HOME: home } });
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toContain("fake/test-model");
      expect(cli.stdout).toContain("$0.0144");
      const status = await runCli(["status"], { env: { HOLON_HOME: home } });
      expect(status.stdout).toMatch(/cost: +\$0\.0144/);

      // Troubleshooting on the same host: per-phase timings and the doctor.
      const lat = await runCli(["debug", "latency", "--json"], { env: { HOLON_HOME: home } });
      expect(lat.code, lat.stderr).toBe(0);
      const runs = JSON.parse(lat.stdout).runs;
      expect(runs).toHaveLength(2);
      for (const r of runs) {
        expect(r).toMatchObject({ provider_rounds: 1, outcome: "completed" });
        expect(r.total_ms).toBeGreaterThanOrEqual(r.provider_ms);
      }
      // The prompt the next turn would send, built by the turn's contributors; nothing is
      // recorded by looking.
      const seqBefore = await rt.host.store.events.newestSeq("main");
      const queuedBefore = await rt.host.store.messages.pendingCount("main");
      const dbg = await runCli(
        ["debug", "prompt", "--text", "what changed since yesterday?", "--full"],
        { env: { HOLON_HOME: home } },
      );
      expect(dbg.code, dbg.stderr).toBe(0);
      expect(dbg.stdout).toMatch(/── 1\. \S+ \(system_prompt, stable, cache-stable\) ──/);
      expect(dbg.stdout).toContain("incoming (operator_text)");
      expect(dbg.stdout).toContain("── incoming message ──");
      expect(dbg.stdout).toContain("what changed since yesterday?");
      expect(dbg.stdout).toMatch(/tools \(\d+\): .*ExecCommand/);
      // The conversation so far is in it (recent history), as the next turn would see it.
      const preview = await rt.req("GET", "/control/agents/main/debug/prompt");
      expect(preview.status).toBe(200);
      expect(JSON.stringify(preview.json.sections)).toContain("second");
      expect(await rt.host.store.events.newestSeq("main")).toBe(seqBefore);
      expect(await rt.host.store.messages.pendingCount("main")).toBe(queuedBefore);
      const long = await rt.req(
        "GET",
        `/control/agents/main/debug/prompt?text=${"x".repeat(5000)}`,
      );
      expect(long.status).toBe(400);
      const anon = await rt.req("GET", "/control/agents/main/debug/prompt", undefined, {
        authorization: "",
      });
      expect(anon.status).toBe(401);
      expect((await rt.req("GET", "/control/agents/nobody/debug/prompt")).status).toBe(404);

      const doc = await runCli(["config", "doctor", "--json"], { env: { HOLON_HOME: home } });
      expect(doc.code, doc.stdout + doc.stderr).toBe(0);
      const checks = JSON.parse(doc.stdout).checks;
      expect(checks).toContainEqual(expect.objectContaining({ check: "runtime", status: "ok" }));
      expect(checks).toContainEqual(
        expect.objectContaining({ check: "model.default", status: "ok" }),
      );
      expect(checks).toContainEqual(expect.objectContaining({ check: "store" }));
      expect(checks).toContainEqual(expect.objectContaining({ check: "disk" }));
    } finally {
      await rt.close();
    }
  }, 90_000);

  it("config doctor fails without a model and says how to set one", async () => {
    const home = tempHome();
    const doc = await runCli(["config", "doctor"], { env: { HOLON_HOME: home } });
    expect(doc.code).toBe(1);
    expect(doc.stdout).toContain("holon config set model.default");
    expect(doc.stdout).toContain("no runtime is running");
  });

  it("a model without a price counts tokens and leaves the cost unknown", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home });
    try {
      fake.enqueue(reply.text("x", { input_tokens: 10, output_tokens: 5 }));
      const r = await rt.req("POST", "/control/agents/main/prompt", { text: "hi" });
      await waitFor(
        async () => (await rt.host.store.messages.get(r.json.message_id))?.status === "processed",
      );
      const u = await rt.req("GET", "/agents/main/usage");
      expect(u.json.total).toMatchObject({ rounds: 1, input_tokens: 10, cost_usd: null });
      expect(u.json.unpriced_models).toEqual(["fake/test-model"]);
    } finally {
      await rt.close();
    }
  }, 60_000);
});
