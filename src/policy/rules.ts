// Permission rules: `allow`, `ask` and `deny` lists of patterns at host, agent and workspace
// level, and the mode that decides a call no rule names. Deny beats ask beats allow. A shell
// command is checked part by part (src/policy/shell.ts): it is allowed only when every part
// is, denied when any part is, and asked about when any part is or cannot be checked.
//
// Matching is deliberately lopsided: deny and ask rules see a command's loosest reading
// (wrappers, program paths and git's global options removed, unknown words counted as a
// possible match), allow rules only its exact words. Deny lists on shell commands are still
// best effort (an alias, a script file or a copied binary escapes them): `ask` with an
// allowlist is the safe posture, and the docs say so.
import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { isAbsolute, join, matchesGlob, resolve } from "node:path";
import { MAX_RULE_CHARS, type PermissionMode, type PermissionSettings } from "../domain/policy.ts";
import { HolonError } from "../domain/errors.ts";
import { analyzeShell, type CommandPart } from "./shell.ts";

export type RuleList = "allow" | "ask" | "deny";
export type RuleSource = "host" | "agent" | "workspace";

/** A parsed rule. `tool` is the Holon tool name (Bash is read as ExecCommand). */
export type Rule = {
  text: string;
  source: RuleSource;
  tool: string;
  /** Bare tool name: the rule names every call of the tool. */
  spec:
    | { kind: "any" }
    | { kind: "command"; words: string[]; prefix: boolean }
    | { kind: "path"; glob: string }
    | { kind: "mcp"; server: string; tool: string | null };
};

export type Decision = "allow" | "ask" | "deny";

export type Verdict = {
  decision: Decision;
  /** Why, in words the model and the operator can act on. */
  reason: string;
  /** The rule that decided, or null when the mode did. */
  rule: { text: string; source: RuleSource; list: RuleList } | null;
};

/** Tools with an effect outside Holon's own records: the ones a restrictive mode holds back. */
export const LEASHED_TOOLS: ReadonlySet<string> = new Set([
  "ExecCommand",
  "ExecCommandBatch",
  "TaskInput",
  "ApplyPatch",
  "UseWorkspace",
  "SpawnAgent",
]);

