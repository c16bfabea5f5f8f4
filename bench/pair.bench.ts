// Paired soak: the soak's load (10 agents, 4 prompt loops, enqueues, timers, tasks; see
// soak.bench.ts) against two builds at once, the checkout under test and `--vs=<tree>`, each
// host with its own home and its own load worker, one fake model serving both. Both hosts
// share the machine at the same moments, so a noisy neighbour slows both alike: the ratio
// of their CPU per turn, window by window, holds where two runs one after the other (whose
// figures on this machine differ by a quarter between identical runs) cannot say 5%.
//
//   npm run bench -- pair --vs=/path/to/base/checkout   120 s, windows of 10 s
//   --duration=<s>                                       how long (at least 30)
//   --layout=src                                         both from their sources
//   --cpu-prof                                           a V8 CPU profile of each host, under
//                                                        bench/results/pair-profile/<side>/
//
// Reported: each window's head/base CPU-per-turn ratio, their median (the figure) and
// spread, each side's median CPU per turn and turns per minute.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { round } from "./lib/stats.ts";
import {
  configureFakeProvider,
  cpuSeconds,
  ensureDist,
  expectOk,
  sleep,
  startHolon,
  Worker,
  workerPath,
  type ServerProc,
} from "./lib/proc.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import type { SoakLoadConfig, SoakWindow } from "./workers/soak-load.ts";

const AGENTS = 10;
const WINDOW_MS = 10_000;

