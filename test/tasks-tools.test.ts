// The task tools against a real host with the production wiring and real processes: promotion
// from ExecCommand, TaskList/TaskStatus/TaskOutput readiness, TaskStop escalation, TaskInput over
// a PTY and over stdin, and the refusals a model can run into.
import { afterAll, describe, expect, it } from "vitest";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RuntimeHost } from "../src/host/host.ts";
import { readProcessRecord } from "../src/tasks/process.ts";
import { scanMembers } from "../src/tasks/process-proc.ts";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch, type ToolContext } from "../src/tools/registry.ts";
import { cleanupHomes, tempHome, waitFor } from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";
import { bodyText } from "../src/domain/message.ts";

const registry = buildRegistry();
const hosts: RuntimeHost[] = [];

async function openHost(): Promise<RuntimeHost> {
  const home = tempHome();
  const host = await RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
  hosts.push(host);
  return host;
}

afterAll(async () => {
  for (const host of hosts.splice(0)) {
    const tasks = host.tasks;
    await Promise.all((await host.store.tasks.active()).map((t) => tasks.stop(t.id, 100)));
    await host.shutdown();
  }
  cleanupHomes();
});

async function ctxFor(host: RuntimeHost, agentId = "main"): Promise<ToolContext> {
  return await toolContext(host, agentId);
}

async function call(ctx: ToolContext, name: string, args: Record<string, unknown>) {
  const out = await dispatch(registry, name, JSON.stringify(args), ctx);
  return { ...out, result: out.canonical.result as any, error: out.canonical.error };
}

