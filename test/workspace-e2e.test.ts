// Workspaces through the whole product with a scripted model: the operator attaches a git
// repository, the model switches to it in isolated mode, patches a file and commits in its
// worktree; the user's checkout stays untouched, the host restarts with the binding intact,
// and going back to agent_home removes the clean worktree while the branch keeps the change.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  cleanupHomes,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import { git, gitRepo } from "./helpers/git-repo.ts";
import {
  reply,
  startFakeProvider,
  type FakeProvider,
  type RecordedRequest,
} from "./fake-provider/server.ts";

let fake: FakeProvider;
const runtimes: TestRuntime[] = [];
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  for (const rt of runtimes.splice(0)) await rt.close().catch(() => {});
  await fake.close();
  cleanupHomes();
});

async function start(home: string): Promise<TestRuntime> {
  const rt = await startRuntime({ env: { ...process.env, HOLON_HOME: home }, home });
  runtimes.push(rt);
  return rt;
}

async function stop(rt: TestRuntime): Promise<void> {
  runtimes.splice(runtimes.indexOf(rt), 1);
  await rt.close();
}

/** Send a prompt and wait until the agent has processed it. */
async function prompt(rt: TestRuntime, text: string): Promise<void> {
  const host = rt.host;
  const before = (await host.store.messages.withStatus("main", "processed")).length;
  const res = await rt.req("POST", "/control/agents/main/prompt", { text });
  expect(res.status).toBe(202);
  await waitFor(
    async () =>
      (await host.store.messages.withStatus("main", "processed")).length > before &&
      (await host.agents.get("main")).status !== "awake_running",
    { what: "the prompt to be processed", timeoutMs: 30_000 },
  );
}

function toolOutputs(req: RecordedRequest): string[] {
  return (req.body.input as any[])
    .filter((i) => i.type === "function_call_output" || i.type === "custom_tool_call_output")
    .map((i) => String(i.output));
}

async function eventsOf(rt: TestRuntime, type: string): Promise<any[]> {
  return (await rt.host.store.events.after("main", 0, 10_000)).filter((e: any) => e.type === type);
}

