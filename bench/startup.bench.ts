// Start-up of the shipped entry point, launched as an installed `holon` is (through its
// launcher, see run()), as ratios in one run: `holon --version` and
// `holon --help` against a bare `node -e 0` (runs interleaved in pairs, so drift on a busy
// machine hits both), from the sources (a checkout) and from the build (dist/, what an
// installed package runs: built first with `npm run build` when missing); and `holon run`
// launch → first provider request, timed by the scripted fake provider (which runs in this
// process on 127.0.0.1 and notes when the request arrives), with the whole run's peak RSS
// summed over its process tree (sampled from /proc every 5 ms).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { round, summarize } from "./lib/stats.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { ensureDist } from "./lib/proc.ts";
import { reply, startFakeProvider } from "../test/fake-provider/server.ts";

type Run = { ms: number; code: number | null; stderr: string; peakKb: number };

/**
 * Total RSS (KiB) of `pid` and its descendants, from /proc (0 when unreadable). The tree is
 * walked through each thread's `children` list, so a sample reads only the run's own
 * processes: a scan of all of /proc every 5 ms cost a loaded machine enough CPU to slow
 * the very start-up it was sampling. Without `children` (an older kernel) it scans /proc.
 */
function treeRssKb(root: number): number {
  const childrenOf = (pid: number): number[] | null => {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      return [];
    }
    const out: number[] = [];
    for (const tid of tids) {
      try {
        for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ")) {
          if (c.trim()) out.push(Number(c));
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT" && tid === String(pid)) return null;
      }
    }
    return out;
  };
  const rssOf = (pid: number): number => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      return 0; // gone
    }
  };
  let total = 0;
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    total += rssOf(pid);
    const kids = childrenOf(pid);
    if (kids === null) return scanTreeRssKb(root);
    stack.push(...kids);
  }
  return total;
}

/** The same figure from a scan of every process in /proc. */
function scanTreeRssKb(root: number): number {
  const children = new Map<number, number[]>();
  const rss = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
      rss.set(pid, Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      const list = children.get(ppid) ?? [];
      list.push(pid);
      children.set(ppid, list);
    } catch {
      // gone
    }
  }
  let total = 0;
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    total += rss.get(pid) ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

/**
 * Runs `args` under Node, or, when they start with the `holon` entry point, through that
 * launcher as an installed `holon` starts: `sh` reads bin/holon.js's first lines (Node flags
 * such as the young generation's size, malloc tuning) and execs `node` from PATH, here the
 * Node running the bench. Timing `node bin/holon.js` instead would skip those flags, which
 * changes the run's memory (a larger young generation) and so its RSS.
 */
function run(args: string[], env: NodeJS.ProcessEnv, sampleRss = false): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const viaLauncher = args[0]?.endsWith(join("bin", "holon.js")) ?? false;
    const child = spawn(viaLauncher ? "/bin/sh" : process.execPath, args, {
      env: viaLauncher
        ? { ...env, PATH: `${dirname(process.execPath)}:${env.PATH ?? process.env.PATH ?? ""}` }
        : env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    let peakKb = 0;
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const sampler = sampleRss
      ? setInterval(() => (peakKb = Math.max(peakKb, treeRssKb(child.pid!))), 5)
      : undefined;
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      if (sampler) clearInterval(sampler);
      resolve({ ms: performance.now() - t0, code, stderr, peakKb });
    });
  });
}

