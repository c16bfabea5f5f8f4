// Telemetry overhead per model round, paired: hosts run side by side, one with all telemetry
// off (the default), one with everything on and exporting (traces over OTLP/HTTP, the OTLP
// metrics export, /metrics) to a collector in this process, and one whose collector never
// answers. They take turns running the same turn (`rounds` model rounds, each one in-process
// tool call), in alternating order (ABC, CBA, …), so drift of a shared machine hits all alike.
// A round's wall time is the gap between two consecutive provider requests arriving at the
// fake; host CPU is read from /proc around each turn and summed over every turn of a host,
// so the 10 ms tick of /proc costs nothing in the ratio. The collector here only counts what
// it gets and decodes a sample of the exports with the official definitions (decoding every export
// in this process, which also serves the fake provider, slowed the fake and so every round of
// the exporting host); the tests decode everything.
//
//   npm run bench -- telemetry                  8 pairs of 40-round turns
//   npm run bench -- telemetry --pairs=20       more pairs: a tighter ratio on a busy machine
//   npm run bench -- telemetry --cpu-prof       V8 CPU profiles of the off and on hosts, and
//                                               where the on host's telemetry time went
//   --delay=<ms>                                the span export schedule (default 2000)
//   --metrics-interval=<ms>                     the OTLP metrics interval (default 10000)
import { execFileSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { authHeaders, configureFakeProvider, startHolon, type ServerProc } from "./lib/proc.ts";
import { round, summarize } from "./lib/stats.ts";
import { reply, startFakeProvider } from "../test/fake-provider/server.ts";
import {
  decodeExport,
  decodeMetricsExport,
  startOtlpReceiver,
} from "../test/helpers/otlp-receiver.ts";
import { Store } from "../src/store/db.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import { traceSettings } from "../src/telemetry/tracing.ts";
import { createRecorder } from "../src/telemetry/otel.ts";
import type { CatalogEvent } from "../src/domain/events.ts";

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
  delayMs: number,
  metricsMs: number,
  nodeArgs: string[] = [],
): Promise<{ proc: ServerProc; home: string }> {
  const home = mkdtempSync(join(tmpdir(), "holon-bench-otel-"));
  const bin = join(root, "bin", "holon.js");
  const set = (k: string, v: string) =>
    execFileSync(process.execPath, [bin, "config", "set", k, v, "--home", home], { stdio: "pipe" });
  if (traces) {
    // Everything a user can turn on: traces, the OTLP metrics export and /metrics.
    set("telemetry.traces.enabled", "true");
    set("telemetry.traces.endpoint", `${traces}/v1/traces`);
    set("telemetry.metrics.enabled", "true");
    set("telemetry.metrics.otlp_enabled", "true");
    set("telemetry.metrics.otlp_endpoint", `${traces}/v1/metrics`);
  }
  const proc = await startHolon(root, {
    home,
    nodeArgs,
    // The default span export schedule (every 2 s); `--delay=<ms>` exports more often.
    env: {
      OTEL_BSP_SCHEDULE_DELAY: String(delayMs),
      OTEL_METRIC_EXPORT_INTERVAL: String(metricsMs),
      OTEL_EXPORTER_OTLP_TIMEOUT: "1000",
    },
  });
  configureFakeProvider(root, home, fake.baseUrl("openai"), "fake/bench-model");
  return { proc, home };
}

const median = (xs: number[]) => summarize(xs).p50;

type Sink = {
  url: string;
  requests: { traces: number; metrics: number };
  bytes: number;
  spans: number;
  chatSpans: number;
  metricNames: Set<string>;
  decodeErrors: number;
  close(): Promise<void>;
};

/**
 * A collector that answers every export at once and counts it; one export in 50 (and the
 * first five of each kind) is decoded with the official definitions, to check what is sent.
 */
