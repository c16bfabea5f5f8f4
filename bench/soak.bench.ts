// Soak: does a host that has been busy for a while stay as fast and as small as a fresh one?
//
// Workload (issue 19): a real `holon serve` with 10 agents against an instant fake model
// (its own process), 4 operator prompt loops (each waits for its turn to end before the next
// prompt; every 5th prompt has one ExecCommand round, every 10th starts a background command
// task, `sleep 1`, whose result comes back as a turn of its own), ~20 public enqueues per
// second spread over the agents (each one a turn too), and one one-shot timer a second made
// through the control API, due 1–3 s later (each fire is a turn too). The clients run in a
// forked worker (workers/soak-load.ts) and see turn ends, timer fires and task ends on the
// agents' SSE streams.
//
// Every 10 s it samples throughput, latency percentiles, and the host's CPU (per turn), RSS,
// V8 heap (through workers/heap-probe.mjs, loaded with --import), open fds, child processes,
// the database and the whole home on disk, timers fired and tasks finished. The summary
// compares the last window with the first: a minute, or 10 minutes in a run of 30 minutes or
// more (--window=<s> to choose), and says for RSS, CPU per turn, the database and the home
// whether the last window is within 10% of the first. After the run the host is
// restarted on the same home to time a restart with that much history. Between the two, the
// host sits idle for 150 s, and its RSS then shows what V8 gives back once the load stops.
//
//   npm run bench -- soak                      10 minutes (the figure the issue asks for)
//   npm run bench -- soak --duration=90        a short run while developing
//   npm run bench -- soak --cpu-prof           also write a V8 CPU profile of the host and
//                                              print its top functions
//   --keep-home                                keep the home (path printed) to inspect it
//   --host-node-args="<flags>"                 extra Node/V8 flags for the host process
//   --layout=src                               run the checkout's sources instead of the build
//   --quiet=<s>                                idle time after the load before the RSS reading
//                                              (default 150; 0 skips it)
//   --retention-caps                           low retention caps (events 40 MB, transcript 20,
//                                              messages 20, briefs 10, episodes 5, task records
//                                              2, task output 5, spend ledger 5 with no per-call
//                                              detail kept, the log at most 2 × 5 MB) and a pass
//                                              every minute: does the whole home level off?
//   --retention-caps=tiny                      a tenth of those (at least 1 MB each), for a short
//                                              run or a slow machine that would not reach them
//   --window=<s>                               the compared windows' length (a multiple of 10)
//   --timers-per-sec=<n>                       timers made per second (default 1; 0: none)
//   --task-every=<n>                           every n-th prompt starts a task (default 10; 0: none)
//   --enqueues-per-sec=<n>                     public enqueues per second (default 20)
//   --telemetry                                traces, /metrics and the OTLP metrics export on,
//                                              exporting to a collector in the bench process that
//                                              accepts and counts (issue 30's "telemetry on" figure;
//                                              run it beside a run without, alternated)
//
// The one-hour soak of issue 35 (retention caps on, timers and tasks churning):
//   npm run bench -- soak --duration=3600 --retention-caps
// On a shared, loaded machine the host may not keep up with 20 enqueues a second; a
// backlog of queued messages (which retention never removes) then grows the database for
// reasons of its own. Lower the open-loop rates until prompt latency is flat, e.g.
//   --retention-caps=tiny --enqueues-per-sec=2 --timers-per-sec=0.5
// The host runs from dist/ by default (built first when stale): that is what an installed
// package, and so a user's daemon, runs. A checkout's host carries a few MB more (Node's
// compile cache holds the stripped sources of every module for the life of the process).
// Per-sample rows go to bench/results/soak-<time>.json.
import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SoakLoadConfig, SoakWindow } from "./workers/soak-load.ts";
import { round, summarize } from "./lib/stats.ts";
import {
  Worker,
  configureFakeProvider,
  cpuSeconds,
  descendants,
  dirBytes,
  ensureDist,
  expectOk,
  fdCount,
  memoryKb,
  sleep,
  startHolon,
  workerPath,
} from "./lib/proc.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { topFunctions } from "./lib/cpuprofile.ts";

const SAMPLE_MS = 10_000;
const QUIET_S = 150;
const AGENTS = 10;
/** A run at least this long compares 10-minute windows instead of minutes. */
const LONG_RUN_S = 1800;

