// `holon workspace …`: attach a directory to an agent, list its workspaces, leave the active
// one (back to agent_home), detach one, and review or clean its managed worktrees.
import { requester } from "./request.ts";
import { resolve } from "node:path";
import type { Command } from "commander";
import { action, printJson, clientOptions } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

type Flags = ClientFlags & { json?: boolean };

const common = clientOptions;

const enc = encodeURIComponent;
const out = (s: string) => process.stdout.write(s + "\n");

type Listing = {
  active: {
    workspace_id: string;
    workspace_anchor: string;
    execution_root: string;
    cwd: string;
    mode: string;
    projection_kind: string;
  };
  attached: {
    workspace_id: string;
    workspace_anchor: string | null;
    kind: string | null;
    available: boolean;
    active: boolean;
  }[];
  worktree_session: { worktree_path: string; worktree_branch: string } | null;
  worktrees: Worktree[];
};
type Worktree = {
  worktree_id: string;
  path: string;
  branch: string;
  status: string;
  ownership: string;
  changed_files: string[];
  commits_ahead: number;
  missing: boolean;
};

function worktreeLine(w: Worktree): string {
  const changes =
    w.changed_files.length > 0 ? `${w.changed_files.length} changed file(s)` : "clean";
  return `${w.worktree_id}  ${w.status.padEnd(8)} ${w.branch}  ${w.path}  (${changes}, ${w.commits_ahead} commit(s) ahead${w.missing ? ", directory missing" : ""})`;
}

async function attach(agent: string, path: string, flags: Flags & { use?: boolean }) {
  const req = await requester(flags);
  if (flags.use) {
    // Attach (when new) and make it the execution root in one step, as the operator.
    const used = await req<{
      workspace_id: string;
      workspace_anchor: string;
      execution_root: string;
      attached_now: boolean;
    }>("POST", `/control/agents/${enc(agent)}/workspaces/use`, { path: resolve(path) });
    if (flags.json) return printJson(used);
    out(
      `${used.attached_now ? "attached" : "already attached"}: ${used.workspace_id} ${used.workspace_anchor}; ${agent} now works in ${used.execution_root}`,
    );
    return;
  }
  const res = await req<{
    workspace: { workspace_id: string; workspace_anchor: string; kind: string };
    attached_now: boolean;
  }>("POST", `/control/agents/${enc(agent)}/workspaces/attach`, { path: resolve(path) });
  if (flags.json) return printJson(res);
  out(
    `${res.attached_now ? "attached" : "already attached"}: ${res.workspace.workspace_id} (${res.workspace.kind}) ${res.workspace.workspace_anchor}`,
  );
}

async function list(agent: string, flags: Flags) {
  const req = await requester(flags);
  const res = await req<Listing>("GET", `/agents/${enc(agent)}/workspaces`);
  if (flags.json) return printJson(res);
  for (const w of res.attached) {
    const mark = w.active ? "*" : " ";
    out(
      `${mark} ${w.workspace_id.padEnd(26)} ${(w.kind ?? "?").padEnd(10)} ${w.workspace_anchor ?? "(unknown)"}${w.available ? "" : "  (missing)"}`,
    );
  }
  out(
    `execution root: ${res.active.execution_root} (${res.active.mode}, ${res.active.projection_kind})`,
  );
  out(`cwd:            ${res.active.cwd}`);
  if (res.worktree_session)
    out(
      `worktree:       ${res.worktree_session.worktree_path} on ${res.worktree_session.worktree_branch}`,
    );
}

async function exit(agent: string, flags: Flags) {
  const req = await requester(flags);
  const res = await req<{ left?: { path: string; disposition: string; changed_files: string[] } }>(
    "POST",
    `/control/agents/${enc(agent)}/workspaces/exit`,
    {},
  );
  if (flags.json) return printJson(res);
  out(`${agent} is back in agent_home`);
  if (res.left)
    out(
      `worktree ${res.left.path} ${res.left.disposition}${res.left.changed_files.length ? ` (${res.left.changed_files.length} changed file(s))` : ""}`,
    );
}

async function detach(agent: string, workspaceId: string, flags: Flags) {
  const req = await requester(flags);
  const res = await req("POST", `/control/agents/${enc(agent)}/workspaces/detach`, {
    workspace_id: workspaceId,
  });
  if (flags.json) return printJson(res);
  out(`detached ${workspaceId} from ${agent} (no files were deleted)`);
}

async function worktrees(agent: string, flags: Flags & { clean?: boolean }) {
  const req = await requester(flags);
  if (flags.clean) {
    const res = await req<{ removed: Worktree[]; retained: Worktree[] }>(
      "POST",
      `/control/agents/${enc(agent)}/worktrees/clean`,
      {},
    );
    if (flags.json) return printJson(res);
    for (const r of res.removed) out(`removed  ${r.path} (${r.branch})`);
    for (const r of res.retained)
      out(`kept     ${r.path} (${r.branch}): ${r.changed_files.join(", ")}`);
    if (res.removed.length + res.retained.length === 0) out("no retained worktrees");
    return;
  }
  const res = await req<{ worktrees: Worktree[] }>("GET", `/agents/${enc(agent)}/worktrees`);
  if (flags.json) return printJson(res.worktrees);
  if (res.worktrees.length === 0) {
    out("no managed worktrees");
    return;
  }
  for (const w of res.worktrees) {
    out(worktreeLine(w));
    for (const f of w.changed_files) out(`    ${f}`);
  }
}

export function registerWorkspaceCommands(program: Command): void {
  const ws = program
    .command("workspace")
    .description("Attach, list, leave and detach an agent's workspaces; review its worktrees");
  common(
    ws
      .command("attach <agent> <path>")
      .description("Attach a directory to the agent")
      .option("--use", "also make it the agent's execution root: prompt and task then act in it"),
  ).action(action(attach));
  common(
    ws
      .command("list <agent>")
      .description("Attached workspaces, the active one, the execution root and worktree session"),
  ).action(action(list));
  common(ws.command("exit <agent>").description("Return the agent to agent_home")).action(
    action(exit),
  );
  common(
    ws
      .command("detach <agent> <workspace_id>")
      .description("Remove a workspace from the agent's attached set (never deletes files)"),
  ).action(action(detach));
  common(
    ws
      .command("worktrees <agent>")
      .description("The agent's managed worktrees: path, branch, changed files")
      .option("--clean", "remove the retained worktrees that have no uncommitted changes"),
  ).action(action(worktrees));
}
