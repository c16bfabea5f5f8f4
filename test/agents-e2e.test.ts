// The agent plane end to end with the scripted model: a parent spawns private children
// through SpawnAgent, supervises them with the task tools, gets each result back once as a
// task_result, stops one, and (in a real `holon serve` process) survives a SIGKILL while a
// child is mid-turn.
import { openRecords } from "./helpers/raw-store.ts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  cleanupHomes,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import {
  fault,
  reply,
  startFakeProvider,
  type FakeAnswer,
  type FakeProvider,
  type RecordedRequest,
} from "./fake-provider/server.ts";
import { decodeBody } from "../src/store/codec.ts";

let fake: FakeProvider;
let rt: TestRuntime | undefined;
const procs: ChildProcess[] = [];

beforeAll(async () => {
  fake = await startFakeProvider();
});
afterEach(async () => {
  await rt?.close();
  rt = undefined;
  fake.setFallback(null);
});
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  await fake.close();
  cleanupHomes();
});

/** Which agent sent a request: its prompt cache key is `holon-<agent_id>-<digest>`. */
function agentOf(req: RecordedRequest): string {
  const key = String(req.body.prompt_cache_key ?? "");
  return key.slice("holon-".length, key.lastIndexOf("-"));
}

/** A child's job marker, remembered from its first request (later ones may be incremental). */
const jobs = new Map<string, string>();
function jobOf(req: RecordedRequest): string | undefined {
  const agent = agentOf(req);
  const m = /JOB-[A-Z]/.exec(JSON.stringify(req.body));
  if (m && !jobs.has(agent)) jobs.set(agent, m[0]);
  return jobs.get(agent);
}

/** The newest input item of a Responses request, as text. */
function lastItem(req: RecordedRequest): { type: string; text: string } {
  const input = req.body.input as any[];
  const last = input[input.length - 1];
  return { type: String(last?.type ?? last?.role ?? ""), text: JSON.stringify(last) };
}

function toolOutputs(req: RecordedRequest): string[] {
  return (req.body.input as any[])
    .filter((i) => i.type === "function_call_output")
    .map((i) => String(i.output));
}

/** task_result messages for a task, read from the store of a home no host holds. */
function taskResults(home: string, taskId: string): { text: string }[] {
  const db = openRecords(home);
  try {
    return (db.prepare("SELECT envelope FROM messages").all() as { envelope: unknown }[])
      .map((r) => decodeBody(r.envelope) as any)
      .filter((m) => m.kind === "task_result" && m.task_id === taskId)
      .map((m) => ({ text: m.body.text as string }));
  } finally {
    db.close();
  }
}

