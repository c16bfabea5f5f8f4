// Waiting on an ask costs nothing: 20 agents each halt a never-picked work item with a
// runaway ask (the scripted fake provider answers every turn with text, and the guard's limit
// is 1), then the host sits through an idle window while all 20 wait. Measured: the host's
// CPU over the window (/proc utime+stime), provider requests made during it (must be 0) and
// events written during it by any waiting agent (must be 0: no timer fired, nothing ran).
// The window starts 10 s after the last ask opened: right after the burst of turns the
// collector is still giving memory back (about 1.3% of a core over the next seconds).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { reply, startFakeProvider } from "../test/fake-provider/server.ts";
import { round } from "./lib/stats.ts";
import { configureFakeProvider, cpuSeconds, expectOk, sleep, startHolon } from "./lib/proc.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";

const AGENTS = 20;

const bench: Benchmark = {
  name: "asks",
  description: "20 agents waiting on asks: host CPU, provider calls and events over an idle window",
  async run(ctx) {
    const r = new ResultBuilder();
    const idleMs = ctx.quick ? 3_000 : 10_000;
    const fake = await startFakeProvider();
    fake.setFallback(() => reply.text("I will get to it later."));
    const home = mkdtempSync(join(tmpdir(), "holon-bench-asks-"));
    configureFakeProvider(ctx.root, home, fake.baseUrl("openai"), "fake/bench-model");
    const host = await startHolon(ctx.root, {
      home,
      env: { HOLON_WORK_MAX_CONTINUATIONS: "1", HOLON_SPAWN_HELPER_IDLE_MS: "2000" },
    });
    try {
      const ids = Array.from({ length: AGENTS }, (_, i) => `waiter-${i}`);
      for (const id of ids) {
        await expectOk(`${host.url}/control/agents/${id}/create`, "POST", {});
        await expectOk(`${host.url}/control/agents/${id}/work-items`, "POST", {
          objective: "never picked",
        });
      }
      const deadline = Date.now() + 60_000;
      for (;;) {
        const asks = (await expectOk(`${host.url}/control/asks?limit=500`)).asks as unknown[];
        if (asks.length >= AGENTS) break;
        if (Date.now() > deadline) throw new Error(`only ${asks.length} asks opened`);
        await sleep(100);
      }
      const newest = async () => {
        let sum = 0;
        for (const id of ids) {
          const e = await expectOk(`${host.url}/agents/${id}/events?limit=1&order=desc`);
          sum += Number(e.newest_seq ?? 0);
        }
        return sum;
      };
      await sleep(ctx.quick ? 2_500 : 10_000); // the last turns settle, the spawn helper goes idle
      const seq0 = await newest();
      const req0 = fake.requests.length;
      const cpu0 = cpuSeconds(host.pid);
      const w0 = performance.now();
      await sleep(idleMs);
      const wall = (performance.now() - w0) / 1000;
      const cpuPct = ((cpuSeconds(host.pid) - cpu0) / wall) * 100;
      const requests = fake.requests.length - req0;
      const events = (await newest()) - seq0;
      ctx.log(`${AGENTS} agents waiting on asks; ${round(wall, 1)} s idle window`);
      r.metric("waiting_agents", AGENTS, "", "agents each held by a pending runaway ask");
      r.metric("cpu_pct", round(cpuPct, 2), "% of a core", `host CPU over ${round(wall, 1)} s`);
      r.metric("provider_requests", requests, "", "provider requests during the window");
      r.metric("events_written", events, "", "events the waiting agents wrote during the window");
      r.target("no provider call while waiting", "provider_requests", "<=", 0);
      r.target("nothing fires while waiting (no events)", "events_written", "<=", 0);
      r.target("waiting CPU < 1%", "cpu_pct", "<", 1);
      r.note(
        "the host's one deadline scheduler re-reads the wall clock at most once a minute while any deadline (here the asks' expiry) is armed",
      );
    } finally {
      await host.stop();
      await fake.close();
    }
    return r.result;
  },
};
export default bench;
