// Output is bounded on disk: a command writing far past the cap keeps running, its output
// file keeps the start and the latest output with one marker between, and the tool result,
// the task result and TaskStatus say how many bytes were dropped.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";
import { capFile, droppedBytes, markerLine } from "../src/tasks/output-cap.ts";
import { BUILTIN_COMMAND_POLICY } from "../src/tasks/command-policy.ts";
import {
  closeInput,
  outputDroppedBytes,
  peekExit,
  startProcess,
  waitForExit,
} from "../src/tasks/process.ts";

const fake = useFakeProvider();

describe("cutting a file", () => {
  it("keeps the head and the tail with one marker, and counts across cuts", () => {
    const dir = tempHome();
    const file = join(dir, "out.log");
    const cap = 8192;
    writeFileSync(file, "H".repeat(4096) + "m".repeat(20_000) + "T".repeat(5000));
    const first = capFile(file, cap, 0);
    let text = readFileSync(file, "latin1");
    expect(text.length).toBeLessThanOrEqual(cap);
    expect(text.startsWith("H".repeat(4096))).toBe(true);
    expect(text.endsWith("T".repeat(3000))).toBe(true);
    expect(text).toContain(markerLine(first, cap));
    expect(first + text.length - markerLine(first, cap).length).toBe(29_096);
    // More output arrives and is cut again: one marker, with the running total.
    writeFileSync(file, "N".repeat(10_000), { flag: "a" });
    const second = capFile(file, cap, first);
    text = readFileSync(file, "latin1");
    expect(text.length).toBeLessThanOrEqual(cap);
    expect(text.split("holon:").length).toBe(2);
    expect(text).toContain(markerLine(first + second, cap));
    expect(text.endsWith("N".repeat(3000))).toBe(true);
    expect(capFile(file, cap, first + second)).toBe(0);
  });
});

describe("a command writing without end", () => {
  it("is cut back under the cap while it keeps running, and reports what was dropped", async () => {
    const cap = 64 * 1024;
    const dir = tempHome();
    const handle = await startProcess({
      policy: { ...BUILTIN_COMMAND_POLICY, outputCap: () => cap },
      cmd: "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo LAST-BEFORE-WAIT; read go; echo after-$go",
      cwd: dir,
      dir: join(dir, "proc"),
      output: "merged",
      acceptsInput: true,
    });
    // Cut back under the cap, and the cutter idle (its count unchanged since the last look):
    // a line written while a cut is still under way may be lost, by design.
    let lastDropped = -1;
    await waitFor(
      () => {
        const text = readFileSync(handle.output_path, "latin1");
        const dropped = outputDroppedBytes(handle);
        const settled = dropped === lastDropped;
        lastDropped = dropped;
        return (
          settled && text.includes("LAST-BEFORE-WAIT") && statSync(handle.output_path).size <= cap
        );
      },
      { what: "the output to be cut back under the cap", timeoutMs: 30_000 },
    );
    expect(peekExit(handle)).toBeNull(); // still running, waiting for its input
    // Nearly all of it (a write racing a cut can be lost without being counted).
    expect(outputDroppedBytes(handle)).toBeGreaterThan(19_000_000);
    const { writeInput } = await import("../src/tasks/process.ts");
    await writeInput(handle, "now\n");
    await closeInput(handle);
    const exit = await waitForExit(handle, { timeoutMs: 10_000 });
    expect(exit).toMatchObject({ exit_code: 0 });
    const text = readFileSync(handle.output_path, "latin1");
    expect(text.startsWith("x".repeat(1000))).toBe(true);
    expect(text.trimEnd().slice(-200)).toMatch(/LAST-BEFORE-WAIT\nafter-now$/);
    expect(text.length).toBeLessThanOrEqual(cap);
    expect(droppedBytes(handle.dir).total).toBe(outputDroppedBytes(handle));
  });
});

describe("what the model is told", () => {
  it("ExecCommand, the task result and TaskStatus say bytes were dropped", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const set = await runCli(["config", "set", "runtime.max_command_output_bytes", "65536"], {
      env: { HOLON_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    const workspace = join(home, "ws");
    mkdirSync(workspace);
    const rt = await startRuntime({ home });
    try {
      await rt.host.agents.setWorkspace("main", workspace);
      const before = fake.requests.length;
      let taskId = "";
      fake.enqueue(
        reply.tools([
          {
            name: "ExecCommand",
            arguments: { cmd: "head -c 3000000 /dev/zero | tr '\\0' y; echo; echo END-OF-OUTPUT" },
            call_id: "big",
          },
          {
            name: "ExecCommand",
            arguments: {
              cmd: "head -c 3000000 /dev/zero | tr '\\0' z; echo; echo TASK-END",
              yield_time_ms: 0,
            },
            call_id: "bg",
          },
        ]),
        reply.text("waiting for the task"),
        (req) => {
          taskId = /task_[0-9a-f]+/.exec(req.raw)![0];
          return reply.tools([
            { name: "TaskStatus", arguments: { task_id: taskId }, call_id: "st" },
          ]);
        },
        reply.text("done"),
      );
      const res = await rt.req("POST", "/control/agents/main/prompt", { text: "make noise" });
      expect(res.status).toBe(202);
      await waitFor(() => fake.requests.length >= before + 4, {
        what: "the TaskStatus round",
        timeoutMs: 20_000,
      });
      const sent = fake.requests.slice(before);
      const execResults = sent[1]!.raw;
      expect(execResults).toMatch(/Output too large: \d+ bytes from the middle were dropped/);
      expect(execResults).toContain("END-OF-OUTPUT");
      const taskResult = sent[2]!.raw;
      expect(taskResult).toMatch(/\d+ bytes dropped from the middle by the output cap/);
      expect(sent[3]!.raw).toMatch(/Output too large: \d+ bytes from the middle were dropped/);

      const snap = await rt.req("GET", `/agents/main/tasks/${taskId}`);
      expect(snap.json.task.output_dropped_bytes).toBeGreaterThan(3_000_000 - 65536);
      const out = await rt.req("GET", `/agents/main/tasks/${taskId}/output`);
      expect(out.json.task.output_dropped_bytes).toBe(snap.json.task.output_dropped_bytes);
      const task = (await rt.host.store.tasks.get(taskId))!;
      expect(existsSync(task.output_path)).toBe(true);
      expect(statSync(task.output_path).size).toBeLessThanOrEqual(65536);
    } finally {
      await rt.close();
    }
  });
});
