// `holon agent …`: list, create and lifecycle control.
import { resolve } from "node:path";
import { call, connect, type ClientFlags, agentOrDefault } from "./connect.ts";
import { CliError, printJson } from "./output.ts";

type Flags = ClientFlags & { json?: boolean };

export async function list(flags: Flags & { all?: boolean }): Promise<void> {
  const client = connect(flags);
  const res = await call(() =>
    client.call<{
      agents: {
        agent_id: string;
        status: string;
        pending: number;
        is_default: boolean;
        kind: string;
        visibility: string;
        archived: boolean;
        lineage_parent_agent_id: string | null;
      }[];
    }>("GET", flags.all ? "/agents/list?all=true" : "/agents/list"),
  );
  if (flags.json) return printJson(res.agents);
  for (const a of res.agents) {
    const notes = [
      a.is_default ? "default" : null,
      flags.all && a.visibility === "private" ? "private" : null,
      a.archived ? "archived" : null,
      flags.all && a.lineage_parent_agent_id ? `child of ${a.lineage_parent_agent_id}` : null,
    ].filter(Boolean);
    process.stdout.write(
      `${a.agent_id.padEnd(24)} ${a.status.padEnd(14)} ${String(a.pending).padStart(4)} pending${notes.length ? `  (${notes.join(", ")})` : ""}\n`,
    );
  }
}

export async function homeDir(agent: string, flags: Flags): Promise<void> {
  const client = connect(flags);
  const res = await call(() =>
    client.call<{ agent_id: string; agent_home: string }>(
      "GET",
      `/control/agents/${encodeURIComponent(agent)}/home`,
    ),
  );
  if (flags.json) return printJson(res);
  process.stdout.write(`${res.agent_home}\n`);
}

export async function get(agent: string, flags: Flags): Promise<void> {
  const client = connect(flags);
  const res = await call(() =>
    client.call<{ agent: Record<string, any> }>(
      "GET",
      `/control/agents/${encodeURIComponent(agent)}/agent`,
    ),
  );
  if (flags.json) return printJson(res.agent);
  const a = res.agent;
  const i = a.identity;
  const lines = [
    `agent:    ${i.agent_id}  [${i.kind}, ${i.visibility}, ${i.ownership}, ${i.profile_preset}]`,
    `home:     ${i.agent_home}`,
    `status:   ${a.status}${a.closure ? `  (closure ${a.closure.outcome}${a.closure.waiting_reason ? `, ${a.closure.waiting_reason}` : ""})` : ""}`,
  ];
  if (i.lineage_parent_agent_id) lines.push(`parent:   ${i.lineage_parent_agent_id}`);
  lines.push(`group:    ${i.group_id}`);
  if (a.current_work_item)
    lines.push(`work:     ${a.current_work_item.work_item_id} ${a.current_work_item.objective}`);
  for (const t of a.active_tasks)
    lines.push(`task:     ${t.task_id} [${t.kind}, ${t.status}] ${t.summary ?? ""}`);
  for (const ch of a.children.entries)
    lines.push(`child:    ${ch.agent_id} [${ch.status}${ch.archived ? ", archived" : ""}]`);
  process.stdout.write(lines.join("\n") + "\n");
}

export async function archive(agent: string, flags: Flags): Promise<void> {
  const client = connect(flags);
  const res = await call(() =>
    client.call<{ stopped_task_ids: string[] }>(
      "POST",
      `/control/agents/${encodeURIComponent(agent)}/archive`,
      {},
    ),
  );
  if (flags.json) return printJson(res);
  process.stdout.write(
    `${agent}: archived${res.stopped_task_ids.length ? ` (stopped ${res.stopped_task_ids.join(", ")})` : ""}\n`,
  );
}

export async function remove(
  agent: string,
  flags: Flags & { yes?: boolean; force?: boolean },
): Promise<void> {
  if (!flags.yes) {
    throw new CliError(
      `deleting ${agent} removes its home and records; confirm with --yes`,
      `holon agent delete ${agent} --yes`,
    );
  }
  const client = connect(flags);
  const res = await call(() =>
    client.call<{
      stopped_task_ids: string[];
      cancelled_timer_ids: string[];
      revoked_trigger_ids: string[];
      retained_worktrees: string[];
      deleted_children: string[];
    }>("POST", `/control/agents/${encodeURIComponent(agent)}/delete`, {
      ...(flags.force ? { force: true } : {}),
    }),
  );
  if (flags.json) return printJson(res);
  const lines = [`${agent}: deleted`];
  if (res.stopped_task_ids.length) lines.push(`stopped tasks: ${res.stopped_task_ids.join(", ")}`);
  if (res.cancelled_timer_ids.length)
    lines.push(`cancelled timers: ${res.cancelled_timer_ids.join(", ")}`);
  if (res.revoked_trigger_ids.length)
    lines.push(`revoked triggers: ${res.revoked_trigger_ids.join(", ")}`);
  if (res.deleted_children.length)
    lines.push(`deleted children: ${res.deleted_children.join(", ")}`);
  for (const w of res.retained_worktrees) lines.push(`retained worktree: ${w}`);
  process.stdout.write(lines.join("\n") + "\n");
}

