// Budget checking and the ledger write: the host CPU they add to each model round.
//
// An in-process host on a temp home with a priced model, an agent with a total, a daily and
// a monthly budget, a child with a carved reservation working on a budgeted work item of
// its parent's, and a ledger already holding 50,000 rows (so its indexes have a real size).
// Per round, the gate checks the child's request (every scope: the item, the reservation,
// the parent's total and windows) and the ledger writes its row and bumps the running
// totals, inside a transaction. Process CPU (user + system) is read around N rounds; an
// empty transaction is measured the same way and subtracted, since the round's
// transaction exists without this issue. Target: at most 0.2 ms per round.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RuntimeHost } from "../src/host/host.ts";
import type { ProviderRequest } from "../src/providers/model.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { round } from "./lib/stats.ts";

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

const bench: Benchmark = {
  name: "budget",
  description: "budget check + spend ledger write per model round (host CPU)",
  async run(ctx) {
    const out = new ResultBuilder();
    const home = mkdtempSync(join(tmpdir(), "holon-bench-budget-"));
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({
        providers: {
          fake: {
            transport: "openai_responses",
            base_url: "http://127.0.0.1:9/v1",
            credential_source: "none",
            credential_kind: "none",
          },
        },
        model: { default: "fake/bench-model" },
        models: {
          catalog: { "fake/bench-model": { pricing: { input_per_mtok: 2, output_per_mtok: 10 } } },
        },
      }),
      { mode: 0o600 },
    );
    const host = await RuntimeHost.open({ home, autostartAgents: false });
    try {
      const { store, ledger, budgets, budgetGate, work } = host.services;
      await budgets.set("main", { period: "total", limits: { tokens: 1e12, usd: 1e6 } });
      await budgets.set("main", { period: "day", limits: { tokens: 1e12, rounds: 1e9 } });
      await budgets.set("main", { period: "month", limits: { usd: 1e6 } });
      const item = await work.enqueue("main", "bench item", { tokens: 1e12 });
      // A child with a reservation, spawned while the item was the parent's focus.
      await host.agents.create("bench-child", { visibility: "private" });
      await store.tx(async () => {
        const c = (await store.agents.get("bench-child"))!;
        await store.agents.put({
          ...c,
          lineage_parent_agent_id: "main",
          spawn_work_item_id: item.id,
          budget_reservation: {
            from_agent_id: "main",
            limits: { tokens: 1e12 },
            reserved_at: new Date().toISOString(),
          },
        });
      });
      budgetGate.reservationsChanged("main");
      const fill = ctx.quick ? 5_000 : 50_000;
      ctx.log(`filling the ledger with ${fill} rows`);
      await store.tx(async () => {
        for (let i = 0; i < fill; i++) {
          await ledger.record({
            agent_id: i % 2 ? "main" : "bench-child",
            run_id: `run_fill_${i}`,
            round: 1,
            kind: "round",
            model_ref: "fake/bench-model",
            usage: { input_tokens: 1000, output_tokens: 100, total_tokens: 1100 },
            elapsed_ms: 10,
          });
        }
      });
      const agent = (await store.agents.get("bench-child"))!;
      const message = {
        id: "msg_bench",
        work_item_id: item.id,
        metadata: {},
      } as unknown as Parameters<typeof budgetGate.check>[1]["message"];
      const request = {
        frame: { system_prompt: "x".repeat(8000), system_blocks: [], context_blocks: [] },
        conversation: [{ type: "user_text", text: "x".repeat(4000) }],
        tools: [],
      } as unknown as ProviderRequest;
      // A real round has passed the compaction hook first, which leaves the input estimate.
      const run = "run_bench";
      await host.services.compactor.hook(request, {
        agent,
        run_id: run,
        round: 1,
        signal: new AbortController().signal,
      });
      const candidates = host.services.config.candidates(null);
      const n = ctx.quick ? 2_000 : 20_000;
      const once = async (i: number) => {
        const v = await budgetGate.check(request, {
          agent,
          run_id: run,
          round: 1,
          message,
          candidates, // the turn's own, as a real round passes them
        });
        if (!v.ok) throw new Error(`unexpected budget stop: ${v.hold.summary}`);
        await store.tx(
          async () =>
            await ledger.record({
              agent_id: "bench-child",
              run_id: run,
              round: i + 1000,
              kind: "round",
              model_ref: "fake/bench-model",
              usage: { input_tokens: 1000, output_tokens: 100, total_tokens: 1100 },
              elapsed_ms: 10,
            }),
        );
      };
      for (let i = 0; i < 500; i++) await once(-i - 1000); // warm up (and load every scope's totals)
      const c0 = cpuMs();
      for (let i = 0; i < n; i++) await once(i);
      const withMs = (cpuMs() - c0) / n;
      const e0 = cpuMs();
      for (let i = 0; i < n; i++) await store.tx(() => {});
      const emptyMs = (cpuMs() - e0) / n;
      const added = Math.max(0, withMs - emptyMs);
      out.metric("added_cpu_ms_per_round", round(added, 4), "ms", "budget check + ledger write");
      out.metric("round_cpu_ms_with_tx", round(withMs, 4), "ms", "the same with its transaction");
      out.metric("empty_tx_cpu_ms", round(emptyMs, 4), "ms", "an empty transaction");
      out.metric("ledger_rows", await store.ledger.count(), "rows");
      out.target("≤ 0.2 ms host CPU per round", "added_cpu_ms_per_round", "<=", 0.2);
      const totals = await ledger.agentTree("main");
      out.check(
        "running totals equal the ledger's own sum",
        totals.rounds === (await store.ledger.sum({ kind: "agent_tree", agent_id: "main" })).rounds,
      );
    } finally {
      await host.shutdown();
      rmSync(home, { recursive: true, force: true });
    }
    return out.result;
  },
};

export default bench;
