// Spare wrappers from the spawn helper: commands started on them behave exactly like cold
// starts, and losing the helper loses no command's status.
import { afterAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  discardProcessDir,
  readProcessRecord,
  startProcess,
  stopProcess,
  waitForExit,
  type ProcessHandle,
} from "../src/tasks/process.ts";
import { isSameLiveProcess, readProcStat } from "../src/tasks/process-proc.ts";
import { WRAPPER_SCRIPT } from "../src/tasks/process-wrapper.ts";
import { cleanupDirs, tempDir, waitFor } from "./fixtures/process/util.ts";
import { cleanupHomes, spawnServe, tempHome } from "./helpers/home.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

afterAll(cleanupDirs);
afterAll(cleanupHomes);

/** Start commands until one runs on a spare (its wrapper's parent is the helper, not us). */
async function startOnSpare(
  root: string,
  cmd: string,
  cwd = root,
  prefix = "p",
): Promise<{ handle: ProcessHandle; helperPid: number; startTicks: number }> {
  for (let i = 0; i < 100; i++) {
    const handle = await startProcess({ cmd, cwd, dir: join(root, `${prefix}${i}`) });
    const stat = readProcStat(handle.pid);
    // A spare of a helper that was just killed (the previous test does that) may be handed out
    // before this process has seen the helper's death: its command never starts and its status
    // is honestly "lost". Only a wrapper whose parent is a live helper counts here.
    if (stat !== null && stat.ppid !== process.pid && isLiveHelper(stat.ppid)) {
      return { handle, helperPid: stat.ppid, startTicks: stat.start_ticks };
    }
    await stopProcess(handle, { graceMs: 1000 });
    // The helper starts off the caller's path: wait until it has a spare before trying again,
    // or until it is gone (let go when idle: the next start brings one back). The bound
    // detects a stall; it is no speed assertion.
    await waitFor(() => helperReadyOrGone(), {
      what: "the spawn helper to have a spare",
      timeoutMs: 20_000,
    });
  }
  throw new Error("no command ever ran on a spare wrapper");
}

/** Whether `pid` is a spawn helper that is still running (not a zombie awaiting its reaper). */
function isLiveHelper(pid: number): boolean {
  const st = readProcStat(pid);
  if (st === null || st.state === "Z") return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("spawner-helper");
  } catch {
    return false;
  }
}

/** Live, non-zombie processes whose parent is `ppid`. */
function liveChildrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const st = readProcStat(Number(name));
    if (st && st.ppid === ppid && st.state !== "Z") out.push(st.pid);
  }
  return out;
}

/**
 * True when no spawn helper of ours is running, or one is and has a wrapper without a command
 * yet (a spare, most likely).
 */
function helperReadyOrGone(): boolean {
  const helpers = liveChildrenOf(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("spawner-helper");
    } catch {
      return false;
    }
  });
  if (helpers.length === 0) return true;
  return helpers.some((h) => liveChildrenOf(h).some((w) => liveChildrenOf(w).length === 0));
}

