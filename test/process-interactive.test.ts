// Interactive processes: stdin through the FIFO and a PTY, driven by writeInput / closeInput.
import { afterAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { closeInput, startProcess, waitForExit, writeInput } from "../src/tasks/process.ts";
import { cleanupDirs, readText, tempDir, waitFor } from "./fixtures/process/util.ts";

afterAll(cleanupDirs);

const env = { ...(process.env as Record<string, string>), PYTHONUNBUFFERED: "1" };

describe("interactive over stdin", () => {
  it("drives bash through its stdin and ends it with EOF", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "bash --norc --noprofile",
      cwd: root,
      dir: join(root, "p"),
      acceptsInput: true,
    });
    expect(await writeInput(h, "echo $((6*7))\n")).toEqual({ accepted: true, bytes_written: 14 });
    await waitFor(() => readText(h.stdout_path) === "42\n", { what: "42" });
    expect(await writeInput(h, "echo oops >&2\n")).toMatchObject({ accepted: true });
    await waitFor(() => readText(h.stderr_path!) === "oops\n", { what: "stderr" });
    expect(await closeInput(h)).toMatchObject({ accepted: true });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
    expect(await writeInput(h, "echo late\n")).toEqual({
      accepted: false,
      bytes_written: 0,
      reason: "process_exited",
    });
  });

  it("drives python3 -i through its stdin", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "python3 -i -q",
      cwd: root,
      dir: join(root, "p"),
      acceptsInput: true,
      env,
    });
    expect(await writeInput(h, "print(6 * 7)\n")).toMatchObject({ accepted: true });
    await waitFor(() => readText(h.stdout_path).includes("42\n"), { what: "42" });
    expect(await writeInput(h, "import sys; sys.exit(3)\n")).toMatchObject({ accepted: true });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 3 });
  });

  it("refuses input to a process started without it, and after input was closed", async () => {
    const root = tempDir();
    const plain = await startProcess({ cmd: "sleep 0.01", cwd: root, dir: join(root, "a") });
    expect(await writeInput(plain, "x")).toMatchObject({
      accepted: false,
      reason: "input_not_enabled",
    });
    const cat = await startProcess({
      cmd: "cat; sleep 100",
      cwd: root,
      dir: join(root, "b"),
      acceptsInput: true,
    });
    expect(await writeInput(cat, "abc")).toMatchObject({ accepted: true });
    expect(await closeInput(cat)).toMatchObject({ accepted: true });
    expect(await writeInput(cat, "def")).toMatchObject({ accepted: false, reason: "input_closed" });
    await waitFor(() => readText(cat.stdout_path) === "abc", { what: "cat output" });
    process.kill(-cat.pgid, "SIGKILL");
    await waitForExit(plain, { timeoutMs: 10_000 });
    await waitForExit(cat, { timeoutMs: 10_000 });
  });

  it("works with an environment without PATH", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: 'read a; echo "got $a"',
      cwd: root,
      dir: join(root, "p"),
      acceptsInput: true,
      shell: "/bin/sh",
      env: {},
    });
    expect(await writeInput(h, "x\n")).toMatchObject({ accepted: true });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
    expect(readText(h.stdout_path)).toBe("got x\n");
  });

  it("delivers input larger than the pipe buffer", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "wc -c",
      cwd: root,
      dir: join(root, "p"),
      acceptsInput: true,
    });
    const big = "x".repeat(300_000);
    expect(await writeInput(h, big)).toEqual({ accepted: true, bytes_written: 300_000 });
    expect(await closeInput(h)).toMatchObject({ accepted: true });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
    expect(readText(h.stdout_path).trim()).toBe("300000");
  });

  it("ends the command when input is closed right after the start, before the wrapper is ready", async () => {
    // Closing at once races the wrapper: its pid file for the input holder may not be written,
    // the holder may still be the wrapper's fork (not yet `sleep`), and the command may not
    // have opened its stdin. Each start is closed at once, several times over; every one must
    // see EOF.
    const root = tempDir();
    const hs = [];
    for (let i = 0; i < 20; i++) {
      const h = await startProcess({
        cmd: "cat",
        cwd: root,
        dir: join(root, `p${i}`),
        acceptsInput: true,
      });
      expect(await closeInput(h)).toMatchObject({ accepted: true });
      hs.push(h);
    }
    const exits = await Promise.all(hs.map((h) => waitForExit(h, { timeoutMs: 20_000 })));
    expect(exits.map((e) => (e === "timeout" ? e : e.exit_code))).toEqual(hs.map(() => 0));
  });
});

describe("interactive over a PTY", () => {
  it("drives bash in a terminal; output is one transcript", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "bash --norc --noprofile",
      cwd: root,
      dir: join(root, "p"),
      tty: true,
    });
    expect(h.tty).toBe(true);
    expect(h.stderr_path).toBeNull();
    // the supervisor's launch file (it carries the environment) is gone once it started
    await waitFor(() => existsSync(join(h.dir, "pty.json")), { what: "pty.json" });
    expect(existsSync(join(h.dir, "launch.json"))).toBe(false);
    expect(await writeInput(h, "test -t 0 && echo is-a-tty; echo $((6*7))\n")).toMatchObject({
      accepted: true,
    });
    await waitFor(() => /is-a-tty\r\n42\r\n/.test(readText(h.output_path)), {
      what: "42 in transcript",
    });
    expect(await writeInput(h, "exit 5\n")).toMatchObject({ accepted: true });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({
      exit_code: 5,
      signal: null,
    });
    expect(await writeInput(h, "echo late\n")).toMatchObject({
      accepted: false,
      reason: "process_exited",
    });
  });

  it("drives python3 -i in a terminal and ends it with Ctrl-D", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "python3 -i -q",
      cwd: root,
      dir: join(root, "p"),
      tty: true,
      env,
    });
    expect(await writeInput(h, "print(6 * 7)\n")).toMatchObject({ accepted: true });
    await waitFor(() => /\r\n42\r\n/.test(readText(h.output_path)), { what: "42 in transcript" });
    expect(await closeInput(h)).toMatchObject({ accepted: true });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
  });
});
