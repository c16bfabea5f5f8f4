// Skills through the product: the catalog reaches the prompt without bodies, a command that
// reads a SKILL.md or runs one of its scripts activates the skill (skill_activated with its
// load_reason), a completed turn promotes it to session_active, a restart restores it; and
// `holon skills install|list|uninstall` from a path and from a git tree URL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, existsSync, statSync } from "node:fs";
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
import { git, gitRepo, writeFiles } from "./helpers/git-repo.ts";
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

async function start(home: string, userHome: string): Promise<TestRuntime> {
  const rt = await startRuntime({
    env: { ...process.env, HOLON_HOME: home, HOME: userHome },
    home,
  });
  runtimes.push(rt);
  return rt;
}

async function prompt(rt: TestRuntime, text: string): Promise<void> {
  const host = rt.host;
  const before = (await host.store.messages.withStatus("main", "processed")).length;
  expect((await rt.req("POST", "/control/agents/main/prompt", { text })).status).toBe(202);
  await waitFor(
    async () =>
      (await host.store.messages.withStatus("main", "processed")).length > before &&
      (await host.agents.get("main")).status !== "awake_running",
    { what: "the prompt to be processed", timeoutMs: 30_000 },
  );
}

const skillMd = (name: string, description: string, body: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`;

describe("skill activation", () => {
  it("catalog in the prompt without bodies; activation by read and by script; promotion and restore", async () => {
    const home = tempHome();
    const userHome = tempHome("holon-user-");
    writeFiles(userHome, {
      ".agents/skills/notes/SKILL.md": skillMd("notes", "Keep tidy notes", "NOTES-BODY-MARKER"),
    });
    const repo = gitRepo({
      ".agents/skills/deploy/SKILL.md": skillMd(
        "deploy",
        "Ship the service safely",
        "DEPLOY-BODY-MARKER: run the checks first.",
      ),
      ".agents/skills/lint/SKILL.md": skillMd("lint", "Lint the code", "LINT-BODY-MARKER"),
      ".agents/skills/lint/scripts/check.sh": "echo lint-ok\n",
    });
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    let rt = await start(home, userHome);
    await rt.host.services.workspaces.use("main", { path: repo }, "operator");

    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([
        {
          name: "ExecCommand",
          arguments: { cmd: "cat .agents/skills/deploy/SKILL.md" },
          call_id: "read",
        },
      ]),
      reply.tools([
        {
          name: "ExecCommandBatch",
          arguments: { items: [{ cmd: "sh .agents/skills/lint/scripts/check.sh" }] },
          call_id: "script",
        },
      ]),
      reply.text("Deployed."),
    );
    await prompt(rt, "deploy it");
    const first = JSON.stringify(fake.requests[before]!.body);
    expect(first).toContain("Ship the service safely");
    expect(first).toContain(join(repo, ".agents/skills/deploy/SKILL.md"));
    expect(first).toContain("Keep tidy notes"); // the default agent sees the user scope
    expect(first).not.toContain("DEPLOY-BODY-MARKER");
    expect(first).not.toContain("NOTES-BODY-MARKER");
    expect(first).not.toContain("LINT-BODY-MARKER");

    const activated = (await rt.host.store.events.after("main", 0, 10_000))
      .filter((e: any) => e.type === "skill_activated")
      .map((e: any) => e.payload);
    expect(activated).toEqual([
      expect.objectContaining({
        skill_ids: ["workspace:deploy"],
        skill_name: "deploy",
        load_reason: "read_skill_md",
        path: join(repo, ".agents/skills/deploy/SKILL.md"),
        entrypoint_path: join(repo, ".agents/skills/deploy/SKILL.md"),
        scope: "workspace",
      }),
      expect.objectContaining({
        skill_ids: ["workspace:lint"],
        load_reason: "run_skill_script",
        path: join(repo, ".agents/skills/lint/scripts/check.sh"),
        entrypoint_path: join(repo, ".agents/skills/lint/SKILL.md"),
      }),
    ]);
    const states = async () =>
      Object.fromEntries(
        (await rt.host.services.skills.activations("main")).map((a) => [a.name, a.state]),
      );
    expect(await states()).toEqual({ deploy: "session_active", lint: "session_active" });

    // After a restart the session's skills come back as restored and the prompt says so.
    await rt.close();
    runtimes.splice(runtimes.indexOf(rt), 1);
    rt = await start(home, userHome);
    expect(await states()).toEqual({ deploy: "restored", lint: "restored" });
    const before2 = fake.requests.length;
    fake.enqueue(reply.text("ok"));
    await prompt(rt, "anything else?");
    expect(JSON.stringify(fake.requests[before2]!.body)).toContain("deploy (workspace, restored)");

    // In an isolated worktree, workspace skills still come from the repository itself.
    const iso = await rt.host.services.workspaces.use(
      "main",
      { path: repo, mode: "isolated" },
      "operator",
    );
    const inWorktree = await rt.req("GET", "/agents/main/skills");
    expect(inWorktree.json.roots.find((r: any) => r.scope === "workspace").root).toBe(
      join(repo, ".agents/skills"),
    );
    expect(iso.execution_root).not.toBe(repo);

    // A named agent does not see the user's own skill library.
    await rt.req("POST", "/control/agents/helper/create", {});
    const named = await rt.req("GET", "/agents/helper/skills");
    expect(named.json.skills.map((s: any) => s.name)).toEqual([]);
    expect(named.json.roots.map((r: any) => r.scope)).toEqual(["agent"]);
  }, 90_000);
});

describe("holon skills install | list | uninstall", () => {
  it("installs from a path and from a git tree URL, keeps file modes, refuses duplicates", async () => {
    const home = tempHome();
    const userHome = tempHome("holon-user-");
    const rt = await start(home, userHome);
    const env = { HOLON_HOME: home, HOME: userHome };
    const src = tempHome("holon-skill-src-");
    writeFiles(src, {
      "my-skill/SKILL.md": skillMd("my-skill", "Does my thing", "body"),
      "my-skill/scripts/go.sh": "echo go\n",
      "my-skill/private.txt": "p\n",
    });
    chmodSync(join(src, "my-skill/scripts/go.sh"), 0o755);
    chmodSync(join(src, "my-skill/private.txt"), 0o640);

    const installed = await runCli(["skills", "install", join(src, "my-skill")], { env });
    expect(installed.code, installed.stderr).toBe(0);
    const dest = join(userHome, ".agents/skills/my-skill");
    expect(installed.stdout).toContain(`installed my-skill (user) at ${dest}`);
    expect(statSync(join(dest, "scripts/go.sh")).mode & 0o777).toBe(0o755);
    expect(statSync(join(dest, "private.txt")).mode & 0o777).toBe(0o640);

    const again = await runCli(["skills", "install", join(src, "my-skill")], { env });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("already installed");

    const list = await runCli(["skills", "list"], { env });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("my-skill [user] Does my thing");

    // --remote: a tree URL served by a local bare repository, installed for one agent.
    const upstream = gitRepo({
      "skills/remote-skill/SKILL.md": skillMd("remote-skill", "From afar", "body"),
      "README.md": "repo\n",
    });
    const bare = join(tempHome("holon-bare-"), "skills.git");
    git(upstream, "clone", "-q", "--bare", upstream, bare);
    const url = `file://${bare}/tree/main/skills/remote-skill`;
    const remote = await runCli(["skills", "install", "--remote", url, "--agent", "main"], {
      env,
    });
    expect(remote.code, remote.stderr).toBe(0);
    const agentHome = (await rt.host.agents.get("main")).agent_home;
    expect(existsSync(join(agentHome, "skills/remote-skill/SKILL.md"))).toBe(true);
    expect(existsSync(join(agentHome, "skills/remote-skill/.git"))).toBe(false);
    const listed = await runCli(["skills", "list", "--agent", "main", "--json"], { env });
    expect(JSON.parse(listed.stdout).skills.map((s: any) => s.skill_id)).toEqual([
      "user:my-skill",
      "agent:remote-skill",
    ]);
    const missing = await runCli(
      ["skills", "install", "--remote", `file://${bare}/tree/main/skills/nope`],
      { env },
    );
    expect(missing.code).not.toBe(0);
    const escape = await runCli(
      ["skills", "install", "--remote", `file://${bare}/tree/main/../../etc`],
      { env },
    );
    expect(escape.code).not.toBe(0);

    const removed = await runCli(["skills", "uninstall", "my-skill"], { env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(join(src, "my-skill/SKILL.md"))).toBe(true);
    const bad = await runCli(["skills", "uninstall", "../my-skill"], { env });
    expect(bad.code).not.toBe(0);
  }, 90_000);

  it("holon workspace attach | list | exit | detach | worktrees", async () => {
    const home = tempHome();
    const rt = await start(home, tempHome("holon-user-"));
    const env = { HOLON_HOME: home };
    const repo = gitRepo({ "x.txt": "x\n" });
    const attach = await runCli(["workspace", "attach", "main", repo], { env });
    expect(attach.code, attach.stderr).toBe(0);
    expect(attach.stdout).toMatch(/^attached: ws_\w+ \(git\) /);
    const wsId = /attached: (ws_\w+)/.exec(attach.stdout)![1]!;
    await rt.host.services.workspaces.use(
      "main",
      { workspace_id: wsId, mode: "isolated" },
      "operator",
    );
    const list = await runCli(["workspace", "list", "main"], { env });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(`* ${wsId}`);
    expect(list.stdout).toMatch(
      /execution root: .*execution-roots.* \(isolated, git_worktree_root\)/,
    );
    expect(list.stdout).toMatch(/worktree: .* on holon\/work-/);
    const wt = await runCli(["workspace", "worktrees", "main"], { env });
    expect(wt.stdout).toMatch(/active\s+holon\/work-/);
    const exit = await runCli(["workspace", "exit", "main"], { env });
    expect(exit.code, exit.stderr).toBe(0);
    expect(exit.stdout).toContain("back in agent_home");
    expect(exit.stdout).toContain("removed");
    const detach = await runCli(["workspace", "detach", "main", wsId], { env });
    expect(detach.code, detach.stderr).toBe(0);
    const refused = await runCli(["workspace", "detach", "main", "agent_home"], { env });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("cannot be detached");
  }, 60_000);
});
