// Escapes where the runtime resolves paths (ExecCommand workdir, ApplyPatch paths,
// UseWorkspace): `..`, a symlink out of the root, a path naming a file, a deleted workspace;
// the attach policy; detach rules; adopting a user's own git worktree.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import {
  cleanupHomes,
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import { git, gitRepo } from "./helpers/git-repo.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

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

async function failures(rt: TestRuntime): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of (await rt.host.store.events.after("main", 0, 10_000)) as any[]) {
    if (e.type === "tool_execution_failed") out.set(e.payload.call_id, e.payload.tool_error.kind);
  }
  return out;
}

describe("path escapes", () => {
  it("refuses .., symlinks out of the root, a file as a workspace and a deleted workspace", async () => {
    const home = tempHome();
    const root = gitRepo({ "file.txt": "inside\n" });
    const outside = tempHome("holon-outside-");
    writeFileSync(join(outside, "secret.txt"), "secret\n");
    symlinkSync(outside, join(root, "out-link"));
    const doomed = tempHome("holon-doomed-");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await start(home);
    const ws = rt.host.services.workspaces;
    const doomedId = (await ws.attach("main", doomed)).workspace.workspace_id;
    await ws.use("main", { path: root }, "operator");
    rmSync(doomed, { recursive: true });

    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([
        { name: "ExecCommand", arguments: { cmd: "pwd", workdir: ".." }, call_id: "dotdot" },
        { name: "ExecCommand", arguments: { cmd: "pwd", workdir: "out-link" }, call_id: "link" },
        {
          name: "ApplyPatch",
          arguments: { patch: "--- /dev/null\n+++ b/../escaped.txt\n@@ -0,0 +1 @@\n+x\n" },
          call_id: "patch-dotdot",
        },
        {
          name: "ApplyPatch",
          arguments: {
            patch:
              "--- a/out-link/secret.txt\n+++ b/out-link/secret.txt\n@@ -1 +1 @@\n-secret\n+owned\n",
          },
          call_id: "patch-link",
        },
        { name: "UseWorkspace", arguments: { path: "file.txt" }, call_id: "use-file" },
        { name: "UseWorkspace", arguments: { workspace_id: doomedId }, call_id: "use-deleted" },
        { name: "UseWorkspace", arguments: { path: "no/such/dir" }, call_id: "use-missing" },
        {
          name: "UseWorkspace",
          arguments: { path: root, workspace_id: "agent_home" },
          call_id: "use-both",
        },
        { name: "UseWorkspace", arguments: { path: join(home, "agents") }, call_id: "use-state" },
      ]),
      reply.text("All refused."),
    );
    const res = await rt.req("POST", "/control/agents/main/prompt", { text: "try to escape" });
    expect(res.status).toBe(202);
    await waitFor(
      async () =>
        fake.requests.length - before >= 2 &&
        (await rt.host.store.messages.withStatus("main", "processed")).length > 0 &&
        (await rt.host.agents.get("main")).status !== "awake_running",
      { what: "the turn to finish", timeoutMs: 30_000 },
    );
    const f = await failures(rt);
    expect(f.get("dotdot")).toBe("execution_root_violation");
    expect(f.get("link")).toBe("execution_root_violation");
    expect(f.get("patch-dotdot")).toBe("path_escape");
    expect(f.get("patch-link")).toBe("path_escape");
    expect(f.get("use-file")).toBe("workspace_path_not_directory");
    expect(f.get("use-deleted")).toBe("workspace_unavailable");
    expect(f.get("use-missing")).toBe("workspace_path_not_found");
    expect(f.get("use-both")).toBe("invalid_workspace_selector");
    expect(f.get("use-state")).toBe("workspace_path_forbidden");
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("secret\n");
    expect(existsSync(join(root, "..", "escaped.txt"))).toBe(false);
    // Nothing moved: the agent still works in the repository.
    expect((await rt.host.agents.get("main")).active_workspace?.execution_root).toBe(root);
  }, 60_000);
});

