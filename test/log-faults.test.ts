// The runtime log is best-effort: a full disk, a deleted log directory or a read-only one
// costs log lines (counted, reported once), never an exception, never a hung shutdown, and
// writing (and rotation) resumes by itself once the file can be written again.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { logFileOf, openLog } from "../src/host/log.ts";
import { waitFor } from "./helpers/home.ts";
import { IS_ROOT, fillDisk, mountTmpfs, unmountAll } from "./helpers/tmpfs.ts";

afterAll(unmountAll);

const flushed = (log: Logger) => new Promise<void>((resolve) => log.flush(() => resolve()));

function lines(file: string): { n?: number; msg: string; dropped_lines?: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** Write numbered lines until `check` holds (the log retries a failed file after a pause). */
async function writeUntil(log: Logger, from: number, check: () => boolean): Promise<number> {
  let n = from;
  await waitFor(
    async () => {
      log.info({ n: n++ }, "line");
      await flushed(log);
      return check();
    },
    { what: "the log to write again", timeoutMs: 15_000 },
  );
  return n;
}

describe.skipIf(!IS_ROOT)("runtime log faults", () => {
  it("a full disk drops lines (counted, reported once), never throws, and writing and rotation resume", async () => {
    const mount = mountTmpfs(2);
    const reports: string[] = [];
    const log = openLog(mount, { maxBytes: 8_000, maxFiles: 2 }, (m) => reports.push(m));
    const file = join(mount, "logs", "holon.log");
    log.info({ n: 0 }, "line");
    await flushed(log);
    const filler = join(mount, "filler");
    fillDisk(filler);
    for (let i = 1; i <= 200; i++) log.info({ n: i, pad: "x".repeat(100) }, "line");
    await flushed(log); // bounded: returns although nothing could be written
    const stats = logFileOf(log).stats;
    expect(stats.errors).toBeGreaterThan(0);
    expect(stats.dropped_lines).toBeGreaterThan(0);
    expect(stats.last_error).toMatch(/ENOSPC/);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatch(/cannot write the log .*ENOSPC/);

    rmSync(filler);
    const next = await writeUntil(log, 1_000, () =>
      lines(file).some((l) => l.msg.startsWith("log writes resumed")),
    );
    const resumed = lines(file).find((l) => l.msg.startsWith("log writes resumed"))!;
    expect(resumed.dropped_lines).toBeGreaterThan(0);
    // Rotation still works after the failure.
    for (let i = next; i < next + 200; i++) log.info({ n: i, pad: "y".repeat(100) }, "line");
    await flushed(log);
    expect(existsSync(`${file}.1`)).toBe(true);
    expect(reports).toHaveLength(1); // one report per failure, not per line
    await new Promise<void>((resolve) => logFileOf(log).end(resolve));
  });

  it("a deleted log directory is recreated; a shutdown while the disk is full does not hang", async () => {
    const mount = mountTmpfs(2);
    const reports: string[] = [];
    const log = openLog(mount, { maxBytes: 1_000_000, maxFiles: 2 }, (m) => reports.push(m));
    const file = join(mount, "logs", "holon.log");
    log.info({ n: 0 }, "line");
    await flushed(log);
    rmSync(join(mount, "logs"), { recursive: true });
    await writeUntil(log, 1, () => lines(file).length > 0);
    expect(lines(file).at(-1)!.n).toBeGreaterThan(0);

    fillDisk(join(mount, "filler"));
    for (let i = 0; i < 50; i++) log.info({ pad: "z".repeat(200) }, "line");
    // end() flushes (bounded) and closes: the callback comes although nothing can be written.
    await new Promise<void>((resolve) => logFileOf(log).end(resolve));
    expect(() => log.info("after end")).not.toThrow();
  });

  it("a read-only log directory is reported once and written once it is writable again", async () => {
    const mount = mountTmpfs(2);
    mkdirSync(join(mount, "logs"), { mode: 0o700 });
    execFileSync("mount", ["-o", "remount,ro", mount]);
    const reports: string[] = [];
    const log = openLog(mount, { maxBytes: 1_000_000, maxFiles: 2 }, (m) => reports.push(m));
    for (let i = 0; i < 20; i++) log.info({ n: i }, "line");
    await flushed(log);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatch(/EROFS/);
    expect(logFileOf(log).stats.dropped_lines).toBeGreaterThan(0);
    execFileSync("mount", ["-o", "remount,rw", mount]);
    const file = join(mount, "logs", "holon.log");
    await writeUntil(log, 100, () => lines(file).some((l) => (l.n ?? 0) >= 100));
    expect(reports).toHaveLength(1);
    await new Promise<void>((resolve) => logFileOf(log).end(resolve));
  });
});
