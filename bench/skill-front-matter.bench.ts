// Skill front matter: what parsing a SKILL.md's YAML front matter costs, for a real skill and
// for hostile blocks a cloned workspace could hold (many keys, many anchors and aliases, deep
// nesting, long quoted and folded values), at 16, 32 and 64 KiB (the cap). The parser is a
// pure function, so it runs in this process; each figure is the best CPU time of a few runs
// (CPU, not wall time, so a busy machine skews it less). Linear cost shows as a 64/16 KiB
// ratio near 4; the library's own duplicate-key check, which this project turns off for its
// linear one, grew about 16-fold.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { round } from "./lib/stats.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";

type Parse = (text: string) => unknown;

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function best(parse: Parse, text: string, runs: number): number {
  let min = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = cpuMs();
    parse(text);
    min = Math.min(min, cpuMs() - t0);
  }
  return min;
}

/** Hostile blocks of about `bytes` bytes, each a different way to make a parser work. */
const FORMS: Record<string, (bytes: number) => string> = {
  keys: (n) => lines(n, (i) => `k${i}: v`),
  nested_maps: (n) => lines(n, (i) => `k${i}:\n  a: v\n  b: [x, y]`),
  anchors_and_aliases: (n) =>
    lines(n / 2, (i) => `a${i}: &a${i} v`) + "\n" + lines(n / 2, (i) => `b${i}: *a${i % 60}`),
  deep_flow: (n) => "description: " + "[".repeat(n - 14),
  quoted_escapes: (n) => `description: "${'\\"x'.repeat((n - 16) / 3)}"`,
  folded_lines: (n) => "description: >\n" + lines(n - 16, () => "  word word word"),
};

function lines(bytes: number, line: (i: number) => string): string {
  const out: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const l = line(i);
    out.push(l);
    size += l.length + 1;
  }
  return out.join("\n");
}

const bench: Benchmark = {
  name: "skill-front-matter",
  description: "CPU cost of parsing SKILL.md front matter, real and hostile, up to the 64 KiB cap",
  async run(ctx) {
    const r = new ResultBuilder();
    const mod = (await import(
      pathToFileURL(join(ctx.root, "src/context/front-matter.ts")).href
    )) as typeof import("../src/context/front-matter.ts");
    const parse: Parse = (block) => mod.parseFrontMatter(`---\n${block}\n---\n`);
    const runs = ctx.quick ? 1 : 3;

    const real = readFileSync(
      join(
        ctx.root,
        "test/fixtures/third_party/davila7-claude-code-templates/doordash-group-orders/SKILL.md",
      ),
      "utf8",
    );
    r.metric(
      "real_skill_ms",
      round(
        best((t) => mod.parseFrontMatter(t), real, runs * 4),
        3,
      ),
      "ms",
      "a real SKILL.md (doordash-group-orders)",
    );

    for (const [form, make] of Object.entries(FORMS)) {
      const ms: number[] = [];
      for (const kib of [16, 32, 64]) {
        const block = make(kib * 1024 - 64);
        const outcome = mod.parseFrontMatter(`---\n${block}\n---\n`) as { ok: boolean } | null;
        r.check(`${form} ${kib} KiB parses or is refused, never throws`, outcome !== null);
        ms.push(best(parse, block, runs));
        r.metric(`${form}_${kib}k_ms`, round(ms.at(-1)!, 1), "ms", `${form}, ${kib} KiB`);
      }
      const ratio = ms[2]! / Math.max(ms[0]!, 0.05);
      r.metric(`${form}_ratio`, round(ratio, 1), "x", `${form}: 64 KiB / 16 KiB`);
      r.target(`${form} grows linearly (64/16 KiB ratio < 8)`, `${form}_ratio`, "<", 8);
      ctx.log(`${form}: ${ms.map((m) => m.toFixed(1)).join(" / ")} ms`);
    }
    r.note(
      "Best CPU time of a few runs in the harness's process; the host parses each SKILL.md once per change (SkillMdCache).",
    );
    return r.result;
  },
};

export default bench;
