// bin/holon.js decides, before any of Holon's modules loads, which entry point runs (the
// checkout's sources or the build), whether Node's compile cache is on, and the heap policy
// of the commands that run a runtime. Here it runs for real, through sh as an installed
// `holon` does, over a package laid out in a temporary directory whose entry point only
// reports what the launcher chose (or churns memory, to see how V8 collects).
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HOLON_BIN } from "./helpers/home.ts";

const REPORT = `import { getCompileCacheDir } from "node:module";
process.stdout.write(JSON.stringify({ entry: import.meta.filename, cache: getCompileCacheDir() ?? null }));
`;

/**
 * Churns through arrays, keeping some 16 MB alive, until V8 has run three full collections
 * (seen through the gc performance entries, so a loaded machine that schedules collections
 * late only makes it churn longer), at most 20,000 rounds.
 */
const CHURN = `import { PerformanceObserver, constants } from "node:perf_hooks";
let major = 0;
const obs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
});
obs.observe({ entryTypes: ["gc"] });
const keep = [];
for (let i = 0; i < 20000 && major < 3; i++) {
  keep.push(new Array(20000).fill({ i }));
  if (keep.length > 100) keep.shift();
  if (i % 50 === 49) await new Promise((r) => setImmediate(r));
}
obs.disconnect();
`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A package with the real launcher and a reporting entry point as the build's (and src/). */
function layout(withSources: boolean, main = REPORT): string {
  const root = mkdtempSync(join(tmpdir(), "holon-launcher-"));
  dirs.push(root);
  mkdirSync(join(root, "bin"));
  copyFileSync(HOLON_BIN, join(root, "bin", "holon.js"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ version: "0.0.0", type: "module" }));
  mkdirSync(join(root, "dist", "bundle"), { recursive: true });
  writeFileSync(join(root, "dist", "bundle", "main.js"), main);
  if (withSources) {
    mkdirSync(join(root, "src", "cli"), { recursive: true });
    writeFileSync(join(root, "src", "cli", "main.ts"), main);
  }
  return root;
}

function run(root: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): string {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
    ...extraEnv,
  };
  delete env.NODE_DISABLE_COMPILE_CACHE;
  delete env.HOLON_DIST;
  if (!("HOLON_NODE_OPTIONS" in extraEnv)) delete env.HOLON_NODE_OPTIONS;
  return execFileSync("/bin/sh", [join(root, "bin", "holon.js"), ...args], {
    env,
    encoding: "utf8",
    timeout: 20_000,
  });
}

function launch(root: string, ...args: string[]): { entry: string; cache: string | null } {
  return JSON.parse(run(root, args)) as { entry: string; cache: string | null };
}

/** V8's full collections in a churning process: whether each one set out to reduce memory. */
function fullCollections(root: string, args: string[], flags: string): boolean[] {
  const out = run(root, args, {
    HOLON_NODE_OPTIONS: `--max-semi-space-size=2 --max-old-space-size=512 --trace-gc ${flags}`,
  });
  return out
    .split("\n")
    .filter((line) => line.includes("Mark-Compact"))
    .map((line) => line.includes("Mark-Compact (reduce)"));
}

describe("the launcher", () => {
  it("an installed package's host runs without the compile cache; its other commands keep it", () => {
    const installed = layout(false);
    const host = launch(installed, "serve", "--port", "0");
    expect(host.entry).toBe(join(installed, "dist", "bundle", "main.js"));
    expect(host.cache).toBeNull();
    const cli = launch(installed, "status");
    expect(cli.entry).toBe(join(installed, "dist", "bundle", "main.js"));
    expect(cli.cache).toEqual(expect.any(String));
  });

  it("a checkout's host keeps the cache, which spares it Node's type stripper", () => {
    const checkout = layout(true);
    const host = launch(checkout, "serve");
    expect(host.entry).toBe(join(checkout, "src", "cli", "main.ts"));
    expect(host.cache).toEqual(expect.any(String));
  });

  // Node 22 has no memory saver mode (and rejects the flag on the command line).
  const saver = Number(process.versions.node.split(".")[0]) >= 24;
  it.skipIf(!saver)(
    "the host collects in V8's memory saver mode unless the user chose otherwise",
    () => {
      const root = layout(false, CHURN);
      const host = fullCollections(root, ["serve"], "");
      expect(host.length).toBeGreaterThan(0);
      expect(host.every(Boolean)).toBe(true);
      // Short-lived commands keep V8's default: their full collections keep the freed pages.
      for (const command of ["run", "status"]) {
        const gcs = fullCollections(root, [command], "");
        expect(gcs.length).toBeGreaterThan(0);
        expect(gcs.some(Boolean)).toBe(false);
      }
      // Flags named in HOLON_NODE_OPTIONS win over the launcher's policy.
      const off = fullCollections(root, ["serve"], "--no-memory-saver-mode");
      expect(off.length).toBeGreaterThan(0);
      expect(off.some(Boolean)).toBe(false);
    },
  );
});