type Sample = {
  t: number;
  turns: number;
  events: number;
  prompts: number;
  enqueues: number;
  promptLatencies: number[];
  enqueueLatencies: number[];
  errors: number;
  timersCreated: number;
  timersFired: number;
  tasksStarted: number;
  tasksFinished: number;
  cpuSeconds: number;
  /** Host CPU time per turn in this sample (process CPU, so less sensitive to a busy machine). */
  cpuMsPerTurn: number;
  rssMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  rssAnonMb: number;
  /** Resident size of glibc's main heap (`[heap]`): with one malloc arena, native memory. */
  rssMallocMb: number;
  fds: number;
  children: number;
  dbMb: number;
  homeMb: number;
};

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

type Probe = { heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };

function readProbe(file: string): Probe | null {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Probe;
  } catch {
    return null;
  }
}

/** Resident MB of a process's `[heap]` mapping (glibc's main arena), from /proc/<pid>/smaps. */
function mallocHeapMb(pid: number): number {
  try {
    const smaps = readFileSync(`/proc/${pid}/smaps`, "utf8");
    const at = smaps.indexOf(" [heap]\n");
    if (at < 0) return 0;
    const rss = /^Rss:\s+(\d+) kB/m.exec(smaps.slice(at));
    return rss ? Number(rss[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** RssAnon and RssFile of a process, in MB (how much of RSS is heap-like memory vs mapped files). */
function rssParts(pid: number): { anon: number; file: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
    return { anon: kb("RssAnon") / 1024, file: kb("RssFile") / 1024 };
  } catch {
    return { anon: Number.NaN, file: Number.NaN };
  }
}

/** `--retention-caps`: caps low enough that a soak reaches them within minutes (MB). */
const LOW_RETENTION: Record<string, number> = {
  events: 40,
  transcript: 20,
  messages: 20,
  briefs: 10,
  episodes: 5,
  tasks: 2,
  task_output: 5,
  ledger: 5,
};

function retentionSettings(caps: "issue" | "tiny"): [string, string][] {
  const scale = caps === "tiny" ? 0.1 : 1;
  return [
    ...Object.entries(LOW_RETENTION).map(([family, mb]): [string, string] => [
      `retention.${family}.max_mb`,
      String(Math.max(1, Math.round(mb * scale))),
    ]),
    // Every call older than the current quarter-hour may be rolled up (default: a day).
    ["retention.ledger.detail_hours", "0"],
    // The runtime log at most 2 × 5 MB (default 6 × 10 MB, which an hour does not reach).
    ["retention.logs.max_file_mb", String(Math.max(1, Math.round(5 * scale)))],
    ["retention.logs.max_files", "1"],
    ["retention.interval_minutes", "1"],
  ];
}

type WindowStats = {
  turnsPerMin: number;
  cpuMsPerTurn: number;
  prompt: ReturnType<typeof summarize>;
  enqueue: ReturnType<typeof summarize>;
  rssMb: number;
  mallocMb: number;
  heapMb: number;
  dbMb: number;
  /** Mean database and home size over the window (the `dbMb` above is at its end). */
  dbMeanMb: number;
  homeMb: number;
  timersFired: number;
  tasksFinished: number;
  fds: number;
  children: number;
};

function windowStats(samples: Sample[]): WindowStats {
  const seconds = (samples.length * SAMPLE_MS) / 1000;
  const turns = samples.reduce((n, s) => n + s.turns, 0);
  const cpu = samples.reduce((n, s) => n + s.cpuSeconds, 0);
  const last = samples.at(-1)!;
  const mean = (f: (s: Sample) => number) => samples.reduce((n, s) => n + f(s), 0) / samples.length;
  return {
    turnsPerMin: (turns / seconds) * 60,
    cpuMsPerTurn: turns > 0 ? (cpu * 1000) / turns : Number.NaN,
    prompt: summarize(samples.flatMap((s) => s.promptLatencies)),
    enqueue: summarize(samples.flatMap((s) => s.enqueueLatencies)),
    rssMb: mean((s) => s.rssMb),
    mallocMb: mean((s) => s.rssMallocMb),
    heapMb: mean((s) => s.heapUsedMb),
    dbMb: last.dbMb,
    dbMeanMb: mean((s) => s.dbMb),
    homeMb: mean((s) => s.homeMb),
    timersFired: samples.reduce((n, s) => n + s.timersFired, 0),
    tasksFinished: samples.reduce((n, s) => n + s.tasksFinished, 0),
    fds: last.fds,
    children: last.children,
  };
}

const bench: Benchmark = {
  name: "soak",
  description:
    "10 agents under steady load for --duration seconds (default 600): first vs last minute",
  explicit: true,
  async run(ctx) {
    const r = new ResultBuilder();
    const durationS = Number(ctx.options.duration ?? (ctx.quick ? 60 : 600));
    if (!Number.isFinite(durationS) || durationS < 30)
      throw new Error("--duration must be >= 30 (seconds)");
    const cpuProf = ctx.options["cpu-prof"] !== undefined || process.argv.includes("--cpu-prof");
    const keepHome = process.argv.includes("--keep-home");
    const capsOption =
      ctx.options["retention-caps"] ??
      (process.argv.includes("--retention-caps") ? "issue" : undefined);
    if (capsOption !== undefined && capsOption !== "issue" && capsOption !== "tiny")
      throw new Error("--retention-caps takes no value or =tiny");
    const retention = capsOption ? retentionSettings(capsOption) : [];
    const lowRetention = retention.length > 0;
    const telemetry = process.argv.includes("--telemetry") || ctx.options.telemetry !== undefined;
    const collector = telemetry ? await startSinkCollector() : null;
    const quietMs = Number(ctx.options.quiet ?? QUIET_S) * 1000;
    if (!Number.isFinite(quietMs) || quietMs < 0) throw new Error("--quiet must be >= 0 (seconds)");
    const layout = ctx.options.layout ?? "dist";
    if (layout !== "dist" && layout !== "src") throw new Error("--layout must be dist or src");
    if (layout === "dist") ensureDist(ctx.root, (line) => ctx.log(line));
    const layoutEnv = { HOLON_DIST: layout === "dist" ? "1" : "0" };
    const timersPerSec = Number(ctx.options["timers-per-sec"] ?? 1);
    if (!Number.isFinite(timersPerSec) || timersPerSec < 0 || timersPerSec > 50)
      throw new Error("--timers-per-sec must be between 0 and 50");
    const taskEvery = Number(ctx.options["task-every"] ?? 10);
    if (!Number.isInteger(taskEvery) || taskEvery < 0)
      throw new Error("--task-every must be a whole number >= 0");
    const enqueuePerSec = Number(ctx.options["enqueues-per-sec"] ?? 20);
    if (!Number.isFinite(enqueuePerSec) || enqueuePerSec <= 0 || enqueuePerSec > 500)
      throw new Error("--enqueues-per-sec must be above 0 and at most 500");
    // Compare whole minutes when there are enough of them (10 minutes in a long run); a short
    // run compares its thirds.
    const windowOption = ctx.options.window;
    const windowMs =
      windowOption !== undefined
        ? Number(windowOption) * 1000
        : Math.min(durationS >= LONG_RUN_S ? 600_000 : 60_000, (durationS * 1000) / 3);
    if (!Number.isFinite(windowMs) || windowMs < SAMPLE_MS || windowMs * 2 > durationS * 1000)
      throw new Error("--window must be >= 10 s and at most half of --duration");
    const windowSamples = Math.max(1, Math.floor(windowMs / SAMPLE_MS));

    const home = mkdtempSync(join(tmpdir(), "holon-soak-"));
    const probe = join(home, "..", `${home.split("/").pop()}-probe.json`);
    const profDir = join(ctx.root, "bench", "results", "soak-profile");
    const provider = new Worker<{ type: "ready"; baseUrl: string }>(workerPath("soak-provider.ts"));
    const load = new Worker<
      { type: "started" } | ({ type: "sample" } & SoakWindow) | ({ type: "stopped" } & SoakWindow)
    >(workerPath("soak-load.ts"));
    const samples: Sample[] = [];
    let restartMs = Number.NaN;
    let quietRssMb = Number.NaN;
    let finalErrors = 0;
    let firstError: string | null = null;
    try {
      const { baseUrl } = await provider.next("ready", 20_000);
      configureFakeProvider(ctx.root, home, baseUrl, "fake/soak-model");
      for (const [key, value] of retention)
        execFileSync(
          process.execPath,
          [join(ctx.root, "bin", "holon.js"), "config", "set", key, value, "--home", home],
          { stdio: "pipe" },
        );
      if (collector) {
        const sets: [string, string][] = [
          ["telemetry.traces.enabled", "true"],
          ["telemetry.traces.endpoint", `${collector.url}/v1/traces`],
          ["telemetry.metrics.enabled", "true"],
          ["telemetry.metrics.otlp_enabled", "true"],
          ["telemetry.metrics.otlp_endpoint", `${collector.url}/v1/metrics`],
          ["telemetry.metrics.otlp_interval_ms", "10000"],
        ];
        for (const [key, value] of sets)
          execFileSync(
            process.execPath,
            [join(ctx.root, "bin", "holon.js"), "config", "set", key, value, "--home", home],
            { stdio: "pipe" },
          );
      }
      if (cpuProf) {
        rmSync(profDir, { recursive: true, force: true });
        mkdirSync(profDir, { recursive: true });
      }
      const nodeArgs = ["--import", workerPath("heap-probe.mjs")];
      // Extra V8/Node flags for the host, to try memory settings: --host-node-args="--max-semi-space-size=4"
      if (ctx.options["host-node-args"])
        nodeArgs.push(...ctx.options["host-node-args"].split(/\s+/));
      if (cpuProf) nodeArgs.push("--cpu-prof", `--cpu-prof-dir=${profDir}`);
      const host = await startHolon(ctx.root, {
        home,
        nodeArgs,
        env: { ...layoutEnv, HOLON_BENCH_PROBE: probe },
      });
      try {
        const agents = ["main"];
        for (let i = 1; i < AGENTS; i++) {
          const id = `soak-${String(i).padStart(2, "0")}`;
          await expectOk(`${host.url}/control/agents/${id}/create`, "POST", {});
          agents.push(id);
        }
        const cfg: SoakLoadConfig = {
          hostname: host.hostname,
          port: host.port,
          agents,
          promptLoops: 4,
          execEvery: 5,
          enqueuePerSec,
          timersPerSec,
          timerDelayMs: [1_000, 3_000],
          taskEvery,
          promptTimeoutMs: 30_000,
          token: host.token,
        };
        load.send({ type: "start", ...cfg });
        await load.next("started", 30_000);
        ctx.log(
          `${AGENTS} agents, 4 prompt loops (every 5th with ExecCommand${taskEvery ? `, every ${taskEvery}th a background task` : ""}), ${enqueuePerSec} enqueues/s, ${timersPerSec} timers/s, ${durationS} s; sampling every ${SAMPLE_MS / 1000} s; host from ${layout === "dist" ? "dist/" : "src/"}`,
        );
        const t0 = performance.now();
        let cpuBefore = cpuSeconds(host.pid);
        const db = join(home, "holon.db");
        for (let i = 1; i * SAMPLE_MS <= durationS * 1000; i++) {
          await sleep(Math.max(0, t0 + i * SAMPLE_MS - performance.now()));
          load.send({ type: "sample" });
          const w = await load.next("sample", 30_000);
          const cpuNow = cpuSeconds(host.pid);
          const heap = readProbe(probe);
          const s: Sample = {
            t: i * (SAMPLE_MS / 1000),
            turns: w.turns,
            events: w.events,
            prompts: w.prompts,
            enqueues: w.enqueues,
            promptLatencies: w.promptLatencies,
            enqueueLatencies: w.enqueueLatencies,
            errors: w.errors,
            timersCreated: w.timersCreated,
            timersFired: w.timersFired,
            tasksStarted: w.tasksStarted,
            tasksFinished: w.tasksFinished,
            cpuSeconds: cpuNow - cpuBefore,
            cpuMsPerTurn: w.turns > 0 ? ((cpuNow - cpuBefore) * 1000) / w.turns : Number.NaN,
            rssMb: memoryKb(host.pid).rss / 1024,
            heapUsedMb: heap ? heap.heapUsed / 2 ** 20 : Number.NaN,
            heapTotalMb: heap ? heap.heapTotal / 2 ** 20 : Number.NaN,
            externalMb: heap ? heap.external / 2 ** 20 : Number.NaN,
            rssAnonMb: rssParts(host.pid).anon,
            rssMallocMb: mallocHeapMb(host.pid),
            fds: fdCount(host.pid),
            children: descendants(host.pid).length,
            dbMb: (fileBytes(db) + fileBytes(`${db}-wal`) + fileBytes(`${db}-shm`)) / 2 ** 20,
            homeMb: dirBytes(home) / 2 ** 20,
          };
          cpuBefore = cpuNow;
          samples.push(s);
          firstError ??= w.firstError;
          const p = summarize(s.promptLatencies);
          ctx.log(
            `${String(s.t).padStart(4)} s  ${String(s.turns).padStart(5)} turns  ` +
              `${s.cpuMsPerTurn.toFixed(1)} ms CPU/turn  ` +
              `prompt p50 ${p.p50.toFixed(0)} p99 ${p.p99.toFixed(0)} ms  ` +
              `RSS ${s.rssMb.toFixed(0)} (anon ${s.rssAnonMb.toFixed(0)}, malloc ${s.rssMallocMb.toFixed(0)}) MB heap ${s.heapUsedMb.toFixed(0)}/${s.heapTotalMb.toFixed(0)} ext ${s.externalMb.toFixed(0)} MB  ` +
              `fds ${s.fds} children ${s.children}  db ${s.dbMb.toFixed(0)} home ${s.homeMb.toFixed(0)} MB  ` +
              `timers ${s.timersFired} tasks ${s.tasksFinished}` +
              (s.errors ? `  errors ${s.errors} (${w.firstError})` : ""),
          );
        }
        load.send({ type: "stop" });
        const last = await load.next("stopped", 60_000);
        finalErrors = last.errors;
        firstError ??= last.firstError;
        // Once the load stops, V8 sees the allocation rate drop and runs its memory-reducing
        // collections, which give back the pages it pools while busy: how much is left then.
        for (let quiet = SAMPLE_MS; quiet <= quietMs; quiet += SAMPLE_MS) {
          await sleep(SAMPLE_MS);
          quietRssMb = memoryKb(host.pid).rss / 1024;
          ctx.log(`quiet ${quiet / 1000} s: RSS ${quietRssMb.toFixed(0)} MB`);
        }
      } finally {
        await host.stop(cpuProf ? 120_000 : 10_000);
      }
      // A restart on the home the soak left behind.
      const t = performance.now();
      const again = await startHolon(ctx.root, { home, env: layoutEnv });
      restartMs = performance.now() - t;
      await again.stop();
    } finally {
      await load.stop();
      await provider.stop();
      collector?.server.close();
      rmSync(probe, { force: true });
      rmSync(`${probe}.tmp`, { force: true });
      if (keepHome) ctx.log(`home kept at ${home}`);
      else rmSync(home, { recursive: true, force: true });
    }

    if (samples.length < 2 * windowSamples) throw new Error("too few samples for a comparison");
    const first = windowStats(samples.slice(0, windowSamples));
    const lastW = windowStats(samples.slice(-windowSamples));
    const warm = windowStats(samples.slice(windowSamples, 2 * windowSamples));
    const windowS = (windowSamples * SAMPLE_MS) / 1000;
    const minutes = (samples.length * SAMPLE_MS) / 60_000;
    const totalTurns = samples.reduce((n, s) => n + s.turns, 0);
    const totalEvents = samples.reduce((n, s) => n + s.events, 0);
    const errors = samples.reduce((n, s) => n + s.errors, 0) + finalErrors;

    const put = (key: string, w: WindowStats, label: string) => {
      r.metric(
        `${key}.turns_per_min`,
        round(w.turnsPerMin, 0),
        "turns/min",
        `${label}: turns per minute`,
      );
      r.metric(
        `${key}.cpu_ms_per_turn`,
        round(w.cpuMsPerTurn, 2),
        "ms",
        `${label}: host CPU per turn`,
      );
      r.metric(
        `${key}.prompt_p50_ms`,
        round(w.prompt.p50, 1),
        "ms",
        `${label}: prompt → turn end p50`,
      );
      r.metric(
        `${key}.prompt_p99_ms`,
        round(w.prompt.p99, 1),
        "ms",
        `${label}: prompt → turn end p99`,
      );
      r.metric(
        `${key}.enqueue_p50_ms`,
        round(w.enqueue.p50, 1),
        "ms",
        `${label}: public enqueue p50`,
      );
      r.metric(
        `${key}.enqueue_p99_ms`,
        round(w.enqueue.p99, 1),
        "ms",
        `${label}: public enqueue p99`,
      );
      r.metric(`${key}.rss_mb`, round(w.rssMb, 1), "MB", `${label}: host RSS (mean)`);
      r.metric(`${key}.malloc_mb`, round(w.mallocMb, 1), "MB", `${label}: host malloc heap (mean)`);
      r.metric(`${key}.heap_mb`, round(w.heapMb, 1), "MB", `${label}: host V8 heap used (mean)`);
      r.metric(`${key}.db_mb`, round(w.dbMb, 1), "MB", `${label}: database + WAL at its end`);
      r.metric(`${key}.db_mean_mb`, round(w.dbMeanMb, 1), "MB", `${label}: database + WAL (mean)`);
      r.metric(`${key}.home_mb`, round(w.homeMb, 1), "MB", `${label}: whole home on disk (mean)`);
      r.metric(`${key}.timers_fired`, w.timersFired, "", `${label}: timers fired`);
      r.metric(`${key}.tasks_finished`, w.tasksFinished, "", `${label}: background tasks ended`);
      r.metric(`${key}.fds`, w.fds, "", `${label}: host open fds at its end`);
      r.metric(`${key}.children`, w.children, "", `${label}: host descendant processes at its end`);
    };
    put("first", first, `first ${windowS} s`);
    put("last", lastW, `last ${windowS} s`);
    r.metric("turns", totalTurns, "", "turns in the run");
    r.metric(
      "timers_fired",
      samples.reduce((n, s) => n + s.timersFired, 0),
      "",
      `timers fired (${samples.reduce((n, s) => n + s.timersCreated, 0)} made)`,
    );
    r.metric(
      "tasks_finished",
      samples.reduce((n, s) => n + s.tasksFinished, 0),
      "",
      `background tasks ended (${samples.reduce((n, s) => n + s.tasksStarted, 0)} started)`,
    );
    r.metric("events", totalEvents, "", "events streamed in the run");
    r.metric("errors", errors, "", "client errors (HTTP, timeouts, stream)");
    r.metric(
      "throughput_ratio",
      round(lastW.turnsPerMin / first.turnsPerMin, 3),
      "×",
      "last / first: turns per minute",
    );
    r.metric(
      "p99_ratio",
      round(lastW.prompt.p99 / first.prompt.p99, 3),
      "×",
      "last / first: prompt p99",
    );
    r.metric(
      "cpu_ratio",
      round(lastW.cpuMsPerTurn / first.cpuMsPerTurn, 3),
      "×",
      "last / first: host CPU per turn",
    );
    // The question of a long soak: is the last window within 10% of the first?
    const compared: [string, string, number, number, string][] = [
      ["rss", "RSS (mean)", first.rssMb, lastW.rssMb, "MB"],
      ["cpu_per_turn", "CPU per turn", first.cpuMsPerTurn, lastW.cpuMsPerTurn, "ms"],
      ["db", "database + WAL (mean)", first.dbMeanMb, lastW.dbMeanMb, "MB"],
      ["home", "whole home (mean)", first.homeMb, lastW.homeMb, "MB"],
    ];
    for (const [key, label, a, b, unit] of compared) {
      const ratio = b / a;
      r.metric(`${key}_ratio`, round(ratio, 3), "×", `last / first ${windowS} s: ${label}`);
      r.check(
        `${label}: last ${windowS} s within 10% of the first`,
        Math.abs(ratio - 1) <= 0.1,
        `${round(a, 2)} → ${round(b, 2)} ${unit} (${ratio >= 1 ? "+" : ""}${round((ratio - 1) * 100, 1)}%)`,
      );
    }
    if (lowRetention && samples.length >= 3 * windowSamples) {
      // The first windows hold the climb to the caps; levelled off means the last window
      // stays within 10% of the one before it.
      const before = windowStats(samples.slice(-2 * windowSamples, -windowSamples));
      for (const [label, a, b] of [
        ["database", before.dbMeanMb, lastW.dbMeanMb],
        ["whole home", before.homeMb, lastW.homeMb],
      ] as const)
        r.check(
          `${label} levelled off: last ${windowS} s within 10% of the ${windowS} s before`,
          Math.abs(b / a - 1) <= 0.1,
          `${round(a, 1)} → ${round(b, 1)} MB`,
        );
    }
    if (timersPerSec > 0)
      r.check(
        "timers fired",
        samples.some((s) => s.timersFired > 0),
        `${samples.reduce((n, s) => n + s.timersFired, 0)}`,
      );
    if (taskEvery > 0)
      r.check(
        "background tasks finished",
        samples.some((s) => s.tasksFinished > 0),
        `${samples.reduce((n, s) => n + s.tasksFinished, 0)}`,
      );
    const growth = (lastW.rssMb - warm.rssMb) / Math.max(1e-9, minutes - (2 * windowS) / 60);
    r.metric(
      "rss_growth_mb_per_min",
      round(growth, 2),
      "MB/min",
      "RSS growth after warm-up (2nd window → last)",
    );
    const dbPerTurn =
      ((samples.at(-1)!.dbMb - samples[0]!.dbMb) * 2 ** 20) /
      Math.max(1, totalTurns - samples[0]!.turns);
    r.metric("db_bytes_per_turn", round(dbPerTurn, 0), "B", "database + WAL growth per turn");
    if (lowRetention) {
      // Under low caps the whole home must level off: its size at the end of the second
      // window against the end of the run.
      const homeAt = (i: number) => samples[Math.min(samples.length - 1, i)]!.homeMb;
      r.metric("home_mb_warm", round(homeAt(2 * windowSamples - 1), 1), "MB", "home at warm-up");
      r.metric("home_mb_end", round(homeAt(samples.length - 1), 1), "MB", "home at the end");
      r.note(
        `retention caps low (${retention.map(([k, v]) => `${k.replace("retention.", "")}=${v}`).join(", ")})`,
      );
    }
    r.metric(
      "quiet_rss_mb",
      round(quietRssMb, 1),
      "MB",
      `host RSS ${quietMs / 1000} s after the load stopped`,
    );
    r.metric("restart_ms", round(restartMs, 0), "ms", "restart on the soaked home, to listening");
    if (collector)
      r.note(
        `telemetry on: traces and OTLP metrics exported, ${collector.requests} requests, ${round(collector.bytes / 2 ** 20, 1)} MB received`,
      );

    r.target("throughput: last ≥ 90% of first", "throughput_ratio", ">=", 0.9);
    r.target("prompt p99: last ≤ 110% of first", "p99_ratio", "<=", 1.1);
    r.target("CPU per turn: last ≤ 110% of first", "cpu_ratio", "<=", 1.1);
    r.target("RSS ≤ 150 MB (last)", "last.rss_mb", "<=", 150);
    r.target("RSS flat after warm-up (≤ 0.2 MB/min)", "rss_growth_mb_per_min", "<=", 0.2);
    r.check("no client errors", errors === 0, firstError ?? undefined);
    r.check("fds flat", lastW.fds <= first.fds + 10, `${first.fds} → ${lastW.fds}`);
    r.check(
      "children flat",
      lastW.children <= first.children + 5,
      `${first.children} → ${lastW.children}`,
    );
    r.note(
      `host from ${layout === "dist" ? "dist/ (as installed)" : "src/ (a checkout)"}; window = ${windowS} s; ${samples.length} samples over ${round(minutes, 1)} min; host home disk at end ${round(samples.at(-1)!.homeMb, 1)} MB`,
    );

    const outDir = join(ctx.root, "bench", "results");
    mkdirSync(outDir, { recursive: true });
    const out = join(outDir, `soak-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(
      out,
      JSON.stringify(
        samples.map((s) => {
          const p = summarize(s.promptLatencies);
          const e = summarize(s.enqueueLatencies);
          const { promptLatencies: _p, enqueueLatencies: _e, ...rest } = s;
          return {
            ...rest,
            cpuMsPerTurn: round(s.cpuMsPerTurn, 2),
            prompt_p50: round(p.p50, 1),
            prompt_p99: round(p.p99, 1),
            enqueue_p50: round(e.p50, 1),
            enqueue_p99: round(e.p99, 1),
          };
        }),
        null,
        1,
      ) + "\n",
    );
    r.note(`samples: ${out}`);
    if (cpuProf) {
      const files = readdirSync(profDir).filter((f) => f.endsWith(".cpuprofile"));
      for (const f of files) {
        r.note(`CPU profile: ${join(profDir, f)}; top self time:`);
        for (const line of topFunctions(join(profDir, f), 15)) r.note(`  ${line}`);
      }
    }
    return r.result;
  },
};
export default bench;

/** `--telemetry`: an OTLP/HTTP collector that accepts every export and counts it. */
async function startSinkCollector(): Promise<{
  server: Server;
  url: string;
  requests: number;
  bytes: number;
}> {
  const state = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (state.bytes += chunk.length));
    req.on("end", () => {
      state.requests++;
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return state.requests;
    },
    get bytes() {
      return state.bytes;
    },
  };
}
