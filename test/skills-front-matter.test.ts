// SKILL.md front matter is YAML: every form a published skill uses reads as YAML says (escaped
// and doubled quotes, continued lines, block scalars, comments), real skills from public
// repositories (test/fixtures/third_party, unmodified) reach the catalog with the right
// descriptions, and hostile front matter (too large, alias bombs, deep nesting, broken YAML)
// skips that one skill with a diagnostic and never throws.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  MAX_FRONT_MATTER_ALIASES,
  MAX_FRONT_MATTER_BYTES,
  parseFrontMatter,
} from "../src/context/front-matter.ts";
import { readSkillMd } from "../src/context/skills.ts";
import {
  cleanupHomes,
  REPO_ROOT,
  runCli,
  startRuntime,
  tempHome,
  type TestRuntime,
} from "./helpers/home.ts";
import { writeFiles } from "./helpers/git-repo.ts";

const FIXTURES = join(REPO_ROOT, "test/fixtures/third_party");

/** The parsed mapping, or the error, of a front matter block. */
function fm(block: string) {
  const r = parseFrontMatter(`---\n${block}\n---\nbody\n`);
  if (r === null) throw new Error("no front matter found");
  return r.ok ? r.data : { error: r.error };
}

describe("front matter is read as YAML", () => {
  const cases: [string, string, Record<string, unknown>][] = [
    [
      "escaped double quotes lose their backslashes",
      'description: "mentions \\"deck,\\" \\"slides\\""',
      { description: 'mentions "deck," "slides"' },
    ],
    [
      "a doubled single quote is one quote",
      "description: 'It''s fine'",
      { description: "It's fine" },
    ],
    [
      "a plain value continued on indented lines is one value",
      "description: first line\n  and the second\n  and the third\nname: x",
      { description: "first line and the second and the third", name: "x" },
    ],
    [
      "a trailing comment is not part of the value",
      "description: does things # not this\nname: x # nor this",
      { description: "does things", name: "x" },
    ],
    [
      "a # without a space before it is text",
      "description: C# and F#",
      { description: "C# and F#" },
    ],
    ["a comment line is skipped", "# about the skill\ndescription: d", { description: "d" }],
    [
      "a folded block joins its lines",
      "description: >\n  one\n  two\n\n  three\n",
      { description: "one two\nthree\n" },
    ],
    [
      "a stripped folded block has no final newline",
      "description: >-\n  one\n  two",
      { description: "one two" },
    ],
    [
      "a literal block keeps its lines",
      "description: |-\n  one\n    indented\n  three",
      { description: "one\n  indented\nthree" },
    ],
    [
      "a double-quoted value continued on the next line folds",
      'description: "first\n  second\\tthen \\u00e9"',
      { description: "first second\tthen é" },
    ],
    [
      "a single-quoted value continued on the next line folds",
      "description: 'it''s\n  continued'",
      { description: "it's continued" },
    ],
    [
      "quoted colons and hashes are text",
      "description: \"a: b # c\"\nname: 'x: y'",
      { description: "a: b # c", name: "x: y" },
    ],
    [
      "scalars stay text, never numbers or booleans",
      "name: 007\ndescription: yes",
      { name: "007", description: "yes" },
    ],
    [
      "nested maps and flow lists are read and left alone",
      "description: d\nmetadata:\n  version: 1.0\n  # a note\n  tags: [a, b]",
      { description: "d", metadata: { version: "1.0", tags: ["a", "b"] } },
    ],
    [
      "an anchor used once by an alias",
      "a: &x shared\ndescription: *x",
      { a: "shared", description: "shared" },
    ],
    ["an empty block is an empty mapping", "", {}],
  ];
  it.each(cases)("%s", (_name, block, expected) => {
    expect(fm(block)).toEqual(expected);
  });

  it("CRLF line endings and a byte order mark", () => {
    const r = parseFrontMatter("\uFEFF---\r\nname: x\r\ndescription: 'It''s'\r\n---\r\nbody");
    expect(r).toEqual({ ok: true, data: { name: "x", description: "It's" } });
  });

  const refused: [string, string, RegExp][] = [
    ["an unclosed quote", 'name: x\ndescription: "open', /not valid YAML \(line \d+\)/],
    // The block starts on the file's second line: the tab is on the file's fourth.
    ["tabs as indentation", "description: d\nmetadata:\n\tv: 1", /not valid YAML \(line 4\)/],
    ["a key given twice", "description: a\ndescription: b", /the key 'description' twice/],
    ["a list instead of a mapping", "- a\n- b", /not a mapping/],
    ["a bare scalar", "just some text", /not a mapping/],
    ["two documents", "description: a\n--- x\nb: c", /not valid YAML/],
    ["an alias to nothing", "description: *nowhere", /not valid YAML/],
  ];
  it.each(refused)("refuses %s with a one-line reason", (_name, block, reason) => {
    const r = fm(block) as { error?: string };
    expect(r.error).toMatch(reason);
    expect(r.error).not.toContain("\n");
  });

  it("without a front matter block there is nothing to parse", () => {
    expect(parseFrontMatter("# Heading\n")).toBeNull();
    expect(parseFrontMatter("---\nname: x\n")).toBeNull(); // never closed
    expect(parseFrontMatter("  ---\nname: x\n---\n")).toBeNull();
  });
});

