// Process layer: the fast path, timeouts, output layouts, spawn errors.
import { afterAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ProcessStartError,
  readProcessRecord,
  startProcess,
  waitForExit,
} from "../src/tasks/process.ts";
import { readProcStat } from "../src/tasks/process-proc.ts";
import { cleanupDirs, readText, tempDir, waitFor } from "./fixtures/process/util.ts";

afterAll(cleanupDirs);

describe("process fast path", () => {
  it("runs a command to completion with separate stdout and stderr files", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "echo hi; echo err >&2; exit 3",
      cwd: root,
      dir: join(root, "p"),
    });
    expect(h.pid).toBeGreaterThan(1);
    expect(h.pgid).toBe(h.pid); // own session and process group
    const status = await waitForExit(h, { timeoutMs: 10_000 });
    expect(status).toMatchObject({ exit_code: 3, signal: null });
    expect(readFileSync(h.stdout_path, "utf8")).toBe("hi\n");
    expect(readFileSync(h.stderr_path!, "utf8")).toBe("err\n");
    expect(h.output_path).toBe(h.stdout_path);
    expect(readFileSync(join(h.dir, "exit"), "utf8")).toBe("3\n");
    const rec = readProcessRecord(h.dir)!;
    expect(rec).toMatchObject({
      pid: h.pid,
      cmd: "echo hi; echo err >&2; exit 3",
      cwd: root,
      tty: false,
    });
    expect(rec.shell_args).toEqual(["-c", "echo hi; echo err >&2; exit 3"]);
    expect(rec.start_ticks).toBeGreaterThan(0);
  });

  it("runs in the requested cwd with the given environment, shell and login flag", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: 'echo "$PWD $HOLON_X $0"',
      cwd: root,
      dir: join(root, "p"),
      env: { PATH: process.env["PATH"]!, HOLON_X: "x1" },
      shell: "/bin/sh",
      login: true,
    });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
    expect(readFileSync(h.stdout_path, "utf8")).toBe(`${root} x1 /bin/sh\n`);
    expect(readProcessRecord(h.dir)!.shell_args[0]).toBe("-lc");
    // the environment may carry secrets: it is not persisted
    expect(readFileSync(join(h.dir, "spec.json"), "utf8")).not.toContain("x1");
  });

  it("merged mode interleaves both streams in one file in write order", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "echo a; echo b >&2; echo c",
      cwd: root,
      dir: join(root, "p"),
      output: "merged",
    });
    await waitForExit(h, { timeoutMs: 10_000 });
    expect(h.stderr_path).toBeNull();
    expect(h.output_path).toBe(h.stdout_path);
    expect(readFileSync(h.output_path, "utf8")).toBe("a\nb\nc\n");
  });

  it("reports a signal-terminated command (shell status 128+n) with the inferred signal", async () => {
    const root = tempDir();
    const h = await startProcess({ cmd: "kill -TERM $$", cwd: root, dir: join(root, "p") });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({
      exit_code: 143,
      signal: "SIGTERM",
    });
  });

  it("returns 'timeout' while the process keeps running; a later wait gets the real status", async () => {
    const root = tempDir();
    const gate = join(root, "gate");
    const h = await startProcess({
      cmd: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo done; exit 4`,
      cwd: root,
      dir: join(root, "p"),
    });
    expect(await waitForExit(h, { timeoutMs: 50 })).toBe("timeout");
    const st = readProcStat(h.pid);
    expect(st?.state).not.toBe("Z");
    expect(readText(h.stdout_path)).toBe("");
    writeFileSync(gate, "");
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 4 });
    expect(readText(h.stdout_path)).toBe("done\n");
    // waiting again returns the same status at once
    expect(await waitForExit(h, { timeoutMs: 0 })).toMatchObject({ exit_code: 4 });
  });

  it("aborting a wait rejects without touching the process", async () => {
    const root = tempDir();
    const h = await startProcess({ cmd: "sleep 30", cwd: root, dir: join(root, "p") });
    const ac = new AbortController();
    const p = waitForExit(h, { signal: ac.signal });
    ac.abort(new Error("stop waiting"));
    await expect(p).rejects.toThrow("stop waiting");
    expect(readProcStat(h.pid)?.state).not.toBe("Z");
    process.kill(-h.pgid, "SIGKILL");
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({
      exit_code: null,
      signal: "SIGKILL",
    });
    // the host recorded what it saw, since the wrapper could not
    await waitFor(() => existsSync(join(h.dir, "exit")));
    expect(JSON.parse(readFileSync(join(h.dir, "exit"), "utf8"))).toMatchObject({
      signal: "SIGKILL",
      recorded_by: "host",
    });
  });

  it("a command that cannot start reports the shell's status; a bad cwd or reused dir throws", async () => {
    const root = tempDir();
    const h = await startProcess({ cmd: "no-such-command-xyz", cwd: root, dir: join(root, "p") });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 127 });
    expect(readText(h.stderr_path!)).toMatch(/not found/);
    await expect(
      startProcess({ cmd: "true", cwd: join(root, "missing"), dir: join(root, "q") }),
    ).rejects.toThrow(ProcessStartError);
    await expect(startProcess({ cmd: "true", cwd: root, dir: join(root, "p") })).rejects.toThrow(
      /already in use/,
    );
  });
});
