// The agent directory: creating agents and reading or changing their identity-level
// settings (workspace binding, model override, cwd). Visibility is enforced here: private
// agents are reachable only through their owner, never by id from a public surface.
import { existsSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { AgentId, type AgentListEntry, type AgentRecord } from "../domain/agent.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import {
  AGENT_SANDBOX_KEYS,
  AgentSandboxSettings,
  type SandboxSummary,
} from "../domain/sandbox.ts";
import type { AuthorityClass } from "../domain/message.ts";
import type { Store } from "../store/db.ts";
import type { AgentLoops } from "./loops.ts";
import type { WorkspaceService } from "../workspace/registry.ts";
import { ensureHomeLayout, type HomeInitializer } from "./home.ts";
import { transition } from "./status.ts";

export type CreateAgentOptions = {
  visibility?: "public" | "private";
  workspace_root?: string;
  lineage_parent_agent_id?: string;
  /** Private children: who supervises them (their parent). Implies parent_supervised. */
  supervisor_agent_id?: string;
  spawn_depth?: number;
  /** Taint: the policy authority of the turn that spawned it, when below operator instruction. */
  policy_authority_floor?: AuthorityClass | undefined;
  /** Template selector: id, absolute path or tree URL (context/templates.ts). */
  template?: string;
  /** Start the loop now (default: when loops are open). */
  start?: boolean;
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
  /** Renders a new home from a template (context/templates.ts). */
  homes: HomeInitializer;
  /** Mints a public agent's default external trigger (waiting/triggers.ts), in the creating transaction. */
  triggers: { provisionDefault(agentId: string): Promise<unknown> };
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

  async get(agentId: string): Promise<AgentRecord> {
    const agent = await this.store.agents.get(agentId);
    if (!agent) throw unknownAgent(agentId);
    return agent;
  }

  /** Public agents are reachable by id; private ones only through their owner. */
  async getPublic(agentId: string): Promise<AgentRecord> {
    // The repository directly, not through get(): every public request passes here.
    const agent = await this.store.agents.get(agentId);
    if (!agent || agent.visibility !== "public") throw unknownAgent(agentId);
    return agent;
  }

  /**
   * Public, unarchived agents; `all` adds private children and archived agents (operator
   * views: `holon agent list --all`).
   */
  async list(opts: { all?: boolean } = {}): Promise<AgentListEntry[]> {
    const agents = (await this.store.agents.list()).filter(
      (a) => opts.all || (a.visibility === "public" && !a.archived_at),
    );
    return await Promise.all(agents.map((a) => this.entry(a)));
  }

  async entry(a: AgentRecord): Promise<AgentListEntry> {
    return {
      agent_id: a.agent_id,
      kind: a.kind,
      visibility: a.visibility,
      ownership: a.ownership,
      status: a.status,
      pending: await this.store.messages.pendingCount(a.agent_id),
      is_default: a.agent_id === this.deps.defaultAgentId,
      lineage_parent_agent_id: a.lineage_parent_agent_id ?? null,
      group_id: a.group_id,
      archived: a.archived_at !== undefined,
    };
  }

  /** Agents whose lineage parent is `agentId` (children, public or private). */
  async children(agentId: string): Promise<AgentRecord[]> {
    return (await this.store.agents.list()).filter((a) => a.lineage_parent_agent_id === agentId);
  }

  /**
   * One agent's home layout: the default agent gets the holon-default AGENTS.md when it has
   * none (an existing one is never overwritten), and a public agent that never had an external
   * trigger gets its default one. Run when its group is acquired (host.ts), or when a finished
   * run agent's loop starts again.
   */
  async ensureHome(a: AgentRecord): Promise<void> {
    // Agents made before triggers were minted at creation get theirs once, here.
    if (a.visibility === "public") await this.deps.triggers.provisionDefault(a.agent_id);
    const isDefault = a.agent_id === this.deps.defaultAgentId;
    const seed =
      isDefault && !existsSync(join(a.agent_home, "AGENTS.md"))
        ? this.deps.homes.defaultSeed()
        : undefined;
    try {
      ensureHomeLayout(a.agent_home, seed);
    } catch (err) {
      process.emitWarning(
        `could not prepare the home of ${a.agent_id}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  async create(
    agentId: string,
    opts: CreateAgentOptions = {},
    kind: AgentRecord["kind"] = "named",
  ): Promise<AgentRecord> {
    const idCheck = AgentId.safeParse(agentId);
    if (!idCheck.success) {
      throw new HolonError("invalid_agent_id", idCheck.error.issues[0]?.message ?? "bad agent id");
    }
    const store = this.store;
    const agentHome = this.deps.agentHome(agentId);
    if (await store.agents.get(agentId)) {
      throw new HolonError("agent_exists", `agent '${agentId}' already exists`, { status: 409 });
    }
    // Resolve the template (and stage its skills) before anything of the agent exists: a
    // template that fails leaves no half-made agent.
    const seed =
      kind === "default" && opts.template === undefined
        ? { ...this.deps.homes.defaultSeed(), cleanup() {} }
        : this.deps.homes.prepare(opts.template);
    try {
      await this.insert(agentId, agentHome, kind, opts, seed.provenance);
      ensureHomeLayout(agentHome, seed);
      if (seed.staged_skills_dir) {
        for (const name of readdirSync(seed.staged_skills_dir)) {
          const dest = join(agentHome, "skills", name);
          if (!existsSync(dest)) renameSync(join(seed.staged_skills_dir, name), dest);
        }
      }
    } finally {
      seed.cleanup();
    }
    if (opts.workspace_root) await this.setWorkspace(agentId, opts.workspace_root);
    if (opts.start ?? this.deps.loops.isOpen) await this.deps.loops.start(agentId);
    return await this.get(agentId);
  }

  private async insert(
    agentId: string,
    agentHome: string,
    kind: AgentRecord["kind"],
    opts: CreateAgentOptions,
    provenance: Record<string, unknown> | null,
  ): Promise<void> {
    const store = this.store;
    await store.tx(async () => {
      if (await store.agents.get(agentId)) {
        throw new HolonError("agent_exists", `agent '${agentId}' already exists`, { status: 409 });
      }
      const now = store.clock.now().toISOString();
      const visibility = opts.visibility ?? "public";
      const record: AgentRecord = {
        agent_id: agentId,
        agent_home: agentHome,
        kind,
        visibility,
        group_id: await this.groupFor(agentId, visibility, opts.supervisor_agent_id),
        ownership: opts.supervisor_agent_id ? "parent_supervised" : "self_owned",
        profile_preset: visibility === "public" ? "public_named" : "private_child",
        status: "booting",
        created_at: now,
        updated_at: now,
        total_message_count: 0,
        total_input_tokens: 0,
        total_output_tokens: 0,
        total_model_rounds: 0,
        // Born with the sandbox: no `sandbox_enabled` event, nothing changed for it.
        sandbox_enabled_at: now,
      };
      if (opts.lineage_parent_agent_id)
        record.lineage_parent_agent_id = opts.lineage_parent_agent_id;
      if (opts.supervisor_agent_id) record.supervisor_agent_id = opts.supervisor_agent_id;
      if (opts.spawn_depth) record.spawn_depth = opts.spawn_depth;
      if (opts.policy_authority_floor && opts.policy_authority_floor !== "operator_instruction")
        record.policy_authority_floor = opts.policy_authority_floor;
      await store.agents.put(record);
      await store.appendEvent(agentId, {
        type: "agent_created",
        payload: {
          agent_id: agentId,
          kind,
          visibility,
          ownership: record.ownership,
          profile_preset: record.profile_preset,
          agent_home: agentHome,
          group_id: record.group_id,
        },
      });
      if (provenance) {
        const p = provenance as { template: string; source_kind: string; skills: string[] };
        await store.appendEvent(agentId, {
          type: "agent_template_applied",
          payload: {
            template: p.template,
            source_kind: p.source_kind as "template_id",
            skills: p.skills,
          },
        });
      }
      await transition(store, agentId, "awake_idle", "created");
      if (visibility === "public") await this.deps.triggers.provisionDefault(agentId);
    });
  }

  /**
   * A new agent's group: a private child joins its supervisor's group (so a private
   * grandchild is in the root's); any other agent is its own root.
   */
  private async groupFor(
    agentId: string,
    visibility: AgentRecord["visibility"],
    supervisorId: string | undefined,
  ): Promise<string> {
    if (visibility !== "private" || supervisorId === undefined) return agentId;
    const supervisor = await this.store.agents.get(supervisorId);
    if (!supervisor) throw unknownAgent(supervisorId);
    return supervisor.group_id;
  }

  /** Bind the agent to a workspace (used by `run --workspace-root` and create). */
  async setWorkspace(agentId: string, workspaceRoot: string): Promise<void> {
    await this.get(agentId);
    await this.deps.workspaces.use(agentId, { path: workspaceRoot, mode: "direct" }, "operator");
  }

  /** Agent-scoped model override; affects future turns only. `undefined` clears it. */
  async setModelOverride(agentId: string, model: string | undefined): Promise<AgentRecord> {
    if (model !== undefined) this.deps.checkModelRef(model);
    const store = this.store;
    return await store.tx(async () => {
      const agent = await this.get(agentId);
      const next: AgentRecord = { ...agent, updated_at: store.clock.now().toISOString() };
      if (model === undefined) delete next.model_override;
      else next.model_override = model;
      await store.agents.put(next);
      await store.appendEvent(agentId, {
        type: "agent_model_changed",
        payload: { previous: agent.model_override ?? null, override_model: model ?? null },
      });
      return next;
    });
  }

  /**
   * An agent-level setting (the sandbox's, for now), validated and recorded with an
   * `agent_setting_changed` event in one transaction; `undefined` returns it to the host's
   * value. Only control routes call this: nothing an agent writes becomes its configuration.
   */
  async setSetting(agentId: string, key: string, value: unknown): Promise<AgentRecord> {
    const field = agentSettingField(key);
    const parsed = value === undefined ? undefined : validateSetting(key, field, value);
    const store = this.store;
    return await store.tx(async () => {
      const agent = await this.get(agentId);
      const own: AgentSandboxSettings = { ...agent.sandbox };
      const previous = own[field] ?? null;
      if (parsed === undefined) delete own[field];
      else (own as Record<string, unknown>)[field] = parsed;
      const next: AgentRecord = { ...agent, updated_at: store.clock.now().toISOString() };
      if (Object.keys(own).length === 0) delete next.sandbox;
      else next.sandbox = own;
      await store.agents.put(next);
      await store.appendEvent(agentId, {
        type: "agent_setting_changed",
        payload: { key, previous, value: parsed ?? null },
      });
      return next;
    });
  }

  /**
   * The first start with the sandbox: record once per agent what it now holds (the
   * `sandbox_enabled` event), so status can say what changed.
   */
  async markSandboxEnabled(agentId: string, summary: SandboxSummary): Promise<void> {
    const store = this.store;
    await store.tx(async () => {
      const agent = await store.agents.get(agentId);
      if (agent === undefined || agent.sandbox_enabled_at !== undefined) return;
      const at = store.clock.now().toISOString();
      await store.agents.put({ ...agent, sandbox_enabled_at: at });
      await store.appendEvent(agentId, {
        type: "sandbox_enabled",
        payload: {
          backend: summary.backend,
          mode: summary.mode,
          state: summary.state,
          reason: summary.reason,
        },
      });
    });
  }

  async setCwd(agentId: string, cwd: string): Promise<void> {
    await this.get(agentId);
    await this.deps.workspaces.setCwd(agentId, cwd);
  }
}

/** The field of the agent's sandbox settings a key names, or a 400 naming the keys there are. */
function agentSettingField(key: string): keyof AgentSandboxSettings {
  if (!(AGENT_SANDBOX_KEYS as readonly string[]).includes(key)) {
    throw new HolonError("unknown_setting", `'${key}' is not an agent setting`, {
      hint: `agent settings: ${AGENT_SANDBOX_KEYS.join(", ")}`,
    });
  }
  return key.slice("sandbox.".length) as keyof AgentSandboxSettings;
}

const SETTING_HINTS: Record<string, string> = {
  "sandbox.mode": "one of off, auto, required",
  "sandbox.network": "one of on, off, allowlist",
  "sandbox.network_allow":
    'a JSON list of hosts, e.g. ["registry.npmjs.org", "*.github.com", "127.0.0.1:3000"]',
};

function validateSetting(key: string, field: keyof AgentSandboxSettings, value: unknown): unknown {
  const r = AgentSandboxSettings.shape[field].safeParse(value);
  if (!r.success) {
    throw new HolonError(
      "invalid_setting",
      `invalid value for ${key}: ${r.error.issues.map((i) => i.message).join("; ")}`,
      { hint: SETTING_HINTS[key] ?? "a JSON list of paths" },
    );
  }
  return r.data;
}
