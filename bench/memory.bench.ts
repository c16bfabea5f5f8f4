// Memory and context at scale: prompt assembly must not grow with history, and the memory
// index must rebuild in reasonable time.
//
// 1. Prompt assembly (every contributor a turn uses, through `promptPreview`) for an agent
//    with a small history (100 transcript entries, 10 episodes) and a large one (10,000
//    entries, 500 episodes): median time and prompt size. The ratio large/small is the figure
//    that matters: flat means the prompt reads bounded windows, never the whole history.
// 2. A full memory index rebuild (FTS5 with CJK bigrams) for an agent with 10,000 briefs.
//
// Each measurement runs in its own fresh process (bench/workers/memory-probe.ts).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { round } from "./lib/stats.ts";

type Probe = {
  times: number[];
  tokens: number;
  chars: number;
  rebuild_ms: number | null;
  indexed: number;
};

function probe(
  root: string,
  entries: number,
  episodes: number,
  briefs: number,
  iters: number,
  rebuild: boolean,
): Probe {
  const home = mkdtempSync(join(tmpdir(), "holon-bench-memory-"));
  try {
    const res = spawnSync(
      process.execPath,
      [
        join(root, "bench", "workers", "memory-probe.ts"),
        home,
        String(entries),
        String(episodes),
        String(briefs),
        String(iters),
        rebuild ? "1" : "0",
      ],
      { encoding: "utf8", maxBuffer: 16 * 1024 * 1024, timeout: 300_000 },
    );
    if (res.status !== 0) throw new Error(`memory probe failed: ${res.stderr}`);
    return JSON.parse(res.stdout) as Probe;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

const bench: Benchmark = {
  name: "memory",
  description:
    "prompt assembly vs history size (10k entries, 500 episodes); index rebuild of 10k briefs",
  async run(ctx) {
    const r = new ResultBuilder();
    const iters = ctx.quick ? 10 : 40;
    const briefs = ctx.quick ? 2_000 : 10_000;
    ctx.log("memory: small history");
    const small = probe(ctx.root, 100, 10, 20, iters, false);
    ctx.log("memory: large history");
    const large = probe(ctx.root, 10_000, 500, 200, iters, false);
    ctx.log(`memory: index rebuild of ${briefs} briefs`);
    const index = probe(ctx.root, 0, 0, briefs, 1, true);
    // The first assembly warms caches (prompt files, statements): leave it out.
    const smallMs = median(small.times.slice(1));
    const largeMs = median(large.times.slice(1));
    r.metric(
      "assembly_small_ms",
      round(smallMs, 2),
      "ms",
      "prompt assembly, 100 entries / 10 episodes (p50)",
    );
    r.metric(
      "assembly_large_ms",
      round(largeMs, 2),
      "ms",
      "prompt assembly, 10,000 entries / 500 episodes (p50)",
    );
    r.metric("assembly_ratio", round(largeMs / smallMs, 2), "x", "large / small assembly time");
    r.metric("prompt_small_tokens", small.tokens, "tokens", "estimated prompt size, small history");
    r.metric("prompt_large_tokens", large.tokens, "tokens", "estimated prompt size, large history");
    r.metric(
      "prompt_ratio",
      round(large.tokens / small.tokens, 2),
      "x",
      "large / small prompt size",
    );
    r.metric(
      "index_rebuild_ms",
      round(index.rebuild_ms ?? NaN, 0),
      "ms",
      `index rebuild, ${briefs} briefs`,
    );
    r.target("assembly stays flat (large/small < 3)", "assembly_ratio", "<", 3);
    r.target("prompt size stays flat (large/small < 1.5)", "prompt_ratio", "<", 1.5);
    r.target("index rebuild of the briefs < 10 s", "index_rebuild_ms", "<", 10_000);
    // The index also holds the agent's two curated memory files (memory/self.md, operator.md).
    const docs = briefs + 2;
    r.check("every brief indexed", index.indexed === docs, `${index.indexed} of ${docs} documents`);
    if (ctx.quick) r.result.notes.push(`--quick: ${briefs} briefs instead of 10,000`);
    return r.result;
  },
};

export default bench;
