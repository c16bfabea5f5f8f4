// Agent homes, templates and removal as an operator meets them: `holon agent create
// --template`, `holon agent home`, list/status/archive/delete through the real CLI against
// a real `holon serve`, and template resolution (id, absolute path, git tree URL, broken
// templates, a diverged builtin) against an in-process host with real HTTP.
import { openRecords } from "./helpers/raw-store.ts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import {
  cleanupHomes,
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
  type TestRuntime,
} from "./helpers/home.ts";
import { git, gitRepo } from "./helpers/git-repo.ts";
import { BUILTIN_TEMPLATES, REQUIRED_HOME_GUIDANCE, treeHash } from "../src/context/templates.ts";

const LAYOUT = [
  "AGENTS.md",
  "memory/self.md",
  "memory/operator.md",
  "notes",
  "work",
  "skills",
  ".holon/state",
  ".holon/ledger",
  ".holon/indexes",
  ".holon/cache",
];

let rt: TestRuntime | undefined;
afterEach(async () => {
  await rt?.close();
  rt = undefined;
});
afterAll(() => cleanupHomes());

async function runtime(userHome: string, home = tempHome()) {
  rt = await startRuntime({ home, env: { ...process.env, HOME: userHome, HOLON_HOME: home } });
  return rt;
}

function skillDir(name: string): string {
  const dir = join(tempHome("holon-skill-"), name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "SKILL.md"),
    `---\nname: ${name}\ndescription: a test skill\n---\nUse it well.\n`,
  );
  return dir;
}

