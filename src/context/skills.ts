// Skills: discovery over three scopes (user, agent, workspace; within a scope only the first
// root that exists counts), the catalog prompt section (metadata only, never SKILL.md
// bodies), activation when a command reads a SKILL.md or runs one of its scripts, promotion
// to session_active when the turn completes, and install/uninstall from a path or a git URL.
// A malformed SKILL.md is skipped with a warning; it never fails a turn.
import { execFileSync } from "node:child_process";
import {
  closeSync,
  cpSync,
  fstatSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, isAbsolute, join, resolve } from "node:path";
import type { AgentRecord } from "../domain/agent.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import {
  AGENT_HOME_WORKSPACE_ID,
  type SkillActivation,
  type SkillLoadReason,
  type SkillScope,
} from "../domain/workspace.ts";
import type { RunObserver } from "../agent/runtime.ts";
import type { Store } from "../store/db.ts";
import { executionBinding, isInside } from "../workspace/roots.ts";
import { MAX_FRONT_MATTER_BYTES, parseFrontMatter } from "./front-matter.ts";
import { promptFile, type PromptContributor } from "./section.ts";

/** Bytes read past the front matter cap: room for the `---` lines around the block. */
const HEAD_SLACK_BYTES = 1024;
/** Skills read from one root at most; prompt lines at most. */
const MAX_SKILLS_PER_ROOT = 200;
const MAX_PROMPT_SKILLS = 100;
const MAX_PROMPT_DESCRIPTION = 300;
/** An installed skill may hold at most this much. */
const MAX_INSTALL_BYTES = 20 * 1024 * 1024;
const MAX_INSTALL_FILES = 2_000;
const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export type SkillEntry = {
  skill_id: string;
  name: string;
  description: string;
  scope: SkillScope;
  /** The skill's directory (holds SKILL.md and maybe scripts/). */
  dir: string;
  entrypoint_path: string;
};

export type SkillRoot = { scope: SkillScope; root: string | null; candidates: string[] };
export type SkillCatalog = { roots: SkillRoot[]; skills: SkillEntry[]; warnings: string[] };

