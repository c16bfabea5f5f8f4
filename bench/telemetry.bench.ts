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
    // The default export schedule (every 2 s); `--delay=<ms>` exports more often.
    env: {
      OTEL_BSP_SCHEDULE_DELAY: String(delayMs),
      OTEL_EXPORTER_OTLP_TIMEOUT: "1000",
    },
  });
  configureFakeProvider(root, home, fake.baseUrl("openai"), "fake/bench-model");
  return { proc, home };
}

const median = (xs: number[]) => summarize(xs).p50;

/**
 * The recorder's own CPU per round, in this process with an exporter that accepts at once:
 * one turn of `rounds` rounds (a chat span, a tool call's events and span each), as the
 * hooks and the event listener would feed it. Free of the machine's noise between hosts.
 */
function recorderCpuPerRound(rounds: number): number {
  const dir = mkdtempSync(join(tmpdir(), "holon-bench-rec-"));
  const store = new Store(join(dir, "holon.db"), systemClock, randomIds);
  const rec = createRecorder(
    {
      store,
      settings: traceSettings({ enabled: true, endpoint: "http://127.0.0.1:9/v1/traces" }, {}),
      price: () => 0.001,
    },
    () => undefined,
    { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} },
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
    rec.onEvents([
      ev("provider_round_completed", { run_id: "run_1" }),
      ev("assistant_round_recorded", {
        run_id: "run_1",
        round: i,
        text_preview: "",
        tool_requests: ["AgentGet"],
        tool_calls: [call],
      }),
    ]);
    rec.onEvents([
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
  const used = process.cpuUsage(t0);
  void rec.shutdown();
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / 1000 / rounds;
}

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
      const delay = Number(ctx.options.delay ?? 2000);
      const off = await host(ctx.root, fake, null, delay);
      hosts.push(off);
      const on = await host(ctx.root, fake, receiver.url, delay);
      hosts.push(on);
      const dead = await host(ctx.root, fake, hole.url, delay);
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
      // The recorder alone (spans, attributes, the queue), warmed first.
      recorderCpuPerRound(2000);
      const recMs = median([0, 1, 2].map(() => recorderCpuPerRound(ctx.quick ? 5000 : 20000)));
      r.metric(
        "recorder_cpu_per_round_us",
        round(recMs * 1000, 1),
        "µs",
        "the recorder's CPU per round (in process)",
      );
      r.metric(
        "recorder_share_of_round_cpu_pct",
        round((100 * recMs) / Math.max(0.001, median(per.off!.cpu)), 2),
        "%",
        "that, against a round's host CPU with traces off",
      );
      r.target(
        "the recorder costs ≤ 5% of a round's host CPU",
        "recorder_share_of_round_cpu_pct",
        "<=",
        5,
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
