// vitest globalSetup: the package an installed `holon` runs, built once per run into a scratch
// directory (test/perf-budget-startup.test.ts runs it). Built here rather than in the test so
// the esbuild run (some 5 s, on both cores) happens once, beside the web console's build,
// instead of inside one worker while the other runs its own files. The layout is an installed
// package's: the launcher (bin/holon.js), package.json, the source assets copied under dist/
// and the bundle in dist/bundle/, with packages left external resolving through a link to the
// checkout's node_modules. There is no tsc output, so a module loaded from dist/ beside the
// bundle (a second copy of its state) fails a run. esbuild's metafile is written beside it
// (bundle-meta.json): which modules and packages each chunk holds.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Metafile } from "esbuild";
import type { TestProject } from "vitest/node";

const REPO_ROOT = resolve(import.meta.dirname, "../..");

declare module "vitest" {
  export interface ProvidedContext {
    /** The scratch package's directory (see test/helpers/build-bundle.ts). */
    bundlePackage: string;
  }
}

/** Builds the scratch package into `pkg` (an empty directory). */
export async function buildBundlePackage(pkg: string): Promise<void> {
  const mod = (await import("../../scripts/bundle.mjs")) as {
    bundleCli: (o: { src: string; out: string }) => Promise<Metafile>;
    copySourceAssets: (src: string, out: string) => number;
  };
  mkdirSync(join(pkg, "bin"), { recursive: true });
  copyFileSync(join(REPO_ROOT, "bin", "holon.js"), join(pkg, "bin", "holon.js"));
  copyFileSync(join(REPO_ROOT, "package.json"), join(pkg, "package.json"));
  symlinkSync(join(REPO_ROOT, "node_modules"), join(pkg, "node_modules"));
  mod.copySourceAssets(join(REPO_ROOT, "src"), join(pkg, "dist"));
  const meta = await mod.bundleCli({ src: join(REPO_ROOT, "src"), out: join(pkg, "dist") });
  writeFileSync(join(pkg, "bundle-meta.json"), JSON.stringify(meta));
}

export default async function setup(project: TestProject): Promise<() => void> {
  const pkg = mkdtempSync(join(tmpdir(), "holon-bundle-"));
  await buildBundlePackage(pkg);
  project.provide("bundlePackage", pkg);
  return () => rmSync(pkg, { recursive: true, force: true });
}
