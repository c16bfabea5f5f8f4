// One id per task: a new task's output folder is `processes/<task id>`, whether the operator
// started it (`holon task`) or an ExecCommand was promoted; a task an older host recorded
// keeps the folder it recorded, and nothing on disk is renamed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch } from "../src/tools/registry.ts";
import {
  cleanupHomes,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";

let rt: TestRuntime;
beforeAll(async () => {
  const home = tempHome();
  rt = await startRuntime({ env: { ...process.env, HOLON_HOME: home }, home });
});
afterAll(async () => {
  const tasks = rt.host.tasks;
  await Promise.all((await rt.host.store.tasks.active()).map((t) => tasks.stop(t.id, 100)));
  await rt.close();
  cleanupHomes();
});

const processes = async () =>
  join((await rt.host.agents.get("main")).agent_home, ".holon", "processes");

describe("task ids and output folders", () => {
  it("`holon task` writes its output under processes/<the task's id>", async () => {
    const started = await runCli(["task", "--json", "echo named-by-id"], {
      env: { HOLON_HOME: rt.home },
    });
    expect(started.code, started.stderr).toBe(0);
    const task = JSON.parse(started.stdout).task;
    expect(dirname(task.command.output_path)).toBe(join(await processes(), task.task_id));
    const record = (await rt.host.store.tasks.get(task.task_id))!;
    expect(basename(record.process_dir!)).toBe(task.task_id);
    await waitFor(
      async () => (await rt.host.store.tasks.get(task.task_id))!.status === "completed",
      {
        what: "the task to complete",
      },
    );
  });

  it("a promoted ExecCommand's task is named like its output folder", async () => {
    const ctx = await toolContext(rt.host);
    const gate = join(ctx.cwd, "gate");
    const out = await dispatch(
      buildRegistry(),
      "ExecCommand",
      JSON.stringify({ cmd: `while [ ! -e ${gate} ]; do sleep 0.02; done`, yield_time_ms: 50 }),
      ctx,
    );
    const result = out.canonical.result as any;
    expect(result.disposition).toBe("promoted_to_task");
    const taskId = result.task_handle.task_id as string;
    expect(dirname(result.output_path)).toBe(join(await processes(), taskId));
    writeFileSync(gate, "");
    await waitFor(async () => (await rt.host.store.tasks.get(taskId))!.status === "completed", {
      what: "the promoted task to complete",
    });
  });

  it("a task recorded with a differently named folder keeps reading from it", async () => {
    // What a host before this change recorded: the folder got an id of its own.
    const oldDir = join(await processes(), "task_olderfolderid");
    mkdirSync(oldDir, { recursive: true });
    writeFileSync(join(oldDir, "output.log"), "from the old folder\n");
    const now = new Date().toISOString();
    await rt.host.store.tasks.put({
      id: "task_olderrecordid",
      agent_id: "main",
      kind: "command_task",
      status: "completed",
      created_at: now,
      updated_at: now,
      finished_at: now,
      cmd: "echo old",
      cmd_digest: "0".repeat(32),
      workdir: (await rt.host.agents.get("main")).agent_home,
      shell: "/bin/sh",
      login: false,
      tty: false,
      accepts_input: false,
      output_path: join(oldDir, "output.log"),
      process_dir: oldDir,
      terminal_reentry: false,
      exit_status: { exit_code: 0, signal: null },
    });
    const res = await rt.req("GET", "/agents/main/tasks/task_olderrecordid/output");
    expect(res.status).toBe(200);
    expect(res.json.task.output_preview).toBe("from the old folder\n");
    expect(existsSync(oldDir)).toBe(true);
    expect(existsSync(join(await processes(), "task_olderrecordid"))).toBe(false);
  });
});