describe("spare wrappers", () => {
  it("HOLON_SPAWN_HELPER=0 starts every command cold, as this process's own child", async () => {
    const root = tempDir();
    await startOnSpare(root, "true", root, "warm"); // a helper with spares exists now
    process.env["HOLON_SPAWN_HELPER"] = "0";
    try {
      for (let i = 0; i < 3; i++) {
        const handle = await startProcess({
          cmd: "echo cold",
          cwd: root,
          dir: join(root, `cold${i}`),
        });
        expect(readProcStat(handle.pid)?.ppid).toBe(process.pid);
        expect(await waitForExit(handle, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
        expect(readFileSync(handle.stdout_path, "utf8")).toBe("cold\n");
      }
    } finally {
      delete process.env["HOLON_SPAWN_HELPER"];
    }
  });

  it("run commands with the same cwd, environment, output and status as a cold start", async () => {
    const root = tempDir();
    const cwd = join(root, "it's a dir");
    mkdirSync(cwd);
    // Quotes, a newline, `$`, backslashes: the parameters must reach the shell byte for byte.
    const cmd = `printf '%s|' "it's" 'a$b' "c\\\\d" "$PWD" "$HOME"
echo; echo oops >&2; exit 7`;
    const { handle, startTicks } = await startOnSpare(root, cmd, cwd);
    expect(await waitForExit(handle, { timeoutMs: 10_000 })).toMatchObject({
      exit_code: 7,
      signal: null,
    });
    expect(readFileSync(handle.stdout_path, "utf8")).toBe(
      `it's|a$b|c\\d|${cwd}|${process.env["HOME"]}|\n`,
    );
    expect(readFileSync(handle.stderr_path!, "utf8")).toBe("oops\n");
    expect(readFileSync(join(handle.dir, "exit"), "utf8")).toBe("7\n");
    const rec = readProcessRecord(handle.dir)!;
    expect(rec).toMatchObject({ pid: handle.pid, pgid: handle.pid, sid: handle.pid, cmd, cwd });
    expect(rec.start_ticks).toBe(startTicks);
  });

  it("many commands in a row all get their own result", async () => {
    const root = tempDir();
    await startOnSpare(root, "true");
    const results: string[] = [];
    for (let i = 0; i < 30; i++) {
      const h = await startProcess({
        cmd: `echo ${i}; exit ${i % 5}`,
        cwd: root,
        dir: join(root, `q${i}`),
      });
      const st = await waitForExit(h, { timeoutMs: 10_000 });
      results.push(
        `${readFileSync(h.stdout_path, "utf8").trim()}:${(st as { exit_code: number }).exit_code}`,
      );
    }
    expect(results).toEqual(Array.from({ length: 30 }, (_, i) => `${i}:${i % 5}`));
  });

  it("a command keeps its status when the helper dies under it", async () => {
    const root = tempDir();
    const { handle, helperPid } = await startOnSpare(root, "echo started; sleep 0.4; exit 5");
    await waitFor(() => readFileSync(handle.stdout_path, "utf8").includes("started"));
    process.kill(helperPid, "SIGKILL");
    expect(await waitForExit(handle, { timeoutMs: 10_000 })).toMatchObject({
      exit_code: 5,
      signal: null,
    });
    // The next commands start cold, then on a new helper's spares.
    const next = await startOnSpare(root, "exit 0", root, "next");
    expect(next.helperPid).not.toBe(helperPid);
    expect(await waitForExit(next.handle, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
  });

  it("a helper dying before it hands a command over never passes for success", async () => {
    const root = tempDir();
    const { handle, helperPid } = await startOnSpare(root, "exit 3");
    process.kill(helperPid, "SIGKILL"); // races the handover on purpose
    const status = await waitForExit(handle, { timeoutMs: 10_000 });
    if (status === "timeout") throw new Error("timed out");
    if (status.exit_code === null) expect(status.lost_reason).toMatch(/spawn helper exited/);
    else expect(status.exit_code).toBe(3);
  });

  it("stopping a command on a spare ends it and reports the signal", async () => {
    const root = tempDir();
    const { handle } = await startOnSpare(root, "sleep 30");
    const res = await stopProcess(handle, { graceMs: 2000 });
    expect(res.signal_sent).toBe("SIGTERM");
    // Stopped right after the start, possibly before the spare had its directory: the status
    // is the signal's, never a success.
    expect(res.exit.signal).toMatch(/^SIG(TERM|KILL)$/);
    expect(res.exit.exit_code).not.toBe(0);
    expect(res.leftover_pids).toEqual([]);
    expect(isSameLiveProcess(handle.pid, readProcessRecord(handle.dir)!.start_ticks)).toBe(false);
  });

  it("a spare signalled while it waits, whose stdin then ends, exits instead of spinning", async () => {
    const spare = spawn("/bin/sh", ["-c", WRAPPER_SCRIPT, "holon-wrap"], {
      stdio: ["pipe", "ignore", "ignore"],
    });
    const exited = new Promise<number | null>((res) => spare.once("exit", (code) => res(code)));
    // Asleep means blocked in `read`: its traps are set by then.
    await waitFor(() => readProcStat(spare.pid!)?.state === "S", { what: "the spare to wait" });
    try {
      spare.kill("SIGTERM");
      spare.stdin!.end(); // its helper died before handing it a directory
      expect(await exited).toBe(0);
    } finally {
      spare.kill("SIGKILL"); // a spinning one would outlive the test
    }
  });

  it("an idle helper is let go with its spares, and the next command brings one back", async () => {
    const root = tempDir();
    process.env["HOLON_SPAWN_HELPER_IDLE_MS"] = "300";
    try {
      const first = await startOnSpare(root, "true", root, "idle-a");
      expect(await waitForExit(first.handle, { timeoutMs: 10_000 })).toMatchObject({
        exit_code: 0,
      });
      await waitFor(() => !existsSync(`/proc/${first.helperPid}`), {
        what: "the idle helper to exit",
        timeoutMs: 10_000,
      });
      const next = await startOnSpare(root, "echo back", root, "idle-b");
      expect(next.helperPid).not.toBe(first.helperPid);
      expect(await waitForExit(next.handle, { timeoutMs: 10_000 })).toMatchObject({
        exit_code: 0,
      });
    } finally {
      delete process.env["HOLON_SPAWN_HELPER_IDLE_MS"];
    }
  });

  it("discardProcessDir removes a finished process's directory", async () => {
    const root = tempDir();
    const h = await startProcess({ cmd: "echo x", cwd: root, dir: join(root, "gone") });
    await waitForExit(h, { timeoutMs: 10_000 });
    discardProcessDir(h.dir);
    await waitFor(() => !existsSync(h.dir), { what: "the directory to go" });
  });
});

describe("the spawn helper of a daemon", () => {
  const childrenOf = liveChildrenOf;

  it.each(["SIGTERM", "SIGKILL"] as const)(
    "starts with `holon serve` and leaves nothing behind after %s",
    async (signal) => {
      const home = tempHome();
      const serve = await spawnServe(home);
      const helperPid = await waitFor(() => childrenOf(serve.proc.pid!)[0], {
        what: "the spawn helper",
      });
      const spares = await waitFor(
        () => {
          const s = childrenOf(helperPid);
          return s.length === 2 ? s : undefined;
        },
        { what: "two spare wrappers" },
      );
      serve.proc.kill(signal);
      await waitFor(
        () =>
          [helperPid, ...spares].every(
            (pid) => !readProcStat(pid) || readProcStat(pid)!.state === "Z",
          ),
        {
          what: "the helper and its spares to exit",
        },
      );
    },
    90_000, // a stall bound: a cold `holon serve` is slow to listen on a loaded machine
  );
});
