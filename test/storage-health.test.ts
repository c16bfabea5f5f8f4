// The store's health (store/health.ts): which errors are storage faults, and how an outage
// starts, counts what it refused and ends. Pure logic on a fake clock; the end-to-end
// behaviour on a real full disk is test/disk-full.test.ts.
import { describe, expect, it } from "vitest";
import { HolonError } from "../src/domain/errors.ts";
import { StorageHealth, classifyStorageError } from "../src/store/health.ts";

const sqlite = (errcode: number, message: string) =>
  Object.assign(new Error(message), { code: "ERR_SQLITE_ERROR", errcode, errstr: message });
const fsError = (code: string) => Object.assign(new Error(`${code}: failed`), { code });

describe("storage health", () => {
  it.each([
    ["SQLITE_FULL", sqlite(13, "database or disk is full"), "full"],
    ["SQLITE_IOERR_WRITE (extended)", sqlite(778, "disk I/O error"), "unavailable"],
    ["SQLITE_READONLY", sqlite(8, "attempt to write a readonly database"), "unavailable"],
    ["SQLITE_CORRUPT", sqlite(11, "database disk image is malformed"), "lost"],
    ["SQLITE_NOTADB", sqlite(26, "file is not a database"), "lost"],
    ["SQLITE_BUSY", sqlite(5, "database is locked"), undefined],
    ["SQLITE_CONSTRAINT", sqlite(19, "UNIQUE constraint failed"), undefined],
    ["ENOSPC", fsError("ENOSPC"), "full"],
    ["EDQUOT", fsError("EDQUOT"), "full"],
    ["ENOENT", fsError("ENOENT"), undefined],
    ["a HolonError storage_full", new HolonError("storage_full", "x", { status: 503 }), "full"],
    ["another HolonError", new HolonError("invalid_request", "x"), undefined],
    ["a plain Error", new Error("boom"), undefined],
  ])("%s is classified %s", (_what, err, expected) => {
    expect(classifyStorageError(err)).toBe(expected);
  });

  it("an outage starts at the first fault, counts refusals, and ends with its record", async () => {
    let now = Date.parse("2026-01-01T00:00:00.000Z");
    const health = new StorageHealth(null, () => new Date(now));
    const err = health.fault("full", "database or disk is full");
    expect(err).toMatchObject({ kind: "storage_full", status: 503 });
    expect(err.details).toEqual({ retry_after_s: 5 });
    now += 1_000;
    health.fault("unavailable", "disk I/O error"); // same outage, newer cause
    health.probe(() => health.fault("full", "still full")); // a probe is not a refusal
    health.noteRefusedRequest("POST /agents/:id/enqueue");
    expect(health.status()).toMatchObject({
      state: "full",
      since: "2026-01-01T00:00:00.000Z",
      refused_writes: 2,
      refused_requests: 1,
    });
    let resumed = false;
    const waiting = health.whenWritable().then(() => (resumed = true));
    await Promise.resolve();
    expect(resumed).toBe(false);
    now += 4_000;
    const outage = health.recovered()!;
    await waiting;
    expect(resumed).toBe(true);
    expect(outage).toEqual({
      state: "full",
      from: "2026-01-01T00:00:00.000Z",
      to: "2026-01-01T00:00:05.000Z",
      duration_ms: 5_000,
      error: "still full",
      refused_writes: 2,
      refused_requests: { "POST /agents/:id/enqueue": 1 },
    });
    expect(health.status()).toMatchObject({ state: "ok", refused_writes: 0, last_outage: outage });
  });

  it("a disk fault the store did not see starts an outage, so a waiter waits for a proven write", async () => {
    const health = new StorageHealth(null, () => new Date());
    let resumed = false;
    const waiting = health.whenWritableAfter(fsError("ENOSPC")).then(() => (resumed = true));
    await Promise.resolve();
    expect(health.state).toBe("full");
    expect(resumed).toBe(false); // not at once: that would be a retry loop on a full disk
    health.recovered();
    await waiting;
    expect(resumed).toBe(true);
  });

  it("a lost store stays lost: no recovery, every refusal says storage_lost", () => {
    const health = new StorageHealth(null, () => new Date());
    health.fault("lost", "the file was truncated to 0 bytes");
    expect(health.recovered()).toBeUndefined();
    expect(health.fault("full", "later")).toMatchObject({ kind: "storage_lost" });
    expect(health.state).toBe("lost");
  });
});