const bench: Benchmark = {
  name: "startup",
  description:
    "holon --version/--help vs node -e 0 (sources and dist/), holon run launch → first provider request, run peak RSS",
  async run(ctx) {
    const r = new ResultBuilder();
    const runs = ctx.quick ? 5 : 15;
    const bin = join(ctx.root, "bin", "holon.js");
    ensureDist(ctx.root, (line) => ctx.log(line));
    const base = { ...process.env };
    delete base.HOLON_HOME;
    delete base.HOLON_CONTROL_TOKEN;
    const src = { ...base, HOLON_DIST: "0" };
    const dist = { ...base, HOLON_DIST: "1" };

    const cases: [string, string, string[], NodeJS.ProcessEnv][] = [
      ["version", "holon --version", [bin, "--version"], src],
      ["help_src", "holon --help (sources)", [bin, "--help"], src],
      ["help_dist", "holon --help (dist/)", [bin, "--help"], dist],
    ];
    for (const [key, label, args, env] of cases) {
      await run(args, env); // warm the file cache and the compile cache
      const a: number[] = [];
      const b: number[] = [];
      const ratios: number[] = [];
      for (let i = 0; i < runs; i++) {
        const x = await run(args, env);
        if (x.code !== 0) throw new Error(`${label} exited ${x.code}: ${x.stderr}`);
        const y = await run(["-e", "0"], env);
        a.push(x.ms);
        b.push(y.ms);
        ratios.push(x.ms / y.ms);
      }
      const sa = summarize(a);
      const sb = summarize(b);
      const ratio = summarize(ratios).p50;
      ctx.log(
        `${label}: median ${sa.p50.toFixed(0)} ms vs node -e 0 ${sb.p50.toFixed(0)} ms (pairwise ratio ${ratio.toFixed(2)})`,
      );
      r.metric(`${key}.median_ms`, round(sa.p50, 1), "ms", `${label} median`);
      r.metric(`${key}.node_median_ms`, round(sb.p50, 1), "ms", `node -e 0 median (paired)`);
      r.metric(`${key}.over_node_ms`, round(sa.p50 - sb.p50, 1), "ms", `${label} − node -e 0`);
      r.metric(`${key}.ratio`, round(ratio, 2), "x", `${label} / node -e 0 (pairwise median)`);
    }
    r.target("holon --version ≤ node + 30 ms", "version.over_node_ms", "<=", 30);
    r.target("holon --help (dist/) ≤ node + 30 ms", "help_dist.over_node_ms", "<=", 30);

    // holon run: launch → first provider request, and peak RSS of the whole tree.
    const fake = await startFakeProvider();
    const home = mkdtempSync(join(tmpdir(), "holon-bench-startup-"));
    try {
      let arrived = 0;
      fake.setFallback(() => {
        arrived ||= performance.now();
        return reply.text("done");
      });
      const env = { ...dist, HOLON_HOME: home };
      const cli = (args: string[]) => execFileSync(process.execPath, [bin, ...args], { env });
      cli(
        ["config", "providers", "set", "fake", "--transport", "openai_responses"].concat(
          ["--base-url", fake.baseUrl("openai"), "--credential-source", "none"],
          ["--credential-kind", "none"],
        ),
      );
      cli(["config", "set", "model.default", "fake/test-model"]);
      const firstRequest: number[] = [];
      const fromSources: number[] = [];
      const whole: number[] = [];
      const peaks: number[] = [];
      for (const [label, e] of [
        ["dist", env],
        ["src", { ...env, HOLON_DIST: "0" }],
      ] as const) {
        await run([bin, "run", "--json", "warm up"], e);
        for (let i = 0; i < (ctx.quick ? 3 : 7); i++) {
          arrived = 0;
          const t0 = performance.now();
          const x = await run([bin, "run", "--json", "say done"], e, true);
          if (x.code !== 0 || !arrived) throw new Error(`holon run failed: ${x.stderr}`);
          if (label === "dist") {
            firstRequest.push(arrived - t0);
            whole.push(x.ms);
            peaks.push(x.peakKb / 1024);
          } else {
            fromSources.push(arrived - t0);
          }
        }
      }
      const f = summarize(firstRequest);
      const w = summarize(whole);
      const p = summarize(peaks);
      ctx.log(
        `holon run (dist/): first provider request ${f.p50.toFixed(0)} ms after launch, exit ${w.p50.toFixed(0)} ms, peak tree RSS ${p.p50.toFixed(0)} MiB`,
      );
      r.metric("run.first_request_ms", round(f.p50, 1), "ms", "launch → first provider request");
      r.metric("run.wall_ms", round(w.p50, 1), "ms", "holon run wall (one round)");
      r.metric("run.peak_tree_rss_mb", round(p.p50, 1), "MiB", "peak RSS, whole process tree");
      r.metric(
        "run_src.first_request_ms",
        round(summarize(fromSources).p50, 1),
        "ms",
        "launch → first provider request, from a checkout (sources)",
      );
      r.target("launch → first provider request ≤ 200 ms", "run.first_request_ms", "<=", 200);
      r.target(
        "from a checkout: launch → first provider request ≤ 260 ms",
        "run_src.first_request_ms",
        "<=",
        260,
      );
      r.target("holon run peak tree RSS ≤ 100 MiB", "run.peak_tree_rss_mb", "<=", 100);
    } finally {
      await fake.close();
      rmSync(home, { recursive: true, force: true });
    }
    r.note(
      `${runs} paired runs each; spawn to exit, stderr piped; a busy machine moves ms, ratios less`,
    );
    return r.result;
  },
};
export default bench;