describe("SpawnAgent and child supervision", () => {
  it("a parent spawns two children: one's result re-enters once, the parent stops the other", async () => {
    const home = tempHome();
    const userHome = tempHome("holon-user-");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    rt = await startRuntime({ home, env: { ...process.env, HOME: userHome, HOLON_HOME: home } });
    let taskB = "";
    const parentSaw: string[] = [];
    fake.setFallback((req): FakeAnswer | Promise<FakeAnswer> => {
      const last = lastItem(req);
      if (agentOf(req) === "main") {
        parentSaw.push(last.text);
        if (last.type === "function_call_output") return reply.text("Noted.");
        if (last.text.includes("PARENT START")) {
          return reply.tools([
            {
              name: "SpawnAgent",
              arguments: { initial_message: "JOB-A: compute the answer" },
              call_id: "s1",
            },
            {
              name: "SpawnAgent",
              arguments: { initial_message: "JOB-B: a long investigation", context: "fork" },
              call_id: "s2",
            },
          ]);
        }
        if (last.text.includes("RESULT-A")) {
          // A can finish before this test has read B's task id from the API: wait for it.
          return waitFor(() => taskB, { what: "B's task id" }).then(() =>
            reply.tools([
              { name: "TaskStatus", arguments: { task_id: taskB }, call_id: "t1" },
              { name: "TaskOutput", arguments: { task_id: taskB }, call_id: "t3" },
              {
                name: "TaskInput",
                arguments: { task_id: taskB, input: "hurry up" },
                call_id: "t4",
              },
              { name: "TaskList", arguments: {}, call_id: "t5" },
              { name: "TaskStop", arguments: { task_id: taskB }, call_id: "t2" },
            ]),
          );
        }
        return reply.text("Acknowledged.");
      }
      const job = jobOf(req);
      if (job === "JOB-A") return reply.text("RESULT-A: the answer is 42");
      if (job === "JOB-B") return fault.hang();
      return reply.text("unexpected");
    });

    const prompt = await rt.req("POST", "/control/agents/main/prompt", { text: "PARENT START" });
    expect(prompt.status).toBe(202);

    // Both supervision tasks exist on the parent, as child_agent_tasks.
    const tasks = await waitFor(
      async () => {
        const r = await rt!.req("GET", "/agents/main/tasks");
        return r.json.tasks.length === 2 ? r.json.tasks : null;
      },
      { what: "two supervision tasks" },
    );
    for (const t of tasks) {
      expect(t.kind).toBe("child_agent_task");
      expect(t.command).toBeNull();
      expect(t.child_supervision).toMatchObject({
        parent_agent_id: "main",
        cleanup_owner: "supervision_task",
        followup_target: "parent_supervisor",
        workspace_mode: "inherit",
      });
    }
    const byLabel = (l: string) => tasks.find((t: any) => t.child_supervision.label.includes(l));
    const taskA = byLabel("JOB-A").task_id as string;
    taskB = byLabel("JOB-B").task_id as string;
    const childB = byLabel("JOB-B").child_supervision.child_agent_id as string;
    expect(byLabel("JOB-B").child_supervision.context_mode).toBe("fork");

    // The SpawnAgent results carried the ids and the projection.
    const spawnReq = await waitFor(
      () =>
        fake.requests.find((r) => toolOutputs(r).some((o) => o.includes("Spawned private child"))),
      { what: "the SpawnAgent results to reach the model" },
    );
    expect(toolOutputs(spawnReq).join("\n")).toContain(taskA);

    // Private children stay out of the public list but show under the parent.
    const list = await rt.req("GET", "/agents/list");
    expect(list.json.agents.map((a: any) => a.agent_id)).toEqual(["main"]);
    const all = await rt.req("GET", "/agents/list?all=true");
    expect(all.json.agents.length).toBe(3);
    const hidden = await rt.req("GET", `/agents/${childB}/status`);
    expect(hidden.status).toBe(404);

    // A finishes; its result re-enters the parent; the parent stops B.
    const stoppedB = await waitFor(
      async () => {
        const r = await rt!.req("GET", `/agents/main/tasks/${taskB}`);
        return r.json.task.status === "cancelled" ? r.json.task : null;
      },
      { what: "the parent to stop B", timeoutMs: 20_000 },
    );
    expect(stoppedB.child_supervision.state).toBe("cancelled");
    const a = (await rt.req("GET", `/agents/main/tasks/${taskA}`)).json.task;
    expect(a.status).toBe("completed");
    const outA = await rt.req("GET", `/agents/main/tasks/${taskA}/output`);
    expect(outA.json).toMatchObject({
      retrieval_status: "success",
      task: { output_preview: "RESULT-A: the answer is 42", result_source: "result_brief" },
    });
    // The parent's TaskStatus saw B running as a child task.
    const statusReq = fake.requests.find((r) =>
      toolOutputs(r).some((o) => o.includes(`Task ${taskB} (child_agent_task): running`)),
    );
    expect(statusReq).toBeDefined();
    const supervised = toolOutputs(statusReq!);
    expect(supervised.some((o) => o.includes(`is running. Its reports so far:`))).toBe(true);
    expect(supervised.some((o) => o.includes("Input delivered."))).toBe(true);
    expect(supervised.some((o) => o.includes(`child agent ${childB}`))).toBe(true);
    expect(supervised.some((o) => o.startsWith("Stopped: the child agent was aborted"))).toBe(true);
    // B's cancellation came back too (once), and the parent acknowledged it.
    await waitFor(() => parentSaw.some((t) => t.includes(`was stopped (task ${taskB})`)), {
      what: "B's stop to re-enter the parent",
    });
    const statusMain = await rt.req("GET", "/agents/main/status");
    expect(statusMain.json.children).toMatchObject({ total: 2, live: 0 });
    const childAgent = await rt.req("GET", `/control/agents/${childB}/agent`);
    expect(childAgent.json.agent.identity).toMatchObject({
      visibility: "private",
      ownership: "parent_supervised",
      profile_preset: "private_child",
      lineage_parent_agent_id: "main",
      archived: true,
    });
    await rt.close();
    rt = undefined;
    expect(taskResults(home, taskA)).toHaveLength(1);
    expect(taskResults(home, taskA)[0]!.text).toContain("RESULT-A");
    expect(taskResults(home, taskB)).toHaveLength(1);
    expect(parentSaw.filter((t) => t.includes("RESULT-A"))).toHaveLength(1);
  }, 40_000);

  it("a child cannot spawn, and fan-out is capped with a clear error", async () => {
    const home = tempHome();
    const userHome = tempHome("holon-user-");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    rt = await startRuntime({ home, env: { ...process.env, HOME: userHome, HOLON_HOME: home } });
    rt.host.services.config.current(); // loaded
    const plane = rt.host.services.agentPlane;
    fake.setFallback(() => fault.hang()); // children just sit in their first turn
    const spawned: { agent_id: string }[] = [];
    for (let i = 0; i < 8; i++) {
      spawned.push(
        await plane.spawn({
          parent_agent_id: "main",
          preset: "private_child",
          initial_message: `job ${i}`,
          workspace_mode: "inherit",
          context_mode: "fresh",
        }),
      );
    }
    await expect(
      async () =>
        await plane.spawn({
          parent_agent_id: "main",
          preset: "private_child",
          initial_message: "one too many",
          workspace_mode: "inherit",
          context_mode: "fresh",
        }),
    ).rejects.toThrow(expect.objectContaining({ kind: "too_many_children" }));
    await expect(
      async () =>
        await plane.spawn({
          parent_agent_id: spawned[0]!.agent_id,
          preset: "private_child",
          initial_message: "grandchild",
          workspace_mode: "inherit",
          context_mode: "fresh",
        }),
    ).rejects.toThrow(expect.objectContaining({ kind: "spawn_not_allowed" }));
    // A private child without a job is refused, and nothing is created.
    const before = (await rt.host.store.agents.list()).length;
    await expect(
      async () =>
        await plane.spawn({
          parent_agent_id: "main",
          preset: "private_child",
          workspace_mode: "inherit",
          context_mode: "fresh",
        }),
    ).rejects.toThrow(expect.objectContaining({ kind: "invalid_request" }));
    expect((await rt.host.store.agents.list()).length).toBe(before);
    // Every child has the home layout.
    const home0 = (await rt.host.store.agents.get(spawned[0]!.agent_id))!.agent_home;
    for (const p of [
      "AGENTS.md",
      "memory/self.md",
      "memory/operator.md",
      "notes",
      "work",
      "skills",
      ".holon/state",
    ])
      expect(existsSync(join(home0, p)), p).toBe(true);
    expect(readFileSync(join(home0, "AGENTS.md"), "utf8")).toContain(".holon/");
    // Stopping the parent stops the children it supervises.
    await rt.req("POST", "/control/agents/main/control", { action: "stop" });
    await waitFor(async () => (await rt!.host.store.tasks.activeForAgent("main")).length === 0, {
      what: "children stopped with the parent",
    });
  }, 30_000);
});

