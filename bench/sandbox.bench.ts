// What the sandbox costs a command: `ExecCommand true` through the tool registry's dispatch()
// against a real host, confined (agent `main`, sandbox mode auto with bubblewrap) and
// unconfined (agent `plain`, its own sandbox.mode off), in alternating pairs in one run so
// the machine's noise hits both alike. The unconfined command starts on a spare wrapper. The
// confined one is measured twice: on its profile's spare (a hit: the spare is ready before
// each pair) and with the spares of every profile retired first (a miss: bubblewrap starts
// cold). A last round turns spares off on both sides (bubblewrap's own cost). Without a
// working bubblewrap the benchmark says so.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { round, summarize } from "./lib/stats.ts";

const bench: Benchmark = {
  name: "sandbox",
  description:
    "extra wall time of ExecCommand true confined by bubblewrap, paired against unconfined",
  async run(ctx) {
    const r = new ResultBuilder();
    const mod = (p: string) => import(pathToFileURL(join(ctx.root, p)).href);
    const { RuntimeHost } = await mod("src/host/host.ts");
    const { buildRegistry } = await mod("src/tools/builtin.ts");
    const { dispatch } = await mod("src/tools/registry.ts");
    const { sandboxSpareCount, retireSandboxSpares } = await mod("src/tasks/sandbox-spares.ts");

    const home = mkdtempSync(join(tmpdir(), "holon-bench-sandbox-"));
    const host = RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
    const registry = buildRegistry();
    try {
      const probe = host.services.sandbox.probe();
      r.check("bubblewrap works here", probe.available);
      if (!probe.available) {
        ctx.log(`sandbox unavailable: ${probe.reason}`);
        return r.result;
      }
      host.agents.create("plain", {}, "named");
      host.agents.setSetting("plain", "sandbox.mode", "off");
      const ctxOf = (agentId: string) => {
        const agent = host.agents.get(agentId);
        return {
          agent,
          run_id: "run_bench",
          message: { id: "msg_bench" },
          call_id: "call_bench",
          execution_root: agent.agent_home,
          cwd: agent.agent_home,
          signal: new AbortController().signal,
          budget: { default_tokens: 8_000, max_tokens: 64_000 },
          tasks: host.tasks,
          services: { tasks: host.tasks },
        };
      };
      const confined = ctxOf("main");
      const plain = ctxOf("plain");
      const once = async (c: unknown) => {
        const t0 = performance.now();
        const out = await dispatch(registry, "ExecCommand", JSON.stringify({ cmd: "true" }), c);
        const ms = performance.now() - t0;
        if ((out.canonical.result as any)?.exit_status !== 0)
          throw new Error(`true failed: ${JSON.stringify(out.canonical).slice(0, 600)}`);
        return ms;
      };
      /** Until the confined profile's spare is ready (not measured). */
      const spareReady = async () => {
        const until = Date.now() + 30_000;
        while (sandboxSpareCount().ready === 0 && Date.now() < until) {
          await new Promise((res) => setTimeout(res, 1));
        }
        return sandboxSpareCount().ready > 0;
      };
      const n = ctx.quick ? 30 : 200;
      /** Paired extra time of the confined start; `before` runs ahead of the confined one. */
      const pairs = async (before: (i: number) => Promise<unknown>) => {
        const a: number[] = [];
        const b: number[] = [];
        const diff: number[] = [];
        for (let i = 0; i < n + 5; i++) {
          // alternate which goes first, so neither always follows the other's refill
          let x: number;
          let y: number;
          if (i % 2 === 0) {
            await before(i);
            x = await once(confined);
            y = await once(plain);
          } else {
            y = await once(plain);
            await before(i);
            x = await once(confined);
          }
          if (i < 5) continue; // warm-up
          a.push(x);
          b.push(y);
          diff.push(x - y);
        }
        return { confined: summarize(a), plain: summarize(b), diff: summarize(diff) };
      };
      let hits = 0;
      // (The very first confined start has no spare yet: its profile was never used.)
      const hit = await pairs(async (i) => {
        if (i > 0 && (await spareReady())) hits++;
      });
      r.check("every confined start of the hit round found its spare ready", hits === n + 4);
      const miss = await pairs(async () => retireSandboxSpares());
      r.metric("confined_hit_p50_ms", round(hit.confined.p50), "ms", "confined, spare hit, p50");
      r.metric("confined_miss_p50_ms", round(miss.confined.p50), "ms", "confined, miss, p50");
      r.metric("unconfined_p50_ms", round(hit.plain.p50), "ms", "unconfined (spare), p50");
      r.metric(
        "extra_hit_p50_ms",
        round(hit.diff.p50),
        "ms",
        "paired extra time, spare hit, median",
      );
      r.metric("extra_hit_p90_ms", round(hit.diff.p90), "ms", "paired extra time, spare hit, p90");
      r.metric("extra_miss_p50_ms", round(miss.diff.p50), "ms", "paired extra time, miss, median");
      r.metric("extra_miss_p90_ms", round(miss.diff.p90), "ms", "paired extra time, miss, p90");
      // The same pairs with spare wrappers off on both sides: unconfined spawns cold too, so
      // the difference is bubblewrap's own cost (namespaces, mounts), not the spares' saving.
      process.env["HOLON_SPAWN_HELPER"] = "0";
      let cold;
      try {
        cold = await pairs(async () => {});
      } finally {
        delete process.env["HOLON_SPAWN_HELPER"];
      }
      r.metric(
        "extra_vs_cold_p50_ms",
        round(cold.diff.p50),
        "ms",
        "paired extra time against an unconfined cold start (bubblewrap alone), median",
      );
      r.target("extra on a spare hit ≤ 2 ms", "extra_hit_p50_ms", "<=", 2);
    } finally {
      await host.shutdown();
      rmSync(home, { recursive: true, force: true });
    }
    return r.result;
  },
};

export default bench;
