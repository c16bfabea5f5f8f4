// Task plane costs, measured in process against a real host (production wiring, real processes):
//
// 1. Task start overhead: ExecCommand of `sleep 1` with yield_time_ms 0 through the tool
//    registry's dispatch(), i.e. spawn + process record + promotion to a persisted running task.
//    The cost of spawnSync("true") measured in the same run is reported next to it, and so
//    are the same promotions with the spawn helper off (what it saves) and the helper's RSS
//    (what it costs).
// 2. TaskOutput latency on a finished task whose output file is 100 MB, against the same call
//    on a 1 MB output: both previews read only a head and a tail, so the two should be alike.
import { spawnSync } from "node:child_process";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { round, summarize } from "./lib/stats.ts";

/** RSS of this process's spawn helper and the helper's children (its spares), in KiB. */
function helperRssKb(): number | null {
  const children = (pid: number): number[] => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
        .split(" ")
        .map(Number)
        .filter((n) => n > 0);
    } catch {
      return [];
    }
  };
  const rssKb = (pid: number): number => {
    try {
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return m ? Number(m[1]) : 0;
    } catch {
      return 0;
    }
  };
  const helper = children(process.pid).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("spawner-helper");
    } catch {
      return false;
    }
  });
  if (helper === undefined) return null;
  return [helper, ...children(helper)].reduce((sum, pid) => sum + rssKb(pid), 0);
}