const COMMAND_TOOLS = new Set(["ExecCommand"]);
const PATH_TOOLS = new Set(["ApplyPatch", "UseWorkspace"]);
const ALIASES: Record<string, string> = { Bash: "ExecCommand" };
/** Characters a command rule may not hold: a rule names one simple command in plain words. */
const SHELL_META = /[;&|<>()$`'"\\{}?[\]!#*\n\r\t]/;
const MCP_NAME = /^mcp__([A-Za-z0-9_-]+?)(?:__([A-Za-z0-9_.*-]+))?$/;
const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;

function ruleError(text: string, why: string): HolonError {
  return new HolonError("invalid_permission_rule", `invalid rule ${JSON.stringify(text)}: ${why}`, {
    details: { rule: text },
    hint: "write Tool, Tool(specifier) or mcp__server__tool, e.g. ExecCommand(git push:*), ApplyPatch(src/**), SpawnAgent (see docs/guardrails.md)",
  });
}

/**
 * Parse one rule; throws `invalid_permission_rule` with the reason. `knownTools` is the tool
 * catalog (a rule naming a tool that does not exist is a mistake worth saying at set time).
 */
export function parseRule(text: string, source: RuleSource, knownTools: ReadonlySet<string>): Rule {
  if (text.length === 0 || text.length > MAX_RULE_CHARS) {
    throw ruleError(text.slice(0, 80), `a rule is 1-${MAX_RULE_CHARS} characters`);
  }
  const t = text.trim();
  const mcp = MCP_NAME.exec(t);
  if (mcp) {
    const tool = mcp[2] ?? null;
    if (tool !== null && tool !== "*" && tool.includes("*")) {
      throw ruleError(text, "an MCP rule names a server, server__*, or server__tool");
    }
    return {
      text,
      source,
      tool: "mcp",
      spec: { kind: "mcp", server: mcp[1]!, tool: tool === "*" ? null : tool },
    };
  }
  const open = t.indexOf("(");
  const rawName = open < 0 ? t : t.slice(0, open);
  if (!TOOL_NAME.test(rawName)) throw ruleError(text, "the tool name is not a plain identifier");
  const tool = ALIASES[rawName] ?? rawName;
  if (!knownTools.has(tool)) {
    throw ruleError(text, `there is no tool named ${rawName}`);
  }
  if (open < 0) return { text, source, tool, spec: { kind: "any" } };
  if (!t.endsWith(")")) throw ruleError(text, "a specifier is closed with ')' at the end");
  const inner = t.slice(open + 1, -1).trim();
  if (inner === "") throw ruleError(text, "the specifier between the parentheses is empty");
  if (inner === "*") return { text, source, tool, spec: { kind: "any" } };
  if (COMMAND_TOOLS.has(tool)) {
    const prefix = inner.endsWith(":*");
    const body = prefix ? inner.slice(0, -2).trim() : inner;
    if (body === "") throw ruleError(text, "a command prefix needs at least one word before :*");
    if (SHELL_META.test(body) || body.includes(":*")) {
      throw ruleError(
        text,
        "a command rule is one simple command in plain words, optionally ending in :* for a prefix (no quotes, operators, globs or expansions)",
      );
    }
    return { text, source, tool, spec: { kind: "command", words: body.split(/ +/), prefix } };
  }
  if (PATH_TOOLS.has(tool)) {
    if (inner.includes("\0")) throw ruleError(text, "a path pattern cannot hold NUL");
    return { text, source, tool, spec: { kind: "path", glob: inner } };
  }
  throw ruleError(text, `${tool} takes no specifier: write it bare`);
}

/** Check every rule of a settings object; throws on the first bad one. */
export function validatePermissionSettings(
  settings: PermissionSettings,
  source: RuleSource,
  knownTools: ReadonlySet<string>,
): void {
  for (const list of ["allow", "ask", "deny"] as const) {
    for (const r of settings[list] ?? []) parseRule(r, source, knownTools);
  }
}

/** One level's settings, as loaded (workspace `allow` lists are dropped: they only tighten). */
export type PolicyLayer = { source: RuleSource; settings: PermissionSettings };

export type EffectivePolicy = {
  mode: PermissionMode;
  allow: Rule[];
  ask: Rule[];
  deny: Rule[];
  /** SHA-256 of the mode and the rule texts by level: what an approval is bound to. */
  digest: string;
  /** Workspace allow entries that were ignored (workspace rules may only tighten). */
  ignored: string[];
};

const MODE_RANK: Record<PermissionMode, number> = { trusted: 0, ask: 1, read_only: 2 };

export function stricterMode(a: PermissionMode, b: PermissionMode): PermissionMode {
  return MODE_RANK[a] >= MODE_RANK[b] ? a : b;
}

/**
 * Combine the levels. The agent's mode replaces the host's; a workspace may only make it
 * stricter and add ask/deny rules. Rules that fail to parse (a hand-edited `.holon.json`)
 * are ignored for allow and read as asking for the whole tool otherwise: fail closed.
 */
export function effectivePolicy(
  layers: PolicyLayer[],
  knownTools: ReadonlySet<string>,
): EffectivePolicy {
  let mode: PermissionMode = "trusted";
  const out: EffectivePolicy = { mode, allow: [], ask: [], deny: [], digest: "", ignored: [] };
  for (const layer of layers) {
    const s = layer.settings;
    if (s.mode) mode = layer.source === "workspace" ? stricterMode(mode, s.mode) : s.mode;
    for (const list of ["allow", "ask", "deny"] as const) {
      for (const text of s[list] ?? []) {
        if (list === "allow" && layer.source === "workspace") {
          out.ignored.push(text);
          continue;
        }
        try {
          out[list].push(parseRule(text, layer.source, knownTools));
        } catch {
          if (list !== "allow") {
            out.ask.push({ text, source: layer.source, tool: "*", spec: { kind: "any" } });
          }
        }
      }
    }
  }
  out.mode = mode;
  const canon = JSON.stringify({
    mode,
    layers: layers.map((l) => ({
      source: l.source,
      mode: l.settings.mode ?? null,
      allow: l.source === "workspace" ? [] : (l.settings.allow ?? []),
      ask: l.settings.ask ?? [],
      deny: l.settings.deny ?? [],
    })),
  });
  out.digest = createHash("sha256").update(canon).digest("hex");
  return out;
}

/** What a call touches, in the terms rules speak. */
export type CallSubject =
  | { kind: "shell"; commands: string[] }
  | { kind: "paths"; paths: (string | null)[] }
  | { kind: "plain" };

export type MatchContext = {
  /** Relative path patterns and relative paths resolve against it (the execution root). */
  root: string;
  /** Relative paths in a call resolve against it. */
  cwd: string;
  home?: string;
};

type Match = "yes" | "maybe" | "no";

/**
 * Decide one call. `subject` carries what the rules match on (the shell commands of an
 * ExecCommand or batch, the files a patch touches, the directory UseWorkspace names).
 */
export function evaluate(
  policy: EffectivePolicy,
  tool: string,
  subject: CallSubject,
  ctx: MatchContext,
): Verdict {
  const rulesFor = (list: Rule[]) => list.filter((r) => appliesTo(r, tool));
  const deny = rulesFor(policy.deny);
  const ask = rulesFor(policy.ask);
  const allow = rulesFor(policy.allow);
  const units = unitsOf(subject);

  let asked: Verdict | undefined;
  let allAllowed = units.length > 0;
  for (const unit of units) {
    let unitAllowed = false;
    for (const r of deny) {
      const m = matchUnit(r, unit, ctx, "loose");
      if (m === "yes") return verdict("deny", r, "deny", unit);
      if (m === "maybe") asked ??= unknownVerdict(r, "deny", unit);
    }
    for (const r of ask) {
      const m = matchUnit(r, unit, ctx, "loose");
      if (m === "yes") asked ??= verdict("ask", r, "ask", unit);
      else if (m === "maybe") asked ??= unknownVerdict(r, "ask", unit);
    }
    if (unit.kind === "part" && unit.part.carrier) unitAllowed = true;
    else for (const r of allow) if (matchUnit(r, unit, ctx, "strict") === "yes") unitAllowed = true;
    if (!unitAllowed) allAllowed = false;
  }
  if (asked) return asked;
  if (allAllowed) {
    const r = allow.find((r) => units.some((u) => matchUnit(r, u, ctx, "strict") === "yes"));
    return {
      decision: "allow",
      reason: r ? `allowed by rule ${r.text}` : "allowed",
      rule: r ? { text: r.text, source: r.source, list: "allow" } : null,
    };
  }
  return modeVerdict(policy.mode, tool);
}

function verdict(decision: Decision, r: Rule, list: RuleList, unit: Unit): Verdict {
  const what =
    unit.kind === "part"
      ? ` (command part: ${unit.part.text})`
      : unit.kind === "path" && unit.path
        ? ` (path: ${unit.path})`
        : "";
  const verb = decision === "deny" ? "denied" : "needs approval";
  return {
    decision,
    reason: `${verb} by ${r.source} rule ${r.text}${what}`,
    rule: { text: r.text, source: r.source, list },
  };
}

function unknownVerdict(r: Rule, list: RuleList, unit: Unit): Verdict {
  const what = unit.kind === "part" ? `command part ${JSON.stringify(unit.part.text)}` : "path";
  return {
    decision: "ask",
    reason: `needs approval: the ${what} cannot be checked against ${r.source} rule ${r.text} before it runs (its program or arguments are only known at run time)`,
    rule: { text: r.text, source: r.source, list },
  };
}

function modeVerdict(mode: PermissionMode, tool: string): Verdict {
  const mcp = tool.startsWith("mcp__");
  if (mode === "trusted" || (!LEASHED_TOOLS.has(tool) && !mcp)) {
    return { decision: "allow", reason: `allowed by mode ${mode}`, rule: null };
  }
  if (mode === "read_only" && (tool === "ApplyPatch" || mcp)) {
    return {
      decision: "deny",
      reason: `denied by mode read_only: ${tool} changes things and no rule allows it`,
      rule: null,
    };
  }
  return {
    decision: "ask",
    reason:
      mode === "read_only"
        ? `needs approval: mode read_only and no sandbox enforces a read-only file system for ${tool}`
        : `needs approval: mode ask and no rule allows this ${tool} call`,
    rule: null,
  };
}

type Unit =
  | { kind: "part"; part: CommandPart & { carrier?: boolean } }
  | { kind: "path"; path: string | null }
  | { kind: "plain" };

function unitsOf(subject: CallSubject): Unit[] {
  switch (subject.kind) {
    case "shell": {
      const units: Unit[] = [];
      for (const cmd of subject.commands) {
        const a = analyzeShell(cmd);
        const parts = a.parts as (CommandPart & { carrier?: boolean })[];
        markCarriers(parts);
        for (const part of parts) units.push({ kind: "part", part });
        if (parts.length === 0) units.push({ kind: "plain" });
      }
      return units;
    }
    case "paths":
      return subject.paths.length
        ? subject.paths.map((path) => ({ kind: "path", path }))
        : [{ kind: "plain" }];
    case "plain":
      return [{ kind: "plain" }];
  }
}

/**
 * A shell or `eval` whose script was read (it is followed by the script's own parts) adds
 * nothing an allow rule must cover: `bash -c 'npm test'` is allowed where `npm test` is.
 */
function markCarriers(parts: (CommandPart & { carrier?: boolean })[]): void {
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    const name = p.loose[0];
    if (p.dynamic || !name) continue;
    if (
      name === "eval" ||
      (SHELL_CARRIERS.has(name) &&
        p.loose.some((w) => w !== null && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(w)))
    ) {
      p.carrier = i + 1 < parts.length;
    }
  }
}
const SHELL_CARRIERS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"]);

function appliesTo(r: Rule, tool: string): boolean {
  if (r.tool === "*") return true;
  if (r.spec.kind === "mcp") {
    const m = MCP_NAME.exec(tool);
    return !!m && m[1] === r.spec.server && (r.spec.tool === null || m[2] === r.spec.tool);
  }
  if (r.tool === tool) return true;
  // Each item of a batch is an ExecCommand; TaskInput feeds a running command.
  return r.tool === "ExecCommand" && tool === "ExecCommandBatch";
}

function matchUnit(r: Rule, unit: Unit, ctx: MatchContext, view: "loose" | "strict"): Match {
  const spec = r.spec;
  if (spec.kind === "any" || spec.kind === "mcp") return "yes";
  if (spec.kind === "command") {
    if (unit.kind !== "part") return "no";
    const p = unit.part;
    if (view === "strict") {
      if (p.dynamic) return "no";
      return matchWords(spec.words, spec.prefix, p.words, p.open) === "yes" ? "yes" : "no";
    }
    if (p.dynamic) return "maybe";
    const a = matchWords(spec.words, spec.prefix, p.loose, p.open);
    if (a === "yes") return a;
    const b = matchWords(spec.words, spec.prefix, p.words, p.open);
    return b === "yes" ? b : a === "maybe" || b === "maybe" ? "maybe" : "no";
  }
  if (unit.kind !== "path") return "no";
  if (unit.path === null) return view === "strict" ? "no" : "maybe";
  return matchesGlob(unit.path, resolvePattern(spec.glob, ctx)) ? "yes" : "no";
}

function matchWords(
  rule: string[],
  prefix: boolean,
  words: (string | null)[],
  open: boolean,
): Match {
  let maybe = false;
  const n = Math.min(rule.length, words.length);
  for (let i = 0; i < n; i++) {
    const w = words[i];
    if (w === null) maybe = true;
    else if (w !== rule[i]) return "no";
  }
  if (words.length < rule.length) return open ? "maybe" : "no";
  if (!prefix && words.length > rule.length) return "no";
  if (!prefix && open) maybe = true; // more words may be appended
  return maybe ? "maybe" : "yes";
}

function resolvePattern(glob: string, ctx: MatchContext): string {
  if (glob === "~" || glob.startsWith("~/")) return join(ctx.home ?? homedir(), glob.slice(1));
  return isAbsolute(glob) ? glob : join(ctx.root, glob);
}

/** A path from a call, made absolute against the call's working directory. */
export function callPath(p: string, ctx: MatchContext): string {
  if (p === "~" || p.startsWith("~/")) return join(ctx.home ?? homedir(), p.slice(1));
  return resolve(ctx.cwd, p);
}
