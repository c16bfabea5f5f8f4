// Admission throughput: sustained POST /agents/main/enqueue against a real `holon serve`
// with the default agent paused (so this measures admission, not turns), beside a bare
// node:http server and a bare hono server (the host's HTTP stack without the store)
// answering the same request. All three are child processes driven the same way by a forked
// load generator: 32 keep-alive connections, closed loop, 1 s warm-up, then a fixed window.
//
// The machine is shared and noisy, so the servers are measured in interleaved rounds
// (bare, hono, holon; bare, hono, holon; …) and the report gives the median round rate, the
// median of the per-round holon/bare ratios, and pooled latency percentiles. CPU time per
// request (from /proc) is reported too: it is far less sensitive to other load than rates.
// `--vs=<tree>` adds a holon from another checkout to every round, for a paired CPU ratio;
// `--rounds=<n>` sets the rounds (default 3). `--cpu-prof` also writes a V8 CPU profile
// of the host and lists its top functions.
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { topFunctions } from "./lib/cpuprofile.ts";
import type { LoadConfig, LoadResult } from "./workers/loadgen.ts";
import { round, summarize } from "./lib/stats.ts";
import {
  Worker,
  cpuSeconds,
  expectOk,
  startBaseline,
  startHolon,
  workerPath,
  type ServerProc,
} from "./lib/proc.ts";
import { ResultBuilder, type Benchmark, type BenchContext } from "./lib/types.ts";

const CONNECTIONS = 32;
const BODY = JSON.stringify({ text: "benchmark message {n}" });

type Round = LoadResult & { rate: number; cpuUsPerReq: number };