describe("templates", () => {
  it("a template id: builtin templates are seeded and give the agent its AGENTS.md and provenance", async () => {
    const userHome = tempHome("holon-user-");
    const r = await runtime(userHome);
    for (const id of BUILTIN_TEMPLATES)
      expect(existsSync(join(userHome, ".agents/templates", id, "AGENTS.md"))).toBe(true);
    const created = await r.req("POST", "/control/agents/reviewer/create", {
      template: "holon-developer",
    });
    expect(created.status).toBe(201);
    const home = created.json.agent.agent_home as string;
    for (const p of LAYOUT) expect(existsSync(join(home, p)), p).toBe(true);
    const agentsMd = readFileSync(join(home, "AGENTS.md"), "utf8");
    expect(agentsMd).toContain("software developer agent");
    expect(agentsMd).toContain(REQUIRED_HOME_GUIDANCE.trim().split("\n")[0]);
    expect(statSync(join(home, "AGENTS.md")).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, ".holon")).mode & 0o777).toBe(0o700);
    const provenance = JSON.parse(readFileSync(join(home, ".holon/state/template.json"), "utf8"));
    expect(provenance).toMatchObject({ template: "holon-developer", source_kind: "template_id" });
    const unknown = await r.req("POST", "/control/agents/other/create", { template: "nope" });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.kind).toBe("template_not_found");
    const bad = await r.req("POST", "/control/agents/other/create", { template: "../etc" });
    expect(bad.status).toBe(400);
    expect(bad.json.error.kind).toBe("invalid_template");
    expect((await r.req("GET", "/agents/other/status")).status).toBe(404);
  });

  it("an absolute directory with skills.json installs its skills through the installer", async () => {
    const userHome = tempHome("holon-user-");
    const r = await runtime(userHome);
    const tpl = tempHome("holon-tpl-");
    writeFileSync(join(tpl, "AGENTS.md"), "# Ops\n\nYou keep the lights on.\n");
    writeFileSync(
      join(tpl, "skills.json"),
      JSON.stringify({ skill_refs: [{ kind: "local", path: skillDir("pager") }] }),
    );
    const created = await r.req("POST", "/control/agents/ops/create", { template: tpl });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const home = created.json.agent.agent_home as string;
    expect(readFileSync(join(home, "AGENTS.md"), "utf8")).toContain("keep the lights on");
    expect(existsSync(join(home, "skills/pager/SKILL.md"))).toBe(true);
    const skills = await r.req("GET", "/agents/ops/skills");
    expect(skills.json.skills.map((s: any) => s.name)).toContain("pager");
  });

  it("a git tree URL (a local bare repository standing in for GitHub)", async () => {
    const userHome = tempHome("holon-user-");
    const r = await runtime(userHome);
    const repo = gitRepo({
      "templates/triage/AGENTS.md": "# Triage\n\nSort incoming issues.\n",
      "README.md": "templates\n",
    });
    const bare = join(tempHome("holon-bare-"), "tpl.git");
    git(repo, "clone", "-q", "--bare", repo, bare);
    const url = `file://${bare}/tree/main/templates/triage`;
    const created = await r.req("POST", "/control/agents/triage/create", { template: url });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const home = created.json.agent.agent_home as string;
    expect(readFileSync(join(home, "AGENTS.md"), "utf8")).toContain("Sort incoming issues");
    const provenance = JSON.parse(readFileSync(join(home, ".holon/state/template.json"), "utf8"));
    expect(provenance).toMatchObject({ source_kind: "github_url", template: url });
    const missing = await r.req("POST", "/control/agents/t2/create", {
      template: `file://${bare}/tree/main/templates/none`,
    });
    expect(missing.status).toBe(404);
    expect(missing.json.error.kind).toBe("template_not_found");
  });

  it("a broken template (no AGENTS.md, bad skills.json, missing skill) leaves no half-made agent", async () => {
    const userHome = tempHome("holon-user-");
    const r = await runtime(userHome);
    const agentsDir = join(r.home, "agents");
    const before = readdirSync(agentsDir).filter((n) => !n.startsWith("."));
    const noAgentsMd = tempHome("holon-tpl-");
    writeFileSync(join(noAgentsMd, "skills.json"), '{"skill_refs": []}');
    const badJson = tempHome("holon-tpl-");
    writeFileSync(join(badJson, "AGENTS.md"), "# X\n");
    writeFileSync(join(badJson, "skills.json"), "{not json");
    const relRef = tempHome("holon-tpl-");
    writeFileSync(join(relRef, "AGENTS.md"), "# X\n");
    writeFileSync(
      join(relRef, "skills.json"),
      JSON.stringify({ skill_refs: [{ kind: "local", path: "relative/skill" }] }),
    );
    const goneSkill = tempHome("holon-tpl-");
    writeFileSync(join(goneSkill, "AGENTS.md"), "# X\n");
    writeFileSync(
      join(goneSkill, "skills.json"),
      JSON.stringify({
        skill_refs: [
          { kind: "local", path: skillDir("fine") },
          { kind: "local", path: "/nonexistent/skill" },
        ],
      }),
    );
    for (const tpl of [noAgentsMd, badJson, relRef, goneSkill]) {
      const res = await r.req("POST", "/control/agents/broken/create", { template: tpl });
      expect(res.status, tpl).toBe(422);
      expect(res.json.error.kind).toBe("template_invalid");
      expect((await r.req("GET", "/agents/broken/status")).status).toBe(404);
    }
    expect(readdirSync(agentsDir).filter((n) => !n.startsWith("."))).toEqual(before);
    expect(readdirSync(join(agentsDir, ".staging"))).toEqual([]);
  });

  it("a diverged builtin is never overwritten; an unmodified one is refreshed; main's AGENTS.md is kept", async () => {
    const userHome = tempHome("holon-user-");
    const home = tempHome();
    let r = await runtime(userHome, home);
    const mainMd = join((await r.host.agents.get("main")).agent_home, "AGENTS.md");
    expect(readFileSync(mainMd, "utf8")).toContain("general-purpose Holon agent");
    await r.close();
    rt = undefined;
    const dir = join(userHome, ".agents/templates");
    // holon-default: edited by the user (diverged). holon-developer: an older Holon copy.
    writeFileSync(join(dir, "holon-default/AGENTS.md"), "# Mine\n");
    writeFileSync(join(dir, "holon-developer/AGENTS.md"), "# Old shipped text\n");
    const managed = JSON.parse(readFileSync(join(dir, ".holon-builtin.json"), "utf8"));
    managed["holon-developer"] = treeHash(join(dir, "holon-developer"));
    writeFileSync(join(dir, ".holon-builtin.json"), JSON.stringify(managed));
    writeFileSync(mainMd, "# Main, edited by the operator\n");
    r = await runtime(userHome, home);
    expect(readFileSync(join(dir, "holon-default/AGENTS.md"), "utf8")).toBe("# Mine\n");
    expect(readFileSync(join(dir, "holon-developer/AGENTS.md"), "utf8")).toContain(
      "software developer agent",
    );
    expect(readFileSync(mainMd, "utf8")).toBe("# Main, edited by the operator\n");
    await r.close();
    rt = undefined;
    // A default agent whose AGENTS.md is missing gets the (user's) holon-default.
    unlinkSync(mainMd);
    r = await runtime(userHome, home);
    expect(readFileSync(mainMd, "utf8")).toContain("# Mine");
    await r.close();
    rt = undefined;
    // A start that seeds nothing new leaves the record as it is (it used to rewrite it on
    // every start, every `holon run` included): written here in another layout, it stays so.
    const record = join(dir, ".holon-builtin.json");
    const compact = JSON.stringify(JSON.parse(readFileSync(record, "utf8")));
    writeFileSync(record, compact);
    r = await runtime(userHome, home);
    expect(readFileSync(record, "utf8")).toBe(compact);
  });
});