export async function create(
  agent: string,
  flags: Flags & { workspaceRoot?: string; template?: string },
): Promise<void> {
  const client = connect(flags);
  const body: Record<string, unknown> = {};
  // Relative to this shell; the host checks that it exists and is a directory.
  if (flags.workspaceRoot) body.workspace_root = resolve(flags.workspaceRoot);
  if (flags.template) body.template = flags.template;
  const res = await call(() =>
    client.call<{ agent: { agent_id: string; status: string } }>(
      "POST",
      `/control/agents/${encodeURIComponent(agent)}/create`,
      body,
    ),
  );
  if (flags.json) return printJson(res.agent);
  process.stdout.write(`created agent ${res.agent.agent_id} (${res.agent.status})\n`);
}

export async function control(
  actionName: string,
  agent: string | undefined,
  flags: Flags,
): Promise<void> {
  const client = connect(flags);
  const agentId = await agentOrDefault(client, agent);
  const res = await call(() =>
    client.call<{ disposition: string; status: string }>(
      "POST",
      `/control/agents/${encodeURIComponent(agentId)}/control`,
      { action: actionName },
    ),
  );
  if (flags.json) return printJson(res);
  process.stdout.write(`${agentId}: ${res.disposition} (status ${res.status})\n`);
}

export async function abort(
  agent: string | undefined,
  flags: Flags & { runId?: string },
): Promise<void> {
  const client = connect(flags);
  const agentId = agent ?? (await agentOrDefault(client));
  const body: Record<string, unknown> = { mode: "stop_after_abort" };
  if (flags.runId) body.run_id = flags.runId;
  const res = await call(() =>
    client.call<{ run_id: string }>(
      "POST",
      `/control/agents/${encodeURIComponent(agentId)}/current-run/abort`,
      body,
    ),
  );
  if (flags.json) return printJson(res);
  process.stdout.write(
    `${agentId}: aborting run ${res.run_id}; the agent will be stopped (holon agent start ${agentId} to resume)\n`,
  );
}

type ModelState = {
  source: string;
  runtime_default_model: string | null;
  effective_model: string | null;
  effective_fallback_models: string[];
  override_model?: string;
};

function printModel(agentId: string, m: ModelState, json?: boolean): void {
  if (json) return printJson(m);
  process.stdout.write(
    `${agentId}: ${m.effective_model ?? "(no model configured)"} (${m.source === "agent_override" ? "agent override" : "runtime default"})\n` +
      (m.effective_fallback_models.length
        ? `fallbacks: ${m.effective_fallback_models.join(", ")}\n`
        : ""),
  );
}

export async function modelGet(agent: string | undefined, flags: Flags): Promise<void> {
  const client = connect(flags);
  const agentId = agent ?? (await agentOrDefault(client));
  const s = await call(() =>
    client.call<{ model: ModelState }>("GET", `/agents/${encodeURIComponent(agentId)}/status`),
  );
  printModel(agentId, s.model, flags.json);
}

export async function modelSet(
  model: string,
  agent: string | undefined,
  flags: Flags,
): Promise<void> {
  const client = connect(flags);
  const agentId = agent ?? (await agentOrDefault(client));
  const res = await call(() =>
    client.call<{ model: ModelState }>(
      "POST",
      `/control/agents/${encodeURIComponent(agentId)}/model`,
      { model },
    ),
  );
  printModel(agentId, res.model, flags.json);
}

export async function modelClear(agent: string | undefined, flags: Flags): Promise<void> {
  const client = connect(flags);
  const agentId = agent ?? (await agentOrDefault(client));
  const res = await call(() =>
    client.call<{ model: ModelState }>(
      "POST",
      `/control/agents/${encodeURIComponent(agentId)}/model/clear`,
      {},
    ),
  );
  printModel(agentId, res.model, flags.json);
}

type SettingsReply = {
  agent_id: string;
  settings: { sandbox: Record<string, unknown> };
  sandbox: { backend: string; mode: string; state: string; reason: string | null };
  leash: { mode: string; advisory: boolean; rules: Record<string, number> };
};

/** A value as the operator typed it: JSON when it parses (lists), else the text itself. */
function settingValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

async function putSetting(agent: string, key: string, value: unknown, flags: Flags) {
  const client = connect(flags);
  const res = await call(() =>
    client.call<SettingsReply>("POST", `/control/agents/${encodeURIComponent(agent)}/settings`, {
      key,
      value,
    }),
  );
  if (flags.json) return printJson(res);
  const s = res.sandbox;
  const l = res.leash;
  process.stdout.write(
    `${res.agent_id}: ${key} ${value === null ? "cleared" : `= ${JSON.stringify(value)}`}\n` +
      `sandbox: ${s.state} (${s.backend}, mode ${s.mode})${s.reason ? ` — ${s.reason}` : ""}\n` +
      `leash: mode ${l.mode}${l.advisory ? " (advisory: no sandbox enforces it)" : ""}, rules ${l.rules.allow} allow / ${l.rules.ask} ask / ${l.rules.deny} deny\n`,
  );
}

/** `holon agent set <agent> <key> <value>`: one of the agent's own settings, as an event. */
export async function settingSet(agent: string, key: string, value: string, flags: Flags) {
  await putSetting(agent, key, settingValue(value), flags);
}

/** `holon agent unset <agent> <key>`: back to the host's value. */
export async function settingUnset(agent: string, key: string, flags: Flags) {
  await putSetting(agent, key, null, flags);
}
