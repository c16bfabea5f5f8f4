// The runtime log rotates by size and keeps a bounded number of files, without losing or
// splitting the lines it keeps.
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { openLog } from "../src/host/log.ts";
import { logLimits } from "../src/host/log-rotation.ts";
import { createFollower } from "../src/cli/daemon.ts";
import { spawn } from "node:child_process";
import { cleanupHomes, HOLON_BIN, runCli, tempHome, waitFor } from "./helpers/home.ts";

afterAll(cleanupHomes);

describe("runtime log rotation", () => {
  it("rotates at the size limit, keeps max_files old files, and every kept line is whole and in order", async () => {
    const home = tempHome();
    const log = openLog(home, { maxBytes: 4_000, maxFiles: 2 });
    for (let i = 0; i < 400; i++) log.info({ n: i, pad: "x".repeat(60) }, "line");
    await drained(log);
    const file = join(home, "logs", "holon.log");
    expect(existsSync(`${file}.1`)).toBe(true);
    expect(existsSync(`${file}.2`)).toBe(true);
    expect(existsSync(`${file}.3`)).toBe(false);
    const numbers: number[] = [];
    for (const f of [`${file}.2`, `${file}.1`, file]) {
      // The limit, overshot by at most one write of buffered lines (16 KB at most).
      expect(statSync(f).size).toBeLessThan(4_000 + 16 * 1024 + 200);
      expect(statSync(f).mode & 0o777).toBe(0o600);
      for (const line of readFileSync(f, "utf8").split("\n").filter(Boolean)) {
        numbers.push((JSON.parse(line) as { n: number }).n);
      }
    }
    // The newest lines survive, consecutive up to the last one written.
    expect(numbers.at(-1)).toBe(399);
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
  });

  it("holon daemon logs -f follows the log across rotations without losing a line", async () => {
    const home = tempHome();
    const log = openLog(home, { maxBytes: 4_000, maxFiles: 100 });
    const flush = () => drained(log);
    log.info({ n: -1 }, "ready");
    await flush();
    const follower = spawn(
      process.execPath,
      [HOLON_BIN, "daemon", "logs", "-f", "-n", "0", "--json"],
      {
        env: { ...process.env, HOLON_HOME: home },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    follower.stdout.on("data", (d) => (out += d));
    const numbers = () =>
      out
        .split("\n")
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { n: number }).n);
    try {
      // A line written after start proves the follower is reading.
      await waitFor(
        async () => {
          log.info({ n: 0 }, "line");
          await flush();
          return numbers().includes(0);
        },
        { what: "the follower reading", timeoutMs: 15_000 },
      );
      const first = numbers().at(-1)!; // it may have seen n=0 more than once
      expect(first).toBe(0);
      // Bursts that rotate the file several times between two reads of the follower.
      for (let i = 1; i <= 400; i++) {
        log.info({ n: i, pad: "x".repeat(60) }, "line");
        if (i % 100 === 0) await flush();
      }
      await waitFor(() => numbers().at(-1) === 400, { what: "the last line", timeoutMs: 15_000 });
      const seen = numbers().filter((n) => n > 0);
      expect(existsSync(join(home, "logs", "holon.log.2"))).toBe(true); // rotated more than once
      expect(seen).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    } finally {
      follower.kill("SIGTERM");
    }
  }, 60_000);

  it("takes its limits from retention.logs in config.json", async () => {
    const home = tempHome();
    expect(logLimits(home)).toEqual({ maxBytes: 10 * 1024 * 1024, maxFiles: 5 });
    const env = { HOLON_HOME: home };
    expect((await runCli(["config", "set", "retention.logs.max_file_mb", "2"], { env })).code).toBe(
      0,
    );
    expect((await runCli(["config", "set", "retention.logs.max_files", "3"], { env })).code).toBe(
      0,
    );
    expect(logLimits(home)).toEqual({ maxBytes: 2 * 1024 * 1024, maxFiles: 3 });
    const bad = await runCli(["config", "set", "retention.events.max_age_days", "-1"], { env });
    expect(bad.code).not.toBe(0);
  });
});