describe("agent plane routes refuse the ugly cases", () => {
  it("control token, ids, sizes, and a default agent that stays", async () => {
    const r = await runtime(tempHome("holon-user-"));
    const none = { authorization: "" };
    for (const [m, path] of [
      ["GET", "/agents/list?all=true"],
      ["GET", "/control/agents/main/home"],
      ["GET", "/control/agents/main/agent"],
      ["POST", "/control/agents/main/archive"],
      ["POST", "/control/agents/main/delete"],
    ] as const) {
      const res = await r.req(m, path, m === "POST" ? {} : undefined, none);
      expect(res.status, path).toBe(401);
    }
    expect((await r.req("GET", "/agents/list")).status).toBe(200); // the public list stays open
    const badId = await r.req("GET", "/control/agents/Not%20An%20Id/home");
    expect(badId.status).toBe(400);
    expect(badId.json.error.kind).toBe("invalid_agent_id");
    const long = await r.req("POST", "/control/agents/x/create", { template: "a".repeat(3000) });
    expect(long.status).toBe(400);
    const extra = await r.req("POST", "/control/agents/main/delete", { force: true, rm: "-rf" });
    expect(extra.status).toBe(400);
    for (const path of ["/control/agents/main/delete", "/control/agents/main/archive"]) {
      const res = await r.req("POST", path, {});
      expect(res.status).toBe(409);
      expect(res.json.error.kind).toBe("default_agent_protected");
    }
    expect((await r.host.agents.get("main")).status).not.toBe("stopped");
    const unknown = await r.req("POST", "/control/agents/ghost/delete", {});
    expect(unknown.status).toBe(404);
  });
});

