// Hints speak to whoever reads them: the same refusal tells the operator (CLI, control HTTP
// bodies) which `holon` command to run, and tells the model (a tool error's recovery hint)
// which tool to call. A model tool name never reaches the operator and the other way round.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch } from "../src/tools/registry.ts";
import { cleanupHomes, runCli, startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";

const TOOL_NAMES = /\b(TaskList|TaskStatus|ListWorkItems|CreateWorkItem|UseWorkspace)\b/;

let rt: TestRuntime;
const env = () => ({ HOLON_HOME: rt.home });

beforeAll(async () => {
  rt = await startRuntime();
  // Held, so nothing the test queues is worked on by a turn meanwhile.
  await rt.req("POST", "/control/agents/main/control", { action: "pause" });
});
afterAll(async () => {
  await rt.close();
  cleanupHomes();
});

async function toolError(name: string, args: Record<string, unknown>) {
  const out = await dispatch(
    buildRegistry(),
    name,
    JSON.stringify(args),
    await toolContext(rt.host),
  );
  return out.canonical.error!;
}

describe("operator hints and model hints", () => {
  it("an unknown task: the CLI names `holon task list`, the tool names TaskList", async () => {
    const cli = await runCli(["task", "status", "task_nope"], { env: env() });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("unknown_task");
    expect(cli.stderr).toContain("hint: list the agent's tasks: holon task list");
    expect(cli.stderr).not.toMatch(TOOL_NAMES);

    const http = await rt.req("GET", "/agents/main/tasks/task_nope");
    expect(http.json.error.hint).toContain("holon task list");

    const tool = await toolError("TaskStatus", { task_id: "task_nope" });
    expect(tool.kind).toBe("unknown_task");
    expect(tool.recovery_hint).toContain("TaskList");
    expect(tool.recovery_hint).not.toContain("holon ");
  });

  it("an unknown or completed work item: the CLI names `holon work …`, the tools their tools", async () => {
    const show = await runCli(["work", "show", "main", "wi_nope"], { env: env() });
    expect(show.code).toBe(1);
    expect(show.stderr).toContain("hint: list the agent's work items: holon work list main");
    expect(show.stderr).not.toMatch(TOOL_NAMES);

    const added = await runCli(["work", "add", "main", "tidy", "--json"], { env: env() });
    const id = JSON.parse(added.stdout).work_item.id as string;
    expect((await runCli(["work", "done", "main", id], { env: env() })).code).toBe(0);
    const again = await runCli(["work", "done", "main", id], { env: env() });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('holon work add main "<objective>"');
    expect(again.stderr).not.toMatch(TOOL_NAMES);

    const tool = await toolError("GetWorkItem", { work_item_id: "wi_nope" });
    expect(tool.recovery_hint).toContain("ListWorkItems");
    const done = await toolError("CompleteWorkItem", { work_item_id: id });
    expect(done.recovery_hint).toContain("CreateWorkItem");
  });

  it("a --workdir outside the execution root names the root and the attach command", async () => {
    const outside = tempHome("holon-outside-");
    const cli = await runCli(["task", "--workdir", outside, "true"], { env: env() });
    expect(cli.code).toBe(1);
    const root = (await rt.host.agents.get("main")).agent_home;
    expect(cli.stderr).toContain(
      `working directory ${outside} is outside the execution root ${root}`,
    );
    expect(cli.stderr).toContain(
      `hint: attach the directory to the agent first: holon workspace attach main ${outside}`,
    );
  });

  it("a workspace inside the runtime's state directory: the operator is told to pick another", async () => {
    const cli = await runCli(["workspace", "attach", "main", `${rt.home}/run`], { env: env() });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("workspace_path_forbidden");
    expect(cli.stderr).toContain(`choose a directory outside ${rt.home}`);
    expect(cli.stderr).not.toMatch(TOOL_NAMES);
  });
});