describe("hostile front matter is bounded", () => {
  it("a block over 64 KiB is refused before it is parsed", () => {
    const block = `description: ${"x".repeat(MAX_FRONT_MATTER_BYTES)}`;
    expect(fm(block)).toEqual({
      error: `front matter larger than ${MAX_FRONT_MATTER_BYTES} bytes`,
    });
    // The head of a longer file, still open at its end: too large, not "no front matter".
    expect(parseFrontMatter(`---\n${block}`, { truncated: true })).toEqual({
      ok: false,
      error: `front matter larger than ${MAX_FRONT_MATTER_BYTES} bytes`,
    });
  });

  it("an alias bomb stops at the expansion bound", () => {
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 8; i++) {
      const prev = String.fromCharCode(96 + i);
      const cur = String.fromCharCode(97 + i);
      levels.push(`${cur}: &${cur} [${Array(8).fill(`*${prev}`).join(", ")}]`);
    }
    const r = fm(`description: d\n${levels.join("\n")}`) as { error?: string };
    expect(r.error).toMatch(/more than 64 aliases|resource exhaustion/i);
    // Within the alias count, the library's own bound on expansion still holds.
    const small = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 5; i++) {
      const prev = String.fromCharCode(96 + i);
      const cur = String.fromCharCode(97 + i);
      small.push(`${cur}: &${cur} [${Array(10).fill(`*${prev}`).join(", ")}]`);
    }
    expect((fm(`description: d\n${small.join("\n")}`) as { error?: string }).error).toMatch(
      /resource exhaustion/i,
    );
  });

  it("more aliases than the bound are refused, each alias counted once", () => {
    const many = (n: number) =>
      `x: &x v\ndescription: d\n${Array.from({ length: n }, (_, i) => `k${i}: *x`).join("\n")}`;
    expect(fm(many(MAX_FRONT_MATTER_ALIASES))).toMatchObject({ description: "d", k0: "v" });
    expect((fm(many(MAX_FRONT_MATTER_ALIASES + 1)) as { error?: string }).error).toBe(
      `front matter uses more than ${MAX_FRONT_MATTER_ALIASES} aliases`,
    );
  });

  it.each([
    ["flow lists", "[".repeat(60_000)],
    ["flow maps", "{".repeat(60_000)],
    ["block lists", Array.from({ length: 6_000 }, (_, i) => " ".repeat(i) + "- ").join("\n")],
  ])("nesting %s 60 000 deep is an error, not a crash", (_name, deep) => {
    const r = parseFrontMatter(`---\ndescription: ${deep}\n---\n`);
    expect(r).toMatchObject({ ok: false });
  });

  it("thousands of keys are accepted, and a duplicate among them is still found", () => {
    const keys = Array.from({ length: 6_000 }, (_, i) => `k${i}: v`).join("\n");
    expect(Object.keys(fm(`description: d\n${keys}`))).toHaveLength(6_001);
    expect((fm(`description: d\n${keys}\nk17: again`) as { error?: string }).error).toBe(
      "front matter has the key 'k17' twice",
    );
  });
});