describe("attach policy, detach and adoption", () => {
  it("operator_attached: the agent may use only what an operator attached", async () => {
    const home = tempHome();
    const set = await runCli(["config", "set", "workspaces.attach_policy", "operator_attached"], {
      env: { HOLON_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    const repo = gitRepo({ "a.txt": "a\n" });
    mkdirSync(join(repo, "sub"));
    const rt = await start(home);
    const ws = rt.host.services.workspaces;
    await expect(async () => await ws.use("main", { path: repo }, "agent")).rejects.toThrow(
      /attach policy/,
    );
    expect(ws.snapshot(await rt.host.agents.get("main")).policy.attach_policy).toBe(
      "operator_attached",
    );
    await ws.attach("main", repo);
    // A folder inside an attached workspace: the workspace, with cwd there.
    const used = await ws.use("main", { path: join(repo, "sub") }, "agent");
    expect(used).toMatchObject({
      execution_root: repo,
      cwd: join(repo, "sub"),
      attached_now: false,
    });
    // `..` out of it leads to a directory nobody attached.
    await expect(async () => await ws.use("main", { path: "../.." }, "agent")).rejects.toThrow(
      /not inside a workspace attached/,
    );
    // A task records where it runs: the active workspace, its cwd, and the configured policy.
    const started = await rt.req("POST", "/control/agents/main/tasks", { cmd: "pwd" });
    expect(started.status, JSON.stringify(started.json)).toBe(201);
    const task = (await rt.host.store.tasks.get(started.json.task.task_id))!;
    expect(task.workdir).toBe(join(repo, "sub"));
    expect(task.execution_snapshot).toMatchObject({
      workspace_anchor: repo,
      execution_root: repo,
      cwd: join(repo, "sub"),
      policy: {
        attach_policy: "operator_attached",
        // shell_filesystem depends on whether bubblewrap confines here (the sandbox's tests)
        enforcement: { runtime_resolved_paths: "enforced" },
      },
    });
    await rt.host.tasks.waitTerminal(task.id, 10_000);
  });

  it("detach refuses agent_home and the active workspace, succeeds on a vanished path, deletes nothing", async () => {
    const home = tempHome();
    const rt = await start(home);
    const keep = gitRepo({ "keep.txt": "k\n" });
    const gone = tempHome("holon-gone-");
    const a = await rt.req("POST", "/control/agents/main/workspaces/attach", { path: keep });
    const b = await rt.req("POST", "/control/agents/main/workspaces/attach", { path: gone });
    const keepId = a.json.workspace.workspace_id;
    const goneId = b.json.workspace.workspace_id;
    await rt.req("POST", "/control/agents/main/workspaces/use", { workspace_id: keepId });

    const home1 = await rt.req("POST", "/control/agents/main/workspaces/detach", {
      workspace_id: "agent_home",
    });
    expect(home1.status).toBe(409);
    expect(home1.json.error.kind).toBe("workspace_not_detachable");
    const active = await rt.req("POST", "/control/agents/main/workspaces/detach", {
      workspace_id: keepId,
    });
    expect(active.status).toBe(409);
    expect(active.json.error.kind).toBe("workspace_active");
    expect(active.json.error.hint).toContain("holon workspace exit main");

    rmSync(gone, { recursive: true });
    const stale = await rt.req("POST", "/control/agents/main/workspaces/detach", {
      workspace_id: goneId,
    });
    expect(stale.status).toBe(200);
    const unknown = await rt.req("POST", "/control/agents/main/workspaces/detach", {
      workspace_id: goneId,
    });
    expect(unknown.status).toBe(404);

    await rt.req("POST", "/control/agents/main/workspaces/exit", {});
    const detached = await rt.req("POST", "/control/agents/main/workspaces/detach", {
      workspace_id: keepId,
    });
    expect(detached.status).toBe(200);
    expect(readFileSync(join(keep, "keep.txt"), "utf8")).toBe("k\n");
    // The host registry keeps the workspace; only the binding went.
    expect((await rt.host.store.workspaces.get(keepId))?.workspace_anchor).toBe(keep);
    const list = await rt.req("GET", "/agents/main/workspaces");
    expect(list.json.attached.map((w: any) => w.workspace_id)).toEqual(["agent_home"]);
    const relative = await rt.req("POST", "/control/agents/main/workspaces/attach", {
      path: "some/relative",
    });
    expect(relative.status).toBe(400);
    expect(relative.json.error.kind).toBe("invalid_workspace_path");
    // Control routes need the token.
    const anon = await rt.req(
      "POST",
      "/control/agents/main/workspaces/attach",
      { path: keep },
      {
        authorization: "",
      },
    );
    expect(anon.status).toBe(401);
  });

  it("a user's own worktree of an attached repository is adopted under the repository's id", async () => {
    const home = tempHome();
    const rt = await start(home);
    const repo = gitRepo({ "r.txt": "r\n" });
    const wt = join(tempHome("holon-userwt-"), "wt");
    git(repo, "worktree", "add", "-q", "-b", "mine", wt);
    const ws = rt.host.services.workspaces;
    const { workspace } = await ws.attach("main", repo);
    const used = await ws.use("main", { path: wt }, "agent");
    expect(used).toMatchObject({
      workspace_id: workspace.workspace_id,
      workspace_anchor: repo,
      execution_root: wt,
      detected_kind: "existing_git_worktree",
      projection_kind: "git_worktree_root",
      ownership: "external",
    });
    expect(used.guidance).toContain(`workspace_id="${workspace.workspace_id}", mode="isolated"`);
    // Leaving it never removes it: it is not the runtime's.
    await ws.exit("main");
    expect(existsSync(wt)).toBe(true);
  });

  it("holon run --workspace-root and agent creation bind through the active entry", async () => {
    const home = tempHome();
    const rt = await start(home);
    const dir = tempHome("holon-plain-");
    mkdirSync(join(dir, "nested"));
    const created = await rt.req("POST", "/control/agents/helper/create", { workspace_root: dir });
    expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
    const agent = await rt.host.agents.get("helper");
    expect(agent.workspace_root).toBeUndefined();
    expect(agent.active_workspace).toMatchObject({
      workspace_anchor: dir,
      execution_root: dir,
      mode: "direct",
    });
    await rt.host.agents.setCwd("helper", join(dir, "nested"));
    const status = await rt.req("GET", "/agents/helper/status");
    expect(status.json.workspace).toMatchObject({
      workspace_root: dir,
      execution_root: dir,
      cwd: join(dir, "nested"),
    });
  });
});

describe("older records", () => {
  it("a legacy workspace_root/cwd is folded into an attached, active workspace at start", async () => {
    const home = tempHome();
    const dir = tempHome("holon-legacy-");
    mkdirSync(join(dir, "src"));
    let rt = await start(home);
    const agent = await rt.host.agents.get("main");
    // What an older version wrote: the binding as two loose fields.
    await rt.host.store.tx(
      async () =>
        await rt.host.store.agents.put({ ...agent, workspace_root: dir, cwd: join(dir, "src") }),
    );
    await rt.close();
    runtimes.splice(runtimes.indexOf(rt), 1);
    rt = await start(home);
    const folded = await rt.host.agents.get("main");
    expect(folded.workspace_root).toBeUndefined();
    expect(folded.cwd).toBeUndefined();
    expect(folded.active_workspace).toMatchObject({
      workspace_anchor: dir,
      execution_root: dir,
      cwd: join(dir, "src"),
      mode: "direct",
    });
    const list = await rt.host.services.workspaces.list("main");
    expect(list.attached.map((a) => a.workspace_anchor)).toEqual([agent.agent_home, dir]);
  });
});

describe("crash safety", () => {
  it("the active isolated workspace survives SIGKILL of holon serve", async () => {
    const home = tempHome();
    const repo = gitRepo({ "k.txt": "k\n" });
    const first = await spawnServe(home);
    const post = (url: string, auth: Record<string, string>, path: string, body: unknown) =>
      fetch(url + path, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    const used = await post(first.url, first.auth, "/control/agents/main/workspaces/use", {
      path: repo,
      mode: "isolated",
      isolation_label: "crash",
    });
    expect(used.status, JSON.stringify(used.json)).toBe(200);
    first.proc.kill("SIGKILL");
    await new Promise((r) => first.proc.once("exit", r));

    const second = await spawnServe(home);
    try {
      const res = await fetch(`${second.url}/agents/main/workspaces`, { headers: second.auth });
      const listing = (await res.json()) as any;
      expect(listing.active).toMatchObject({
        execution_root: used.json.execution_root,
        mode: "isolated",
        projection_kind: "git_worktree_root",
        workspace_anchor: repo,
      });
      expect(listing.worktree_session.worktree_branch).toBe(used.json.worktree.branch);
      expect(statSync(join(home, "execution-roots")).mode & 0o777).toBe(0o700);
      expect(statSync(join(home, "execution-roots", "git_worktree")).mode & 0o777).toBe(0o700);
    } finally {
      second.proc.kill("SIGTERM");
      await new Promise((r) => second.proc.once("exit", r));
    }
  }, 60_000);
});