async function startSink(): Promise<Sink> {
  const state: Sink = {
    url: "",
    requests: { traces: 0, metrics: 0 },
    bytes: 0,
    spans: 0,
    chatSpans: 0,
    metricNames: new Set(),
    decodeErrors: 0,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      state.bytes += body.length;
      const metrics = req.url === "/v1/metrics";
      const n = metrics ? state.requests.metrics++ : state.requests.traces++;
      if (n < 5 || n % 50 === 0) {
        try {
          if (metrics)
            for (const m of decodeMetricsExport(body).metrics) state.metricNames.add(m.name);
          else {
            const spans = decodeExport(body);
            state.spans += spans.length;
            state.chatSpans += spans.filter((x) => x.name.startsWith("chat ")).length;
          }
        } catch {
          state.decodeErrors++;
        }
      }
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  state.close = () => new Promise<void>((r) => server.close(() => r()));
  return state;
}

/**
 * Where a host's CPU went under telemetry code: each sample is given to the innermost frame of
 * src/telemetry/ or an @opentelemetry package on its stack, unless other project code or
 * another package sits below it (then the time is that code's). "12.3 ms  name  file:line".
 */
function telemetryTime(file: string, n: number): { totalMs: number; ms: number; top: string[] } {
  type Node = {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  };
  const p = JSON.parse(readFileSync(file, "utf8")) as {
    nodes: Node[];
    samples?: number[];
    timeDeltas?: number[];
  };
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const parent = new Map<number, number>();
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  let total = 0;
  let ours = 0;
  const by = new Map<string, number>();
  for (let i = 0; i < samples.length; i++) {
    const us = deltas[i + 1] ?? 0;
    const leaf = byId.get(samples[i]!);
    const fn = leaf?.callFrame.functionName;
    if (!leaf || fn === "(idle)" || fn === "(program)") continue;
    total += us;
    for (let cur: number | undefined = leaf.id; cur !== undefined; cur = parent.get(cur)) {
      const fr = byId.get(cur)!.callFrame;
      if (/src\/telemetry\/|node_modules\/@opentelemetry\//.test(fr.url)) {
        ours += us;
        const key = `${fr.functionName || "(anonymous)"}  ${fr.url.replace(/^.*\/(src|node_modules)\//, "$1/")}:${fr.lineNumber + 1}`;
        by.set(key, (by.get(key) ?? 0) + us);
        break;
      }
      if (/\/src\/|node_modules\//.test(fr.url)) break;
    }
  }
  const top = [...by]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${(us / 1000).toFixed(1).padStart(7)} ms  ${k}`);
  return { totalMs: total / 1000, ms: ours / 1000, top };
}

/**
 * The recorder's own CPU per round, in this process: one turn of `rounds` rounds (a chat span,
 * a tool call's events and span each), as the hooks and the event listener would feed it,
 * with an exporter that encodes every batch with the official protobuf serializer (as the
 * OTLP exporter does) and drops the bytes. Free of the machine's noise between hosts.
 */
async function recorderCpuPerRound(rounds: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "holon-bench-rec-"));
  const store = new Store(join(dir, "holon.db"), systemClock, randomIds);
  const rec = createRecorder(
    {
      store,
      // Batches of 512, the default; every span is exported (none dropped for a full queue).
      settings: traceSettings(
        { enabled: true, endpoint: "http://127.0.0.1:9/v1/traces" },
        { OTEL_BSP_SCHEDULE_DELAY: "3600000" },
      ),
      price: () => 0.001,
    },
    () => undefined,
    {
      export: (spans, done) => {
        ProtobufTraceSerializer.serializeRequest(spans);
        done({ code: 0 });
      },
      shutdown: async () => {},
    },
  );
  const signal = new AbortController().signal;
  const now = new Date().toISOString();
  const req = {
    agent: {
      agent_id: "main",
      visibility: "public",
      total_message_count: 3,
    },
    message: {
      id: "msg_1",
      created_at: now,
      kind: "operator_prompt",
      priority: "normal",
      trigger_kind: "operator_input",
      trust: "trusted_operator",
      authority_class: "operator_instruction",
      origin: { kind: "operator" },
      agent_id: "main",
    },
    run_id: "run_1",
    signal,
    takeInterjections: () => [],
  } as never;
  const usage = {
    input_tokens: 3000,
    output_tokens: 20,
    total_tokens: 3020,
    cache_read_input_tokens: 2500,
  };
  const ev = (type: string, payload: object) =>
    ({
      type,
      agent_id: "main",
      payload,
      provenance: {},
      ts: now,
      id: "e",
      event_seq: 1,
    }) as unknown as CatalogEvent;
  const t0 = process.cpuUsage();
  rec.beginTurn(req);
  for (let i = 0; i < rounds; i++) {
    // The event loop turns between rounds, as in a host (a full batch is exported then).
    if (i % 100 === 99) await new Promise((r) => setImmediate(r));
    const start = Date.now();
    rec.chat(
      {
        candidates: [{ model_ref: "fake/m" }],
        request: {
          frame: { system_prompt: "", system_blocks: [], context_blocks: [] },
          conversation: [],
          tools: [],
        },
        signal,
      },
      {
        ok: true,
        model_ref: "fake/m",
        response: { blocks: [], stop_reason: "tool_use", token_usage: usage, model: "m" },
        timeline: {
          requested_model_ref: "fake/m",
          attempts: [
            {
              provider: "fake",
              model_ref: "fake/m",
              candidate_index: 0,
              attempt: 1,
              max_attempts: 3,
              outcome: "succeeded",
              advanced_to_fallback: false,
              token_usage: usage,
            },
          ],
        },
      },
      start,
      Date.now(),
    );
    const call = { call_id: `c${i}`, tool_name: "AgentGet", arguments_preview: "{}" };
    await rec.onEvents([
      ev("provider_round_completed", { run_id: "run_1" }),
      ev("assistant_round_recorded", {
        run_id: "run_1",
        round: i,
        text_preview: "",
        tool_requests: ["AgentGet"],
        tool_calls: [call],
      }),
    ]);
    await rec.onEvents([
      ev("tool_executed", {
        run_id: "run_1",
        call_id: `c${i}`,
        tool_name: "AgentGet",
        status: "success",
        summary_text: "ok",
        duration_ms: 1,
        envelope: {},
      }),
    ]);
  }
  rec.endTurn(req, { kind: "settled" }, undefined);
  await rec.flush();
  const used = process.cpuUsage(t0);
  const s = rec.stats();
  if (s.dropped_queue_full > 0 || s.queued > 0)
    throw new Error(`the recorder bench lost spans: ${JSON.stringify(s)}`);
  void rec.shutdown();
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / 1000 / rounds;
}

const bench: Benchmark = {
  name: "telemetry",
  description:
    "per-round host CPU of telemetry: all off vs traces + metrics exporting vs a dead collector, paired",
  async run(ctx) {
    const r = new ResultBuilder();
    const load0 = loadavg()[0]!;
    const fake = await startFakeProvider();
    const sink = await startSink();
    const hole = await startOtlpReceiver("blackhole");
    const holeBase = hole.url.replace(/\/v1\/traces$/, "");
    const rounds = Number(ctx.options.rounds ?? (ctx.quick ? 15 : 40));
    const pairs = Number(ctx.options.pairs ?? (ctx.quick ? 3 : 8));
    const hosts: { proc: ServerProc; home: string }[] = [];
    const cpuProf = ctx.options["cpu-prof"] !== undefined || process.argv.includes("--cpu-prof");
    const profDir = (name: string) =>
      join(ctx.root, "bench", "results", `telemetry-profile-${name}`);
    try {
      const delay = Number(ctx.options.delay ?? 2000);
      const metricsMs = Number(ctx.options["metrics-interval"] ?? 10_000);
      const prof = (name: string) => {
        if (!cpuProf) return [];
        rmSync(profDir(name), { recursive: true, force: true });
        return ["--cpu-prof", `--cpu-prof-dir=${profDir(name)}`];
      };
      const off = await host(ctx.root, fake, null, delay, metricsMs, prof("off"));
      hosts.push(off);
      const on = await host(ctx.root, fake, sink.url, delay, metricsMs, prof("on"));
      hosts.push(on);
      const dead = await host(ctx.root, fake, holeBase, delay, metricsMs);
      hosts.push(dead);
      const order = [
        ["off", off],
        ["on", on],
        ["dead", dead],
      ] as const;
      // Warm-up turns each (first-turn costs: the SDK load, prepared statements, the JIT).
      for (let w = 0; w < 2; w++)
        for (const [name, h] of order) await turn(fake, h.proc, rounds, `warm-${name}-${w}`);

      type Per = { gaps: number[]; cpu: number[]; medians: number[] };
      const per: Record<string, Per> = {
        off: { gaps: [], cpu: [], medians: [] },
        on: { gaps: [], cpu: [], medians: [] },
        dead: { gaps: [], cpu: [], medians: [] },
      };
      for (let p = 0; p < pairs; p++) {
        const seq = p % 2 === 0 ? order : [...order].reverse();
        for (const [name, h] of seq) {
          const t = await turn(fake, h.proc, rounds, `${name}-${p}`);
          per[name]!.gaps.push(...t.gaps);
          per[name]!.cpu.push(t.cpu);
          per[name]!.medians.push(median(t.gaps));
        }
      }
      const load1 = loadavg()[0]!;
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      const cpuPerRound = (name: string) => sum(per[name]!.cpu) / (pairs * rounds);
      for (const name of ["off", "on", "dead"]) {
        const s = summarize(per[name]!.gaps);
        r.metric(`${name}_round_p50_ms`, round(s.p50), "ms", `round wall time p50, ${name}`);
        r.metric(`${name}_round_p99_ms`, round(s.p99), "ms", `round wall time p99, ${name}`);
        r.metric(
          `${name}_cpu_per_round_ms`,
          round(cpuPerRound(name), 3),
          "ms",
          `host CPU per round (all turns summed), ${name}`,
        );
      }
      const diffs = per.on!.medians.map((m, i) => m - per.off!.medians[i]!);
      const deadDiffs = per.dead!.medians.map((m, i) => m - per.off!.medians[i]!);
      r.metric("paired_diff_on_p50_ms", round(median(diffs)), "ms", "on − off, median of pairs");
      r.metric(
        "paired_diff_dead_p50_ms",
        round(median(deadDiffs)),
        "ms",
        "dead collector − off, median of pairs",
      );
      // Per pair: on ÷ off of that pair's two turns; their spread says how noisy the run was.
      const pairRatios = per.on!.cpu.map((c, i) => c / Math.max(1, per.off!.cpu[i]!));
      const pr = summarize(pairRatios);
      r.metric("cpu_ratio_pairs_p50", round(pr.p50, 3), "x", "host CPU on ÷ off, median of pairs");
      r.metric("cpu_ratio_pairs_min", round(pr.min, 3), "x", "… the lowest pair");
      r.metric("cpu_ratio_pairs_max", round(pr.max, 3), "x", "… the highest pair");
      const cpuRatio = cpuPerRound("on") / Math.max(0.001, cpuPerRound("off"));
      r.metric("cpu_ratio_on_off", round(cpuRatio, 3), "x", "host CPU per round, on ÷ off (sums)");
      r.target("exporting costs ≤ 5% more host CPU per round", "cpu_ratio_on_off", "<=", 1.05);
      const deadRatio = cpuPerRound("dead") / Math.max(0.001, cpuPerRound("off"));
      r.metric("cpu_ratio_dead_off", round(deadRatio, 3), "x", "host CPU per round, dead ÷ off");
      r.metric("load_1m_start", round(load0, 2), "", "load average (1 min) at the start");
      r.metric("load_1m_end", round(load1, 2), "", "load average (1 min) at the end");
      // The recorder alone (spans, attributes, the queue, protobuf encoding), warmed first.
      await recorderCpuPerRound(2000);
      const recRuns: number[] = [];
      for (let i = 0; i < 3; i++) recRuns.push(await recorderCpuPerRound(ctx.quick ? 5000 : 20000));
      const recMs = median(recRuns);
      r.metric(
        "recorder_cpu_per_round_us",
        round(recMs * 1000, 1),
        "µs",
        "the recorder's CPU per round, encoding included (in process)",
      );
      r.metric(
        "recorder_share_of_round_cpu_pct",
        round((100 * recMs) / Math.max(0.001, cpuPerRound("off")), 2),
        "%",
        "that, against a round's host CPU with telemetry off",
      );
      r.target(
        "the recorder costs ≤ 5% of a round's host CPU",
        "recorder_share_of_round_cpu_pct",
        "<=",
        5,
      );
      r.note(
        `load average ${load0.toFixed(2)} at the start, ${load1.toFixed(2)} at the end, on ${ctx.quick ? "a quick" : "a full"} run of ${pairs} pairs × ${rounds} rounds`,
      );
      // Stop the hosts now: the last spans and metrics go out, and the profiles are written.
      for (const h of hosts.splice(0)) {
        await h.proc.stop();
        rmSync(h.home, { recursive: true, force: true });
      }
      r.check(
        "the collector got spans",
        sink.requests.traces > 0,
        `${sink.requests.traces} exports`,
      );
      r.check(
        "the collector got metrics",
        sink.metricNames.has("gen_ai.client.token.usage"),
        `${sink.requests.metrics} exports`,
      );
      r.check("what was decoded decoded", sink.decodeErrors === 0, `${sink.decodeErrors} errors`);
      r.check("the sampled exports held chat spans", sink.chatSpans > 0, `${sink.chatSpans}`);
      if (cpuProf) {
        for (const name of ["off", "on"]) {
          const file = readdirSync(profDir(name)).find((f) => f.endsWith(".cpuprofile"));
          if (!file) continue;
          const t = telemetryTime(join(profDir(name), file), 12);
          r.note(
            `${name} host profile: ${t.totalMs.toFixed(0)} ms busy, ${t.ms.toFixed(0)} ms (${((100 * t.ms) / Math.max(1, t.totalMs)).toFixed(1)}%) in telemetry code${t.top.length ? ":" : ""}`,
          );
          for (const line of t.top) r.note(`  ${line}`);
        }
      }
    } finally {
      for (const h of hosts) {
        await h.proc.stop();
        rmSync(h.home, { recursive: true, force: true });
      }
      await sink.close();
      await hole.close();
      await fake.close();
    }
    return r.result;
  },
};
export default bench;
