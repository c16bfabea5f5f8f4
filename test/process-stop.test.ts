// stopProcess: SIGTERM to the group, escalation to SIGKILL, nothing of the group left.
import { afterAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { startProcess, stopProcess, waitForExit } from "../src/tasks/process.ts";
import { cleanupDirs, liveMembers, readText, tempDir, waitFor } from "./fixtures/process/util.ts";

afterAll(cleanupDirs);

describe("process stop", () => {
  it("escalates to SIGKILL when the group ignores SIGTERM and leaves no process of the group", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "trap '' TERM; sleep 100 & sleep 100 & echo ready; wait",
      cwd: root,
      dir: join(root, "p"),
    });
    await waitFor(() => readText(h.stdout_path) === "ready\n", { what: "ready" });
    // wrapper, shell and two sleeps
    await waitFor(() => liveMembers(h.pgid).length >= 4, { what: "group members" });
    const res = await stopProcess(h, { graceMs: 200 });
    expect(res).toMatchObject({
      signal_sent: "SIGTERM",
      escalated_to_kill: true,
      exit: { exit_code: null, signal: "SIGKILL" },
      leftover_pids: [],
    });
    expect(liveMembers(h.pgid)).toEqual([]);
    expect(await waitForExit(h, { timeoutMs: 0 })).toMatchObject({ signal: "SIGKILL" });
  });

  it("stops gracefully with SIGTERM, including background children and other groups of the session", async () => {
    const root = tempDir();
    const h = await startProcess({
      // `set -m` puts the background job in its own process group inside the session
      cmd: "set -m; sleep 100 & echo ready; wait",
      cwd: root,
      dir: join(root, "p"),
    });
    await waitFor(() => readText(h.stdout_path) === "ready\n", { what: "ready" });
    const res = await stopProcess(h, { graceMs: 5000 });
    expect(res.escalated_to_kill).toBe(false);
    expect(res.exit).toMatchObject({ exit_code: 143, signal: "SIGTERM" });
    expect(liveMembers(h.pid)).toEqual([]);
  });

  it("kills children left behind after the main command exited", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "trap '' TERM; (trap '' TERM; sleep 100) & sleep 100",
      cwd: root,
      dir: join(root, "p"),
    });
    await waitFor(() => liveMembers(h.pgid).length >= 3, { what: "group members" });
    const res = await stopProcess(h, { graceMs: 100 });
    expect(res.escalated_to_kill).toBe(true);
    expect(liveMembers(h.pgid)).toEqual([]);
  });

  it("stopping a finished command still ends the children it left behind", async () => {
    const root = tempDir();
    const h = await startProcess({ cmd: "sleep 100 & exit 0", cwd: root, dir: join(root, "p") });
    expect(await waitForExit(h, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
    expect(liveMembers(h.pgid).length).toBe(1); // the orphaned sleep
    const res = await stopProcess(h, { graceMs: 2000 });
    expect(res).toMatchObject({
      signal_sent: "SIGTERM",
      exit: { exit_code: 0 },
      leftover_pids: [],
    });
    expect(liveMembers(h.pgid)).toEqual([]);
  });

  it("stopping an exited process sends nothing and reports its status", async () => {
    const root = tempDir();
    const h = await startProcess({ cmd: "exit 2", cwd: root, dir: join(root, "p") });
    await waitForExit(h, { timeoutMs: 10_000 });
    expect(await stopProcess(h)).toMatchObject({
      signal_sent: null,
      escalated_to_kill: false,
      exit: { exit_code: 2 },
    });
  });

  it("stops a PTY process and its terminal session", async () => {
    const root = tempDir();
    const h = await startProcess({
      cmd: "trap '' TERM HUP; echo ready; sleep 100",
      cwd: root,
      dir: join(root, "p"),
      tty: true,
    });
    await waitFor(() => readText(h.output_path).includes("ready"), { what: "ready" });
    const res = await stopProcess(h, { graceMs: 200 });
    expect(res.escalated_to_kill).toBe(true);
    expect(res.exit.signal).toBe("SIGKILL");
    expect(res.leftover_pids).toEqual([]);
    expect(liveMembers(h.pid)).toEqual([]);
    const ptyChild = JSON.parse(readText(join(h.dir, "pty.json"))).child_pid as number;
    expect(liveMembers(ptyChild)).toEqual([]);
  });
});
