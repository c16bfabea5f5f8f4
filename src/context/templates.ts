// Agent templates: what a new agent's home starts from. A template is a directory with an
// AGENTS.md and an optional skills.json (`skill_refs`); it is named by an id (resolved under
// `~/.agents/templates/<id>/`), an absolute path, or a git tree URL. Applying one renders the
// initial AGENTS.md (template text plus Holon's required home guidance), installs its skills
// through the skills installer into a staging directory, and records provenance. Anything
// that fails throws before the agent exists. The builtin templates are seeded into
// `~/.agents/templates/` at start and refreshed only while their on-disk copy is unmodified.
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import type { HomeInitializer, HomeSeed } from "../agent/home.ts";
import { fetchRemote, type SkillService } from "./skills.ts";

export const BUILTIN_TEMPLATES = ["holon-default", "holon-developer"] as const;
const BUILTIN_ROOT = fileURLToPath(new URL("./templates/", import.meta.url));
const MANAGED_FILE = ".holon-builtin.json";
const TEMPLATE_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const MAX_AGENTS_MD = 64 * 1024;
const MAX_SKILLS_JSON = 64 * 1024;
const MAX_SKILL_REFS = 32;

/** The guidance every rendered AGENTS.md carries, whatever the template says. */
export const REQUIRED_HOME_GUIDANCE = `## Your home directory

This directory is your agent home and your default workspace.

- \`AGENTS.md\` (this file) is loaded into every run; keep it to durable guidance.
- \`memory/self.md\` and \`memory/operator.md\` are your curated memory: lessons about your
  own work, and about how the operator likes to work with you.
- \`notes/\` is for ordinary working notes and drafts.
- \`work/\` is for work artifacts that belong to no project.
- \`skills/\` holds your own skills.
- \`.holon/\` belongs to the runtime: read it if you must, never edit it.
- Project files, rules and memory belong in the project's workspace, not here.
`;

const SkillRef = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("local"), path: z.string().min(1).max(4096) }),
  z.strictObject({
    kind: z.literal("github"),
    package: z
      .string()
      .regex(
        /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+$/,
        "expected <owner>/<repo>@<skill>",
      ),
  }),
]);
const SkillsJson = z.strictObject({ skill_refs: z.array(SkillRef).max(MAX_SKILL_REFS) });

export type TemplateDeps = {
  /** The user's home: templates live under `<userHome>/.agents/templates/`. */
  userHome: string;
  /** Where staging directories are made (inside HOLON_HOME). */
  stagingRoot: string;
  skills: SkillService;
};

type SourceKind = "template_id" | "absolute_path" | "github_url" | "builtin_default";

export class TemplateService implements HomeInitializer {
  private readonly deps: TemplateDeps;

  constructor(deps: TemplateDeps) {
    this.deps = deps;
  }

  get templatesDir(): string {
    return join(this.deps.userHome, ".agents", "templates");
  }