describe("real published skills", () => {
  /** Every skill directory among the fixtures: <source>/<skill>/SKILL.md. */
  const fixtureSkills = readdirSync(FIXTURES)
    .filter((s) => statSync(join(FIXTURES, s)).isDirectory())
    .flatMap((source) =>
      readdirSync(join(FIXTURES, source))
        .filter((d) => existsSync(join(FIXTURES, source, d, "SKILL.md"))) // other fixtures too
        .map((d) => ({ source, name: d, dir: join(FIXTURES, source, d) })),
    );

  it("every fixture names its source, commit and licence", () => {
    for (const source of new Set(fixtureSkills.map((s) => s.source))) {
      const text = readFileSync(join(FIXTURES, source, "SOURCE"), "utf8");
      const lines = text.split("\n").filter((l) => l.startsWith("SOURCE "));
      for (const s of fixtureSkills.filter((f) => f.source === source)) {
        expect(lines.some((l) => l.endsWith(`-> ${s.name}/SKILL.md`))).toBe(true);
      }
      for (const l of lines) expect(l).toMatch(/^SOURCE \S+\/\S+ \S+ [0-9a-f]{40} -> \S+$/);
      const licensed = readdirSync(join(FIXTURES, source), { recursive: true }).some((f) =>
        /LICENSE/.test(String(f)),
      );
      expect(licensed).toBe(true);
    }
  });

  // What each description must read as: the YAML form it uses, checked on text from the file.
  const expectations: Record<string, (d: string) => void> = {
    "doordash-group-orders": (d) => {
      expect(d).toContain('One request ("lunch for the team") fans out');
      expect(d).not.toContain("\\");
    },
    "daily-prep": (d) => {
      expect(d.startsWith("Prepare for tomorrow's meetings and tasks.")).toBe(true);
      expect(d).not.toContain("''");
    },
    "mentoring-juniors": (d) => {
      expect(d).toContain(`"I'm stuck", "Im stuck", "I'm confused"`);
      expect(d).not.toContain("''");
    },
    "ai-engineer": (d) =>
      expect(d).toBe(
        "Build production-ready LLM applications, advanced RAG systems, and intelligent " +
          "agents. Implements vector search, multimodal AI, agent orchestration, and " +
          "enterprise AI integrations. Use PROACTIVELY for LLM features, chatbots, AI " +
          "agents, or AI-powered applications.",
      ),
    "claude-api": (d) => {
      // A literal block: its lines stay lines. The file is over 64 KiB; its front matter is not.
      expect(d.startsWith("Reference for the Claude API / Anthropic SDK")).toBe(true);
      expect(d).toContain("model migration.\nTRIGGER — read BEFORE opening the target file");
      expect(d).toContain(`don't skip because it "looks like a one-liner"`);
    },
    "slack-gif-creator": (d) => expect(d).toContain('like "make me a GIF of X doing Y for Slack."'),
  };

  it("covers every fixture", () => {
    expect(fixtureSkills.map((s) => s.name).sort()).toEqual(Object.keys(expectations).sort());
    expect(statSync(join(FIXTURES, "anthropics-skills/claude-api/SKILL.md")).size).toBeGreaterThan(
      MAX_FRONT_MATTER_BYTES,
    );
  });

  it.each(Object.keys(expectations))("%s reads as its author wrote it", (name) => {
    const s = fixtureSkills.find((f) => f.name === name)!;
    const md = readSkillMd(join(s.dir, "SKILL.md"));
    if ("warning" in md) throw new Error(md.warning);
    expect(md.name).toBe(name);
    expectations[name]!(md.description);
  });

  describe("through the product", () => {
    let rt: TestRuntime;
    let userHome: string;
    beforeAll(async () => {
      const home = tempHome();
      userHome = tempHome("holon-user-");
      rt = await startRuntime({ env: { ...process.env, HOLON_HOME: home, HOME: userHome }, home });
    });
    afterAll(async () => {
      await rt.close();
      cleanupHomes();
    });

    it("an agent's catalog lists every one, with no warnings", async () => {
      const agentHome = (await rt.host.agents.get("main")).agent_home;
      for (const s of fixtureSkills)
        cpSync(s.dir, join(agentHome, "skills", s.name), { recursive: true });
      const res = await rt.req("GET", "/agents/main/skills");
      expect(res.status).toBe(200);
      expect(res.json.warnings).toEqual([]);
      const byName = new Map<string, string>(
        res.json.skills.map((s: { name: string; description: string }) => [s.name, s.description]),
      );
      for (const [name, check] of Object.entries(expectations)) {
        expect(byName.has(name), name).toBe(true);
        check(byName.get(name)!);
      }
    });

    it("each SKILL.md is parsed once until it changes, not once per catalog", async () => {
      const cache = rt.host.services.skills.skillMdCache;
      const agentHome = (await rt.host.agents.get("main")).agent_home;
      const before = cache.parsed;
      expect((await rt.req("GET", "/agents/main/skills")).status).toBe(200);
      expect(cache.parsed).toBe(before);
      const edited = join(agentHome, "skills/ai-engineer/SKILL.md");
      writeFileSync(edited, "---\nname: ai-engineer\ndescription: 'Edited: it''s new'\n---\n");
      const res = await rt.req("GET", "/agents/main/skills");
      expect(cache.parsed).toBe(before + 1);
      const skill = res.json.skills.find((s: { name: string }) => s.name === "ai-engineer");
      expect(skill.description).toBe("Edited: it's new");
    });

    it("`holon skills install` takes a real skill and lists its description", async () => {
      const src = join(FIXTURES, "davila7-claude-code-templates/doordash-group-orders");
      const env = { HOLON_HOME: rt.home, HOME: userHome };
      const installed = await runCli(["skills", "install", src], { env });
      expect(installed.code, installed.stderr).toBe(0);
      const list = await runCli(["skills", "list"], { env });
      expect(list.stdout).toContain('One request ("lunch for the team") fans out');
    });

    it("a skill with hostile front matter is skipped with a diagnostic; the others stay", async () => {
      const agentHome = (await rt.host.agents.get("main")).agent_home;
      writeFiles(agentHome, {
        "skills/bomb/SKILL.md": `---\nname: bomb\ndescription: &a d\n${Array.from(
          { length: 100 },
          (_, i) => `k${i}: *a`,
        ).join("\n")}\n---\n`,
        "skills/broken/SKILL.md": `---\nname: broken\ndescription: "never closed\n---\n`,
      });
      const res = await rt.req("GET", "/agents/main/skills");
      expect(res.status).toBe(200);
      const warnings = (res.json.warnings as string[]).join("\n");
      expect(warnings).toContain(join(agentHome, "skills/bomb/SKILL.md"));
      expect(warnings).toContain(join(agentHome, "skills/broken/SKILL.md"));
      expect(warnings).toContain(`more than ${MAX_FRONT_MATTER_ALIASES} aliases; skipped`);
      expect(warnings).toContain("not valid YAML");
      expect(res.json.skills.map((s: { name: string }) => s.name)).toContain("daily-prep");
    });
  });
});

describe("third-party fixtures stay test data", () => {
  it("nothing under src/ refers to them", () => {
    const src = join(REPO_ROOT, "src");
    const files = readdirSync(src, { recursive: true }).map(String);
    for (const f of files) {
      const p = join(src, f);
      if (!statSync(p).isFile()) continue;
      expect(readFileSync(p, "utf8").includes("third_party"), f).toBe(false);
    }
  });

  it("the package does not ship test/", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    expect(pkg.files.some((f: string) => f.startsWith("test"))).toBe(false);
  });
});
