// Skill discovery over the three scopes: within a scope only the first existing root counts,
// the user scope is the default agent's alone, and a malformed SKILL.md is skipped with a
// warning instead of failing anything.
import { afterAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupHomes, tempHome } from "./helpers/home.ts";
import { writeFiles } from "./helpers/git-repo.ts";
import { discoverSkills } from "../src/context/skills.ts";
import { MAX_FRONT_MATTER_BYTES } from "../src/context/front-matter.ts";

afterAll(() => cleanupHomes());

const skill = (name: string, description = `${name} does things`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n\nBody of ${name}.\n`;

/** A user home, an agent home and a workspace, each with skills in several compatible roots. */
function layout() {
  const user = tempHome("holon-user-");
  const agent = tempHome("holon-agent-");
  const ws = tempHome("holon-ws-");
  writeFiles(user, {
    // .agents/skills is absent: .codex wins over .claude.
    ".codex/skills/u-codex/SKILL.md": skill("u-codex"),
    ".claude/skills/u-claude/SKILL.md": skill("u-claude"),
  });
  writeFiles(agent, {
    "skills/a-plain/SKILL.md": skill("a-plain"),
    ".agents/skills/a-dot/SKILL.md": skill("a-dot"),
  });
  writeFiles(ws, {
    ".agents/skills/w-agents/SKILL.md": skill("w-agents"),
    ".agents/skills/w-agents/scripts/run.sh": "echo hi\n",
    ".claude/skills/w-claude/SKILL.md": skill("w-claude"),
    ".agents/skills/not-a-skill/README.md": "no SKILL.md here\n",
  });
  return { user, agent, ws };
}

describe("skill discovery", () => {
  const { user, agent, ws } = layout();
  const table: {
    what: string;
    userScope: boolean;
    workspace: string | null;
    skills: string[];
    roots: Record<string, string | null>;
  }[] = [
    {
      what: "default agent in a workspace: all three scopes, first root of each",
      userScope: true,
      workspace: ws,
      skills: ["user:u-codex", "agent:a-plain", "workspace:w-agents"],
      roots: {
        user: join(user, ".codex/skills"),
        agent: join(agent, "skills"),
        workspace: join(ws, ".agents/skills"),
      },
    },
    {
      what: "named agent: no user scope",
      userScope: false,
      workspace: ws,
      skills: ["agent:a-plain", "workspace:w-agents"],
      roots: { agent: join(agent, "skills"), workspace: join(ws, ".agents/skills") },
    },
    {
      what: "agent at home: no workspace scope",
      userScope: true,
      workspace: null,
      skills: ["user:u-codex", "agent:a-plain"],
      roots: { user: join(user, ".codex/skills"), agent: join(agent, "skills") },
    },
    {
      what: "a workspace without skill roots",
      userScope: false,
      workspace: tempHome("holon-empty-"),
      skills: ["agent:a-plain"],
      roots: { agent: join(agent, "skills"), workspace: null },
    },
  ];
  for (const row of table) {
    it(row.what, () => {
      const cat = discoverSkills({
        userHome: user,
        agentHome: agent,
        workspaceAnchor: row.workspace,
        userScope: row.userScope,
      });
      expect(cat.skills.map((s) => s.skill_id)).toEqual(row.skills);
      expect(Object.fromEntries(cat.roots.map((r) => [r.scope, r.root]))).toEqual(row.roots);
      expect(cat.warnings).toEqual([]);
    });
  }

  it("metadata only: name, description and the SKILL.md path", () => {
    const cat = discoverSkills({
      userHome: user,
      agentHome: agent,
      workspaceAnchor: ws,
      userScope: false,
    });
    expect(cat.skills.find((s) => s.name === "w-agents")).toEqual({
      skill_id: "workspace:w-agents",
      name: "w-agents",
      description: "w-agents does things",
      scope: "workspace",
      dir: join(ws, ".agents/skills/w-agents"),
      entrypoint_path: join(ws, ".agents/skills/w-agents/SKILL.md"),
    });
  });

  it("skips malformed SKILL.md files with a warning", () => {
    const home = tempHome("holon-bad-");
    writeFiles(home, {
      "skills/good/SKILL.md": skill("good"),
      "skills/no-front-matter/SKILL.md": "# Just a heading\n",
      "skills/no-description/SKILL.md": "---\nname: no-description\n---\n",
      "skills/bad-name/SKILL.md": skill("../escape"),
    });
    writeFileSync(
      join(home, "skills/good/../huge.md"),
      "", // not a skill directory: ignored silently
    );
    // The cap is on the front matter; a long body is never read for the catalog.
    writeFiles(home, {
      "skills/huge/SKILL.md": skill("huge", "x".repeat(MAX_FRONT_MATTER_BYTES)),
      "skills/long-body/SKILL.md": skill("long-body") + "x".repeat(4 * MAX_FRONT_MATTER_BYTES),
    });
    writeFiles(home, { "skills/binary/SKILL.md": "---\nname: binary\ndescription: b\n---\n\0\0" });
    const cat = discoverSkills({
      userHome: tempHome(),
      agentHome: home,
      workspaceAnchor: null,
      userScope: false,
    });
    expect(cat.skills.map((s) => s.name)).toEqual(["good", "long-body"]);
    const warned = cat.warnings.join("\n");
    for (const bad of ["no-front-matter", "no-description", "bad-name", "huge", "binary"]) {
      expect(warned).toContain(join(home, "skills", bad, "SKILL.md"));
    }
    expect(warned).toContain("binary content");
    expect(warned).toContain(`front matter larger than ${MAX_FRONT_MATTER_BYTES} bytes`);
  });
});
