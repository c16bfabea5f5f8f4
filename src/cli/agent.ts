// `holon agent …`: list, create and lifecycle control.
import { resolve } from "node:path";
import { call, connect, type ClientFlags } from "./connect.ts";
import { printJson } from "./output.ts";

type Flags = ClientFlags & { json?: boolean };

export async function list(flags: Flags): Promise<void> {
  const client = connect(flags);
  const res = await call(() =>
    client.call<{
      agents: {
        agent_id: string;
        status: string;
        pending: number;
        is_default: boolean;
        kind: string;
      }[];
    }>("GET", "/agents/list"),
  );
  if (flags.json) return printJson(res.agents);
  for (const a of res.agents) {
    process.stdout.write(
      `${a.agent_id.padEnd(24)} ${a.status.padEnd(14)} ${String(a.pending).padStart(4)} pending${a.is_default ? "  (default)" : ""}\n`,
    );
  }
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
  const agentId =
    agent ?? (await call(() => client.call<{ default_agent: string }>("GET", "/"))).default_agent;
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

async function defaultAgent(client: ReturnType<typeof connect>): Promise<string> {
  return (await call(() => client.call<{ default_agent: string }>("GET", "/"))).default_agent;
}

export async function abort(
  agent: string | undefined,
  flags: Flags & { runId?: string },
): Promise<void> {
  const client = connect(flags);
  const agentId = agent ?? (await defaultAgent(client));
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
  const agentId = agent ?? (await defaultAgent(client));
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
  const agentId = agent ?? (await defaultAgent(client));
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
  const agentId = agent ?? (await defaultAgent(client));
  const res = await call(() =>
    client.call<{ model: ModelState }>(
      "POST",
      `/control/agents/${encodeURIComponent(agentId)}/model/clear`,
      {},
    ),
  );
  printModel(agentId, res.model, flags.json);
}
