// The dependency direction of docs/architecture.md, enforced: a module may import only from
// its own folder or from a folder below it. The order is a list of layers; folders in one
// layer do not import each other. Also: only store/ speaks SQL, and the edges (http/, cli/)
// never reach into agent, turn or tool internals.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../src");

/** Lowest layer first. Keep in step with docs/architecture.md ("Dependency direction"). */
const LAYERS: string[][] = [
  ["domain"],
  ["store"],
  ["providers", "workspace"],
  ["agent"],
  ["memory"],
  ["waiting", "tasks", "work", "context"],
  ["tools"],
  ["turn"],
  ["host"],
  ["client"],
  ["http"],
  ["cli", "tui"],
];
const EDGE_FORBIDDEN: Record<string, string[]> = {
  http: ["agent", "turn", "tools"],
  cli: ["agent", "turn", "tools"],
  tui: ["agent", "turn", "tools", "store", "host"],
};

function layerOf(dir: string): number {
  const i = LAYERS.findIndex((l) => l.includes(dir));
  if (i < 0) throw new Error(`src/${dir}/ is not placed in a layer: add it to LAYERS and the docs`);
  return i;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.(ts|js)$/.test(name) ? [p] : [];
  });
}

type Import = { from: string; spec: string };
function imports(): Import[] {
  const out: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["']([^"']+)["']/g)) {
      out.push({ from: file, spec: m[1]! });
    }
  }
  return out;
}
const topDir = (abs: string) => relative(SRC, abs).split("/")[0]!;

describe("architecture", () => {
  const all = imports();

  it("every import points down the layers, never up or sideways", () => {
    const bad: string[] = [];
    for (const { from, spec } of all) {
      if (!spec.startsWith(".")) continue;
      const target = resolve(dirname(from), spec);
      if (!target.startsWith(SRC + "/")) continue;
      const a = topDir(from);
      const b = topDir(target);
      if (a === b || !from.slice(SRC.length + 1).includes("/")) continue;
      if (layerOf(b) >= layerOf(a)) {
        bad.push(`${relative(SRC, from)} -> ${relative(SRC, target)}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("only store/ imports node:sqlite", () => {
    const bad = all
      .filter((i) => i.spec === "node:sqlite" && topDir(i.from) !== "store")
      .map((i) => relative(SRC, i.from));
    expect(bad).toEqual([]);
  });

  it("the edges do not reach into agent, turn or tool internals", () => {
    const bad: string[] = [];
    for (const { from, spec } of all) {
      if (!spec.startsWith(".")) continue;
      const forbidden = EDGE_FORBIDDEN[topDir(from)];
      const target = resolve(dirname(from), spec);
      if (forbidden?.includes(topDir(target))) bad.push(`${relative(SRC, from)} -> ${spec}`);
    }
    expect(bad).toEqual([]);
  });

  it("the check sees real imports (it cannot pass on an empty scan)", () => {
    expect(all.length).toBeGreaterThan(200);
    expect(all.some((i) => i.spec === "node:sqlite")).toBe(true);
  });
});
