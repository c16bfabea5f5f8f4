// Operator task surfaces: POST /control/agents/:id/tasks and the task read/stop/input routes
// over real HTTP, their refusals (stable kinds, nothing stored), and `holon task` end to end.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  cleanupHomes,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";

let rt: TestRuntime;
beforeAll(async () => {
  const home = tempHome();
  rt = await startRuntime({
    env: { ...process.env, HOLON_HOME: home },
    home,
  });
});
afterAll(async () => {
  const tasks = rt.host.tasks;
  await Promise.all((await rt.host.store.tasks.active()).map((t) => tasks.stop(t.id, 100)));
  await rt.close();
  cleanupHomes();
});

const taskCount = async () =>
  (await rt.host.store.tasks.active()).length +
  (await rt.host.store.tasks.forAgent("main", 1000)).length;

describe("task HTTP routes", () => {
  it("starts a task in a confined workdir, shows it, and serves its output", async () => {
    const agentHome = (await rt.host.agents.get("main")).agent_home;
    mkdirSync(join(agentHome, "sub"), { recursive: true });
    const created = await rt.req("POST", "/control/agents/main/tasks", {
      cmd: "pwd; echo to-stderr >&2",
      workdir: "sub",
      summary: "where am I",
    });
    expect(created.status).toBe(201);
    const task = created.json.task;
    expect(task).toMatchObject({
      status: "running",
      summary: "where am I",
      command: { workdir: join(agentHome, "sub"), terminal_reentry: false, tty: false },
    });
    const out = await rt.req("GET", `/agents/main/tasks/${task.task_id}/output?wait_ms=10000`);
    expect(out.status).toBe(200);
    // operator tasks merge both streams into one file, in write order
    expect(out.json).toMatchObject({
      retrieval_status: "success",
      task: {
        status: "completed",
        output_preview: `${join(agentHome, "sub")}\nto-stderr\n`,
        output_artifact: 0,
      },
    });
    const status = await rt.req("GET", `/agents/main/tasks/${task.task_id}`);
    expect(status.json.task.status).toBe("completed");
    expect(status.json.task.output_preview).toBeUndefined();
  });

  it("stops a task and feeds another through the control routes", async () => {
    const sleeper = (await rt.req("POST", "/control/agents/main/tasks", { cmd: "sleep 60" })).json
      .task;
    const stop = await rt.req("POST", `/control/agents/main/tasks/${sleeper.task_id}/stop`);
    expect(stop.json).toMatchObject({ stop_requested: true, task: { status: "cancelled" } });
    const again = await rt.req("POST", `/control/agents/main/tasks/${sleeper.task_id}/stop`);
    expect(again.json).toMatchObject({ stop_requested: false, task: { status: "cancelled" } });

    const reader = (
      await rt.req("POST", "/control/agents/main/tasks", {
        cmd: 'read a; echo "got $a"',
        accepts_input: true,
      })
    ).json.task;
    expect(reader.input_target).toBe("stdin");
    const sent = await rt.req("POST", `/control/agents/main/tasks/${reader.task_id}/input`, {
      input: "ping\n",
    });
    expect(sent.json).toMatchObject({
      accepted_input: true,
      input_target: "stdin",
      bytes_written: 5,
    });
    const out = await rt.req("GET", `/agents/main/tasks/${reader.task_id}/output?wait_ms=10000`);
    expect(out.json.task.output_preview).toBe("got ping\n");
    const late = await rt.req("POST", `/control/agents/main/tasks/${reader.task_id}/input`, {
      input: "x\n",
    });
    expect(late.json).toMatchObject({ accepted_input: false, reason: "task_not_running" });
  });

  it("refuses bad requests with stable kinds and stores nothing", async () => {
    const before = await taskCount();
    const cases: [unknown, number, string][] = [
      ["{not json", 400, "invalid_json"],
      [{}, 400, "invalid_request"],
      [{ cmd: "" }, 400, "invalid_request"],
      [{ cmd: "true", tty: "yes" }, 400, "invalid_request"],
      [{ cmd: "true", background: true }, 400, "unknown_field"],
      [{ cmd: "true", workdir: "/etc" }, 400, "execution_root_violation"],
      [{ cmd: "true", workdir: "../.." }, 400, "execution_root_violation"],
      [{ cmd: "true", workdir: "no/such/dir" }, 400, "workdir_not_found"],
    ];
    for (const [body, status, kind] of cases) {
      const r = await rt.req("POST", "/control/agents/main/tasks", body);
      expect([r.status, r.json.error?.kind], JSON.stringify(body)).toEqual([status, kind]);
    }
    const unknownAgent = await rt.req("POST", "/control/agents/ghost/tasks", { cmd: "true" });
    expect([unknownAgent.status, unknownAgent.json.error.kind]).toEqual([404, "unknown_agent"]);
    expect(await taskCount()).toBe(before);

    const missing = await rt.req("GET", "/agents/main/tasks/task_nope");
    expect([missing.status, missing.json.error.kind]).toEqual([404, "unknown_task"]);
    const badWait = await rt.req("GET", "/agents/main/tasks/task_nope/output?wait_ms=999999");
    expect(badWait.status).toBe(400);

    // another agent's task is not reachable through this agent
    await rt.host.agents.create("other");
    const theirs = (await rt.req("POST", "/control/agents/other/tasks", { cmd: "sleep 30" })).json
      .task;
    for (const [method, path] of [
      ["GET", `/agents/main/tasks/${theirs.task_id}`],
      ["GET", `/agents/main/tasks/${theirs.task_id}/output`],
      ["POST", `/control/agents/main/tasks/${theirs.task_id}/stop`],
    ] as const) {
      const r = await rt.req(method, path);
      expect([r.status, r.json.error?.kind], path).toEqual([404, "unknown_task"]);
    }
    const noInput = await rt.req("POST", `/control/agents/other/tasks/${theirs.task_id}/input`, {
      input: "x\n",
    });
    expect(noInput.json).toMatchObject({ accepted_input: false, reason: "input_not_enabled" });
    const badInput = await rt.req("POST", `/control/agents/other/tasks/${theirs.task_id}/input`, {
      text: "x",
    });
    expect(badInput.json.error.kind).toBe("invalid_request");
    expect((await rt.host.store.tasks.get(theirs.task_id))!.status).toBe("running");
    await rt.req("POST", `/control/agents/other/tasks/${theirs.task_id}/stop`);
  });

  it("`holon task` starts, lists, shows, reads and stops tasks", async () => {
    const env = { HOLON_HOME: rt.home };
    const started = await runCli(["task", "--json", "echo cli-task-output; sleep 60"], { env });
    expect(started.code, started.stderr).toBe(0);
    const taskId = JSON.parse(started.stdout).task.task_id as string;
    const list = await runCli(["task", "list"], { env });
    expect(list.stdout).toContain(taskId);
    const status = await runCli(["task", "status", taskId], { env });
    expect(status.stdout).toMatch(/status:\s+running/);
    await waitFor(async () =>
      (await runCli(["task", "output", taskId], { env })).stdout.includes("cli-task-output"),
    );
    const stop = await runCli(["task", "stop", taskId, "--json"], { env });
    expect(JSON.parse(stop.stdout)).toMatchObject({
      stop_requested: true,
      task: { status: "cancelled" },
    });
    const refused = await runCli(["task", "input", taskId, "hello"], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("input refused");
    const unknown = await runCli(["task", "status", "task_nope"], { env });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown_task");
    const outside = await runCli(["task", "--workdir", "/", "true"], { env });
    expect(outside.code).toBe(1);
    expect(outside.stderr).toContain("execution_root_violation");
  }, 60_000);
});
