// Restart-proofness: a process started by a host that is SIGKILLed keeps running, and a new
// host reattaches from the process directory alone.
import { afterAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import {
  reattach,
  stopProcess,
  waitForExit,
  writeInput,
  type ProcessHandle,
  type ProcessSpec,
} from "../src/tasks/process.ts";
import { cleanupDirs, liveMembers, readText, tempDir, waitFor } from "./fixtures/process/util.ts";

afterAll(cleanupDirs);

const START_CHILD = resolve(import.meta.dirname, "fixtures/process/start-child.ts");

/** Start `spec` from a separate Node process (a stand-in host), then SIGKILL that host. */
async function startFromDoomedHost(spec: ProcessSpec): Promise<ProcessHandle> {
  const host = spawn(process.execPath, [START_CHILD, JSON.stringify(spec)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((r) => host.once("exit", r));
  const line = await new Promise<string>((res, rej) => {
    createInterface({ input: host.stdout! }).once("line", res);
    host.once("exit", (code) => rej(new Error(`start-child exited early (${code})`)));
  });
  host.kill("SIGKILL");
  await exited;
  return JSON.parse(line) as ProcessHandle;
}

describe("process restart", () => {
  it("keeps running when its host is SIGKILLed; reattach sees it running, then its status and output", async () => {
    const root = tempDir();
    const gate = join(root, "gate");
    const started = await startFromDoomedHost({
      cmd: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo done`,
      cwd: root,
      dir: join(root, "p"),
    });
    const r = reattach(started.dir);
    expect(r.state).toBe("running");
    if (r.state !== "running") return;
    expect(r.handle.pid).toBe(started.pid);
    expect(await waitForExit(r.handle, { timeoutMs: 30 })).toBe("timeout");
    writeFileSync(gate, "");
    expect(await waitForExit(r.handle, { timeoutMs: 10_000 })).toMatchObject({
      exit_code: 0,
      signal: null,
    });
    expect(readFileSync(r.handle.output_path, "utf8")).toBe("done\n");
    // a later reattach (another restart) reports the recorded status
    const again = reattach(started.dir);
    expect(again).toMatchObject({ state: "exited", status: { exit_code: 0 } });
  });

  it("accepts input again after the host restarts (the FIFO is reopened per write)", async () => {
    const root = tempDir();
    const started = await startFromDoomedHost({
      cmd: 'read a; echo "got $a"; read b; echo "got $b"',
      cwd: root,
      dir: join(root, "p"),
      acceptsInput: true,
    });
    const r = reattach(started.dir);
    expect(r.state).toBe("running");
    if (r.state !== "running") return;
    expect(await writeInput(r.handle, "one\n")).toMatchObject({ accepted: true, bytes_written: 4 });
    await waitFor(() => readText(r.handle.stdout_path) === "got one\n", { what: "first reply" });
    // the writer closed between writes: the command must not have seen EOF
    expect(await writeInput(r.handle, "two\n")).toMatchObject({ accepted: true });
    expect(await waitForExit(r.handle, { timeoutMs: 10_000 })).toMatchObject({ exit_code: 0 });
    expect(readText(r.handle.stdout_path)).toBe("got one\ngot two\n");
    expect(await writeInput(r.handle, "three\n")).toMatchObject({
      accepted: false,
      reason: "process_exited",
    });
  });

  it("SIGKILL of the host and the whole process group: reattach says lost with a reason, never running", async () => {
    const root = tempDir();
    const started = await startFromDoomedHost({ cmd: "sleep 30", cwd: root, dir: join(root, "p") });
    process.kill(-started.pgid, "SIGKILL");
    await waitFor(() => liveMembers(started.pgid).length === 0, { what: "group to die" });
    const r = reattach(started.dir);
    expect(r.state).toBe("lost");
    if (r.state === "lost") expect(r.reason).toMatch(/no exit status was recorded/);
  });

  it("a wrapper killed alone leaves a lost process whose leftovers stopProcess can end", async () => {
    const root = tempDir();
    const started = await startFromDoomedHost({ cmd: "sleep 30", cwd: root, dir: join(root, "p") });
    await waitFor(() => liveMembers(started.pgid).length === 2, { what: "wrapper and sleep" });
    process.kill(started.pid, "SIGKILL"); // the wrapper only
    const r = await waitFor(
      () => {
        const x = reattach(started.dir);
        return x.state === "lost" ? x : null;
      },
      { what: "lost" },
    );
    expect(r.leftover_pids.length).toBe(1);
    expect(r.reason).toMatch(/still run/);
    const stop = await stopProcess(r.handle!, { graceMs: 2000 });
    expect(stop).toMatchObject({ signal_sent: "SIGTERM", leftover_pids: [] });
    expect(liveMembers(started.pgid)).toEqual([]);
  });

  it("a reused pid is not mistaken for the process (start time differs)", async () => {
    const root = tempDir();
    const started = await startFromDoomedHost({ cmd: "sleep 30", cwd: root, dir: join(root, "p") });
    const specPath = join(started.dir, "spec.json");
    const rec = JSON.parse(readFileSync(specPath, "utf8"));
    // Pretend the recorded process started at another time: the live pid is then someone else's.
    writeFileSync(specPath, JSON.stringify({ ...rec, start_ticks: rec.start_ticks + 1 }));
    expect(reattach(started.dir).state).toBe("lost");
    writeFileSync(specPath, JSON.stringify(rec));
    const r = reattach(started.dir);
    expect(r.state).toBe("running");
    if (r.state === "running") {
      const stop = await stopProcess(r.handle, { graceMs: 2000 });
      expect(stop).toMatchObject({
        escalated_to_kill: false,
        exit: { exit_code: 143, signal: "SIGTERM" },
      });
      expect(liveMembers(started.pgid)).toEqual([]);
    }
  });

  it("a missing directory record is lost, not running", () => {
    const root = tempDir();
    expect(reattach(join(root, "nothing"))).toMatchObject({ state: "lost" });
  });

  it("a PTY process survives its host's SIGKILL and takes input after reattach", async () => {
    const root = tempDir();
    const started = await startFromDoomedHost({
      cmd: 'read -r a; echo "pty got $a"; exit 6',
      cwd: root,
      dir: join(root, "p"),
      tty: true,
    });
    const r = reattach(started.dir);
    expect(r.state).toBe("running");
    if (r.state !== "running") return;
    expect(await writeInput(r.handle, "hello\n")).toMatchObject({ accepted: true });
    expect(await waitForExit(r.handle, { timeoutMs: 10_000 })).toMatchObject({
      exit_code: 6,
      signal: null,
    });
    expect(readText(r.handle.output_path)).toContain("pty got hello");
  });
});
