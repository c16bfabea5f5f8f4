// `holon skills …`: list what an agent can discover, install a skill from a directory or a
// git tree URL, uninstall one. Without --agent, install and uninstall use the user scope.
import { requester } from "./request.ts";
import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { action, printJson, clientOptions } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

type Flags = ClientFlags & { json?: boolean; agent?: string };

const common = clientOptions;

const out = (s: string) => process.stdout.write(s + "\n");

async function list(flags: Flags) {
  const req = await requester(flags);
  const agent = flags.agent ?? (await req<{ default_agent: string }>("GET", "/")).default_agent;
  const res = await req<{
    roots: { scope: string; root: string | null }[];
    skills: { name: string; scope: string; description: string; entrypoint_path: string }[];
    active: { skill_id: string; state: string }[];
    warnings: string[];
  }>("GET", `/agents/${encodeURIComponent(agent)}/skills`);
  if (flags.json) return printJson(res);
  for (const r of res.roots) out(`${r.scope.padEnd(9)} ${r.root ?? "(no root)"}`);
  if (res.skills.length === 0) out("no skills found");
  const active = new Map(res.active.map((a) => [a.skill_id, a.state]));
  for (const s of res.skills) {
    const state = active.get(`${s.scope}:${s.name}`);
    out(`${s.name} [${s.scope}${state ? `, ${state}` : ""}] ${s.description}`);
    out(`    ${s.entrypoint_path}`);
  }
  for (const w of res.warnings) process.stderr.write(`warning: ${w}\n`);
}

async function install(
  source: string | undefined,
  flags: Flags & { remote?: string; force?: boolean },
) {
  const req = await requester(flags);
  const body: Record<string, unknown> = {};
  if (flags.remote) body.remote = flags.remote;
  else if (source) body.path = resolve(source);
  if (flags.agent) body.agent_id = flags.agent;
  if (flags.force) body.force = true;
  const res = await req<{ name: string; scope: string; path: string }>(
    "POST",
    "/control/skills/install",
    body,
  );
  if (flags.json) return printJson(res);
  out(`installed ${res.name} (${res.scope}) at ${res.path}`);
}

async function uninstall(name: string, flags: Flags) {
  const req = await requester(flags);
  const body: Record<string, unknown> = { name };
  if (flags.agent) body.agent_id = flags.agent;
  const res = await req<{ path: string }>("POST", "/control/skills/uninstall", body);
  if (flags.json) return printJson(res);
  out(`uninstalled ${name} (${res.path})`);
}

export function registerSkillsCommands(program: Command): void {
  const skills = program.command("skills").description("List, install and uninstall skills");
  const agentOpt = (what: string) => new Option("--agent <id>", what);
  common(
    skills
      .command("list")
      .description("Skills the agent discovers (default agent when --agent is omitted)")
      .addOption(agentOpt("the agent whose view to show")),
  ).action(action(async (flags: Flags) => list(flags)));
  common(
    skills
      .command("install [path]")
      .description("Install a skill directory (or --remote <git tree URL>)")
      .option("--remote <url>", "https://github.com/<owner>/<repo>/tree/<ref>/<path>")
      .option("--force", "replace an installed skill of the same name")
      .addOption(agentOpt("install into this agent's home instead of the user scope")),
  ).action(action(install));
  common(
    skills
      .command("uninstall <name>")
      .description("Remove an installed skill")
      .addOption(agentOpt("remove from this agent's home instead of the user scope")),
  ).action(action(uninstall));
}
