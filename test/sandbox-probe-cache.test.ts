// The sandbox probe kept on disk (issue 32: `holon run` started bubblewrap three or four times
// before its first model call). A stand-in bubblewrap that notes each start shows when the
// probe runs: once, then never again for the same machine within the hour; again when the
// program changed, the file is not ours, or it is too old.
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PROBE_CACHE_MS, probeSandbox } from "../src/sandbox/probe.ts";

describe.runIf(process.platform === "linux")("sandbox probe cache", () => {
  const dir = mkdtempSync(join(tmpdir(), "holon-probe-cache-"));
  const starts = join(dir, "starts");
  const bwrap = join(dir, "bwrap");
  const cacheFile = join(dir, "run", "sandbox-probe.json");
  writeFileSync(starts, "");
  const fake = (version: string) => {
    writeFileSync(
      bwrap,
      `#!/bin/sh\necho "$1" >> '${starts}'\n[ "$1" = --version ] && echo 'bubblewrap ${version}'\nexit 0\n`,
    );
    chmodSync(bwrap, 0o755);
  };
  const count = () => readFileSync(starts, "utf8").split("\n").filter(Boolean).length;
  // Each call gets a PATH the in-process memo has not seen (empty entries change nothing
  // else), so only the file on disk can spare the probe.
  let variant = 0;
  const probe = () => probeSandbox("bwrap", dir + ":".repeat(++variant), cacheFile);

  it("probes once, then answers from the file for the same machine", () => {
    fake("9.1");
    const first = probe();
    expect(first).toMatchObject({ available: true, version: "bubblewrap 9.1", bwrap });
    const probed = count();
    expect(probed).toBeGreaterThanOrEqual(2); // --version, then a confined `true`
    expect(statSync(cacheFile).mode & 0o777).toBe(0o600);
    expect(probe()).toEqual(first);
    expect(count()).toBe(probed);
  });

  it("probes again when bubblewrap changed, the file is not ours, or it is too old", () => {
    fake("9.2-longer"); // another size and modification time
    const before = count();
    expect(probe().version).toBe("bubblewrap 9.2-longer");
    expect(count()).toBeGreaterThan(before);

    const kept = count();
    writeFileSync(cacheFile, "not json");
    expect(probe().version).toBe("bubblewrap 9.2-longer");
    expect(count()).toBeGreaterThan(kept);

    const fresh = count();
    const file = JSON.parse(readFileSync(cacheFile, "utf8")) as { at: number };
    file.at -= PROBE_CACHE_MS + 1000;
    writeFileSync(cacheFile, JSON.stringify(file));
    probe();
    expect(count()).toBeGreaterThan(fresh);

    const again = count();
    const other = JSON.parse(readFileSync(cacheFile, "utf8")) as { machine: string };
    other.machine += "|another kernel";
    writeFileSync(cacheFile, JSON.stringify(other));
    probe();
    expect(count()).toBeGreaterThan(again);
  });
});
