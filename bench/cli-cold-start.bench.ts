// CLI cold start: wall time of fresh `holon --help` and `holon status` (against a running
// host) processes, spawned as `node bin/holon.js …` (what `npx holon` ends up running), next
// to a bare `node -e 0` for scale, and one `npx holon --help` for information.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { round, summarize } from "./lib/stats.ts";
import { expectOk, startHolon } from "./lib/proc.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";

type Timed = { ms: number; code: number | null; stdout: string; stderr: string };

function timeCommand(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - t0, code, stdout, stderr });
    });
  });
}

const bench: Benchmark = {
  name: "cli-cold-start",
  description: "fresh `holon --help` and `holon status` processes: median and p90 wall time",
  async run(ctx) {
    const r = new ResultBuilder();
    const runs = ctx.quick ? 5 : 15;
    const env = { ...process.env };
    delete env.HOLON_HOME;
    delete env.HOLON_CONTROL_TOKEN;
    const bin = join(ctx.root, "bin", "holon.js");
    const host = await startHolon(ctx.root);
    try {
      await expectOk(`${host.url}/agents/main/status`);
      const cases: [string, string, string[]][] = [
        ["node", "node -e 0 (baseline)", ["-e", "0"]],
        ["help", "holon --help", [bin, "--help"]],
        ["status", "holon status", [bin, "status", "--home", host.home!]],
      ];
      for (const [key, label, args] of cases) {
        // One untimed run first so every timed run sees warm file caches.
        const first = await timeCommand(process.execPath, args, ctx.root, env);
        if (first.code !== 0) {
          throw new Error(`${label} exited ${first.code}: ${first.stderr || first.stdout}`);
        }
        const ms: number[] = [];
        for (let i = 0; i < runs; i++) {
          const t = await timeCommand(process.execPath, args, ctx.root, env);
          if (t.code !== 0) throw new Error(`${label} exited ${t.code}: ${t.stderr}`);
          ms.push(t.ms);
        }
        const s = summarize(ms);
        ctx.log(
          `${label}: median ${s.p50.toFixed(0)} ms, p90 ${s.p90.toFixed(0)} ms (first run ${first.ms.toFixed(0)} ms)`,
        );
        r.metric(`${key}.median_ms`, round(s.p50, 1), "ms", `${label} median`);
        r.metric(`${key}.p90_ms`, round(s.p90, 1), "ms", `${label} p90`);
        if (key === "status")
          r.check(
            "holon status printed the default agent",
            /main/.test(first.stdout),
            first.stdout.split("\n")[0],
          );
      }
      r.metric(
        "status_over_node",
        round(
          r.result.metrics["status.median_ms"]!.value - r.result.metrics["node.median_ms"]!.value,
          1,
        ),
        "ms",
        "holon status median − node -e 0 median",
      );
      const npx = await timeCommand("npx", ["--no-install", "holon", "--help"], ctx.root, env);
      r.metric("npx_help_ms", round(npx.ms, 0), "ms", "npx holon --help (one run, info only)");
      if (npx.code !== 0)
        r.note(`npx holon --help exited ${npx.code}: ${npx.stderr.split("\n")[0]}`);
      r.target("holon --help median < 150 ms", "help.median_ms", "<", 150);
      r.target("holon status median < 150 ms", "status.median_ms", "<", 150);
      r.note(`${runs} timed runs each after one untimed run; spawn to exit, stdout/stderr piped`);
    } finally {
      await host.stop();
    }
    return r.result;
  },
};
export default bench;