const bench: Benchmark = {
  name: "task",
  description: "ExecCommand promotion of sleep 1 to a task; TaskOutput latency on a 100 MB output",
  async run(ctx) {
    const r = new ResultBuilder();
    const mod = (p: string) => import(pathToFileURL(join(ctx.root, p)).href);
    const { RuntimeHost } = await mod("src/host/host.ts");
    const { buildRegistry } = await mod("src/tools/builtin.ts");
    const { dispatch } = await mod("src/tools/registry.ts");

    const home = mkdtempSync(join(tmpdir(), "holon-bench-task-"));
    const host = RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
    const tasks = host.tasks;
    const registry = buildRegistry();
    const agent = host.agents.get("main");
    const toolCtx = {
      agent,
      run_id: "run_bench",
      message: { id: "msg_bench" },
      call_id: "call_bench",
      execution_root: agent.agent_home,
      cwd: agent.agent_home,
      signal: new AbortController().signal,
      budget: { default_tokens: 8_000, max_tokens: 64_000 },
      tasks,
      services: { tasks },
    };
    const call = (name: string, args: unknown) =>
      dispatch(registry, name, JSON.stringify(args), toolCtx);
    try {
      // --- 1. promotion -------------------------------------------------------------
      const n = ctx.quick ? 8 : 25;
      const promote: number[] = [];
      let promotedOk = 0;
      for (let i = 0; i < n + 2; i++) {
        const t0 = performance.now();
        const out = await call("ExecCommand", {
          cmd: "sleep 1",
          yield_time_ms: 0,
          duplicate_policy: "start_new",
        });
        const ms = performance.now() - t0;
        if (i < 2) continue; // warm-up
        promote.push(ms);
        if ((out.canonical.result as any)?.disposition === "promoted_to_task") promotedOk++;
      }
      // The same promotions with the spawn helper off (HOLON_SPAWN_HELPER=0): what it saves.
      process.env["HOLON_SPAWN_HELPER"] = "0";
      const cold: number[] = [];
      try {
        for (let i = 0; i < n + 2; i++) {
          const t0 = performance.now();
          await call("ExecCommand", {
            cmd: "sleep 1",
            yield_time_ms: 0,
            duplicate_policy: "start_new",
          });
          if (i >= 2) cold.push(performance.now() - t0);
        }
      } finally {
        delete process.env["HOLON_SPAWN_HELPER"];
      }
      const spawnTrue: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        spawnSync("true");
        spawnTrue.push(performance.now() - t0);
      }
      const p = summarize(promote);
      r.metric("promote_p50_ms", round(p.p50), "ms", "ExecCommand(sleep 1) → running task, p50");
      r.metric("promote_p99_ms", round(p.p99), "ms", "ExecCommand(sleep 1) → running task, p99");
      r.metric("spawn_true_p50_ms", round(summarize(spawnTrue).p50), "ms", "spawnSync(true), p50");
      const c = summarize(cold);
      r.metric(
        "promote_cold_p50_ms",
        round(c.p50),
        "ms",
        "the same with HOLON_SPAWN_HELPER=0 (every command spawned cold), p50",
      );
      r.metric(
        "helper_saves_p50_ms",
        round(c.p50 - p.p50),
        "ms",
        "cold promotion p50 − promotion on a spare p50",
      );
      const helperKb = helperRssKb();
      if (helperKb !== null) {
        r.metric(
          "helper_rss_mb",
          round(helperKb / 1024, 1),
          "MB",
          "RSS of the spawn helper and its spare wrappers (what it costs)",
        );
      }
      r.target("promotion p50 < 50 ms", "promote_p50_ms", "<", 50);
      r.check("every call was promoted to a task", promotedOk === n, `${promotedOk}/${n}`);
      ctx.log(`promotion p50 ${round(p.p50)} ms`);

      // --- 2. TaskOutput on a 100 MB output --------------------------------------------
      const start = (cmd: string) =>
        tasks.start({
          agent_id: "main",
          cmd,
          workdir: agent.agent_home,
          shell: "/bin/sh",
          login: false,
          tty: false,
          accepts_input: false,
          terminal_reentry: false,
        });
      const big = start("true");
      const small = start("head -c 1048576 /dev/zero | tr '\\0' s");
      await tasks.waitTerminal(big.id, 10_000);
      await tasks.waitTerminal(small.id, 10_000);
      const size = 100 * 1024 * 1024;
      const chunk = Buffer.alloc(1024 * 1024, "0123456789abcdef\n");
      const fd = openSync(big.output_path, "w");
      for (let off = 0; off < size; off += chunk.length) writeSync(fd, chunk);
      closeSync(fd);
      const reads = ctx.quick ? 15 : 50;
      const time = async (taskId: string) => {
        const out: number[] = [];
        let preview = 0;
        for (let i = 0; i < reads + 3; i++) {
          const t0 = performance.now();
          const res = await call("TaskOutput", { task_id: taskId });
          const ms = performance.now() - t0;
          preview = ((res.canonical.result as any).task.output_preview as string).length;
          if (i >= 3) out.push(ms);
        }
        return { s: summarize(out), preview };
      };
      const bigT = await time(big.id);
      const smallT = await time(small.id);
      r.metric("output_100mb_p50_ms", round(bigT.s.p50, 3), "ms", "TaskOutput on 100 MB, p50");
      r.metric("output_100mb_p99_ms", round(bigT.s.p99, 3), "ms", "TaskOutput on 100 MB, p99");
      r.metric("output_1mb_p50_ms", round(smallT.s.p50, 3), "ms", "TaskOutput on 1 MB, p50");
      r.metric(
        "output_ratio",
        round(bigT.s.p50 / smallT.s.p50, 2),
        "x",
        "100 MB / 1 MB TaskOutput p50",
      );
      r.target("TaskOutput on 100 MB p50 < 20 ms", "output_100mb_p50_ms", "<", 20);
      r.target("100 MB costs < 3x a 1 MB output", "output_ratio", "<", 3);
      r.check(
        "the preview stays bounded",
        bigT.preview < 64_000 && statSync(big.output_path).size === size,
        `${bigT.preview} chars of ${size} bytes`,
      );
    } finally {
      await Promise.all(host.store.tasks.active().map((t: any) => tasks.stop(t.id, 100)));
      await host.shutdown();
      rmSync(home, { recursive: true, force: true });
    }
    return r.result;
  },
};
export default bench;
