// The agent directory: creating agents and reading or changing their identity-level
// settings (workspace binding, model override, cwd). Visibility is enforced here: private
// agents are reachable only through their owner, never by id from a public surface.
import { mkdirSync } from "node:fs";
import { AgentId, type AgentListEntry, type AgentRecord } from "../domain/agent.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import type { Store } from "../store/db.ts";
import type { AgentLoops } from "./loops.ts";
import type { WorkspaceService } from "../workspace/registry.ts";
import { transition } from "./status.ts";

export type CreateAgentOptions = {
  visibility?: "public" | "private";
  workspace_root?: string;
  lineage_parent_agent_id?: string;
};

export type DirectoryDeps = {
  store: Store;
  /** Workspace bindings: `workspace_root` and `cwd` are set through the active workspace entry. */
  workspaces: WorkspaceService;
  loops: AgentLoops;
  defaultAgentId: string;
  /** Where an agent's home lives (host/paths.ts decides). */
  agentHome(agentId: string): string;
  /** Throws a HolonError when a model ref names an unknown provider. */
  checkModelRef(modelRef: string): void;
};

export class AgentDirectory {
  private readonly deps: DirectoryDeps;

  constructor(deps: DirectoryDeps) {
    this.deps = deps;
  }

  get defaultAgentId(): string {
    return this.deps.defaultAgentId;
  }

  private get store(): Store {
    return this.deps.store;
  }

  get(agentId: string): AgentRecord {
    const agent = this.store.agents.get(agentId);
    if (!agent) throw unknownAgent(agentId);
    return agent;
  }

  /** Public agents are reachable by id; private ones only through their owner. */
  getPublic(agentId: string): AgentRecord {
    const agent = this.get(agentId);
    if (agent.visibility !== "public") throw unknownAgent(agentId);
    return agent;
  }

  list(): AgentListEntry[] {
    return this.store.agents
      .list()
      .filter((a) => a.visibility === "public")
      .map((a) => ({
        agent_id: a.agent_id,
        kind: a.kind,
        visibility: a.visibility,
        status: a.status,
        pending: this.store.messages.pendingCount(a.agent_id),
        is_default: a.agent_id === this.deps.defaultAgentId,
      }));
  }

  create(
    agentId: string,
    opts: CreateAgentOptions = {},
    kind: AgentRecord["kind"] = "named",
  ): AgentRecord {
    const idCheck = AgentId.safeParse(agentId);
    if (!idCheck.success) {
      throw new HolonError("invalid_agent_id", idCheck.error.issues[0]?.message ?? "bad agent id");
    }
    const store = this.store;
    const agentHome = this.deps.agentHome(agentId);
    store.tx(() => {
      if (store.agents.get(agentId)) {
        throw new HolonError("agent_exists", `agent '${agentId}' already exists`, { status: 409 });
      }
      const now = store.clock.now().toISOString();
      const visibility = opts.visibility ?? "public";
      const record: AgentRecord = {
        agent_id: agentId,
        agent_home: agentHome,
        kind,
        visibility,
        ownership: "self_owned",
        profile_preset: visibility === "public" ? "public_named" : "private_child",
        status: "booting",
        created_at: now,
        updated_at: now,
        total_message_count: 0,
        total_input_tokens: 0,
        total_output_tokens: 0,
        total_model_rounds: 0,
      };
      if (opts.lineage_parent_agent_id)
        record.lineage_parent_agent_id = opts.lineage_parent_agent_id;
      store.agents.put(record);
      store.appendEvent(agentId, {
        type: "agent_created",
        payload: {
          agent_id: agentId,
          kind,
          visibility,
          ownership: record.ownership,
          profile_preset: record.profile_preset,
          agent_home: agentHome,
        },
      });
      return transition(store, agentId, "awake_idle", "created");
    });
    mkdirSync(agentHome, { recursive: true });
    if (opts.workspace_root) this.setWorkspace(agentId, opts.workspace_root);
    if (this.deps.loops.isOpen) this.deps.loops.start(agentId);
    return this.get(agentId);
  }

  /** Bind the agent to a workspace (used by `run --workspace-root` and create). */
  setWorkspace(agentId: string, workspaceRoot: string): void {
    this.get(agentId);
    this.deps.workspaces.use(agentId, { path: workspaceRoot, mode: "direct" }, "operator");
  }

  /** Agent-scoped model override; affects future turns only. `undefined` clears it. */
  setModelOverride(agentId: string, model: string | undefined): AgentRecord {
    if (model !== undefined) this.deps.checkModelRef(model);
    const store = this.store;
    return store.tx(() => {
      const agent = this.get(agentId);
      const next: AgentRecord = { ...agent, updated_at: store.clock.now().toISOString() };
      if (model === undefined) delete next.model_override;
      else next.model_override = model;
      store.agents.put(next);
      store.appendEvent(agentId, {
        type: "agent_model_changed",
        payload: { previous: agent.model_override ?? null, override_model: model ?? null },
      });
      return next;
    });
  }

  setCwd(agentId: string, cwd: string): void {
    this.get(agentId);
    this.deps.workspaces.setCwd(agentId, cwd);
  }
}
