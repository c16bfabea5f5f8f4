// The MCP client as the composition root holds it. The client itself (mcp/service.ts with its
// catalog, sessions, process records, elicitation and result rendering, and the tool bridge:
// some ten modules) loads only once the home uses MCP, so a run with no server anywhere never
// loads it. Until then this facade answers for a client with no servers: no tools, no status,
// nothing running.
//
// The one thing to know: the real client is built at once when its modules were loaded before
// the host was (`preloadMcp`, which `holon serve` does: its control routes and hot-reloaded
// config need answers synchronously). Otherwise it loads on the first call that needs it (a
// turn of an agent that has a server, a call, a test), and the start-up work the eager client
// did (`sweep`: servers a killed host left running, elicitation asks, an old approvals file) is
// done by `ready()` when the home holds any of that.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { AgentRecord } from "../domain/agent.ts";
import { HolonError } from "../domain/errors.ts";
import type { AskEffects } from "../asks/service.ts";
import { referencedEnvNamesOf, WORKSPACE_MCP_FILE, type ServerDefinition } from "../mcp/config.ts";
import type { AgentCatalog, McpDeps, McpService, ServerView, TestReport } from "../mcp/service.ts";
import type { McpToolBridge } from "../tools/mcp/mcp-tool.ts";
import type { ToolDefinition } from "../tools/registry.ts";
import { executionBinding } from "../workspace/roots.ts";

type McpModules = {
  service: typeof import("../mcp/service.ts");
  bridge: typeof import("../tools/mcp/mcp-tool.ts");
};

// The modules, once loaded (a cache of code, like the SDK loaders; no service lives here).
let modules: McpModules | undefined;
let loading: Promise<McpModules> | undefined;

/** Load the MCP client's modules now, so hosts built after this hold the client from the start. */
export function preloadMcp(): Promise<McpModules> {
  loading ??= Promise.all([import("../mcp/service.ts"), import("../tools/mcp/mcp-tool.ts")]).then(
    ([service, bridge]) => (modules = { service, bridge }),
  );
  return loading;
}

const NO_CATALOG: AgentCatalog = { key: "", entries: [] };
const NO_TOOLS: readonly ToolDefinition[] = Object.freeze([]);

export class McpFacade {
  readonly #deps: McpDeps;
  #real: McpService | undefined;
  #bridge: McpToolBridge | undefined;
  #loading: Promise<McpService> | undefined;
  #sweepWanted = false;
  #closed = false;

  constructor(deps: McpDeps) {
    this.#deps = deps;
    // built at once when preloaded: the objects exist before this returns; a sweep it
    // starts is awaited by ready()
    if (modules) this.#loading = this.#build(modules);
  }

  /** The real client, once built (tool calls reach it through their context). */
  get service(): McpService | undefined {
    return this.#real;
  }