  /**
   * Seed the builtin templates: a missing one is written; one whose files still match what
   * Holon last wrote is refreshed; a diverged one is left as the user made it.
   */
  seedBuiltins(): { seeded: string[]; refreshed: string[]; diverged: string[] } {
    const out = { seeded: [] as string[], refreshed: [] as string[], diverged: [] as string[] };
    const dir = this.templatesDir;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch {
      return out; // an unwritable user home must not stop the runtime
    }
    const managedPath = join(dir, MANAGED_FILE);
    let managed: Record<string, string> = {};
    try {
      managed = z
        .record(z.string(), z.string())
        .parse(JSON.parse(readFileSync(managedPath, "utf8")));
    } catch {
      managed = {};
    }
    const recorded = JSON.stringify(managed);
    for (const id of BUILTIN_TEMPLATES) {
      try {
        this.seedOne(id, dir, managed, out);
      } catch (err) {
        // another process seeding at the same moment, or a read-only home: never fatal
        process.emitWarning(
          `could not seed the builtin template ${id}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
    // Written only when it changed: a start (every `holon run`) seeds nothing new as a rule.
    if (JSON.stringify(managed) === recorded) return out;
    try {
      writeFileSync(managedPath, JSON.stringify(managed, null, 2) + "\n", { mode: 0o600 });
    } catch {
      // best effort: without the record, templates are treated as diverged (never overwritten)
    }
    return out;
  }

  private seedOne(
    id: string,
    dir: string,
    managed: Record<string, string>,
    out: { seeded: string[]; refreshed: string[]; diverged: string[] },
  ): void {
    const source = join(BUILTIN_ROOT, id);
    const target = join(dir, id);
    const shipped = treeHash(source);
    if (!existsSync(target)) {
      cpSync(source, target, { recursive: true });
      managed[id] = shipped;
      out.seeded.push(id);
      return;
    }
    const onDisk = treeHash(target);
    if (managed[id] !== undefined && onDisk === managed[id]) {
      if (onDisk !== shipped) {
        rmSync(target, { recursive: true, force: true });
        cpSync(source, target, { recursive: true });
        managed[id] = shipped;
        out.refreshed.push(id);
      }
    } else if (onDisk === shipped) {
      managed[id] = shipped; // identical to what ships: Holon's to refresh from now on
    } else {
      out.diverged.push(id);
    }
  }

  defaultSeed(): HomeSeed {
    let dir = this.resolveLocal("holon-default");
    let text: string;
    try {
      text = readAgentsMd(dir ?? join(BUILTIN_ROOT, "holon-default"));
    } catch {
      // a user copy without a usable AGENTS.md: the shipped text, never a failed start
      dir = undefined;
      text = readAgentsMd(join(BUILTIN_ROOT, "holon-default"));
    }
    return {
      agents_md: render(text),
      provenance: {
        template: "holon-default",
        source_kind: "builtin_default",
        source: dir ?? "builtin",
        applied_at: new Date().toISOString(),
        skills: [],
      },
    };
  }

  prepare(template: string | undefined): HomeSeed & { cleanup(): void } {
    if (template === undefined) {
      return { agents_md: render(null), provenance: null, cleanup() {} };
    }
    if (template.length > 2048) throw invalid("the template selector is too long");
    const stage = mkdtempSync(join(ensureDir(this.deps.stagingRoot), "template-"));
    const cleanup = () => rmSync(stage, { recursive: true, force: true });
    try {
      let dir: string;
      let kind: SourceKind;
      if (/^(https|file):\/\//.test(template)) {
        kind = "github_url";
        const fetched = fetchTemplate(template);
        dir = join(stage, "source");
        cpSync(fetched.dir, dir, { recursive: true, filter: (p) => !p.endsWith("/.git") });
        rmSync(fetched.tmp, { recursive: true, force: true });
      } else if (isAbsolute(template)) {
        kind = "absolute_path";
        dir = template;
      } else {
        kind = "template_id";
        if (!TEMPLATE_ID.test(template)) {
          throw invalid(
            `'${template}' is not a template id, an absolute path or a tree URL`,
            "template ids are plain names such as holon-developer",
          );
        }
        const found = this.resolveLocal(template);
        if (!found) {
          throw new HolonError(
            "template_not_found",
            `no template '${template}' in ${this.templatesDir}`,
            { status: 404, hint: `builtin templates: ${BUILTIN_TEMPLATES.join(", ")}` },
          );
        }
        dir = found;
      }
      if (!isDirectory(dir)) {
        throw new HolonError("template_not_found", `${template} is not a directory`, {
          status: 404,
        });
      }
      const agentsMd = readAgentsMd(dir);
      const refs = readSkillRefs(dir);
      const skillsDir = join(stage, "skills");
      const installed: string[] = [];
      for (const ref of refs) {
        const r = this.deps.skills.installInto(skillsDir, {
          ...(ref.kind === "local"
            ? { path: localRef(ref.path) }
            : { remote: githubUrl(ref.package) }),
        });
        installed.push(r.name);
      }
      return {
        agents_md: render(agentsMd),
        provenance: {
          template,
          source_kind: kind,
          source: kind === "template_id" ? dir : template,
          applied_at: new Date().toISOString(),
          skills: installed,
        },
        staged_skills_dir: installed.length ? skillsDir : undefined,
        cleanup,
      };
    } catch (err) {
      cleanup();
      if (
        err instanceof HolonError &&
        !err.kind.startsWith("template_") &&
        err.kind !== "invalid_template"
      ) {
        throw new HolonError("template_invalid", `template ${template}: ${err.message}`, {
          status: err.status === 404 ? 422 : (err.status ?? 422),
          ...(err.hint ? { hint: err.hint } : {}),
        });
      }
      throw err;
    }
  }

  private resolveLocal(id: string): string | undefined {
    const dir = join(this.templatesDir, id);
    return isDirectory(dir) ? dir : undefined;
  }
}

function render(templateText: string | null): string {
  const head = templateText?.trim() ? templateText.trimEnd() + "\n\n" : "";
  return head + REQUIRED_HOME_GUIDANCE;
}

function readAgentsMd(dir: string): string {
  const path = join(dir, "AGENTS.md");
  let st;
  try {
    st = statSync(path);
  } catch {
    throw new HolonError("template_invalid", `the template ${dir} has no AGENTS.md`, {
      status: 422,
      hint: "a template is a directory with an AGENTS.md and an optional skills.json",
    });
  }
  if (!st.isFile() || st.size > MAX_AGENTS_MD) {
    throw new HolonError("template_invalid", `${path} is not a file of at most 64 KiB`, {
      status: 422,
    });
  }
  return readFileSync(path, "utf8");
}

function readSkillRefs(dir: string): z.infer<typeof SkillRef>[] {
  const path = join(dir, "skills.json");
  if (!existsSync(path)) return [];
  const st = statSync(path);
  if (!st.isFile() || st.size > MAX_SKILLS_JSON) {
    throw new HolonError("template_invalid", `${path} is not a file of at most 64 KiB`, {
      status: 422,
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new HolonError("template_invalid", `${path} is not JSON: ${(err as Error).message}`, {
      status: 422,
    });
  }
  const r = SkillsJson.safeParse(parsed);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new HolonError(
      "template_invalid",
      `${path}: ${issue?.path.join(".") || "skills.json"}: ${issue?.message ?? "invalid"}`,
      { status: 422, hint: '{"skill_refs": [{"kind": "local", "path": "/abs/skill"}]}' },
    );
  }
  return r.data.skill_refs;
}

function localRef(path: string): string {
  if (!isAbsolute(path)) {
    throw new HolonError("template_invalid", `local skill path ${path} is not absolute`, {
      status: 422,
    });
  }
  return path;
}

/** `owner/repo@skill` → the skill's tree URL on GitHub (default branch `main`, `skills/<skill>`). */
function githubUrl(pkg: string): string {
  const [repo, skill] = pkg.split("@") as [string, string];
  return `https://github.com/${repo}/tree/main/skills/${skill}`;
}

function fetchTemplate(url: string): { tmp: string; dir: string } {
  try {
    return fetchRemote(url);
  } catch (err) {
    if (err instanceof HolonError) {
      throw new HolonError(
        err.kind === "skill_source_not_found" ? "template_not_found" : "template_fetch_failed",
        err.message.replace(/skill/g, "template"),
        { status: err.status === 404 ? 404 : 502 },
      );
    }
    throw err;
  }
}

function invalid(message: string, hint?: string): HolonError {
  return new HolonError("invalid_template", message, { status: 400, ...(hint ? { hint } : {}) });
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function ensureDir(p: string): string {
  mkdirSync(p, { recursive: true, mode: 0o700 });
  return p;
}

/** A stable hash of a directory tree's regular files (path and content). */
export function treeHash(root: string): string {
  const h = createHash("sha256");
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) {
        h.update(relative(root, p) + "\0");
        h.update(readFileSync(p));
        h.update("\0");
      }
    }
  };
  try {
    walk(root);
  } catch {
    return "";
  }
  return h.digest("hex");
}
