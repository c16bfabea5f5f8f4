// The spend ledger: a row per provider call, written with the round, priced when written;
// a SIGKILL mid-call loses at most that call and never counts one twice; the first start
// after the migration fills it from the events still kept; its own retention removes rows
// past 400 days.
import { openRecords } from "./helpers/raw-store.ts";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { RuntimeHost } from "../src/host/host.ts";
import { reply } from "./fake-provider/server.ts";
import { spawnServe, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

async function pricedHome(): Promise<string> {
  const h = tempHome();
  await configureFakeProvider(h, "openai_responses", fake.baseUrl("openai"));
  const p = join(h, "config.json");
  const cfg = JSON.parse(readFileSync(p, "utf8"));
  cfg.models = {
    catalog: { "fake/test-model": { pricing: { input_per_mtok: 2, output_per_mtok: 10 } } },
  };
  writeFileSync(p, JSON.stringify(cfg, null, 2));
  return h;
}

const busy = (input: number) =>
  reply.tools([{ name: "NoSuchTool", arguments: {} }], {
    usage: { input_tokens: input, output_tokens: 100 },
  });

describe("spend ledger", () => {
  it("a SIGKILL during a provider call loses at most that call and never counts a round twice", async () => {
    const h = await pricedHome();
    let serve = await spawnServe(h);
    try {
      let hung = 0;
      fake.setFallback(() => {
        hung++;
        return { fault: "hang" };
      });
      fake.enqueue(busy(1000), busy(2000));
      const auth = { ...serve.auth, "content-type": "application/json" };
      const p = await fetch(`${serve.url}/control/agents/main/prompt`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ text: "work" }),
      });
      expect(p.status).toBe(202);
      await waitFor(() => hung > 0, { what: "the third call to hang" });
      serve.proc.kill("SIGKILL");
      await new Promise((r) => serve.proc.once("exit", r));

      fake.setFallback(() => reply.text("done", { input_tokens: 10, output_tokens: 1 }));
      serve = await spawnServe(h);
      const get = (path: string) =>
        fetch(serve.url + path, { headers: serve.auth }).then((r) => r.json() as Promise<any>);
      // Whatever the restart does with the interrupted message, every answered call is one row.
      const rows = (await get("/agents/main/usage/rounds?limit=1000")).rounds as any[];
      const keys = rows.map((r) => `${r.run_id}#${r.round}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(rows.slice(0, 2).map((r) => r.input_tokens)).toEqual([1000, 2000]);
      expect(rows[0].cost_usd).toBeCloseTo((1000 * 2 + 100 * 10) / 1e6, 10);
      const usage = await get("/agents/main/usage");
      expect(usage.total.rounds).toBe(rows.length);
    } finally {
      fake.setFallback(null);
      serve.proc.kill("SIGKILL");
    }
  }, 60_000);

  it("the first start after the migration fills the ledger from the kept events, priced then, once", async () => {
    const h = await pricedHome();
    let rt = await startRuntime({ home: h });
    fake.enqueue(
      reply.text("a", { input_tokens: 1000, output_tokens: 100 }),
      reply.text("b", { input_tokens: 3000, output_tokens: 300 }),
    );
    for (const text of ["one", "two"]) {
      const r = await rt.req("POST", "/control/agents/main/prompt", { text });
      await waitFor(
        async () => (await rt.host.store.messages.get(r.json.message_id))?.status === "processed",
      );
    }
    await rt.close();
    // As a home from before the ledger: no rows, the backfill still to do.
    const db = openRecords(h, { write: true });
    db.exec("DELETE FROM spend_ledger; UPDATE spend_ledger_meta SET value = 'pending'");
    db.close();
    rt = await startRuntime({ home: h });
    try {
      const rows = (await rt.req("GET", "/agents/main/usage/rounds")).json.rounds;
      expect(rows.map((r: any) => r.input_tokens)).toEqual([1000, 3000]);
      expect(rows[1].cost_usd).toBeCloseTo((3000 * 2 + 300 * 10) / 1e6, 10);
      expect(await rt.host.services.ledger.backfill()).toBe(0); // once
    } finally {
      await rt.close();
    }
  });

  it("keeps rows 400 days by default; the retention pass removes older ones", async () => {
    const h = await pricedHome();
    let t = Date.parse("2026-01-01T00:00:00.000Z");
    const clock: Clock = { now: () => new Date(t), sleep: systemClock.sleep };
    const host = await RuntimeHost.open({ home: h, clock });
    try {
      const row = async (agent: string) =>
        await host.store.tx(
          async () =>
            await host.services.ledger.record({
              agent_id: agent,
              run_id: host.store.ids.next("run"),
              round: 1,
              kind: "round",
              model_ref: "fake/test-model",
              usage: { input_tokens: 10, output_tokens: 1, total_tokens: 11 },
              elapsed_ms: 5,
            }),
        );
      await row("main");
      t += 300 * 86_400_000;
      await row("main");
      t += 200 * 86_400_000; // the first row is 500 days old, the second 200
      const s = await host.services.retention.runOnce();
      expect(s.removed.ledger).toBe(1);
      expect(await host.store.ledger.count()).toBe(1);
    } finally {
      await host.shutdown();
    }
  });
});
