// Benchmark harness: `npm run bench` runs every bench/*.bench.ts; `npm run bench -- admission`
// runs the ones whose name (or file stem) matches; `npm run bench -- --list` lists them;
// `--quick` shortens every phase (rough figures, for trying things out). A benchmark marked
// `explicit` (the soak) runs only when named: `npm run bench -- soak --duration=600`;
// `--key=value` flags reach every benchmark as `ctx.options`.
//
// The report goes to stdout; progress to stderr; the run's record (every figure, target and
// check, the commit and the machine) to bench/results/<date>-<commit>.json, one file per
// run, and a copy to bench/results/latest.json (both gitignored). The record's schema is in
// bench/README.md; compare a change against an earlier record of the same machine.
//
// ---- Writing a benchmark -----------------------------------------------------------------
// Add `bench/<name>.bench.ts` whose default export is a `Benchmark` (bench/lib/types.ts):
//
//   import { ResultBuilder, type Benchmark } from "./lib/types.ts";
//   const bench: Benchmark = {
//     name: "turn-overhead",
//     description: "one line for --list",
//     async run(ctx) {            // ctx: { root, quick, log }
//       const r = new ResultBuilder();
//       r.metric("p50_ms", 3.2, "ms", "turn overhead p50");
//       r.target("p50 < 10 ms", "p50_ms", "<", 10);   // reported PASS/FAIL, never fatal
//       r.check("no turn lost", true);                 // correctness, also reported
//       return r.result;
//     },
//   };
//   export default bench;
//
// Rules, because the machine is small (2 cores) and noisy:
// - Run the product as a real child process (bench/lib/proc.ts: startHolon), and generate
//   load from another forked process (bench/lib/proc.ts: Worker), never from the harness's
//   own event loop next to the code under test.
// - Only talk to 127.0.0.1; every loop is bounded (fixed duration or count); clean up
//   children and temp homes in `finally`.
// - Report medians and p50/p99, and ratios against a baseline measured in the same run;
//   never compare against absolute numbers from another run, and never assert timings
//   in tests. A missed target is reported; it does not fail the process. A benchmark that
//   throws does (exit code 1).
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execFileSync } from "node:child_process";
import type { Benchmark, BenchContext, Result } from "./lib/types.ts";

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));

export type LoadedBenchmark = Benchmark & { file: string };

/** The benchmark modules in bench/, sorted by file name. */
export function benchmarkFiles(dir = BENCH_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".bench.ts"))
    .sort()
    .map((f) => join(dir, f));
}

function isBenchmark(v: unknown): v is Benchmark {
  const b = v as Partial<Benchmark> | null;
  return (
    typeof b === "object" && b !== null && typeof b.name === "string" && typeof b.run === "function"
  );
}

/** Import every benchmark module; a module without a valid default export is an error. */
export async function loadBenchmarks(dir = BENCH_DIR): Promise<LoadedBenchmark[]> {
  const out: LoadedBenchmark[] = [];
  for (const file of benchmarkFiles(dir)) {
    const mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
    if (!isBenchmark(mod.default)) {
      throw new Error(
        `${file}: default export must be { name: string, run(ctx): Promise<Result> }`,
      );
    }
    out.push({ ...mod.default, file });
  }
  const seen = new Set<string>();
  for (const b of out) {
    if (seen.has(b.name)) throw new Error(`two benchmarks are named '${b.name}'`);
    seen.add(b.name);
  }
  return out;
}

/**
 * Benchmarks matching any of `filters` (by name or file stem); when none are given, every
 * benchmark that is not `explicit`.
 */
export function select(all: LoadedBenchmark[], filters: string[]): LoadedBenchmark[] {
  if (filters.length === 0) return all.filter((b) => !b.explicit);
  return all.filter((b) =>
    filters.some((f) => b.name === f || basename(b.file, ".bench.ts") === f || b.name.includes(f)),
  );
}

// ---- Report --------------------------------------------------------------------------------

function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toFixed(3);
}

export function formatResult(name: string, result: Result, ms: number): string {
  const lines: string[] = [`\n== ${name} (${(ms / 1000).toFixed(1)} s)`];
  const entries = Object.entries(result.metrics);
  const width = Math.max(0, ...entries.map(([k, m]) => (m.label ?? k).length));
  for (const [key, m] of entries) {
    lines.push(`  ${(m.label ?? key).padEnd(width)}  ${fmt(m.value)} ${m.unit}`);
  }
  if (result.targets.length > 0) lines.push("  targets:");
  for (const t of result.targets) {
    lines.push(
      `    [${t.pass ? "PASS" : "FAIL"}] ${t.label}: ${fmt(t.actual)} ${t.op} ${fmt(t.threshold)}`,
    );
  }
  if (result.checks.length > 0) lines.push("  checks:");
  for (const c of result.checks) {
    lines.push(`    [${c.ok ? " OK " : "FAIL"}] ${c.label}${c.detail ? ` (${c.detail})` : ""}`);
  }
  for (const n of result.notes) lines.push(`  note: ${n}`);
  return lines.join("\n");
}

type RunRecord = {
  name: string;
  file: string;
  duration_ms: number;
  error: string | null;
  result: Result | null;
};

