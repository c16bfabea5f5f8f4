// The dependency direction of docs/architecture.md, enforced: a module may import only from
// its own folder or from a folder below it. The order is a list of layers; folders in one
// layer do not import each other. Also: only store/ speaks SQL, and the edges (http/, cli/)
// never reach into agent, turn or tool internals. And the store's one rule (a transaction
// body awaits only store calls; no store promise floats), checked on the typed program.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import type ts from "typescript";
import { describe, expect, it } from "vitest";
import { checkStoreRule, storeRuleProgram } from "./helpers/store-rule.ts";

const SRC = resolve(import.meta.dirname, "../src");

/** Lowest layer first. Keep in step with docs/architecture.md ("Dependency direction"). */
const LAYERS: string[][] = [
  ["domain"],
  ["store"],
  ["sandbox"],
  ["providers", "workspace"],
  ["agent"],
  ["memory"],
  ["asks"],
  ["budget"],
  ["waiting", "tasks", "work", "context", "telemetry"],
  ["mcp"],
  ["tools"],
  ["policy"],
  ["turn"],
  ["host"],
  ["client"],
  ["mcpserver"],
  ["http"],
  ["cli", "tui", "web"],
];
const EDGE_FORBIDDEN: Record<string, string[]> = {
  http: ["agent", "turn", "tools"],
  cli: ["agent", "turn", "tools"],
  tui: ["agent", "turn", "tools", "store", "host"],
  // A tool's context is per call (agent, execution root, signal, the services it needs),
  // never the whole store: tools reach state only through their plane's service.
  tools: ["store"],
};
/**
 * The web console (src/web/) runs in a browser: besides itself it may import only the
 * domain's shapes and the presentation layer (src/client/presentation.ts), never server
 * code; it reaches the host over HTTP like any client.
 */
const WEB_MAY_IMPORT = ["web", "domain", "client/presentation.ts"];

function layerOf(dir: string): number {
  const i = LAYERS.findIndex((l) => l.includes(dir));
  if (i < 0) throw new Error(`src/${dir}/ is not placed in a layer: add it to LAYERS and the docs`);
  return i;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.(ts|tsx|js)$/.test(name) ? [p] : [];
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

/** Every import circle between files of src/, each once, as a readable path. */
function circles(list: Import[]): string[] {
  const edges = new Map<string, Set<string>>();
  for (const { from, spec } of list) {
    if (!spec.startsWith(".")) continue;
    const target = resolve(dirname(from), spec);
    if (!target.startsWith(SRC + "/")) continue;
    const set = edges.get(from) ?? new Set<string>();
    set.add(target);
    edges.set(from, set);
  }
  const found = new Set<string>();
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      const s = state.get(next);
      if (s === "open") {
        const loop = stack.slice(stack.indexOf(next));
        // Start each circle at its smallest name so it is reported once.
        const k = loop.indexOf([...loop].sort()[0]!);
        const turned = [...loop.slice(k), ...loop.slice(0, k)];
        found.add([...turned, turned[0]!].map((f) => relative(SRC, f)).join(" -> "));
      } else if (s === undefined) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...edges.keys()].sort()) if (!state.has(node)) visit(node);
  return [...found].sort();
}

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

  it("the web console imports only itself, the domain and the presentation layer", () => {
    const bad: string[] = [];
    for (const { from, spec } of all) {
      if (topDir(from) !== "web") continue;
      if (!spec.startsWith(".")) {
        if (!/^(react|react-dom)(\/|$)/.test(spec)) bad.push(`${relative(SRC, from)} -> ${spec}`);
        continue;
      }
      const target = relative(SRC, resolve(dirname(from), spec));
      if (!WEB_MAY_IMPORT.some((ok) => target === ok || target.startsWith(`${ok}/`)))
        bad.push(`${relative(SRC, from)} -> ${target}`);
    }
    expect(bad).toEqual([]);
  });

  it("only store/ imports node:sqlite", () => {
    const bad = all
      .filter((i) => i.spec === "node:sqlite" && topDir(i.from) !== "store")
      .map((i) => relative(SRC, i.from));
    expect(bad).toEqual([]);
  });

  it("only the Postgres connection's worker imports pg, and the backend loads only on demand", () => {
    // `pg` itself: only in the worker thread (store/pg-worker.ts).
    const pgPackage = all
      .filter((i) => i.spec === "pg" || i.spec.startsWith("pg/"))
      .map((i) => relative(SRC, i.from));
    expect(pgPackage).toEqual(["store/pg-worker.ts"]);
    // The backend's modules: statically only from each other (and type-only elsewhere);
    // everything else reaches them with `await import()`, so an embedded host never loads them.
    const backend = /(^|\/)pg(-open|-schema|-worker)?\.ts$/;
    const bad: string[] = [];
    for (const file of sourceFiles(SRC)) {
      if (backend.test(file)) continue;
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/^import\s+(type\s+)?[^;]*?from\s+["']([^"']+)["']/gm)) {
        if (!m[1] && backend.test(m[2]!)) bad.push(`${relative(SRC, file)} -> ${m[2]}`);
      }
    }
    expect(bad).toEqual([]);
    const dynamic = all.filter((i) => backend.test(i.spec) && !backend.test(i.from));
    expect(dynamic.length).toBeGreaterThan(0); // the check sees the dynamic imports
  });

  it("the edges do not reach into agent, turn or tool internals; tools do not reach the store", () => {
    const bad: string[] = [];
    for (const { from, spec } of all) {
      if (!spec.startsWith(".")) continue;
      const forbidden = EDGE_FORBIDDEN[topDir(from)];
      const target = resolve(dirname(from), spec);
      if (forbidden?.includes(topDir(target))) bad.push(`${relative(SRC, from)} -> ${spec}`);
    }
    expect(bad).toEqual([]);
  });

  it("no module imports itself back through others (no import circles, type imports included)", () => {
    expect(circles(all)).toEqual([]);
  });

  it("the circle check finds a circle when there is one", () => {
    const a = join(SRC, "x/a.ts");
    const b = join(SRC, "x/b.ts");
    const c = join(SRC, "x/c.ts");
    const fake: Import[] = [
      { from: a, spec: "./b.ts" },
      { from: b, spec: "./c.ts" },
      { from: c, spec: "./a.ts" },
    ];
    expect(circles(fake)).toEqual(["x/a.ts -> x/b.ts -> x/c.ts -> x/a.ts"]);
    expect(circles(fake.slice(0, 2))).toEqual([]);
  });

  it("only the ingress inserts messages into a queue", () => {
    const bad = sourceFiles(SRC)
      .filter((f) => /messages\.insert\(/.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f))
      .filter((f) => f !== "agent/ingress.ts" && !f.startsWith("store/"));
    expect(bad).toEqual([]);
  });

  it("routes, tools and the CLI write no rows or events themselves", () => {
    const bad = sourceFiles(SRC)
      .filter((f) => ["http", "cli", "tools", "tui", "client"].includes(topDir(f)))
      .filter((f) => /\bappendEvent\(|\.tx\(|\bmessages\.insert\(/.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f));
    expect(bad).toEqual([]);
  });

  it("the check sees real imports (it cannot pass on an empty scan)", () => {
    expect(all.length).toBeGreaterThan(200);
    expect(all.some((i) => i.spec === "node:sqlite")).toBe(true);
  });
});

