// Liveness under hostile input: while a forked client admits 240 KiB texts built to be
// expensive to tokenize (one repeated character, base64, DNA, CJK without spaces, emoji, a
// backtracking-shaped string) through public enqueue, and the agent's turns count them with
// the exact o200k tokenizer (the model is an OpenAI name), the harness probes /handshake
// every 10 ms. Reports the handshake's p50/p99/max per input; the target is p99 ≤ 50 ms.
//   npm run bench -- liveness --cpu-prof   also profile the host and name its hottest functions
//   npm run bench -- liveness --only=DNA   one input (names as in test/helpers/adversarial.ts)
import type { LoadConfig, LoadResult } from "./workers/loadgen.ts";
import { round, summarize } from "./lib/stats.ts";
import {
  Worker,
  configureFakeProvider,
  expectOk,
  sleep,
  startHolon,
  workerPath,
} from "./lib/proc.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { topFunctions } from "./lib/cpuprofile.ts";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { reply, startFakeProvider } from "../test/fake-provider/server.ts";
import { adversarialTexts } from "../test/helpers/adversarial.ts";

const INPUTS = adversarialTexts(11);

const bench: Benchmark = {
  name: "liveness",
  description: "/handshake latency while 240 KiB adversarial texts are admitted and tokenized",
  async run(ctx) {
    const r = new ResultBuilder();
    const fake = await startFakeProvider();
    fake.setFallback(() => reply.text("ok", { input_tokens: 1000, output_tokens: 1 }));
    const cpuProf = ctx.options["cpu-prof"] !== undefined;
    const profDir = mkdtempSync(join(tmpdir(), "holon-liveness-prof-"));
    const host = await startHolon(ctx.root, {
      nodeArgs: cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [],
    });
    try {
      configureFakeProvider(ctx.root, host.home!, fake.baseUrl("openai"), "fake/gpt-5.4");
      const perMessage = ctx.quick ? 2 : 6;
      const all: number[] = [];
      for (const [name, make] of Object.entries(INPUTS)) {
        if (ctx.options.only && ctx.options.only !== name) continue;
        const cfg: LoadConfig = {
          hostname: host.hostname,
          port: host.port,
          path: "/agents/main/enqueue",
          body: JSON.stringify({ text: make(240 * 1024) }),
          connections: 2,
          warmupMs: 0,
          durationMs: 0,
          count: perMessage,
          requestTimeoutMs: 60_000,
        };
        const worker = new Worker<{ type: "result" } & LoadResult>(workerPath("loadgen.ts"));
        const latencies: number[] = [];
        let stop = false;
        const probe = (async () => {
          while (!stop) {
            const t0 = performance.now();
            const res = await fetch(`${host.url}/handshake`);
            await res.arrayBuffer();
            latencies.push(performance.now() - t0);
            await sleep(10);
          }
        })();
        try {
          worker.send(cfg);
          const load = await worker.next("result", 120_000);
          if (load.totalOk !== perMessage) throw new Error(`${name}: ${load.firstError}`);
          // Until every admitted message has been consumed by a turn.
          for (let i = 0; i < 1200; i++) {
            const st = await expectOk(`${host.url}/agents/main/status`);
            if (st.pending === 0 && st.current_run_id === null) break;
            await sleep(50);
          }
        } finally {
          stop = true;
          await probe;
          await worker.stop();
        }
        const s = summarize(latencies);
        all.push(...latencies);
        ctx.log(
          `${name}: handshake p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms (${latencies.length} probes)`,
        );
        r.metric(
          `${name.replace(/\W+/g, "_")}.p99_ms`,
          round(s.p99, 1),
          "ms",
          `${name}: /handshake p99`,
        );
        r.metric(
          `${name.replace(/\W+/g, "_")}.max_ms`,
          round(s.max, 1),
          "ms",
          `${name}: /handshake max`,
        );
      }
      const s = summarize(all);
      r.metric("p50_ms", round(s.p50, 1), "ms", "/handshake p50, all inputs");
      r.metric("p99_ms", round(s.p99, 1), "ms", "/handshake p99, all inputs");
      r.metric("max_ms", round(s.max, 1), "ms", "/handshake max, all inputs");
      r.target("/handshake p99 ≤ 50 ms under adversarial admission", "p99_ms", "<=", 50);
      r.check("/handshake max < 1 s", s.max < 1000);
    } finally {
      await host.stop(30_000); // a profile is written only on a clean exit
      await fake.close();
    }
    for (const f of readdirSync(profDir).filter((f) => f.endsWith(".cpuprofile"))) {
      r.note(`CPU profile: ${join(profDir, f)}; top self time:`);
      for (const line of topFunctions(join(profDir, f), 20)) r.note(`  ${line}`);
    }
    return r.result;
  },
};
export default bench;
