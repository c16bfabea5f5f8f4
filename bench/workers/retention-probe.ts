// Does a retention pass leave memory behind? An in-process host (no provider, no HTTP) writes
// rounds of history (a processed message, a failure brief with its transcript entry and
// events, a context episode) for a few agents, and after every batch of rounds either runs
// one retention pass with tiny caps or runs none. Every few cycles it collects garbage
// twice and prints the V8 heap, external memory, RSS and glibc's main heap, so the two modes
// can be compared pass by pass.
//
//   node --expose-gc bench/workers/retention-probe.ts retention [cycles] [rounds]
//   node --expose-gc bench/workers/retention-probe.ts none      [cycles] [rounds]
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RuntimeHost } from "../../src/host/host.ts";
import { episodeRecord, historyRound, parked } from "../../test/helpers/history.ts";

const mode = process.argv[2] ?? "retention";
const cycles = Number(process.argv[3] ?? 200);
const rounds = Number(process.argv[4] ?? 300);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

const home = mkdtempSync(join(tmpdir(), "holon-retention-probe-"));
writeFileSync(
  join(home, "config.json"),
  JSON.stringify({
    retention: {
      events: { max_mb: 1 },
      transcript: { max_mb: 1 },
      messages: { max_mb: 1 },
      briefs: { max_mb: 1 },
      episodes: { max_mb: 1 },
    },
  }),
);
const host = await RuntimeHost.open({ home, executor: () => parked, autostartAgents: false });
const store = host.store;
const agents = ["main"];
for (let i = 1; i < 4; i++) {
  const id = `probe-${i}`;
  await host.agents.create(id, {});
  agents.push(id);
}

function mallocMb(): number {
  const smaps = readFileSync("/proc/self/smaps", "utf8");
  const at = smaps.indexOf(" [heap]\n");
  if (at < 0) return 0;
  return Number(/^Rss:\s+(\d+) kB/m.exec(smaps.slice(at))?.[1] ?? 0) / 1024;
}

let n = 0;
async function round(agentId: string): Promise<void> {
  n++;
  await historyRound(host, `probe ${n} ${"y".repeat(300)}`, {
    agent: agentId,
    channel: "probe",
    failure: `failure ${n}`,
  });
  await store.tx(
    async () => await store.memory.addEpisode(episodeRecord(agentId, n, store.clock.now())),
  );
}

const mb = (b: number) => (b / 2 ** 20).toFixed(1);
function rssParts(): { anon: number; file: number } {
  const status = readFileSync("/proc/self/status", "utf8");
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1]);
  return { anon: kb("RssAnon") / 1024, file: kb("RssFile") / 1024 };
}

console.log("cycle  heapUsed  heapTotal  external  rss  anon  file  malloc  removed  db_mb");
let removed = 0;
for (let c = 1; c <= cycles; c++) {
  for (let i = 0; i < rounds; i++) await round(agents[i % agents.length]!);
  if (mode === "retention") {
    const s = await host.services.retention.runOnce();
    removed += Object.values(s.removed).reduce((a, b) => a + (b ?? 0), 0);
  }
  if (c % 10 === 0 || c === 1) {
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    const m = process.memoryUsage();
    const r = rssParts();
    const db = join(home, "holon.db");
    const dbMb =
      (statSync(db).size + (statSync(`${db}-wal`, { throwIfNoEntry: false })?.size ?? 0)) / 2 ** 20;
    console.log(
      `${String(c).padStart(5)}  ${mb(m.heapUsed).padStart(8)}  ${mb(m.heapTotal).padStart(9)}  ${mb(m.external).padStart(8)}  ${mb(m.rss).padStart(5)}  ${r.anon.toFixed(1).padStart(5)}  ${r.file.toFixed(1).padStart(5)}  ${mallocMb().toFixed(1).padStart(6)}  ${String(removed).padStart(7)}  ${dbMb.toFixed(1)}`,
    );
  }
}
await host.shutdown();
rmSync(home, { recursive: true, force: true });