describe("the store's one rule (compiler API)", () => {
  const FIXTURES = resolve(import.meta.dirname, "fixtures/store-rule");
  const planted = readdirSync(FIXTURES).map((f) => join(FIXTURES, f));
  const src = sourceFiles(SRC).filter(
    (f) => f.endsWith(".ts") && !f.startsWith(join(SRC, "web") + sep),
  );
  // One program for both: src/ and the planted violations (which import src/store/). Built
  // on first use (some seconds of type checking), so a filtered run of this file skips it.
  let built: ts.Program | undefined;
  const program = () => (built ??= storeRuleProgram([...src, ...planted]));
  let checked: ReturnType<typeof checkStoreRule> | undefined;
  const srcReport = () => (checked ??= checkStoreRule(program(), (f) => f.startsWith(SRC + sep)));

  it("no store promise floats and no transaction body awaits anything but the store", () => {
    const inSrc = srcReport();
    const where = (fs: { file: string; line: number; text: string; why?: string }[]) =>
      fs.map((f) => `${f.file}:${f.line} ${f.text}${f.why ? ` (${f.why})` : ""}`);
    expect(where(inSrc.floatingStore)).toEqual([]);
    expect(where(inSrc.awaitInTx)).toEqual([]);
    expect(where(inSrc.asyncInSyncTx)).toEqual([]);
    expect(where(inSrc.floatingCallback)).toEqual([]);
    // Information, not a failure: a floating promise elsewhere may be deliberate.
    console.info(
      `transaction bodies checked: ${inSrc.txBodies}; floating promises in src/ (any kind, rejection unhandled): ${inSrc.floatingAny.length}` +
        where(inSrc.floatingAny)
          .map((l) => `\n  ${l}`)
          .join(""),
    );
  });

  it("catches exactly the planted violations", () => {
    const inFixtures = checkStoreRule(program(), (f) => f.startsWith(FIXTURES + sep));
    const plantedLines = (name: string, mark = "PLANTED:") =>
      readFileSync(join(FIXTURES, name), "utf8")
        .split("\n")
        .flatMap((line, i) => (line.includes(`// ${mark}`) ? [i + 1] : []));
    const at = (fs: { file: string; line: number }[]) =>
      fs.map((f) => `${f.file.split("/").pop()}:${f.line}`);
    expect(at(inFixtures.floatingStore)).toEqual(
      plantedLines("floating-write.ts").map((l) => `floating-write.ts:${l}`),
    );
    expect(at(inFixtures.awaitInTx)).toEqual(
      plantedLines("tx-await.ts").map((l) => `tx-await.ts:${l}`),
    );
    expect(at(inFixtures.asyncInSyncTx)).toEqual(
      plantedLines("tx-await.ts", "PLANTED-SYNC").map((l) => `tx-await.ts:${l}`),
    );
    expect(at(inFixtures.floatingCallback)).toEqual(
      plantedLines("floating-callback.ts").map((l) => `floating-callback.ts:${l}`),
    );
    expect(plantedLines("floating-callback.ts")).toHaveLength(3);
    expect(plantedLines("floating-write.ts")).toHaveLength(1);
    expect(plantedLines("tx-await.ts")).toHaveLength(4);
    expect(plantedLines("tx-await.ts", "PLANTED-SYNC")).toHaveLength(1);
  });

  it("the check sees the store's transactions (it cannot pass on an empty scan)", () => {
    // Every src file is in the program, and the tx sites (about 88) resolve to the store.
    expect(src.length).toBeGreaterThan(200);
    expect(program().getSourceFile(join(SRC, "store/db.ts"))).toBeDefined();
    expect(srcReport().txBodies).toBeGreaterThan(60);
  });
});
