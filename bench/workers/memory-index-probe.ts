// Does the per-agent memory search index hold native (malloc) memory? An in-process host (no
// provider, no HTTP) gives N agents some history (failure briefs, context episodes, a memory
// note), then runs MemorySearch / MemoryGet over every agent, round after round, exactly as
// the tools do (host.services.memoryIndex). After every round it collects garbage twice and
// prints the V8 heap, external memory, RSS, glibc's main heap (`[heap]`, native memory with
// the launcher's one malloc arena) and the process's open file descriptors, so a handle or a
// cache that stays behind shows as a step that does not come back.
//
//   MALLOC_ARENA_MAX=1 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=131072 \
//     node --expose-gc bench/workers/memory-index-probe.ts [agents] [rounds] [records] [rebuild]
//
// With `rebuild`, every agent's index is marked dirty before each search, so every search
// builds the index anew (as after retention removed briefs or episodes); with `read`, no
// index is touched: each round only reads what a build reads from the store.
//
// What it showed (issue 35's follow-up; 50 agents, 100 briefs and episodes each, the host's
// V8 flags --max-semi-space-size=2 --max-old-space-size=512): no index stays open (the
// descriptor count never moves) and nothing accumulates. `search`: malloc 11 → 18.5 MB with
// the first round's 50 builds, then flat through 450 more searches. `rebuild`: 21 MB after
// the first round, flat through 1,000 builds; the index's cache_size (-2000, -256, -64)
// changed nothing. `read`: 10 → 24-26 MB, creeping in steps: the store's decoding of
// compressed bodies, not the index (see codec-malloc-probe.ts).
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordRuntimeFailure } from "../../src/agent/briefs.ts";
import { RuntimeHost } from "../../src/host/host.ts";
import { episodeRecord, parked } from "../../test/helpers/history.ts";

const agentCount = Number(process.argv[2] ?? 50);
const rounds = Number(process.argv[3] ?? 20);
const records = Number(process.argv[4] ?? 100);
const rebuild = process.argv[5] === "rebuild";
/** `read`: only read what a build reads from the store (briefs, episodes), no index at all. */
const readOnly = process.argv[5] === "read";
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

const home = mkdtempSync(join(tmpdir(), "holon-memory-index-probe-"));
const host = await RuntimeHost.open({ home, executor: () => parked, autostartAgents: false });
const store = host.store;
const words = ["deploy", "retry", "budget", "cache", "schema", "rollback", "timer", "lease"];

const agents = ["main"];
for (let i = 1; i < agentCount; i++) {
  await host.agents.create(`probe-${i}`, {});
  agents.push(`probe-${i}`);
}
for (const id of agents) {
  for (let n = 1; n <= records; n++) {
    const w = words[n % words.length]!;
    await recordRuntimeFailure(store, {
      agent_id: id,
      summary: `failure ${n}: ${w} ${"z".repeat(200)}`,
    });
    const episode = episodeRecord(id, n, store.clock.now(), { topic: w });
    await store.tx(async () => await store.memory.addEpisode(episode));
  }
  const dir = join((await store.agents.get(id))!.agent_home, "memory");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "self.md"), `# Notes\n${words.join(" ")}\n`.repeat(50));
}

function mallocMb(): number {
  const smaps = readFileSync("/proc/self/smaps", "utf8");
  const at = smaps.indexOf(" [heap]\n");
  if (at < 0) return 0;
  return Number(/^Rss:\s+(\d+) kB/m.exec(smaps.slice(at))?.[1] ?? 0) / 1024;
}
const mb = (b: number) => (b / 2 ** 20).toFixed(1);
async function sample(label: string): Promise<void> {
  gc!();
  await new Promise((r) => setImmediate(r));
  gc!();
  const m = process.memoryUsage();
  const fds = readdirSync("/proc/self/fd").length;
  const status = readFileSync("/proc/self/status", "utf8");
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1]);
  console.log(
    `${label.padEnd(10)} heapUsed ${mb(m.heapUsed).padStart(6)}/${mb(m.heapTotal)}  external ${mb(m.external).padStart(5)}  rss ${mb(m.rss).padStart(6)} (anon ${(kb("RssAnon") / 1024).toFixed(1)}, file ${(kb("RssFile") / 1024).toFixed(1)})  malloc ${mallocMb().toFixed(1).padStart(6)}  fds ${fds}`,
  );
}

await sample("filled");
let searches = 0;
for (let r = 1; r <= rounds; r++) {
  for (const id of agents) {
    const agent = (await store.agents.get(id))!;
    if (readOnly) {
      searches++;
      await store.briefs.after(id, 0, 1000);
      await store.memory.episodesAfter(id, 0, 1000);
      continue;
    }
    if (rebuild) host.services.memoryIndex.markDirty(agent.agent_home);
    const found = await host.services.memoryIndex.search(
      agent,
      words[(r + searches) % words.length]!,
    );
    searches++;
    const first = found.results[0];
    if (first) await host.services.memoryIndex.get(agent, first.source_ref);
  }
  if (r <= 3 || r % 5 === 0) await sample(`round ${r}`);
}
console.log(`${searches} searches over ${agents.length} agents`);
if (process.env.PROBE_MAPS) {
  // The largest resident mappings, to tell malloc's heap from other anonymous memory.
  const maps = readFileSync("/proc/self/smaps", "utf8").split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/);
  const rows = maps.map((m) => {
    const head = m.split("\n")[0]!;
    return { head, rss: Number(/^Rss:\s+(\d+) kB/m.exec(m)?.[1] ?? 0) };
  });
  rows.sort((a, b) => b.rss - a.rss);
  for (const r of rows.slice(0, 12))
    console.log(`${(r.rss / 1024).toFixed(1).padStart(7)} MB  ${r.head}`);
  const anon = rows.filter((r) => /^\S+ \S+ 0+ 00:00 0\s*$/.test(r.head));
  const bySize = new Map<number, { n: number; rss: number }>();
  for (const r of anon) {
    const [lo, hi] = r.head
      .split(" ")[0]!
      .split("-")
      .map((x) => parseInt(x, 16));
    const size = Math.round((hi! - lo!) / 1024);
    const e = bySize.get(size) ?? { n: 0, rss: 0 };
    e.n++;
    e.rss += r.rss;
    bySize.set(size, e);
  }
  const top = [...bySize].sort((a, b) => b[1].rss - a[1].rss).slice(0, 8);
  console.log(
    `anonymous mappings (not [heap]): ${anon.length}, ${(anon.reduce((n, r) => n + r.rss, 0) / 1024).toFixed(1)} MB resident`,
  );
  for (const [size, e] of top)
    console.log(`  ${e.n} × ${size} KB: ${(e.rss / 1024).toFixed(1)} MB resident`);
}
await host.shutdown();
rmSync(home, { recursive: true, force: true });
