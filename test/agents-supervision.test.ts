// Supervision details with the scripted model: a forked child of a parent bound to a work
// item asks for input (its task shows needs_input), is answered through TaskInput, completes
// a work item and returns its completion report on the delegation; AgentGet from the model
// agrees with the HTTP view; a public_named agent keeps living on its own; worktree mode
// gives a child its own git worktree, released when its task ends.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import {
  cleanupHomes,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider, lastInput, requestAgent } from "./helpers/provider.ts";
import { gitRepo } from "./helpers/git-repo.ts";
import {
  reply,
  startFakeProvider,
  type FakeAnswer,
  type FakeProvider,
  type RecordedRequest,
} from "./fake-provider/server.ts";

let fake: FakeProvider;
let rt: TestRuntime | undefined;

beforeAll(async () => {
  fake = await startFakeProvider();
});
afterEach(async () => {
  await rt?.close();
  rt = undefined;
  fake.setFallback(null);
});
afterAll(async () => {
  await fake.close();
  cleanupHomes();
});

const agentOf = requestAgent;
const last = lastInput;
function outputs(req: RecordedRequest): string[] {
  return (req.body.input as any[])
    .filter((i) => i.type === "function_call_output")
    .map((i) => String(i.output));
}

async function runtime() {
  const home = tempHome();
  const userHome = tempHome("holon-user-");
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  rt = await startRuntime({ home, env: { ...process.env, HOME: userHome, HOLON_HOME: home } });
  return rt;
}

const sleep = () => reply.tools([{ name: "Sleep", arguments: {} }]);