async function drive(ctx: BenchContext, server: ServerProc, label: string): Promise<Round> {
  const cfg: LoadConfig = {
    hostname: server.hostname,
    port: server.port,
    path: "/agents/main/enqueue",
    body: BODY,
    connections: CONNECTIONS,
    warmupMs: ctx.quick ? 300 : 1_000,
    durationMs: ctx.quick ? 1_000 : 5_000,
    requestTimeoutMs: 10_000,
  };
  const worker = new Worker<{ type: "result" } & LoadResult>(workerPath("loadgen.ts"));
  try {
    const cpu0 = cpuSeconds(server.pid);
    worker.send(cfg);
    const r = await worker.next("result", cfg.warmupMs + cfg.durationMs + 60_000);
    const cpu = cpuSeconds(server.pid) - cpu0;
    const requests = r.totalOk + r.totalNon2xx;
    const rate = r.measuredCount / r.measuredSeconds;
    const s = summarize(r.latencies);
    ctx.log(
      `${label}: ${rate.toFixed(0)} msg/s, p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, ` +
        `${((cpu / requests) * 1e6).toFixed(0)} µs CPU/request`,
    );
    return { ...r, rate, cpuUsPerReq: (cpu / requests) * 1e6 };
  } finally {
    await worker.stop();
  }
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const SERVERS = ["bare", "hono", "holon", "vs"] as const;
type ServerKey = (typeof SERVERS)[number];
const LABEL: Record<ServerKey, string> = {
  bare: "bare node:http",
  hono: "bare hono (no store)",
  holon: "holon serve",
  vs: "holon serve from --vs",
};

const bench: Benchmark = {
  name: "admission",
  description: "POST /agents/main/enqueue, 32 keep-alive connections, vs bare node:http",
  async run(ctx) {
    const r = new ResultBuilder();
    // --vs=<tree>: a second holon from another checkout joins every round, for a paired
    // figure (this checkout's CPU per request over the other's, round by round).
    const vs = ctx.options.vs ? resolve(ctx.options.vs) : undefined;
    if (vs && !existsSync(join(vs, "bin", "holon.js")))
      throw new Error("--vs=<tree> must name another checkout (with bin/holon.js)");
    const keys = SERVERS.filter((k) => k !== "vs" || vs);
    const rounds = Number(ctx.options.rounds ?? (ctx.quick ? 1 : 3));
    if (!Number.isInteger(rounds) || rounds < 1) throw new Error("--rounds must be >= 1");
    const profDir =
      ctx.options["cpu-prof"] !== undefined || process.argv.includes("--cpu-prof")
        ? join(ctx.root, "bench", "results", "admission-profile")
        : undefined;
    if (profDir) {
      rmSync(profDir, { recursive: true, force: true });
      mkdirSync(profDir, { recursive: true });
    }
    const servers: Partial<Record<ServerKey, ServerProc>> = {};
    const runs: Record<ServerKey, Round[]> = { bare: [], hono: [], holon: [], vs: [] };
    let pendingBefore = 0;
    let pendingAfter = 0;
    try {
      servers.bare = await startBaseline("bare");
      servers.hono = await startBaseline("hono");
      // --cpu-prof: a V8 CPU profile of the host, its top functions in the notes.
      servers.holon = await startHolon(
        ctx.root,
        profDir ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profDir}`] } : {},
      );
      const holonUrl = servers.holon.url;
      await expectOk(`${holonUrl}/control/agents/main/control`, "POST", { action: "pause" });
      if (vs) {
        servers.vs = await startHolon(vs);
        await expectOk(`${servers.vs.url}/control/agents/main/control`, "POST", {
          action: "pause",
        });
      }
      pendingBefore = Number((await expectOk(`${holonUrl}/agents/main/status`)).pending);
      ctx.log(
        `${rounds} round(s) × (${keys.join(", ")}), each ${ctx.quick ? "0.3 s warm-up + 1 s" : "1 s warm-up + 5 s"}, ${CONNECTIONS} connections`,
      );
      for (let i = 0; i < rounds; i++) {
        for (const key of keys) {
          runs[key].push(await drive(ctx, servers[key]!, `round ${i + 1} ${LABEL[key]}`));
        }
      }
      pendingAfter = Number((await expectOk(`${holonUrl}/agents/main/status`)).pending);
    } finally {
      for (const s of Object.values(servers)) await s.stop();
    }

    if (vs) {
      const paired = runs.holon.map((h, i) => h.cpuUsPerReq / runs.vs[i]!.cpuUsPerReq);
      r.metric(
        "vs.cpu_ratio",
        round(median(paired), 3),
        "×",
        "CPU per request, this checkout / --vs (median of rounds)",
      );
      r.note(`per-round CPU ratios this / --vs: ${paired.map((x) => x.toFixed(3)).join(", ")}`);
    }
    for (const key of keys) {
      const lat = summarize(runs[key].flatMap((x) => x.latencies));
      r.metric(
        `${key}.rate`,
        round(median(runs[key].map((x) => x.rate)), 0),
        "msg/s",
        `${LABEL[key]} rate (median round)`,
      );
      r.metric(`${key}.p50_ms`, round(lat.p50, 2), "ms", `${LABEL[key]} p50`);
      r.metric(`${key}.p99_ms`, round(lat.p99, 2), "ms", `${LABEL[key]} p99`);
      r.metric(
        `${key}.cpu_us_per_req`,
        round(median(runs[key].map((x) => x.cpuUsPerReq)), 0),
        "µs",
        `${LABEL[key]} server CPU per request`,
      );
    }
    const ratios = runs.holon.map((h, i) => h.rate / runs.bare[i]!.rate);
    r.metric(
      "ratio_vs_bare",
      round(median(ratios), 3),
      "×",
      "holon / bare node:http rate (median of rounds)",
    );
    r.metric(
      "ratio_vs_hono",
      round(median(runs.holon.map((h, i) => h.rate / runs.hono[i]!.rate)), 3),
      "×",
      "holon / bare hono rate (median of rounds)",
    );
    r.metric(
      "cpu_ratio_vs_bare",
      round(
        r.result.metrics["holon.cpu_us_per_req"]!.value /
          r.result.metrics["bare.cpu_us_per_req"]!.value,
        2,
      ),
      "×",
      "holon / bare node:http CPU per request",
    );
    const acknowledged = runs.holon.reduce((n, x) => n + x.totalOk, 0);
    r.metric("holon.acknowledged", acknowledged, "msgs", "holon 2xx responses (incl. warm-up)");
    r.metric(
      "holon.stored",
      pendingAfter - pendingBefore,
      "msgs",
      "holon messages stored (pending delta)",
    );

    r.target("rate ≥ 0.5 × bare node:http", "ratio_vs_bare", ">=", 0.5);
    r.target("p99 < 25 ms", "holon.p99_ms", "<", 25);

    r.check(
      "messages stored == 2xx responses",
      pendingAfter - pendingBefore === acknowledged,
      `stored ${pendingAfter - pendingBefore}, acknowledged ${acknowledged}`,
    );
    for (const key of keys) {
      const bad = runs[key].filter((x) => x.totalNon2xx > 0 || x.totalErrors > 0);
      r.check(
        `${LABEL[key]}: every request answered 2xx`,
        bad.length === 0,
        bad.length === 0
          ? undefined
          : bad
              .map(
                (x) =>
                  `statuses ${JSON.stringify(x.statusCounts)}, errors ${x.totalErrors}${x.firstError ? `: ${x.firstError}` : ""}`,
              )
              .join("; "),
      );
    }
    r.note(`per-round holon/bare ratios: ${ratios.map((x) => x.toFixed(2)).join(", ")}`);
    r.note(
      `closed loop from a forked load generator; latency percentiles pool all rounds; ` +
        `temp HOLON_HOME under ${process.env.TMPDIR ?? "/tmp"} (set TMPDIR to move it)`,
    );
    if (profDir) {
      for (const f of readdirSync(profDir).filter((f) => f.endsWith(".cpuprofile"))) {
        r.note(`CPU profile: ${join(profDir, f)}; top self time:`);
        for (const line of topFunctions(join(profDir, f), 15)) r.note(`  ${line}`);
      }
    }
    return r.result;
  },
};
export default bench;