describe("holon agent (CLI)", () => {
  let home: string;
  let userHome: string;
  let serve: { proc: ChildProcess; url: string; auth: Record<string, string> };
  const env = () => ({ HOLON_HOME: home, HOME: userHome });
  const cli = (...args: string[]) => runCli(args, { env: env() });

  beforeAll(async () => {
    home = tempHome();
    userHome = tempHome("holon-user-");
    serve = await spawnServe(home, [], { HOME: userHome });
  });
  afterAll(async () => {
    serve.proc.kill("SIGTERM");
    await new Promise((r) => serve.proc.once("exit", r));
  });

  it("create --template, home, list, status, archive, delete", async () => {
    const created = await cli("agent", "create", "reviewer", "--template", "holon-developer");
    expect(created.code, created.stderr).toBe(0);
    const homeOut = await cli("agent", "home", "reviewer");
    expect(homeOut.code).toBe(0);
    const dir = homeOut.stdout.trim();
    expect(dir).toBe(join(home, "agents", "reviewer"));
    expect(readdirSync(dir).sort()).toEqual(
      [".holon", "AGENTS.md", "memory", "notes", "skills", "work"].sort(),
    );
    const list = JSON.parse((await cli("agent", "list", "--json")).stdout);
    expect(list.map((a: any) => a.agent_id)).toEqual(["main", "reviewer"]);
    const status = JSON.parse((await cli("agent", "status", "reviewer", "--json")).stdout);
    // AgentGet (the operator's `agent get`) and the status view agree on identity.
    const got = JSON.parse((await cli("agent", "get", "reviewer", "--json")).stdout);
    for (const k of ["agent_id", "kind", "visibility", "ownership", "profile_preset", "agent_home"])
      expect(got.identity[k], k).toEqual(status[k]);
    expect(got.identity.lineage_parent_agent_id).toBeNull();

    const archived = await cli("agent", "archive", "reviewer");
    expect(archived.code, archived.stderr).toBe(0);
    const after = JSON.parse((await cli("agent", "list", "--json")).stdout);
    expect(after.map((a: any) => a.agent_id)).toEqual(["main"]);
    const all = JSON.parse((await cli("agent", "list", "--all", "--json")).stdout);
    expect(all.find((a: any) => a.agent_id === "reviewer")).toMatchObject({
      archived: true,
      status: "stopped",
    });
    expect(existsSync(dir)).toBe(true); // archive keeps the data
    // Starting an archived agent brings it back to the list; archive it again to go on.
    expect((await cli("agent", "start", "reviewer")).code).toBe(0);
    const back = JSON.parse((await cli("agent", "list", "--json")).stdout);
    expect(back.map((a: any) => a.agent_id)).toEqual(["main", "reviewer"]);
    expect((await cli("agent", "archive", "reviewer")).code).toBe(0);

    const unconfirmed = await cli("agent", "delete", "reviewer");
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain("--yes");
    const deleted = await cli("agent", "delete", "reviewer", "--yes");
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(existsSync(dir)).toBe(false);
    const gone = await cli("agent", "status", "reviewer");
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("unknown_agent");
    // Its audit events stay in the store, beside a tombstone; its live row is gone.
    const db = openRecords(home);
    try {
      const tomb = db
        .prepare("SELECT data FROM agent_tombstones WHERE agent_id = 'reviewer'")
        .all() as { data: string }[];
      expect(tomb).toHaveLength(1);
      expect(JSON.parse(tomb[0]!.data)).toMatchObject({ agent_id: "reviewer", kind: "named" });
      const events = db
        .prepare("SELECT COUNT(*) AS n FROM events WHERE agent_id = 'reviewer'")
        .get() as { n: number };
      expect(events.n).toBeGreaterThan(3);
      const row = db.prepare("SELECT 1 FROM agents WHERE agent_id = 'reviewer'").get();
      expect(row).toBeUndefined();
    } finally {
      db.close();
    }
    const main = await cli("agent", "delete", "main", "--yes");
    expect(main.code).toBe(1);
    expect(main.stderr).toContain("default_agent_protected");
  });

  it("delete refuses while a task runs, and --force stops it, cancels timers and revokes the trigger", async () => {
    expect((await cli("agent", "create", "busy")).code).toBe(0);
    const post = (path: string, body: unknown) =>
      fetch(serve.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...serve.auth },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    const task = await post("/control/agents/busy/tasks", { cmd: "sleep 30" });
    expect(task.status).toBe(201);
    const timer = await post("/control/agents/busy/timers", {
      summary: "check later",
      duration_ms: 3_600_000,
    });
    expect(timer.status, JSON.stringify(timer.json)).toBeLessThan(300);
    const trigger = await fetch(serve.url + "/control/agents/busy/external-trigger", {
      headers: serve.auth,
    });
    const refused = await cli("agent", "delete", "busy", "--yes");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("agent_busy");
    const forced = await cli("agent", "delete", "busy", "--yes", "--force", "--json");
    expect(forced.code, forced.stderr).toBe(0);
    const r = JSON.parse(forced.stdout);
    expect(r.stopped_task_ids).toEqual([task.json.task.task_id]);
    expect(r.cancelled_timer_ids).toHaveLength(1);
    expect(trigger.status).toBe(200);
    expect(r.revoked_trigger_ids).toHaveLength(1);
    expect((await cli("agent", "status", "busy")).code).toBe(1);
  });
});
