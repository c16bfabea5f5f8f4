// The benchmark harness loads and lists every benchmark. No timing is measured here:
// performance targets live in `npm run bench`, never in tests.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  benchmarkFiles,
  loadBenchmarks,
  recordFileName,
  select,
  writeRecord,
  type BenchRecord,
} from "../bench/run.ts";

describe("bench harness", () => {
  it("finds and loads every bench/*.bench.ts with a name and a run function", async () => {
    const files = benchmarkFiles();
    const all = await loadBenchmarks();
    expect(all).toHaveLength(files.length);
    const names = all.map((b) => b.name);
    expect(names).toEqual(
      expect.arrayContaining(["admission", "sse-fanout", "idle", "cli-cold-start"]),
    );
    expect(new Set(names).size).toBe(names.length);
    for (const b of all) expect(typeof b.run).toBe("function");
  });

  it("selects benchmarks by name or file stem", async () => {
    const all = await loadBenchmarks();
    expect(select(all, ["admission"]).map((b) => b.name)).toEqual(["admission"]);
    expect(select(all, ["cli-cold-start"]).map((b) => b.name)).toEqual(["cli-cold-start"]);
    // With no names, the long explicit ones (the soak) stay out of the default run.
    expect(select(all, []).map((b) => b.name)).toEqual(
      all.filter((b) => !b.explicit).map((b) => b.name),
    );
    expect(select(all, []).map((b) => b.name)).not.toContain("soak");
    expect(select(all, ["soak"]).map((b) => b.name)).toEqual(["soak"]);
    expect(select(all, ["no-such-benchmark"])).toEqual([]);
  });

  it("writes one record per run, named by date and commit, and the latest as a copy", () => {
    const dir = mkdtempSync(join(tmpdir(), "holon-bench-record-"));
    try {
      const record: BenchRecord = {
        schema: 1,
        started_at: "2026-11-27T09:30:05.123Z",
        finished_at: "2026-11-27T09:31:00.000Z",
        commit: "1a2b3c4",
        dirty: false,
        root: "/x",
        quick: true,
        filters: ["turn"],
        options: {},
        machine: {
          node: "v24",
          platform: "linux-x64",
          cpus: 2,
          cpu_model: null,
          total_mem_mb: 1,
          load_1m: 0.5,
        },
        benchmarks: [],
      };
      const first = writeRecord(dir, record);
      writeRecord(dir, { ...record, started_at: "2026-11-27T10:00:00.000Z", dirty: true });
      expect(first).toBe(join(dir, "2026-11-27T09-30-05Z-1a2b3c4.json"));
      expect(recordFileName({ ...record, commit: null })).toBe("2026-11-27T09-30-05Z-nogit.json");
      expect(readdirSync(dir).sort()).toEqual([
        "2026-11-27T09-30-05Z-1a2b3c4.json",
        "2026-11-27T10-00-00Z-1a2b3c4-dirty.json",
        "latest.json",
      ]);
      expect(JSON.parse(readFileSync(first, "utf8"))).toEqual(record);
      expect(JSON.parse(readFileSync(join(dir, "latest.json"), "utf8")).dirty).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
