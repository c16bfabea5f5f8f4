// The sandbox probe, once per run. A host probes bubblewrap when it starts (several bubblewrap
// and nsenter starts, src/sandbox/probe.ts) and keeps the answer in its home's
// run/sandbox-probe.json for an hour, for exactly this machine. Every test home is new, so
// every `holon` process a test spawns would probe again. The global setup probes once, and the
// helpers that spawn `holon` for a home (runCli, spawnServe) put that answer into the home
// first, as the home's own first host would have left it. The probe itself, its cache and
// what a changed machine does are test/sandbox-probe-cache.test.ts's; a home that already
// has a probe file, or whose config names another bubblewrap (the key then differs), probes.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's probe file (see test/helpers/probe-cache.ts); "" when there is none. */
    sandboxProbeFile: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), "holon-probe-"));
  const file = join(dir, "sandbox-probe.json");
  const { probeSandbox } = (await import("../../src/sandbox/probe.ts")) as {
    probeSandbox: (bwrap: string, pathEnv: string | undefined, cacheFile: string) => unknown;
  };
  probeSandbox("bwrap", process.env.PATH, file);
  project.provide("sandboxProbeFile", existsSync(file) ? file : "");
  return () => rmSync(dir, { recursive: true, force: true });
}

/** Put the run's probe into `home` (an existing directory without one). */
export function seedProbeCache(home: string | undefined): void {
  if (!home) return;
  const probe = inject("sandboxProbeFile");
  if (!probe) return;
  try {
    if (!statSync(home).isDirectory()) return;
    const run = join(home, "run");
    const file = join(run, "sandbox-probe.json");
    if (existsSync(file)) return;
    mkdirSync(run, { recursive: true, mode: 0o700 });
    copyFileSync(probe, file);
  } catch {
    // no such home (yet): the process probes itself
  }
}