  async #build(m: McpModules): Promise<McpService> {
    if (!this.#real) {
      this.#real = new m.service.McpService(this.#deps);
      this.#bridge = new m.bridge.McpToolBridge(this.#real);
      if (this.#sweepWanted) await this.#real.sweep();
      if (this.#closed) this.#real.close();
    }
    return this.#real;
  }

  /** The real client, loading its modules on the first call. */
  load(): Promise<McpService> {
    if (this.#real) return Promise.resolve(this.#real);
    this.#loading ??= preloadMcp().then(async (m) => await this.#build(m));
    return this.#loading;
  }

  /** Resolves once the start-up work a home needed (see `sweep`) is done. */
  async ready(): Promise<void> {
    if (this.#loading) await this.#loading;
  }

  /**
   * At host start: the eager client's sweep, when the home holds anything it acts on (a server
   * a killed host left running, an elicitation ask, an old approvals file) or uses MCP at all;
   * with a client not yet loaded it runs once `ready()` resolves.
   */
  async sweep(): Promise<number[]> {
    if (this.#real) return await this.#real.sweep();
    if (!(await this.#homeUsesMcp())) return [];
    this.#sweepWanted = true;
    void this.load();
    return [];
  }

  async #homeUsesMcp(): Promise<boolean> {
    const { store, home, runDir } = this.#deps;
    if (Object.keys(this.#deps.config().servers).length > 0) return true;
    if (await store.agents.anyOwnMcpServers()) return true;
    if ((await store.approvals.grantsIn("mcp_server", "granted", 1)).length > 0) return true;
    if (existsSync(join(home, "mcp", "approvals.json"))) return true;
    try {
      if (readdirSync(join(runDir, "mcp")).some((n) => n.endsWith(".json"))) return true;
    } catch {
      // no process records: no server was left running
    }
    return (await store.asks.withState("pending", 500)).some(
      (a) => a.details?.mcp_elicitation !== undefined,
    );
  }

  /** Whether any server applies to this agent now (host, own, or its workspace's file). */
  #usedBy(agent: AgentRecord | null): boolean {
    const child = agent?.supervisor_agent_id !== undefined;
    if (!child && Object.values(this.#deps.config().servers).some((d) => d.enabled !== false))
      return true;
    if (!agent) return false;
    if (hasOwnServers(agent)) return true;
    try {
      // Asked every turn; the workspace file is usually absent (no ENOENT error built then).
      const file = join(executionBinding(agent).execution_root, WORKSPACE_MCP_FILE);
      return statSync(file, { throwIfNoEntry: false })?.isFile() === true;
    } catch {
      return false;
    }
  }

  /** The asks plane's hooks (elicitation answers), present once the client is. */
  askEffects(): AskEffects[] {
    return this.#real ? [this.#real.elicitations] : [];
  }

  #envNames: { config: object; consent: number; names: string[] } | null = null;

  /**
   * Host variables MCP definitions read (withheld from commands); no client needed. Read per
   * command, so kept like the client keeps it: until the configuration or the consent store
   * changes (an agent's own servers change only through the loaded client).
   */
  async referencedEnvNames(): Promise<readonly string[]> {
    if (this.#real) return await this.#real.referencedEnvNames();
    const config = this.#deps.config();
    const consent = this.#deps.consent?.();
    const version = consent?.version ?? 0;
    const kept = this.#envNames;
    if (kept && kept.config === config && kept.consent === version) return kept.names;
    const names = referencedEnvNamesOf(
      (await consent?.grants("mcp_server", "granted")) ?? [],
      config.servers,
      (await this.#deps.store.agents.list()).map(
        (a) => (a.mcp?.servers ?? {}) as Record<string, ServerDefinition>,
      ),
    );
    this.#envNames = { config, consent: version, names };
    return names;
  }

  async toolsFor(agent: AgentRecord): Promise<readonly ToolDefinition[]> {
    if (!this.#real && !this.#usedBy(agent)) return NO_TOOLS;
    await this.load();
    return this.#bridge!.toolsFor(agent);
  }

  async catalog(agent: AgentRecord): Promise<AgentCatalog> {
    if (!this.#real && !this.#usedBy(agent)) return NO_CATALOG;
    return await (await this.load()).catalog(agent);
  }

  async call(...args: Parameters<McpService["call"]>): ReturnType<McpService["call"]> {
    return await (await this.load()).call(...args);
  }

  async test(agent: AgentRecord | null, name: string): Promise<TestReport> {
    return await (await this.load()).test(agent, name);
  }

  async status(agent: AgentRecord | null): Promise<ServerView[]> {
    if (this.#real) return await this.#real.status(agent);
    if (!this.#usedBy(agent)) return [];
    void this.load();
    throw notLoaded();
  }

  async setAgentSetting(agentId: string, key: string, value: unknown): Promise<AgentRecord> {
    if (this.#real) return await this.#real.setAgentSetting(agentId, key, value);
    void this.load();
    throw notLoaded();
  }

  stopIdle(now?: number): number {
    return this.#real?.stopIdle(now) ?? 0;
  }

  stopAll(agentId?: string): void {
    this.#real?.stopAll(agentId);
  }

  close(): void {
    this.#closed = true;
    this.#real?.close();
  }

  pids(): number[] {
    return this.#real?.pids() ?? [];
  }
}

function hasOwnServers(agent: AgentRecord): boolean {
  return Object.keys(agent.mcp?.servers ?? {}).length > 0;
}

function notLoaded(): HolonError {
  return new HolonError("mcp_starting", "the MCP client is still loading; try again", {
    status: 503,
    hint: "try again in a moment",
  });
}
