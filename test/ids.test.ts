// Row ids (domain/clock.ts): the shape every stored id has had, unique within a process, and
// ordered by creation time so new rows append to their unique indexes (the admission's WAL
// budget in test/perf-budget.test.ts depends on it).
import { describe, expect, it } from "vitest";
import { randomIds } from "../src/domain/clock.ts";

describe("row ids", () => {
  it("keep the prefix and 20 hex digits, never repeat, and sort in creation order", () => {
    const ids = Array.from({ length: 5000 }, () => randomIds.next("msg"));
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{20}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Within one process the counter only counts up, so sorting changes nothing (unless it
    // wrapped around inside this run, once in 2^36 ids).
    const sorted = [...ids].sort();
    const wrapped = ids.some((id, i) => i > 0 && id.slice(-9) === "000000000");
    if (!wrapped) expect(sorted).toEqual(ids);
  });

  it("lead with the wall-clock millisecond", () => {
    const before = Date.now();
    const id = randomIds.next("evt");
    const after = Date.now();
    const ms = Number.parseInt(id.slice(4, 15), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });
});