describe("workspaces end to end", () => {
  it("isolated work in a managed worktree survives a restart and leaves the user's checkout alone", async () => {
    const home = tempHome();
    const repo = gitRepo({ "app.txt": "v1\n", "AGENTS.md": "Repository rule: be careful.\n" });
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    let rt = await start(home);

    const attached = await rt.req("POST", "/control/agents/main/workspaces/attach", { path: repo });
    expect(attached.status, JSON.stringify(attached.json)).toBe(200);
    const wsId = attached.json.workspace.workspace_id as string;
    expect(attached.json.workspace.kind).toBe("git");

    let worktreePath = "";
    let branch = "";
    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([
        {
          name: "UseWorkspace",
          arguments: { workspace_id: wsId, mode: "isolated", isolation_label: "Try It!" },
          call_id: "u1",
        },
      ]),
      (req) => {
        const out = toolOutputs(req).at(-1)!;
        worktreePath = /Execution root: (.*)/.exec(out)![1]!;
        branch = /Branch: (\S+)/.exec(out)![1]!;
        return reply.tools([
          {
            name: "ApplyPatch",
            arguments: {
              patch: "--- a/app.txt\n+++ b/app.txt\n@@ -1 +1 @@\n-v1\n+v2\n",
            },
            call_id: "p1",
          },
          {
            name: "ExecCommand",
            arguments: { cmd: "git add -A && git commit -qm 'v2' && pwd && cat app.txt" },
            call_id: "x1",
          },
        ]);
      },
      reply.text("Changed app.txt on my branch."),
    );
    await prompt(rt, "make app.txt say v2, isolated");
    const sent = fake.requests.slice(before);
    expect(sent).toHaveLength(3);
    const [patched, ran] = toolOutputs(sent[2]!).slice(-2);
    expect(patched).not.toMatch(/error/i);
    expect(ran).toContain(worktreePath);
    expect(ran).toContain("v2");

    expect(branch).toMatch(/^holon\/try-it-/);
    expect(worktreePath.startsWith(join(home, "execution-roots", "git_worktree", wsId))).toBe(true);
    // The user's checkout is untouched; the branch holds the change.
    expect(readFileSync(join(repo, "app.txt"), "utf8")).toBe("v1\n");
    expect(git(repo, "status", "--porcelain")).toBe("");
    expect(git(repo, "rev-parse", "--abbrev-ref", "HEAD")).toBe("main");
    expect(git(repo, "show", `${branch}:app.txt`)).toBe("v2");

    // The agent's binding and the snapshot of the next turn.
    const agent = await rt.host.agents.get("main");
    expect(agent.active_workspace).toMatchObject({
      workspace_id: wsId,
      workspace_anchor: repo,
      execution_root: worktreePath,
      projection_kind: "git_worktree_root",
      mode: "isolated",
      ownership: "session_owned",
    });
    expect(agent.worktree_session).toMatchObject({
      worktree_path: worktreePath,
      worktree_branch: branch,
      original_branch: "main",
    });
    expect(await eventsOf(rt, "worktree_created")).toHaveLength(1);

    // Restart: the binding is still there, and the next turn starts in the worktree.
    await stop(rt);
    rt = await start(home);
    const before2 = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "pwd" }, call_id: "x2" }]),
      reply.tools([
        { name: "UseWorkspace", arguments: { workspace_id: "agent_home" }, call_id: "u2" },
      ]),
      reply.text("Back home."),
    );
    await prompt(rt, "where are you?");
    const sent2 = fake.requests.slice(before2);
    expect(toolOutputs(sent2[1]!).at(-1)).toContain(worktreePath);
    const leaving = toolOutputs(sent2[2]!).at(-1)!;
    expect(leaving).toContain("Active workspace: agent_home");
    expect(leaving).toContain(`branch ${branch} keeps its 1 commit(s)`);

    // The turn after the restart was built with the worktree as its root and the repository's
    // own AGENTS.md (the anchor), recorded with its execution snapshot.
    const built = (await eventsOf(rt, "turn_context_built")).at(-1);
    expect(built.payload.execution_root).toBe(worktreePath);
    expect(built.payload.loaded_agents_md).toContainEqual({
      scope: "workspace",
      path: join(repo, "AGENTS.md"),
      kind: "AGENTS.md",
    });
    expect(built.payload.execution_snapshot).toMatchObject({
      workspace_id: wsId,
      workspace_anchor: repo,
      execution_root: worktreePath,
      projection_kind: "git_worktree_root",
      // host_bwrap where bubblewrap confines commands (the sandbox's own tests cover which)
      policy: {
        backend: rt.host.services.sandbox.probe().available ? "host_bwrap" : "host_local",
        enforcement: { runtime_resolved_paths: "enforced" },
      },
    });
    expect(JSON.stringify(sent2[0]!.body)).toContain("Repository rule: be careful.");

    // Leaving removed the clean worktree but kept the branch with its commit.
    expect(existsSync(worktreePath)).toBe(false);
    expect(git(repo, "show", `${branch}:app.txt`)).toBe("v2");
    expect((await eventsOf(rt, "worktree_removed")).at(-1).payload).toMatchObject({
      path: worktreePath,
      branch_deleted: false,
    });
    const after = await rt.host.agents.get("main");
    expect(after.active_workspace?.workspace_id).toBe("agent_home");
    expect(after.worktree_session).toBeUndefined();
    const listing = await rt.req("GET", "/agents/main/workspaces");
    expect(listing.json.active.execution_root).toBe(after.agent_home);
    expect(listing.json.attached.map((a: any) => a.workspace_id)).toEqual(["agent_home", wsId]);
    expect(listing.json.worktrees).toEqual([]);
  }, 90_000);

  it("leaving a worktree with uncommitted changes keeps it, reports it, and --clean leaves it", async () => {
    const home = tempHome();
    const repo = gitRepo({ "a.txt": "one\n" });
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await start(home);
    const ws = rt.host.services.workspaces;
    const used = await ws.use(
      "main",
      { path: repo, mode: "isolated", isolation_label: "dirty" },
      "operator",
    );
    expect(used.worktree).toBeDefined();
    const path = used.worktree!.path;
    expect((await rt.host.agents.get("main")).active_workspace?.execution_root).toBe(path);

    // A task started now records where it runs.
    const task = await rt.req("POST", "/control/agents/main/tasks", { cmd: "echo dirty > a.txt" });
    expect(task.status).toBe(201);
    await waitFor(async () => (await rt.host.store.tasks.active()).length === 0, {
      what: "the task to end",
    });
    const record = (await rt.host.store.tasks.forAgent("main", 5))[0]!;
    expect(record.workdir).toBe(path);
    expect(record.execution_snapshot).toMatchObject({
      execution_root: path,
      projection_kind: "git_worktree_root",
      workspace_anchor: repo,
    });

    const exit = await rt.req("POST", "/control/agents/main/workspaces/exit", {});
    expect(exit.status).toBe(200);
    expect(exit.json.left).toMatchObject({ disposition: "retained", changed_files: ["a.txt"] });
    expect(existsSync(join(path, "a.txt"))).toBe(true);
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("one\n");
    expect((await eventsOf(rt, "worktree_retained")).at(-1).payload).toMatchObject({
      path,
      changed_files: ["a.txt"],
    });

    const listed = await rt.req("GET", "/agents/main/worktrees");
    expect(listed.json.worktrees).toHaveLength(1);
    expect(listed.json.worktrees[0]).toMatchObject({
      path,
      status: "retained",
      changed_files: ["a.txt"],
    });
    const cleaned = await rt.req("POST", "/control/agents/main/worktrees/clean", {});
    expect(cleaned.json.removed).toEqual([]);
    expect(cleaned.json.retained[0].path).toBe(path);
    expect(existsSync(path)).toBe(true);
    // The same through the CLI: listed with its changed file, kept by --clean.
    const env = { HOLON_HOME: home };
    const shown = await runCli(["workspace", "worktrees", "main"], { env });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(path);
    expect(shown.stdout).toContain("    a.txt");
    const kept = await runCli(["workspace", "worktrees", "main", "--clean"], { env });
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toBe(`kept     ${path} (${used.worktree!.branch}): a.txt\n`);
    expect(existsSync(path)).toBe(true);

    // Once the change is gone the same clean removes it and its branch.
    git(path, "checkout", "--", "a.txt");
    const cleaned2 = await runCli(["workspace", "worktrees", "main", "--clean", "--json"], { env });
    expect(cleaned2.code, cleaned2.stderr).toBe(0);
    expect(JSON.parse(cleaned2.stdout).removed[0]).toMatchObject({ path, branch_deleted: true });
    expect(existsSync(path)).toBe(false);
    expect(git(repo, "branch", "--list", used.worktree!.branch)).toBe("");
  }, 60_000);

  it("task-owned worktrees: clean ones go with their branch, dirty ones stay and are reported", async () => {
    const home = tempHome();
    const repo = gitRepo({ "f.txt": "x\n" });
    const rt = await start(home);
    const ws = rt.host.services.workspaces;
    const { workspace } = await ws.attach("main", repo);
    const clean = await ws.createTaskWorktree({
      agent_id: "main",
      workspace_id: workspace.workspace_id,
      task_id: "task_a",
    });
    const dirty = await ws.createTaskWorktree({
      agent_id: "main",
      workspace_id: workspace.workspace_id,
      task_id: "task_b",
      label: "child b",
    });
    expect(clean.ownership).toBe("task_owned");
    expect(existsSync(clean.path) && existsSync(dirty.path)).toBe(true);
    // The agent's own binding is not changed by a task's worktree.
    expect((await rt.host.agents.get("main")).active_workspace).toBeUndefined();

    // While their tasks run, cleaning the agent's worktrees leaves them alone.
    expect(await ws.cleanWorktrees("main")).toEqual({ removed: [], retained: [] });
    expect(existsSync(clean.path)).toBe(true);
    git(dirty.path, "rm", "-q", "f.txt");
    expect(await ws.releaseTaskWorktree(clean.worktree_id)).toMatchObject({
      disposition: "removed",
      branch_deleted: true,
    });
    expect(await ws.releaseTaskWorktree(dirty.worktree_id)).toMatchObject({
      disposition: "retained",
      changed_files: ["f.txt"],
    });
    expect(existsSync(clean.path)).toBe(false);
    expect(existsSync(dirty.path)).toBe(true);
    expect(git(repo, "branch", "--list", clean.branch)).toBe("");
    expect((await ws.worktrees("main")).map((w) => w.worktree_id)).toEqual([dirty.worktree_id]);
  }, 60_000);
});