// The follower of `holon daemon logs -f`, driven step by step: the writer's file operations
// (appending a line; each rename of a rotation, as the log's rotation does them, oldest file
// first) run one or a few at a time between the follower's own file operations, at every
// offset, so every interleaving of a rotation with a read is taken deterministically.
describe("the log follower across rotations, every interleaving", () => {
  const LINES = 40;
  const PER_FILE = 3;
  const MAX_FILES = 30;

  /** The writer's operations, in order: lines 1..LINES, rotating every PER_FILE lines. */
  function writerOps(file: string): (() => void)[] {
    const ops: (() => void)[] = [];
    for (let n = 1; n <= LINES; n++) {
      ops.push(() => appendFileSync(file, JSON.stringify({ n }) + "\n"));
      if (n % PER_FILE !== 0) continue;
      ops.push(() => rmSync(`${file}.${MAX_FILES}`, { force: true }));
      for (let i = MAX_FILES - 1; i >= 1; i--) {
        ops.push(() => {
          if (existsSync(`${file}.${i}`)) renameSync(`${file}.${i}`, `${file}.${i + 1}`);
        });
      }
      ops.push(() => renameSync(file, `${file}.1`));
      ops.push(() => appendFileSync(file, "", { mode: 0o600 }));
    }
    return ops;
  }

  function followAll(writerStepsPerFollowerStep: number, offset: number): number[] {
    const dir = join(tempHome(), "logs");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "holon.log");
    appendFileSync(file, JSON.stringify({ n: 0 }) + "\n");
    const ops = writerOps(file);
    let next = 0;
    let steps = 0;
    let started = false; // it starts at the end of the file: lines from then on are new
    const seen: number[] = [];
    const follower = createFollower(
      file,
      (line) => seen.push((JSON.parse(line) as { n: number }).n),
      () => {
        if (!started || ++steps < offset) return;
        for (let i = 0; i < writerStepsPerFollowerStep && next < ops.length; i++) ops[next++]!();
      },
    );
    started = true;
    try {
      // Drains until the writer is done, then once more for what it wrote last.
      for (let guard = 0; next < ops.length; guard++) {
        expect(guard, "the writer never finished").toBeLessThan(100_000);
        follower.drain();
      }
      follower.drain();
    } finally {
      follower.close();
    }
    return seen;
  }

  it("starts with the last lines and goes on from where they ended: a line written as it starts is read once", () => {
    const dir = join(tempHome(), "logs");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "holon.log");
    let n = 0;
    const write = () => appendFileSync(file, JSON.stringify({ n: ++n }) + "\n");
    for (let i = 0; i < 5; i++) write();
    const seen: number[] = [];
    // The writer appends a line before each of the follower's file calls, its start included.
    const follower = createFollower(
      file,
      (line) => seen.push((JSON.parse(line) as { n: number }).n),
      write,
      2,
    );
    const started = n;
    try {
      for (let i = 0; i < 5; i++) follower.drain();
      write();
      follower.drain();
    } finally {
      follower.close();
    }
    expect(seen.at(-1)).toBe(n);
    expect(seen).toEqual(seen.map((_, i) => seen[0]! + i)); // each once, in order
    expect(seen[0]).toBeGreaterThanOrEqual(4); // the last two before it started, on
    expect(seen[0]).toBeLessThanOrEqual(started - 1);
  });

  it("holon daemon logs -n 0 prints no line, -n 2 the last two", async () => {
    const home = tempHome();
    const log = openLog(home, { maxBytes: 1_000_000, maxFiles: 2 });
    for (let i = 1; i <= 3; i++) log.info({ n: i }, "line");
    await drained(log);
    const tail = async (n: string) => {
      const r = await runCli(["daemon", "logs", "-n", n, "--json"], { env: { HOLON_HOME: home } });
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { lines: string[] }).lines.map(
        (l) => (JSON.parse(l) as { n: number }).n,
      );
    };
    expect(await tail("0")).toEqual([]);
    expect(await tail("2")).toEqual([2, 3]);
  });

  it("reads every line once and in order, whatever the follower was doing when the log rotated", () => {
    const all = Array.from({ length: LINES }, (_, i) => i + 1);
    for (const perStep of [1, 2, 3, 7, 40]) {
      for (let offset = 0; offset < 40; offset++) {
        expect(
          followAll(perStep, offset),
          `${perStep} writer steps per read step, from ${offset}`,
        ).toEqual(all);
      }
    }
  });
});

/** Until the log's file has written everything it buffered (its flush callback). */
function drained(log: Logger): Promise<void> {
  return new Promise((resolve) => log.flush(() => resolve()));
}