function readOutput(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

async function taskResults(host: RuntimeHost, taskId: string) {
  return (await host.store.messages.recent("main", 10_000)).filter(
    (m) => m.kind === "task_result" && m.task_id === taskId,
  );
}

describe("task tools", () => {
  it("a promoted ExecCommand is listed, inspected and read until a stable terminal snapshot", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const gate = join(ctx.cwd, "gate");
    const exec = await call(ctx, "ExecCommand", {
      cmd: `echo first-out; echo first-err >&2; while [ ! -e ${gate} ]; do sleep 0.02; done; echo last-out`,
      yield_time_ms: 50,
    });
    expect(exec.result.disposition).toBe("promoted_to_task");
    const taskId = exec.result.task_handle.task_id as string;

    const list = await call(ctx, "TaskList", {});
    expect(list.result.tasks.map((t: any) => t.task_id)).toEqual([taskId]);
    expect(list.rendered).toContain(`${taskId} [running]`);

    const status = await call(ctx, "TaskStatus", { task_id: taskId });
    expect(status.result.task).toMatchObject({
      task_id: taskId,
      status: "running",
      command: { tty: false, login: false, shell: "/bin/bash", terminal_reentry: true },
    });
    expect(status.result.task.command.cmd_digest).toMatch(/^[0-9a-f]{32}$/);
    const statusJson = JSON.stringify(status.result);
    // lifecycle only: never output bytes or artifact arrays
    expect(statusJson).not.toContain("output_preview");
    expect(statusJson).not.toContain("artifacts");
    expect(statusJson).not.toContain("first-out\n");
    expect(status.rendered).toContain("Still running");

    const early = await waitFor(async () => {
      const r = await call(ctx, "TaskOutput", { task_id: taskId });
      return r.result.task.output_preview.includes("first-err") ? r : null;
    });
    expect(early.result.retrieval_status).toBe("not_ready");
    expect(early.rendered).toContain("still running");

    const timedOut = await call(ctx, "TaskOutput", {
      task_id: taskId,
      block: true,
      timeout_ms: 50,
    });
    expect(timedOut.result.retrieval_status).toBe("timeout");

    writeFileSync(gate, "");
    const done = await call(ctx, "TaskOutput", {
      task_id: taskId,
      block: true,
      timeout_ms: 10_000,
    });
    expect(done.result.retrieval_status).toBe("success");
    const t = done.result.task;
    expect(t).toMatchObject({
      status: "completed",
      exit_status: { exit_code: 0, signal: null },
      output_truncated: false,
      output_source: "output_file",
      failure_artifact: null,
    });
    expect(t.output_preview).toBe("first-out\nlast-out\n\n[stderr]\nfirst-err\n");
    expect(t.artifacts[t.output_artifact].path).toMatch(/stdout\.log$/);
    expect(t.artifacts[t.stderr_artifact].path).toMatch(/stderr\.log$/);
    expect(done.rendered).toContain("completed (exit status 0)");

    // the terminal result rejoined the queue once, as runtime-owned task evidence
    const results = await taskResults(host, taskId);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      origin: { kind: "task", task_id: taskId },
      trust: "trusted_system",
      authority_class: "runtime_instruction",
      delivery_surface: "task_rejoin",
      causation_id: "msg_run_test",
    });
    expect(bodyText(results[0]!.body)).toContain("first-err");
    expect((await call(ctx, "TaskList", {})).rendered).toContain("No active tasks");
    expect((await call(ctx, "TaskList", { include_terminal: true })).result.tasks).toHaveLength(1);
  });

  it("a terminal record wins even when the output file is gone: the persisted snapshot is served", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const task = await ctx.tasks.start({
      agent_id: "main",
      cmd: "echo kept-in-snapshot",
      workdir: ctx.cwd,
      shell: "/bin/bash",
      login: false,
      tty: false,
      accepts_input: false,
      terminal_reentry: false,
    });
    await ctx.tasks.waitTerminal(task.id, 10_000);
    rmSync(task.output_path);
    const out = await call(ctx, "TaskOutput", { task_id: task.id });
    expect(out.result.retrieval_status).toBe("success");
    expect(out.result.task).toMatchObject({
      output_source: "terminal_snapshot",
      output_preview: "kept-in-snapshot\n",
      artifacts: [],
    });
  });

  it("TaskStop ends a task that ignores SIGTERM by escalation, children included", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const exec = await call(ctx, "ExecCommand", {
      cmd: "trap '' TERM; sleep 300 & sleep 301 & echo ready; wait",
      yield_time_ms: 0,
    });
    const taskId = exec.result.task_handle.task_id as string;
    const task = (await host.store.tasks.get(taskId))!;
    const sid = readProcessRecord(task.process_dir)!.sid;
    // "ready" comes after the trap and both forks: only then does every member ignore SIGTERM.
    // (A count of members is no such sign: the sandbox's init, the wrapper and the shell are
    // three before the shell has run its trap, and a stop then ends it without escalation.)
    await waitFor(() => readOutput(task.output_path).includes("ready"), { what: "ready" });
    expect(scanMembers([sid], [sid]).length).toBeGreaterThanOrEqual(3);
    const stop = await call(ctx, "TaskStop", { task_id: taskId });
    expect(stop.canonical.status).toBe("success");
    expect(stop.result).toMatchObject({
      stop_requested: true,
      escalated: true,
      task: { status: "cancelled" },
    });
    expect(stop.rendered).toContain("killed");
    expect(scanMembers([sid], [sid])).toEqual([]);
    // a stop of a finished task is a harmless no-op receipt
    const again = await call(ctx, "TaskStop", { task_id: taskId });
    expect(again.result).toMatchObject({ stop_requested: false, task: { status: "cancelled" } });
    expect(again.rendered).toContain("already ended");
    expect(await taskResults(host, taskId)).toHaveLength(1);
  });

  it("drives python3 -i over a PTY through TaskInput", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const exec = await call(ctx, "ExecCommand", {
      cmd: "python3 -q -i",
      tty: true,
      yield_time_ms: 0,
    });
    const taskId = exec.result.task_handle.task_id as string;
    expect((await call(ctx, "TaskStatus", { task_id: taskId })).result.task.input_target).toBe(
      "tty",
    );
    const sent = await call(ctx, "TaskInput", { task_id: taskId, input: "print(6 * 7 + 1000)\n" });
    expect(sent.result).toMatchObject({ accepted_input: true, input_target: "tty" });
    expect(sent.result.bytes_written).toBe(20);
    await waitFor(
      async () =>
        (await call(ctx, "TaskOutput", { task_id: taskId })).result.task.output_preview.includes(
          "1042",
        ),
      { what: "python's answer" },
    );
    await call(ctx, "TaskInput", { task_id: taskId, input: "raise SystemExit(3)\n" });
    const end = await call(ctx, "TaskOutput", { task_id: taskId, block: true, timeout_ms: 10_000 });
    expect(end.result).toMatchObject({
      retrieval_status: "success",
      task: { status: "failed", exit_status: { exit_code: 3 } },
    });
    expect(end.result.task.failure_artifact.kind).toBe("task_nonzero_exit");
  });

  it("drives bash over stdin through TaskInput, and closing the input ends it", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const exec = await call(ctx, "ExecCommand", {
      cmd: "bash",
      accepts_input: true,
      yield_time_ms: 0,
    });
    const taskId = exec.result.task_handle.task_id as string;
    const sent = await call(ctx, "TaskInput", {
      task_id: taskId,
      input: "echo sum=$((40 + 2))\n",
    });
    expect(sent.result).toMatchObject({ accepted_input: true, input_target: "stdin" });
    await waitFor(
      async () =>
        (await call(ctx, "TaskOutput", { task_id: taskId })).result.task.output_preview.includes(
          "sum=42",
        ),
      { what: "bash's answer" },
    );
    const closed = await call(ctx, "TaskInput", {
      task_id: taskId,
      input: "echo bye\n",
      close_input: true,
    });
    expect(closed.result).toMatchObject({ accepted_input: true, input_closed: true });
    const end = await call(ctx, "TaskOutput", { task_id: taskId, block: true, timeout_ms: 10_000 });
    expect(end.result.task).toMatchObject({ status: "completed", output_preview: "sum=42\nbye\n" });
    // input to a finished task is refused with a receipt, not an error
    const late = await call(ctx, "TaskInput", { task_id: taskId, input: "echo late\n" });
    expect(late.canonical.status).toBe("success");
    expect(late.result).toMatchObject({ accepted_input: false, reason: "task_not_running" });
  });

  it("refuses unknown ids, other agents' tasks, input without input enabled, and bad arguments", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    for (const tool of ["TaskStatus", "TaskOutput", "TaskStop"]) {
      const r = await call(ctx, tool, { task_id: "task_nope" });
      expect(r.canonical.status).toBe("error");
      expect(r.error!.kind).toBe("unknown_task");
    }
    await host.agents.create("other");
    const otherCtx = await ctxFor(host, "other");
    const theirs = await call(otherCtx, "ExecCommand", {
      cmd: "sleep 30",
      accepts_input: true,
      yield_time_ms: 0,
    });
    const theirId = theirs.result.task_handle.task_id as string;
    for (const [tool, args] of [
      ["TaskStatus", {}],
      ["TaskOutput", {}],
      ["TaskStop", {}],
      ["TaskInput", { input: "x\n" }],
    ] as const) {
      const r = await call(ctx, tool, { task_id: theirId, ...args });
      expect(r.error?.kind, tool).toBe("unknown_task");
    }
    expect((await call(ctx, "TaskList", { include_terminal: true })).result.tasks).toEqual([]);
    expect((await host.store.tasks.get(theirId))!.status).toBe("running"); // untouched

    const mine = await call(ctx, "ExecCommand", { cmd: "sleep 30", yield_time_ms: 0 });
    const mineId = mine.result.task_handle.task_id as string;
    const refused = await call(ctx, "TaskInput", { task_id: mineId, input: "hello\n" });
    expect(refused.canonical.status).toBe("success");
    expect(refused.result).toMatchObject({
      accepted_input: false,
      input_target: null,
      bytes_written: 0,
      reason: "input_not_enabled",
    });
    expect(refused.rendered).toContain("not delivered");

    const bad = await call(ctx, "TaskOutput", {
      task_id: mineId,
      block: true,
      timeout_ms: 600_000,
    });
    expect(bad.error?.kind).toBe("invalid_tool_input");
    const extra = await call(ctx, "TaskStatus", { task_id: mineId, verbose: true });
    expect(extra.error?.kind).toBe("invalid_tool_input");

    await call(ctx, "TaskStop", { task_id: mineId });
    await call(otherCtx, "TaskStop", { task_id: theirId });
  });
});