describe("child supervision", () => {
  it("needs_input, TaskInput, completion report on the delegation, fork context, AgentGet, public_named", async () => {
    const r = await runtime();
    let parentItem = "";
    let childItem = "";
    let child = "";
    const parentOutputs: string[] = [];
    const childFirst: string[] = [];
    fake.setFallback((req): FakeAnswer => {
      const who = agentOf(req);
      const l = last(req);
      if (who === "main") {
        parentOutputs.push(...outputs(req));
        if (l.text.includes("PARENT GO"))
          return reply.tools([
            {
              name: "CreateWorkItem",
              arguments: { objective: "OBJECTIVE-P: ship the feature" },
              call_id: "p1",
            },
          ]);
        const after = (id: string) =>
          l.type === "function_call_output" && l.text.includes(`"${id}"`);
        if (after("p1")) {
          parentItem = /(wi_\w+)/.exec(l.text)![1]!;
          return reply.tools([
            { name: "PickWorkItem", arguments: { work_item_id: parentItem }, call_id: "p2" },
          ]);
        }
        if (after("p2")) {
          return reply.tools([
            {
              name: "SpawnAgent",
              arguments: { initial_message: "JOB-D: choose and report", context: "fork" },
              call_id: "p3",
            },
            {
              name: "SpawnAgent",
              arguments: {
                preset: "public_named",
                agent_id: "helper",
                initial_message: "BOOT-H: say hello",
              },
              call_id: "p4",
            },
          ]);
        }
        if (after("p4")) {
          child = /Spawned private child ([\w.-]+)\./.exec(
            outputs(req).find((o) => o.includes("Spawned private child"))!,
          )![1]!;
          return reply.tools([
            { name: "AgentGet", arguments: { agent_id: child }, call_id: "g1" },
            { name: "AgentGet", arguments: {}, call_id: "g2" },
            { name: "AgentGet", arguments: { agent_id: "nobody" }, call_id: "g3" },
          ]);
        }
        return sleep();
      }
      if (who === "helper") return reply.text("hello from helper");
      // the child
      const after = (id: string) => l.type === "function_call_output" && l.text.includes(`"${id}"`);
      if (childFirst.length === 0) childFirst.push(JSON.stringify(req.body.input));
      if (l.text.includes("JOB-D"))
        return reply.tools([
          {
            name: "CreateWorkItem",
            arguments: { objective: "pick an option", plan_status: "needs_input" },
            call_id: "c1",
          },
        ]);
      if (after("c1")) {
        childItem = /(wi_\w+)/.exec(l.text)![1]!;
        return reply.tools([
          { name: "PickWorkItem", arguments: { work_item_id: childItem }, call_id: "c2" },
        ]);
      }
      if (after("c2")) return reply.text("Which option, 1 or 2?");
      if (l.text.includes("Follow-up from your supervisor"))
        return reply.tools([
          {
            name: "UpdateWorkItem",
            arguments: { work_item_id: childItem, plan_status: "ready" },
            call_id: "c3",
          },
        ]);
      if (after("c3"))
        return reply.tools(
          [{ name: "CompleteWorkItem", arguments: { work_item_id: childItem }, call_id: "c4" }],
          { text: "REPORT-D: went with option 2" },
        );
      return reply.text("done");
    });

    expect((await r.req("POST", "/control/agents/main/prompt", { text: "PARENT GO" })).status).toBe(
      202,
    );
    // The child asks; its supervision task shows needs_input.
    const waiting = await waitFor(
      async () => {
        const t = (await r.req("GET", "/agents/main/tasks")).json.tasks[0];
        return t?.child_supervision?.state === "needs_input" ? t : null;
      },
      { what: "the child's task to need input", timeoutMs: 20_000 },
    );
    expect(waiting.status).toBe("running");
    expect(waiting.child_supervision).toMatchObject({
      context_mode: "fork",
      parent_work_item_id: parentItem,
      waiting_reason: "awaiting_operator_input",
    });
    // The fork view carried the parent's active work item into the child's first message.
    expect(childFirst[0]).toContain("OBJECTIVE-P");

    // The operator (or the parent) answers through TaskInput.
    const answered = await r.req("POST", `/control/agents/main/tasks/${waiting.task_id}/input`, {
      input: "take option 2",
    });
    expect(answered.json).toMatchObject({ accepted_input: true, input_target: "child_agent" });
    const done = await waitFor(
      async () => {
        const t = (await r.req("GET", `/agents/main/tasks/${waiting.task_id}`)).json.task;
        return t.status === "completed" ? t : null;
      },
      { what: "the child to complete", timeoutMs: 20_000 },
    );
    expect(done.child_supervision.state).toBe("completed");
    // The child's question was an input ask; the parent's TaskInput decided it (a parent may
    // answer its child's input asks, never its budget asks).
    const asked = (await r.req("GET", `/control/asks?state=decided&agent=${child}`)).json.asks;
    expect(asked).toEqual([
      expect.objectContaining({
        kind: "input",
        source: "needs_input",
        detail: "Which option, 1 or 2?",
        decision: "take option 2",
        decided_by: { kind: "agent", agent_id: "main" },
      }),
    ]);
    const out = await r.req("GET", `/agents/main/tasks/${waiting.task_id}/output`);
    expect(out.json.task).toMatchObject({ result_source: "completion_report" });
    expect(out.json.task.output_preview).toContain("REPORT-D");
    // The result re-entered the parent bound to its work item (the delegation record).
    const events = await r.req("GET", "/agents/main/events?limit=500");
    const admitted = events.json.events.filter(
      (e: any) =>
        e.type === "message_admitted" &&
        e.payload.kind === "task_result" &&
        e.provenance.task_id === waiting.task_id,
    );
    expect(admitted).toHaveLength(1);
    expect(admitted[0].provenance.work_item_id).toBe(parentItem);

    // AgentGet from the model agrees with the operator's HTTP view on identity.
    const got = parentOutputs.find((o) => o.startsWith(`Agent ${child} (child, private`));
    expect(got, parentOutputs.join("\n---\n")).toBeDefined();
    expect(got).toContain("parent_supervised, private_child");
    expect(got).toContain("Created by: main");
    expect(parentOutputs.some((o) => o.startsWith("Agent main (default, public"))).toBe(true);
    expect(parentOutputs.some((o) => o.includes('"kind": "unknown_agent"'))).toBe(true);
    const http = (await r.req("GET", `/control/agents/${child}/agent`)).json.agent.identity;
    expect(http).toMatchObject({
      agent_id: child,
      kind: "child",
      visibility: "private",
      ownership: "parent_supervised",
      profile_preset: "private_child",
      lineage_parent_agent_id: "main",
      supervisor_agent_id: "main",
    });

    // The public named agent is listed, self-owned, with lineage, and ran its bootstrap.
    const helper = (await r.req("GET", "/agents/helper/status")).json;
    expect(helper).toMatchObject({
      kind: "named",
      visibility: "public",
      ownership: "self_owned",
      profile_preset: "public_named",
      lineage_parent_agent_id: "main",
    });
    await waitFor(
      async () => {
        const b = await r.req("GET", "/agents/helper/briefs");
        return b.json.briefs.some((x: any) => x.text.includes("hello from helper"));
      },
      { what: "the helper to answer its bootstrap message" },
    );
    const list = (await r.req("GET", "/agents/list")).json.agents.map((a: any) => a.agent_id);
    expect(list).toEqual(["helper", "main"]);
    // The operator sees the private child under its parent, and in `list --all`.
    const env = { HOLON_HOME: r.home };
    const status = await runCli(["agent", "status", "main"], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/children: 1 live of 2/); // helper (public) and the child
    expect(status.stdout).toContain(`${child}  [private_child, stopped, archived]`);
    const all = await runCli(["agent", "list", "--all"], { env });
    expect(all.stdout).toContain(`${child}`);
    expect(all.stdout).toContain("child of main");
    expect((await runCli(["agent", "list"], { env })).stdout).not.toContain(child);
    const home = await runCli(["agent", "home", child], { env });
    expect(home.stdout.trim()).toBe((await r.host.store.agents.get(child))!.agent_home);
  }, 40_000);

  it("worktree mode: the child works in its own worktree, released when its task ends", async () => {
    const r = await runtime();
    const repo = gitRepo({ "README.md": "repo\n" });
    const used = await r.req("POST", "/control/agents/main/workspaces/use", { path: repo });
    expect(used.status, JSON.stringify(used.json)).toBe(200);
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    fake.setFallback(async (req): Promise<FakeAnswer> => {
      if (agentOf(req) === "main") return sleep();
      await gate;
      return reply.text("worked in the worktree");
    });
    const spawned = await r.host.services.agentPlane.spawn({
      parent_agent_id: "main",
      preset: "private_child",
      initial_message: "JOB-W: edit in isolation",
      workspace_mode: "worktree",
      context_mode: "fresh",
    });
    if (!("child_supervision" in spawned)) throw new Error("expected a private child");
    const wt = spawned.child_supervision.worktree!;
    expect(wt).not.toBeNull();
    expect(existsSync(wt.path)).toBe(true);
    const childStatus = (await r.req("GET", `/control/agents/${spawned.agent_id}/agent`)).json;
    expect(childStatus.agent.identity.visibility).toBe("private");
    expect((await r.host.agents.get(spawned.agent_id)).active_workspace?.execution_root).toBe(
      wt.path,
    );
    release();
    await waitFor(
      async () =>
        (await r.host.store.tasks.get(spawned.supervision_task_id))!.status === "completed"
          ? true
          : null,
      { what: "the worktree child to finish", timeoutMs: 20_000 },
    );
    expect(existsSync(wt.path)).toBe(false); // clean: removed with its task
    // A worktree child needs a git workspace: from agent_home it is refused.
    await r.req("POST", "/control/agents/main/workspaces/exit", {});
    await expect(
      async () =>
        await r.host.services.agentPlane.spawn({
          parent_agent_id: "main",
          preset: "private_child",
          initial_message: "JOB-X",
          workspace_mode: "worktree",
          context_mode: "fresh",
        }),
    ).rejects.toThrow(expect.objectContaining({ kind: "isolation_unavailable" }));
  }, 30_000);

  it("a child that tries to spawn gets the error envelope and still reports back", async () => {
    const r = await runtime();
    const childOutputs: string[] = [];
    const childTools: string[] = [];
    fake.setFallback((req): FakeAnswer => {
      const l = last(req);
      if (agentOf(req) === "main") return sleep();
      childTools.push(...(req.body.tools as any[]).map((t) => String(t.name)));
      childOutputs.push(...outputs(req));
      if (l.text.includes("JOB-G"))
        return reply.tools([
          { name: "SpawnAgent", arguments: { initial_message: "grandchild job" }, call_id: "x1" },
        ]);
      return reply.text("RESULT-G: did it myself");
    });
    const spawned = await r.host.services.agentPlane.spawn({
      parent_agent_id: "main",
      preset: "private_child",
      initial_message: "JOB-G: try delegating",
      workspace_mode: "inherit",
      context_mode: "fresh",
    });
    if (!("supervision_task_id" in spawned)) throw new Error("expected a private child");
    await waitFor(
      async () =>
        (await r.host.store.tasks.get(spawned.supervision_task_id))!.status === "completed" || null,
      { what: "the child to finish", timeoutMs: 20_000 },
    );
    const refusal = JSON.parse(childOutputs.find((o) => o.includes("spawn_not_allowed"))!);
    expect(refusal).toMatchObject({
      ok: false,
      tool_name: "SpawnAgent",
      kind: "spawn_not_allowed",
    });
    expect(refusal.hint).toContain("agents.max_spawn_depth");
    // Its catalog never offered SpawnAgent (profile narrowing); AgentGet stays.
    expect(childTools).toContain("AgentGet");
    expect(childTools).not.toContain("SpawnAgent");
    const list = await r.req("GET", "/agents/list?all=true");
    expect(list.json.agents.filter((a: any) => a.kind === "child")).toHaveLength(1);
  }, 30_000);

  it("agents.max_spawn_depth 2 lets a child delegate once more, and no deeper", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const set = await runCli(["config", "set", "agents.max_spawn_depth", "2"], {
      env: { HOLON_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    rt = await startRuntime({ home, env: { ...process.env, HOLON_HOME: home } });
    fake.setFallback(async () => {
      await new Promise(() => {}); // every agent stays mid-turn; only the spawn tree matters
      return reply.text("never");
    });
    const plane = rt.host.services.agentPlane;
    const spec = (parent: string) => ({
      parent_agent_id: parent,
      preset: "private_child" as const,
      initial_message: `job for a child of ${parent}`,
      workspace_mode: "inherit" as const,
      context_mode: "fresh" as const,
    });
    const child = await plane.spawn(spec("main"));
    const grandchild = await plane.spawn(spec(child.agent_id));
    expect(await rt.host.store.agents.get(grandchild.agent_id)).toMatchObject({
      spawn_depth: 2,
      lineage_parent_agent_id: child.agent_id,
      supervisor_agent_id: child.agent_id,
    });
    await expect(async () => await plane.spawn(spec(grandchild.agent_id))).rejects.toThrow(
      expect.objectContaining({ kind: "spawn_not_allowed" }),
    );
    // Deleting the top child takes its private descendants with it.
    const removed = await plane.remove(child.agent_id, { force: true });
    expect(removed.deleted_children).toEqual([grandchild.agent_id]);
    expect(await rt.host.store.agents.get(grandchild.agent_id)).toBeUndefined();
  }, 30_000);
});
