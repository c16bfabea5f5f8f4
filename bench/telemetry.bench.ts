// Tracing overhead per model round, paired: two hosts run side by side, one with traces off
// (the default) and one exporting every span over OTLP/HTTP to a receiver in this process
// (decoding each export with the official protobuf definitions, as a collector would); a
// third exports to a collector that never answers. They take turns running the same turn
// (`rounds` model rounds, each one in-process tool call), in alternating order, so drift of
// the machine hits all alike. A round's wall time is the gap between two consecutive
// provider requests arriving at the fake; host CPU is read from /proc around each turn.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { authHeaders, configureFakeProvider, startHolon, type ServerProc } from "./lib/proc.ts";
import { round, summarize } from "./lib/stats.ts";
import { reply, startFakeProvider } from "../test/fake-provider/server.ts";
import { startOtlpReceiver } from "../test/helpers/otlp-receiver.ts";

type Fake = Awaited<ReturnType<typeof startFakeProvider>>;

/** utime + stime of a process in milliseconds (Linux). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
}

/** One turn of `rounds` rounds; returns the round gaps (ms) and the host CPU it took (ms). */
async function turn(
  fake: Fake,
  host: ServerProc,
  rounds: number,
  tag: string,
): Promise<{ gaps: number[]; cpu: number }> {
  const arrivals: number[] = [];
  for (let i = 0; i < rounds; i++) {
    fake.enqueue(() => {
      arrivals.push(performance.now());
      return reply.tools([{ name: "AgentGet", arguments: {}, call_id: `${tag}-${i}` }], {
        usage: { input_tokens: 3000 + i, output_tokens: 20, cached_tokens: 2500 },
      });
    });
  }
  let finished!: () => void;
  const done = new Promise<void>((res) => (finished = res));
  fake.enqueue(() => {
    arrivals.push(performance.now());
    finished();
    return reply.text("done");
  });
  const cpu0 = cpuMs(host.pid);
  const res = await fetch(`${host.url}/control/agents/main/prompt`, {
    method: "POST",
    headers: { "content-type": "application/json", ...authHeaders(host.url) },
    body: JSON.stringify({ text: `bench ${tag}` }),
  });
  if (res.status !== 202) throw new Error(`prompt failed: HTTP ${res.status}`);
  const timeout = setTimeout(() => finished(), 120_000);
  await done;
  clearTimeout(timeout);
  await new Promise((r) => setTimeout(r, 100)); // the terminal record after the last reply
  const cpu = cpuMs(host.pid) - cpu0;
  if (arrivals.length !== rounds + 1) throw new Error(`turn ${tag}: ${arrivals.length} requests`);
  return { gaps: arrivals.slice(1).map((t, i) => t - arrivals[i]!), cpu };
}

async function host(
  root: string,
  fake: Fake,
  traces: string | null,
): Promise<{ proc: ServerProc; home: string }> {
  const home = mkdtempSync(join(tmpdir(), "holon-bench-otel-"));
  const bin = join(root, "bin", "holon.js");
  const set = (k: string, v: string) =>
    execFileSync(process.execPath, [bin, "config", "set", k, v, "--home", home], { stdio: "pipe" });
  if (traces) {
    set("telemetry.traces.enabled", "true");
    set("telemetry.traces.endpoint", traces);
  }
  const proc = await startHolon(root, {
    home,
    env: { OTEL_BSP_SCHEDULE_DELAY: "200", OTEL_EXPORTER_OTLP_TIMEOUT: "1000" },
  });
  configureFakeProvider(root, home, fake.baseUrl("openai"), "fake/bench-model");
  return { proc, home };
}

const median = (xs: number[]) => summarize(xs).p50;

const bench: Benchmark = {
  name: "telemetry",
  description: "per-round overhead of OpenTelemetry tracing: off vs exporting vs a dead collector",
  async run(ctx) {
    const r = new ResultBuilder();
    const fake = await startFakeProvider();
    const receiver = await startOtlpReceiver();
    const hole = await startOtlpReceiver("blackhole");
    const rounds = ctx.quick ? 15 : 40;
    const pairs = ctx.quick ? 3 : 8;
    const hosts: { proc: ServerProc; home: string }[] = [];
    try {
      const off = await host(ctx.root, fake, null);
      hosts.push(off);
      const on = await host(ctx.root, fake, receiver.url);
      hosts.push(on);
      const dead = await host(ctx.root, fake, hole.url);
      hosts.push(dead);
      const order = [
        ["off", off],
        ["on", on],
        ["dead", dead],
      ] as const;
      // Warm-up turn each (first-turn costs: the SDK load, prepared statements).
      for (const [name, h] of order) await turn(fake, h.proc, 5, `warm-${name}`);

      const per: Record<string, { gaps: number[]; cpu: number[]; medians: number[] }> = {
        off: { gaps: [], cpu: [], medians: [] },
        on: { gaps: [], cpu: [], medians: [] },
        dead: { gaps: [], cpu: [], medians: [] },
      };
      for (let p = 0; p < pairs; p++) {
        const seq = p % 2 === 0 ? order : [...order].reverse();
        for (const [name, h] of seq) {
          const t = await turn(fake, h.proc, rounds, `${name}-${p}`);
          per[name]!.gaps.push(...t.gaps);
          per[name]!.cpu.push(t.cpu / rounds);
          per[name]!.medians.push(median(t.gaps));
        }
      }
      const diffs = per.on!.medians.map((m, i) => m - per.off!.medians[i]!);
      const deadDiffs = per.dead!.medians.map((m, i) => m - per.off!.medians[i]!);
      for (const name of ["off", "on", "dead"]) {
        const s = summarize(per[name]!.gaps);
        r.metric(`${name}_round_p50_ms`, round(s.p50), "ms", `round wall time p50, traces ${name}`);
        r.metric(`${name}_round_p99_ms`, round(s.p99), "ms", `round wall time p99, traces ${name}`);
        r.metric(
          `${name}_cpu_per_round_ms`,
          round(median(per[name]!.cpu)),
          "ms",
          `host CPU per round (median of turns), traces ${name}`,
        );
      }
      r.metric("paired_diff_on_p50_ms", round(median(diffs)), "ms", "on − off, median of pairs");
      r.metric(
        "paired_diff_dead_p50_ms",
        round(median(deadDiffs)),
        "ms",
        "dead collector − off, median of pairs",
      );
      const cpuRatio = median(per.on!.cpu) / Math.max(0.001, median(per.off!.cpu));
      r.metric("cpu_ratio_on_off", round(cpuRatio, 3), "x", "host CPU per round, on ÷ off");
      r.target("exporting costs ≤ 5% more host CPU per round", "cpu_ratio_on_off", "<=", 1.05);
      r.check("the receiver got spans", receiver.spans.length > 0, `${receiver.spans.length}`);
      const chats = receiver.spans.filter((s) => s.name.startsWith("chat ")).length;
      r.check("one chat span per round", chats >= pairs * rounds, `${chats}`);
    } finally {
      for (const h of hosts) {
        await h.proc.stop();
        rmSync(h.home, { recursive: true, force: true });
      }
      await receiver.close();
      await hole.close();
      await fake.close();
    }
    return r.result;
  },
};
export default bench;