/** The candidate roots of each scope, in the order the first existing one wins. */
export function skillRootCandidates(opts: {
  userHome: string;
  agentHome: string;
  workspaceAnchor: string | null;
}): { scope: SkillScope; candidates: string[] }[] {
  const compat = (base: string) =>
    [".agents", ".codex", ".claude"].map((d) => join(base, d, "skills"));
  const out: { scope: SkillScope; candidates: string[] }[] = [
    { scope: "user", candidates: compat(opts.userHome) },
    { scope: "agent", candidates: [join(opts.agentHome, "skills"), ...compat(opts.agentHome)] },
  ];
  if (opts.workspaceAnchor)
    out.push({ scope: "workspace", candidates: compat(opts.workspaceAnchor) });
  return out;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Discover skills. `userScope` false leaves the user scope out (named and child agents). */
export function discoverSkills(opts: {
  userHome: string;
  agentHome: string;
  workspaceAnchor: string | null;
  userScope: boolean;
  /** Parsed front matter kept across calls (a SkillService keeps one for its host). */
  cache?: SkillMdCache;
}): SkillCatalog {
  const roots: SkillRoot[] = [];
  const skills: SkillEntry[] = [];
  const warnings: string[] = [];
  for (const { scope, candidates } of skillRootCandidates(opts)) {
    if (scope === "user" && !opts.userScope) continue;
    const root = candidates.find(isDir) ?? null;
    roots.push({ scope, root, candidates });
    if (!root) continue;
    let names: string[];
    try {
      names = readdirSync(root).sort();
    } catch (err) {
      warnings.push(`${root}: cannot be read (${(err as Error).message})`);
      continue;
    }
    let count = 0;
    for (const name of names) {
      if (name.startsWith(".")) continue;
      const dir = join(root, name);
      const entrypoint = join(dir, "SKILL.md");
      if (!isDir(dir) || !existsSync(entrypoint)) continue;
      if (++count > MAX_SKILLS_PER_ROOT) {
        warnings.push(`${root}: more than ${MAX_SKILLS_PER_ROOT} skills; the rest are not listed`);
        break;
      }
      const parsed = opts.cache ? opts.cache.read(entrypoint) : readSkillMd(entrypoint);
      if ("warning" in parsed) {
        warnings.push(`${entrypoint}: ${parsed.warning}; skipped`);
        continue;
      }
      skills.push({
        skill_id: `${scope}:${parsed.name ?? name}`,
        name: parsed.name ?? name,
        description: parsed.description,
        scope,
        dir,
        entrypoint_path: entrypoint,
      });
    }
  }
  return { roots, skills, warnings };
}

/** Front matter of a SKILL.md: `name` (optional, the directory name otherwise) and `description`. */
export function readSkillMd(
  path: string,
): { name: string | undefined; description: string } | { warning: string } {
  // Only the head is read: the front matter is capped, the body is never loaded here.
  const head = Buffer.alloc(MAX_FRONT_MATTER_BYTES + HEAD_SLACK_BYTES);
  let got: number;
  let size: number;
  try {
    const fd = openSync(path, "r");
    try {
      size = fstatSync(fd).size;
      got = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    return { warning: `unreadable (${(err as Error).message})` };
  }
  const buf = head.subarray(0, got);
  if (buf.includes(0)) return { warning: "binary content" };
  const fm = parseFrontMatter(buf.toString("utf8"), { truncated: size > got });
  if (!fm) return { warning: "no front matter (--- name/description --- block)" };
  if (!fm.ok) return { warning: fm.error };
  const { name: rawName, description: rawDescription } = fm.data;
  if (rawDescription !== undefined && typeof rawDescription !== "string")
    return { warning: "the description is not text" };
  const description = rawDescription?.trim();
  if (!description) return { warning: "front matter has no description" };
  if (rawName !== undefined && typeof rawName !== "string")
    return { warning: "the name is not text" };
  const name = rawName?.trim();
  if (name !== undefined && !SKILL_NAME.test(name))
    return { warning: `invalid skill name '${name.slice(0, 80)}'` };
  return { name, description: description.slice(0, 1024) };
}

type SkillMd = ReturnType<typeof readSkillMd>;

/**
 * Front matter already parsed, by path, for as long as the file keeps its identity, size
 * and times. The catalog is built for every turn; parsing YAML costs about a microsecond a
 * byte, so a workspace full of large front matter is parsed once per change, not per turn.
 */
export class SkillMdCache {
  private readonly entries = new Map<string, { stamp: string; result: SkillMd }>();
  /** Files parsed (not answered from the cache) so far. */
  parsed = 0;

  private readonly maxEntries: number;

  constructor(maxEntries = 2_048) {
    this.maxEntries = maxEntries;
  }

  read(path: string): SkillMd {
    let stamp: string;
    try {
      const st = statSync(path, { bigint: true });
      stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    } catch {
      this.entries.delete(path);
      return readSkillMd(path);
    }
    const hit = this.entries.get(path);
    if (hit?.stamp === stamp) return hit.result;
    this.parsed++;
    const result = readSkillMd(path);
    this.entries.delete(path);
    if (this.entries.size >= this.maxEntries) {
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(path, { stamp, result });
    return result;
  }
}

export type SkillDeps = {
  store: Store;
  /** The user's home, for the user scope (`~/.agents/skills` …). */
  userHome: string;
  defaultAgentId: string;
};

/** What the turn reports about a finished tool call (structurally the turn's ToolCallDone). */
export type ToolCallNote = {
  agent_id: string;
  run_id: string;
  turn_index: number;
  tool_name: string;
  arguments: string;
  cwd: string;
  canonical: { status: string; result?: Record<string, unknown> | null | undefined };
};

export class SkillService {
  private readonly deps: SkillDeps;
  /** Front matter parsed by earlier catalogs of this host. */
  readonly skillMdCache = new SkillMdCache();

  constructor(deps: SkillDeps) {
    this.deps = deps;
  }

  /** At host start: session skills come back as `restored`; a crashed turn's activations do not. */
  async restore(): Promise<void> {
    await this.deps.store.skills.restoreAll();
  }

  private get store(): Store {
    return this.deps.store;
  }

  private async agent(agentId: string): Promise<AgentRecord> {
    const a = await this.store.agents.get(agentId);
    if (!a) throw unknownAgent(agentId);
    return a;
  }

  /** Only the default agent sees the user's own skill libraries. */
  private seesUserScope(agent: AgentRecord): boolean {
    return agent.kind === "default" || agent.agent_id === this.deps.defaultAgentId;
  }

  catalog(agent: AgentRecord): SkillCatalog {
    const b = executionBinding(agent);
    return discoverSkills({
      userHome: this.deps.userHome,
      agentHome: agent.agent_home,
      // Workspace skills follow the anchor, not a worktree or the shell cwd.
      workspaceAnchor: b.workspace_id === AGENT_HOME_WORKSPACE_ID ? null : b.workspace_anchor,
      userScope: this.seesUserScope(agent),
      cache: this.skillMdCache,
    });
  }

  activations(agentId: string): Promise<SkillActivation[]> {
    return this.store.skills.list(agentId);
  }

  async list(agentId: string) {
    const agent = await this.agent(agentId);
    const cat = this.catalog(agent);
    return { agent_id: agentId, ...cat, active: await this.activations(agentId) };
  }

  /** Activation: a successful command that reads a SKILL.md or runs one of its scripts. */
  async noteToolCall(call: ToolCallNote): Promise<void> {
    if (call.canonical.status !== "success") return;
    const commands = successfulCommands(call);
    if (commands.length === 0) return;
    const mentions = commands.filter((c) => /SKILL\.md|scripts\//.test(c.cmd));
    if (mentions.length === 0) return;
    const agent = await this.store.agents.get(call.agent_id);
    if (!agent) return;
    const { skills } = this.catalog(agent);
    const hits = new Map<string, { skill: SkillEntry; reason: SkillLoadReason; path: string }>();
    for (const c of mentions) {
      for (const token of c.cmd.split(/[\s;|&()<>'"`=]+/)) {
        if (!token.includes("SKILL.md") && !token.includes("scripts/")) continue;
        const abs = isAbsolute(token) ? resolve(token) : resolve(c.workdir, token);
        for (const s of skills) {
          if (hits.has(s.skill_id)) continue;
          if (samePath(abs, s.entrypoint_path)) {
            hits.set(s.skill_id, { skill: s, reason: "read_skill_md", path: s.entrypoint_path });
          } else {
            const scripts = join(s.dir, "scripts");
            if (
              abs !== scripts &&
              (isInside(scripts, abs) || isInside(realOr(scripts), realOr(abs)))
            ) {
              hits.set(s.skill_id, { skill: s, reason: "run_skill_script", path: abs });
            }
          }
        }
      }
    }
    if (hits.size === 0) return;
    const store = this.store;
    await store.tx(async () => {
      const now = store.clock.now().toISOString();
      for (const { skill, reason, path } of hits.values()) {
        await store.skills.put({
          agent_id: call.agent_id,
          skill_id: skill.skill_id,
          name: skill.name,
          scope: skill.scope,
          entrypoint_path: skill.entrypoint_path,
          state: "turn_active",
          load_reason: reason,
          activated_at: now,
          updated_at: now,
        });
        await store.appendEvent(call.agent_id, {
          type: "skill_activated",
          provenance: {},
          payload: {
            skill_ids: [skill.skill_id],
            skill_name: skill.name,
            path,
            entrypoint_path: skill.entrypoint_path,
            scope: skill.scope,
            load_reason: reason,
            turn_index: call.turn_index,
            run_id: call.run_id,
          },
        });
      }
    });
  }

  /** Promotes the turn's activations when the turn completed (no event, per the contract). */
  observer(): RunObserver {
    return {
      afterRun: async (run) => {
        const k = run.outcome.kind;
        if (k === "failed" || k === "aborted") return;
        await this.store.skills.promote(run.agent_id, this.store.clock.now().toISOString());
      },
    };
  }

  // -- install / uninstall ----------------------------------------------------------------

  /** The directory `install` writes to: the scope's first existing root, else its first candidate. */
  async installRoot(agentId: string | undefined): Promise<{ scope: SkillScope; root: string }> {
    if (agentId) {
      const agent = await this.agent(agentId);
      const [, agentScope] = skillRootCandidates({
        userHome: this.deps.userHome,
        agentHome: agent.agent_home,
        workspaceAnchor: null,
      });
      const c = agentScope!.candidates;
      return { scope: "agent", root: c.find(isDir) ?? c[0]! };
    }
    const [userScope] = skillRootCandidates({
      userHome: this.deps.userHome,
      agentHome: "/",
      workspaceAnchor: null,
    });
    const c = userScope!.candidates;
    return { scope: "user", root: c.find(isDir) ?? c[0]! };
  }

  async install(opts: {
    path?: string | undefined;
    remote?: string | undefined;
    agent_id?: string | undefined;
    force?: boolean | undefined;
  }) {
    const target = await this.installRoot(opts.agent_id);
    return { ...this.installInto(target.root, opts), scope: target.scope };
  }

  /**
   * Install one skill (a directory, or a tree URL fetched through git) into `root`. Agent
   * templates use this to stage a new agent's skills before the agent exists.
   */
  installInto(
    root: string,
    opts: { path?: string | undefined; remote?: string | undefined; force?: boolean | undefined },
  ) {
    if ((opts.path === undefined) === (opts.remote === undefined)) {
      throw new HolonError("invalid_request", "pass exactly one of path or remote");
    }
    const target = { root };
    let cleanup: string | undefined;
    try {
      let source: string;
      if (opts.remote !== undefined) {
        const fetched = fetchRemote(opts.remote);
        cleanup = fetched.tmp;
        source = fetched.dir;
      } else {
        source = opts.path!;
      }
      let real: string;
      try {
        real = realpathSync.native(source);
      } catch {
        throw new HolonError("skill_source_not_found", `${source} does not exist`, { status: 404 });
      }
      if (!isDir(real)) throw new HolonError("skill_invalid", `${source} is not a directory`);
      const md = readSkillMd(join(real, "SKILL.md"));
      if ("warning" in md) {
        throw new HolonError("skill_invalid", `${join(source, "SKILL.md")}: ${md.warning}`, {
          hint: "a skill is a directory with a SKILL.md that starts with --- name / description --- front matter",
        });
      }
      const name = md.name ?? basename(real);
      if (!SKILL_NAME.test(name))
        throw new HolonError("skill_invalid", `invalid skill name '${name}'`);
      checkSize(real);
      const dest = join(target.root, name);
      if (existsSync(dest)) {
        if (!opts.force) {
          throw new HolonError(
            "skill_exists",
            `a skill named ${name} is already installed at ${dest}`,
            {
              status: 409,
              hint: "uninstall it first, or pass --force to replace it",
            },
          );
        }
        rmSync(dest, { recursive: true, force: true });
      }
      mkdirSync(target.root, { recursive: true, mode: 0o700 });
      // Copied as is: file modes (executable scripts) are kept; nothing is chmod-ed.
      cpSync(real, dest, {
        recursive: true,
        verbatimSymlinks: true,
        filter: (src) => basename(src) !== ".git",
      });
      return { name, path: dest, description: md.description };
    } finally {
      if (cleanup) rmSync(cleanup, { recursive: true, force: true });
    }
  }

  async uninstall(name: string, agentId: string | undefined) {
    if (!SKILL_NAME.test(name))
      throw new HolonError("invalid_request", `invalid skill name '${name}'`);
    const target = await this.installRoot(agentId);
    const dest = join(target.root, name);
    let st;
    try {
      st = lstatSync(dest);
    } catch {
      throw new HolonError("skill_not_found", `no skill named ${name} in ${target.root}`, {
        status: 404,
      });
    }
    if (!st.isDirectory() && !st.isSymbolicLink()) {
      throw new HolonError("skill_not_found", `${dest} is not a skill directory`, { status: 404 });
    }
    // A symlinked skill: remove the link, never what it points at.
    rmSync(dest, { recursive: !st.isSymbolicLink(), force: true });
    return { name, scope: target.scope, path: dest, removed: true };
  }
}

/** The commands of a successful ExecCommand / completed ExecCommandBatch items, with workdirs. */
function successfulCommands(call: ToolCallNote): { cmd: string; workdir: string }[] {
  let args: Record<string, unknown>;
  try {
    args = JSON.parse(call.arguments) as Record<string, unknown>;
  } catch {
    return [];
  }
  const wd = (w: unknown) => (typeof w === "string" ? resolve(call.cwd, w) : call.cwd);
  const result = call.canonical.result ?? {};
  if (call.tool_name === "ExecCommand") {
    if (result.disposition !== "completed" || result.exit_status !== 0) return [];
    return typeof args.cmd === "string" ? [{ cmd: args.cmd, workdir: wd(args.workdir) }] : [];
  }
  if (call.tool_name === "ExecCommandBatch") {
    // Result items are numbered from 1, in the order of the call's items.
    const items = Array.isArray(args.items) ? (args.items as Record<string, unknown>[]) : [];
    const done = Array.isArray(result.items)
      ? (result.items as { index: number; cmd: string; status: string }[])
      : [];
    return done
      .filter((d) => d.status === "completed" && typeof d.cmd === "string")
      .map((d) => ({ cmd: d.cmd, workdir: wd(items[d.index - 1]?.workdir) }));
  }
  return [];
}

function realOr(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

function samePath(a: string, b: string): boolean {
  return a === b || realOr(a) === realOr(b);
}

function checkSize(dir: string): void {
  let bytes = 0;
  let files = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      if (name === ".git") continue;
      const p = join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else {
        files++;
        bytes += st.size;
      }
      if (files > MAX_INSTALL_FILES || bytes > MAX_INSTALL_BYTES) {
        throw new HolonError(
          "skill_too_large",
          `the skill holds more than ${MAX_INSTALL_FILES} files or ${MAX_INSTALL_BYTES} bytes`,
        );
      }
    }
  };
  walk(dir);
}

/**
 * `<repository>/tree/<ref>/<path>` (a GitHub tree URL, or the same shape over file://):
 * a shallow clone of that ref through git, then the skill directory inside it.
 */
export function fetchRemote(url: string): { tmp: string; dir: string } {
  const m = /^((?:https|file):\/\/.+?)\/tree\/([^/]+)\/(.+?)\/?$/.exec(url);
  if (!m || url.length > 2048) {
    throw new HolonError(
      "invalid_request",
      "expected a tree URL: https://github.com/<owner>/<repo>/tree/<ref>/<path>",
      {
        hint: "only https:// and file:// repositories are fetched",
      },
    );
  }
  let repo = m[1]!;
  const ref = m[2]!;
  const sub = m[3]!;
  if (sub.split("/").some((s) => s === ".." || s === "." || s === "")) {
    throw new HolonError(
      "invalid_request",
      "the skill path inside the repository may not contain . or .. segments",
    );
  }
  if (/^https:\/\/github\.com\/[^/]+\/[^/]+$/.test(repo) && !repo.endsWith(".git")) repo += ".git";
  const tmp = mkdtempSync(join(tmpdir(), "holon-skill-"));
  try {
    execFileSync(
      "git",
      [
        "-c",
        "protocol.ext.allow=never",
        "clone",
        "--quiet",
        "--depth",
        "1",
        "--branch",
        ref,
        "--",
        repo,
        join(tmp, "repo"),
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 120_000,
        env: { ...process.env, GIT_TERMINAL_PROMPT: "0" },
      },
    );
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    const stderr = String((err as { stderr?: Buffer }).stderr ?? "")
      .trim()
      .split("\n")
      .slice(-2)
      .join(" ");
    throw new HolonError("skill_fetch_failed", `git could not fetch ${repo} at ${ref}: ${stderr}`, {
      status: 502,
    });
  }
  const dir = join(tmp, "repo", sub);
  if (!isInside(join(tmp, "repo"), realOr(dir)) || !isDir(dir)) {
    rmSync(tmp, { recursive: true, force: true });
    throw new HolonError(
      "skill_source_not_found",
      `${sub} is not a directory in ${repo} at ${ref}`,
      { status: 404 },
    );
  }
  return { tmp, dir };
}

/** The catalog as a prompt section: names, descriptions, paths; active skills; never bodies. */
export function skillsContributor(skills: SkillService): PromptContributor {
  return {
    id: "skills",
    contribute: async ({ agent }) => {
      const cat = skills.catalog(agent);
      if (cat.skills.length === 0) return [];
      const active = new Map(
        (await skills.activations(agent.agent_id)).map((a) => [a.skill_id, a.state]),
      );
      const lines = cat.skills.slice(0, MAX_PROMPT_SKILLS).map((s) => {
        const d =
          s.description.length > MAX_PROMPT_DESCRIPTION
            ? s.description.slice(0, MAX_PROMPT_DESCRIPTION) + "…"
            : s.description;
        const state = active.get(s.skill_id);
        return `- ${s.name} (${s.scope}${state ? `, ${state}` : ""}): ${d.replace(/\s+/g, " ")}\n  file: ${s.entrypoint_path}`;
      });
      if (cat.skills.length > MAX_PROMPT_SKILLS) {
        lines.push(`- … ${cat.skills.length - MAX_PROMPT_SKILLS} more (holon skills list)`);
      }
      return [
        {
          placement: "system",
          text: `${promptFile("skills.md")}\n\n${lines.join("\n")}`,
          stability: "agent_scoped",
        },
      ];
    },
  };
}

/** The contributor list with skills placed right after the instruction files (loading order). */
export function withSkills(
  list: PromptContributor[],
  skills: PromptContributor,
): PromptContributor[] {
  const at = list.findIndex((c) => c.id === "agents_md");
  const out = [...list];
  out.splice(at < 0 ? out.length : at + 1, 0, skills);
  return out;
}