/** One run of `npm run bench`, as written to bench/results/ (schema: bench/README.md). */
export type BenchRecord = {
  schema: 1;
  started_at: string;
  finished_at: string;
  commit: string | null;
  /** Whether the checkout had uncommitted changes (the figures are then of no commit). */
  dirty: boolean | null;
  root: string;
  quick: boolean;
  /** The command line's names and `--key=value` options. */
  filters: string[];
  options: Record<string, string>;
  machine: {
    node: string;
    platform: string;
    cpus: number;
    cpu_model: string | null;
    total_mem_mb: number;
    /** 1-minute load average when the run started (a busy machine skews every figure). */
    load_1m: number;
  };
  benchmarks: RunRecord[];
};

function git(root: string, args: string[]): string | null {
  try {
    return execFileSync("git", args, {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return null;
  }
}

/** `2026-11-27T09-30-05Z-1a2b3c4` (or `-nogit`, and `-dirty` for uncommitted changes). */
export function recordFileName(
  record: Pick<BenchRecord, "started_at" | "commit" | "dirty">,
): string {
  const when = record.started_at.replace(/\.\d+Z$/, "Z").replace(/:/g, "-");
  return `${when}-${record.commit ?? "nogit"}${record.dirty ? "-dirty" : ""}.json`;
}

/** Write the run's record as its own file under `dir`, and as `latest.json`. */
export function writeRecord(dir: string, record: BenchRecord): string {
  mkdirSync(dir, { recursive: true });
  const text = JSON.stringify(record, null, 2) + "\n";
  const path = join(dir, recordFileName(record));
  writeFileSync(path, text);
  writeFileSync(join(dir, "latest.json"), text);
  return path;
}

async function main(argv: string[]): Promise<number> {
  const flags = new Set(argv.filter((a) => a.startsWith("--") && !a.includes("=")));
  const options: Record<string, string> = {};
  for (const a of argv) {
    const m = /^--([^=]+)=(.*)$/.exec(a);
    if (m) options[m[1]!] = m[2]!;
  }
  const filters = argv.filter((a) => !a.startsWith("--"));
  const all = await loadBenchmarks();
  if (flags.has("--list")) {
    for (const b of all) {
      const only = b.explicit ? " (only when named)" : "";
      console.log(`${b.name.padEnd(16)} ${b.description ?? ""}${only}`);
    }
    return 0;
  }
  const chosen = select(all, filters);
  if (chosen.length === 0) {
    console.error(
      `no benchmark matches ${filters.join(", ")}; have: ${all.map((b) => b.name).join(", ")}`,
    );
    return 2;
  }
  // HOLON_BENCH_ROOT benchmarks another checkout of the product (e.g. an older commit).
  const root = resolve(process.env.HOLON_BENCH_ROOT ?? join(BENCH_DIR, ".."));
  const ctx: BenchContext = {
    root,
    quick: flags.has("--quick"),
    log: (m) => process.stderr.write(`  · ${m}\n`),
    options,
  };
  const startedAt = new Date().toISOString();
  const machine = {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? null,
    total_mem_mb: Math.round(totalmem() / 2 ** 20),
    load_1m: Math.round(loadavg()[0]! * 100) / 100,
  };
  console.log(
    `holon benchmarks — node ${machine.node}, ${machine.cpus} cpu(s), ${machine.total_mem_mb} MB` +
      `${ctx.quick ? ", QUICK mode (rough figures)" : ""}\nroot: ${root}`,
  );
  const records: RunRecord[] = [];
  for (const b of chosen) {
    process.stderr.write(`\n> ${b.name}\n`);
    const t0 = performance.now();
    let record: RunRecord;
    try {
      const result = await b.run(ctx);
      record = {
        name: b.name,
        file: basename(b.file),
        duration_ms: performance.now() - t0,
        error: null,
        result,
      };
      console.log(formatResult(b.name, result, record.duration_ms));
    } catch (err) {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      record = {
        name: b.name,
        file: basename(b.file),
        duration_ms: performance.now() - t0,
        error: message,
        result: null,
      };
      console.log(`\n== ${b.name}: ERROR\n  ${message.split("\n").join("\n  ")}`);
    }
    records.push(record);
  }

  console.log("\n== summary");
  for (const r of records) {
    if (!r.result) {
      console.log(`  ${r.name.padEnd(16)} ERROR`);
      continue;
    }
    const t = r.result.targets;
    const c = r.result.checks;
    console.log(
      `  ${r.name.padEnd(16)} targets ${t.filter((x) => x.pass).length}/${t.length} met` +
        `, checks ${c.filter((x) => x.ok).length}/${c.length} ok`,
    );
  }

  const status = git(root, ["status", "--porcelain", "--untracked-files=no"]);
  const out = writeRecord(join(BENCH_DIR, "results"), {
    schema: 1,
    started_at: startedAt,
    finished_at: new Date().toISOString(),
    commit: git(root, ["rev-parse", "--short", "HEAD"]),
    dirty: status === null ? null : status.length > 0,
    root,
    quick: ctx.quick,
    filters,
    options,
    machine,
    benchmarks: records,
  });
  console.log(`\nresults: ${out}`);
  return records.some((r) => r.error) ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
