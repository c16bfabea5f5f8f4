// Idle footprint: a host with 100 idle agents (created over the control plane), then its
// RSS (/proc/<pid>/status VmRSS) and CPU use over an idle window (/proc/<pid>/stat
// utime+stime deltas). The fresh host's RSS is reported beside it, and the whole process
// tree's (the host plus the spawn helper and its spare wrappers, if still there), which is what
// the target is about.
import { round } from "./lib/stats.ts";
import {
  clockTicksPerSecond,
  cpuSeconds,
  descendants,
  expectOk,
  memoryKb,
  sleep,
  startHolon,
} from "./lib/proc.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";

const bench: Benchmark = {
  name: "idle",
  description: "100 idle agents: host RSS and CPU over an idle window",
  async run(ctx) {
    const r = new ResultBuilder();
    const agents = 100;
    const idleMs = ctx.quick ? 2_000 : 5_000;
    // An idle daemon lets its spawn helper go after HOLON_SPAWN_HELPER_IDLE_MS (10 minutes by
    // default); shortened here so the idle window below sees the steady state.
    const host = await startHolon(ctx.root, { env: { HOLON_SPAWN_HELPER_IDLE_MS: "3000" } });
    try {
      await sleep(1_000);
      const fresh = memoryKb(host.pid);
      const t0 = performance.now();
      for (let i = 1; i <= agents; i++) {
        const id = `agent-${String(i).padStart(3, "0")}`;
        await expectOk(`${host.url}/control/agents/${id}/create`, "POST", {});
      }
      const createMs = performance.now() - t0;
      const listed = (await expectOk(`${host.url}/agents/list`)).agents as unknown[];
      ctx.log(
        `created ${agents} agents in ${createMs.toFixed(0)} ms; settling 1 s, then ${idleMs} ms idle`,
      );
      await sleep(1_000);

      const cpu0 = cpuSeconds(host.pid);
      const w0 = performance.now();
      let peakRss = 0;
      const samples: number[] = [];
      while (performance.now() - w0 < idleMs) {
        await sleep(250);
        const m = memoryKb(host.pid);
        samples.push(m.rss);
        peakRss = Math.max(peakRss, m.rss);
      }
      const wall = (performance.now() - w0) / 1000;
      const cpuPct = ((cpuSeconds(host.pid) - cpu0) / wall) * 100;
      const end = memoryKb(host.pid);
      const tree = descendants(host.pid);
      const rssOf = (pid: number) => {
        try {
          return memoryKb(pid).rss || 0;
        } catch {
          return 0; // exited while we looked
        }
      };
      const treeKb = end.rss + tree.reduce((sum, pid) => sum + rssOf(pid), 0);

      r.metric("agents", listed.length, "", "public agents on the host (incl. main)");
      r.metric(
        "create_ms_per_agent",
        round(createMs / agents, 2),
        "ms",
        "create, per agent (sequential HTTP)",
      );
      r.metric("rss_fresh_mb", round(fresh.rss / 1024, 1), "MB", "RSS of a fresh host");
      r.metric("rss_mb", round(end.rss / 1024, 1), "MB", `RSS with ${agents} idle agents`);
      r.metric(
        "rss_total_mb",
        round(treeKb / 1024, 1),
        "MB",
        `RSS of the host and its ${tree.length} descendant(s) with ${agents} idle agents (helper idle timeout 3 s)`,
      );
      r.metric("rss_peak_idle_mb", round(peakRss / 1024, 1), "MB", "RSS peak during idle window");
      r.metric("hwm_mb", round(end.hwm / 1024, 1), "MB", "VmHWM (peak RSS since start)");
      r.metric("cpu_pct", round(cpuPct, 2), "% of a core", `CPU over ${round(wall, 1)} s idle`);
      r.target("RSS < 150 MB", "rss_mb", "<", 150);
      r.target("whole tree ≤ 120 MB, helper included", "rss_total_mb", "<=", 120);
      r.target("idle CPU < 1%", "cpu_pct", "<", 1);
      r.check("all agents created", listed.length >= agents, `${listed.length} listed`);
      r.note(
        `CPU from /proc utime+stime at ${1000 / clockTicksPerSecond()} ms tick resolution; ${samples.length} RSS samples`,
      );
    } finally {
      await host.stop();
    }
    return r.result;
  },
};
export default bench;