describe("restart safety", () => {
  it("SIGKILL while a child is mid-turn: after restart the child finishes and the parent gets its result once", async () => {
    const home = tempHome();
    const userHome = tempHome("holon-user-");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    let childCalls = 0;
    let parentResults = 0;
    fake.setFallback((req): FakeAnswer => {
      const last = lastItem(req);
      if (agentOf(req) === "main") {
        if (last.text.includes("RESTART PARENT"))
          return reply.tools([
            { name: "SpawnAgent", arguments: { initial_message: "JOB-C: survive" }, call_id: "s1" },
          ]);
        if (last.text.includes("RESULT-C")) {
          parentResults++;
          return reply.text("Got C.");
        }
        return reply.text("Waiting for C.");
      }
      if (jobOf(req) === "JOB-C") {
        childCalls++;
        return childCalls === 1 ? fault.hang() : reply.text("RESULT-C: survived the restart");
      }
      return reply.text("unexpected");
    });
    const env = { HOME: userHome };
    const first = await spawnServe(home, [], env);
    procs.push(first.proc);
    const post = (url: string, auth: Record<string, string>, path: string, body: unknown) =>
      fetch(url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify(body),
      });
    const get = async (url: string, auth: Record<string, string>, path: string) =>
      (await fetch(url + path, { headers: auth })).json() as Promise<any>;
    expect(
      (await post(first.url, first.auth, "/control/agents/main/prompt", { text: "RESTART PARENT" }))
        .status,
    ).toBe(202);
    await waitFor(() => childCalls === 1, { what: "the child to be mid-turn", timeoutMs: 20_000 });
    const taskId = (await get(first.url, first.auth, "/agents/main/tasks")).tasks[0]
      .task_id as string;
    const exited = new Promise((r) => first.proc.once("exit", r));
    first.proc.kill("SIGKILL");
    await exited;

    const second = await spawnServe(home, [], env);
    procs.push(second.proc);
    const done = await waitFor(
      async () => {
        const t = (await get(second.url, second.auth, `/agents/main/tasks/${taskId}`)).task;
        return t.status === "completed" ? t : null;
      },
      { what: "the child to finish after the restart", timeoutMs: 25_000 },
    );
    expect(done.child_supervision.state).toBe("completed");
    await waitFor(() => parentResults === 1, { what: "the parent to see the result" });
    const exited2 = new Promise((r) => second.proc.once("exit", r));
    second.proc.kill("SIGTERM");
    await exited2;
    expect(childCalls).toBe(2);
    expect(parentResults).toBe(1);
    const results = taskResults(home, taskId);
    expect(results).toHaveLength(1);
    expect(results[0]!.text).toContain("RESULT-C");
  }, 60_000);

  it("SIGKILL while the parent is mid-turn: the child's result waits and re-enters once after restart", async () => {
    const home = tempHome();
    const userHome = tempHome("holon-user-");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    let parentHung = 0;
    let parentResults = 0;
    fake.setFallback((req): FakeAnswer => {
      const last = lastItem(req);
      if (agentOf(req) === "main") {
        if (last.text.includes("PARENT-E"))
          return reply.tools([
            { name: "SpawnAgent", arguments: { initial_message: "JOB-E: quick" }, call_id: "s1" },
          ]);
        if (last.type === "function_call_output") {
          parentHung++;
          return fault.hang();
        }
        if (last.text.includes("RESULT-E")) parentResults++;
        return reply.text("Got E.");
      }
      if (jobOf(req) === "JOB-E") return reply.text("RESULT-E: quick result");
      return reply.text("unexpected");
    });
    const env = { HOME: userHome };
    const first = await spawnServe(home, [], env);
    procs.push(first.proc);
    const res = await fetch(first.url + "/control/agents/main/prompt", {
      method: "POST",
      headers: { "content-type": "application/json", ...first.auth },
      body: JSON.stringify({ text: "PARENT-E" }),
    });
    expect(res.status).toBe(202);
    const get = async (url: string, auth: Record<string, string>, path: string) =>
      (await fetch(url + path, { headers: auth })).json() as Promise<any>;
    const task = await waitFor(
      async () => {
        const t = (await get(first.url, first.auth, "/agents/main/tasks")).tasks[0];
        return t?.status === "completed" && parentHung === 1 ? t : null;
      },
      { what: "the child to finish while the parent is mid-turn", timeoutMs: 20_000 },
    );
    const exited = new Promise((r) => first.proc.once("exit", r));
    first.proc.kill("SIGKILL");
    await exited;
    const second = await spawnServe(home, [], env);
    procs.push(second.proc);
    await waitFor(() => parentResults === 1, {
      what: "the result to re-enter the parent",
      timeoutMs: 20_000,
    });
    const exited2 = new Promise((r) => second.proc.once("exit", r));
    second.proc.kill("SIGTERM");
    await exited2;
    expect(parentResults).toBe(1);
    expect(taskResults(home, task.task_id)).toHaveLength(1);
  }, 60_000);
});