type Side = {
  name: "head" | "base";
  root: string;
  host?: ServerProc;
  load: Worker<
    { type: "started" } | ({ type: "sample" } & SoakWindow) | ({ type: "stopped" } & SoakWindow)
  >;
  cpu: number;
  perTurn: number[];
  turnsPerMin: number[];
  errors: number;
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const bench: Benchmark = {
  name: "pair",
  description:
    "the soak's load against this checkout and --vs=<tree> at once: CPU per turn, paired",
  explicit: true,
  async run(ctx) {
    const r = new ResultBuilder();
    const vs = ctx.options.vs;
    if (!vs || !existsSync(join(resolve(vs), "bin", "holon.js")))
      throw new Error("--vs=<tree> must name another checkout (with bin/holon.js)");
    const durationS = Number(ctx.options.duration ?? 120);
    if (!Number.isFinite(durationS) || durationS < 30) throw new Error("--duration must be >= 30");
    const layout = ctx.options.layout ?? "dist";
    if (layout !== "dist" && layout !== "src") throw new Error("--layout must be dist or src");
    const env = { HOLON_DIST: layout === "dist" ? "1" : "0" };
    const sides: Side[] = [
      { name: "head", root: ctx.root },
      { name: "base", root: resolve(vs) },
    ].map((s) => ({
      ...(s as { name: "head" | "base"; root: string }),
      load: new Worker(workerPath("soak-load.ts")),
      cpu: 0,
      perTurn: [],
      turnsPerMin: [],
      errors: 0,
    }));
    const provider = new Worker<{ type: "ready"; baseUrl: string }>(workerPath("soak-provider.ts"));
    try {
      const { baseUrl } = await provider.next("ready", 20_000);
      for (const side of sides) {
        if (layout === "dist") ensureDist(side.root, (line) => ctx.log(`${side.name}: ${line}`));
        const home = mkdtempSync(join(tmpdir(), `holon-pair-${side.name}-`));
        configureFakeProvider(side.root, home, baseUrl, "fake/soak-model");
        const nodeArgs: string[] = [];
        if (ctx.options["cpu-prof"] !== undefined || process.argv.includes("--cpu-prof")) {
          const dir = join(ctx.root, "bench", "results", "pair-profile", side.name);
          rmSync(dir, { recursive: true, force: true });
          mkdirSync(dir, { recursive: true });
          nodeArgs.push("--cpu-prof", `--cpu-prof-dir=${dir}`);
          r.note(`CPU profile of the ${side.name} host: ${dir}`);
        }
        side.host = await startHolon(side.root, { home, env, nodeArgs });
        const agents = ["main"];
        for (let i = 1; i < AGENTS; i++) {
          const id = `soak-${String(i).padStart(2, "0")}`;
          await expectOk(`${side.host.url}/control/agents/${id}/create`, "POST", {});
          agents.push(id);
        }
        const cfg: SoakLoadConfig = {
          hostname: side.host.hostname,
          port: side.host.port,
          agents,
          promptLoops: 4,
          execEvery: 5,
          enqueuePerSec: 20,
          timersPerSec: 1,
          timerDelayMs: [1_000, 3_000],
          taskEvery: 10,
          promptTimeoutMs: 30_000,
          token: side.host.token,
        };
        side.load.send({ type: "start", ...cfg });
      }
      for (const side of sides) await side.load.next("started", 30_000);
      for (const side of sides) side.cpu = cpuSeconds(side.host!.pid);
      ctx.log(`both hosts under the soak load, ${durationS} s, windows of ${WINDOW_MS / 1000} s`);
      const t0 = performance.now();
      const ratios: number[] = [];
      for (let i = 1; i * WINDOW_MS <= durationS * 1000; i++) {
        await sleep(Math.max(0, t0 + i * WINDOW_MS - performance.now()));
        const row: string[] = [];
        // Sampled in turns, head first then base first, so neither side is always read last.
        for (const side of i % 2 ? sides : [...sides].reverse()) {
          side.load.send({ type: "sample" });
          const w = await side.load.next("sample", 30_000);
          const cpu = cpuSeconds(side.host!.pid);
          const perTurn = w.turns > 0 ? ((cpu - side.cpu) * 1000) / w.turns : Number.NaN;
          side.cpu = cpu;
          side.errors += w.errors;
          // The first window holds the start-up's warm-up on both sides: not counted.
          if (i > 1) {
            side.perTurn.push(perTurn);
            side.turnsPerMin.push((w.turns * 60_000) / WINDOW_MS);
          }
          row.push(`${side.name} ${w.turns} turns ${perTurn.toFixed(2)} ms/turn`);
        }
        if (i % 2 === 0) row.reverse();
        const ratio = sides[0]!.perTurn.at(-1)! / sides[1]!.perTurn.at(-1)!;
        if (i > 1) ratios.push(ratio);
        ctx.log(
          `${String(i * 10).padStart(4)} s  ${row.join("  ")}${i > 1 ? `  ratio ${ratio.toFixed(3)}` : "  (warm-up)"}`,
        );
      }
      for (const side of sides) side.load.send({ type: "stop" });
      for (const side of sides) await side.load.next("stopped", 60_000);
      r.metric(
        "cpu_per_turn_ratio",
        round(median(ratios), 3),
        "×",
        "head / base CPU per turn, median of the windows",
      );
      r.metric("cpu_per_turn_ratio_min", round(Math.min(...ratios), 3), "×", "the lowest window");
      r.metric("cpu_per_turn_ratio_max", round(Math.max(...ratios), 3), "×", "the highest window");
      for (const side of sides) {
        r.metric(
          `${side.name}.cpu_ms_per_turn`,
          round(median(side.perTurn), 2),
          "ms",
          `${side.name} host CPU per turn, median`,
        );
        r.metric(
          `${side.name}.turns_per_min`,
          Math.round(median(side.turnsPerMin)),
          "turns/min",
          `${side.name} turns per minute, median`,
        );
        r.check(`${side.name}: no load errors`, side.errors === 0, `${side.errors} errors`);
      }
      r.result.notes.push(`windows: ${ratios.length}; head ${ctx.root}, base ${resolve(vs)}`);
      return r.result;
    } finally {
      for (const side of sides) {
        await side.load.stop();
        await side.host?.stop();
      }
      await provider.stop();
    }
  },
};

export default bench;
