// The benchmark harness loads and lists every benchmark. No timing is measured here:
// performance targets live in `npm run bench`, never in tests.
import { describe, expect, it } from "vitest";
import { benchmarkFiles, loadBenchmarks, select } from "../bench/run.ts";

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
});
