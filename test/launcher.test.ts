// bin/holon.js decides, before any of Holon's modules loads, which entry point runs (the
// checkout's sources or the build) and whether Node's compile cache is on. Here it runs for
// real, through sh as an installed `holon` does, over a package laid out in a temporary
// directory whose entry point only reports what the launcher chose.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HOLON_BIN } from "./helpers/home.ts";

const REPORT = `import { getCompileCacheDir } from "node:module";
process.stdout.write(JSON.stringify({ entry: import.meta.filename, cache: getCompileCacheDir() ?? null }));
`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A package with the real launcher and a reporting entry point under dist/ (and src/). */
function layout(withSources: boolean): string {
  const root = mkdtempSync(join(tmpdir(), "holon-launcher-"));
  dirs.push(root);
  mkdirSync(join(root, "bin"));
  copyFileSync(HOLON_BIN, join(root, "bin", "holon.js"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ version: "0.0.0", type: "module" }));
  mkdirSync(join(root, "dist", "cli"), { recursive: true });
  writeFileSync(join(root, "dist", "cli", "main.js"), REPORT);
  if (withSources) {
    mkdirSync(join(root, "src", "cli"), { recursive: true });
    writeFileSync(join(root, "src", "cli", "main.ts"), REPORT);
  }
  return root;
}

function launch(root: string, ...args: string[]): { entry: string; cache: string | null } {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
  };
  delete env.NODE_DISABLE_COMPILE_CACHE;
  delete env.HOLON_DIST;
  const out = execFileSync("/bin/sh", [join(root, "bin", "holon.js"), ...args], {
    env,
    encoding: "utf8",
    timeout: 20_000,
  });
  return JSON.parse(out) as { entry: string; cache: string | null };
}

describe("the launcher", () => {
  it("an installed package's host runs without the compile cache; its other commands keep it", () => {
    const installed = layout(false);
    const host = launch(installed, "serve", "--port", "0");
    expect(host.entry).toBe(join(installed, "dist", "cli", "main.js"));
    expect(host.cache).toBeNull();
    const cli = launch(installed, "status");
    expect(cli.entry).toBe(join(installed, "dist", "cli", "main.js"));
    expect(cli.cache).toEqual(expect.any(String));
  });

  it("a checkout's host keeps the cache, which spares it Node's type stripper", () => {
    const checkout = layout(true);
    const host = launch(checkout, "serve");
    expect(host.entry).toBe(join(checkout, "src", "cli", "main.ts"));
    expect(host.cache).toEqual(expect.any(String));
  });
});
