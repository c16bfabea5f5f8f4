// The sandbox as the rest of the runtime sees it: for an agent, which mode holds (its own
// setting, else the host's), whether this machine can confine (probed once, see probe.ts),
// what is enforced field by field and why, and the profile its commands start under. A
// command that cannot be confined under `required` is refused here, with the reason; under
// `auto` it runs unconfined and every surface says so. Nothing falls back silently.
import { join } from "node:path";
import { HolonError } from "../domain/errors.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { SandboxNetwork, SandboxSummary } from "../domain/sandbox.ts";
import type { SandboxConfig } from "./config.ts";
import { NetnsHolders, type ProcIdentity } from "./netns.ts";
import { probeSandbox, type SandboxProbe } from "./probe.ts";
import { sandboxProfile, type SandboxLaunch } from "./profile.ts";
import { NetworkProxy, type ProxyRefusal } from "./proxy.ts";

export type SandboxDeps = {
  /** The host-level settings now (config.json, read live). */
  config: () => SandboxConfig;
  holonHome: string;
  /** The user's home directory, for `~/` paths. */
  userHome: string;
  /** PATH to find bubblewrap on. */
  pathEnv: string | undefined;
  /**
   * What a running host adds (absent for a one-off look, like `holon config doctor`): process
   * identity for the namespace holders, the agents there are, and where a refused connection
   * of the allowlist proxy is recorded.
   */
  runtime?: {
    procs: ProcIdentity;
    agent: (agentId: string) => Promise<AgentRecord | undefined>;
    /** The agent has tasks that outlive the host (its namespace must too). */
    hasActiveTasks: (agentId: string) => Promise<boolean>;
    onRefused: (agentId: string, refusal: ProxyRefusal) => Promise<void>;
  };
};

const ENFORCED_WHY = {
  shell_filesystem:
    "bubblewrap: read-only except the execution root, the agent's home (not .holon/), a private /tmp and sandbox.writable_paths",
  network:
    "sandbox.network is on: commands use the host's network (the host's port requires its token)",
  secrets:
    "HOLON_HOME outside the agent's home and sandbox.hidden_paths are not visible; secret variables are removed from the environment",
  child_processes:
    "own PID namespace, no capabilities, a new session, no nested namespaces: host processes are invisible and untouchable",
} as const;

const NETWORK_WHY = {
  off: "sandbox.network is off: the agent's own network namespace, with only its own loopback (shared by its commands and tasks)",
  allowlist:
    "sandbox.network is allowlist: the agent's own network namespace; other hosts only through the host's proxy, for the hosts of sandbox.network_allow",
} as const;

export class SandboxService {
  readonly #deps: SandboxDeps;
  readonly #holders: NetnsHolders | null;
  readonly #proxy: NetworkProxy | null;
  /** The host's own TCP ports, which the proxy never connects to. */
  readonly #ports = new Set<number>();

  constructor(deps: SandboxDeps) {
    this.#deps = deps;
    const rt = deps.runtime;
    this.#holders =
      rt === undefined
        ? null
        : new NetnsHolders({
            holonHome: deps.holonHome,
            probe: () => this.probe(),
            procs: rt.procs,
          });
    this.#proxy =
      rt === undefined
        ? null
        : new NetworkProxy({
            allowlist: async (id) => {
              const agent = await rt.agent(id);
              if (agent === undefined || this.network(agent).network !== "allowlist") return null;
              return this.network(agent).allow;
            },
            protectedPorts: () => [...this.#ports],
            onRefused: rt.onRefused,
          });
  }

  /** The network this agent's commands get, and its allowlist (the host's plus its own). */
  network(agent: AgentRecord | null): { network: SandboxNetwork; allow: string[] } {
    const host = this.#deps.config();
    return {
      network: agent?.sandbox?.network ?? host.network,
      allow: [...host.network_allow, ...(agent?.sandbox?.network_allow ?? [])],
    };
  }

  /** The host listens on this TCP port: the proxy refuses it on every local address. */
  protectPort(port: number): void {
    this.#ports.add(port);
  }

  /**
   * After a start: agents whose namespace outlived the last host (a task still runs in it)
   * get their proxy back at the same socket path.
   */
  async resume(): Promise<void> {
    if (this.#holders === null || this.#proxy === null) return;
    for (const id of this.#holders.recorded()) {
      const agent = await this.#deps.runtime!.agent(id);
      const ns = this.#holders.current(id);
      if (agent === undefined || ns === null || ns.proxyPort === null) continue;
      if (this.network(agent).network === "allowlist") this.#proxy.listen(id, ns.socketPath);
    }
  }

  /** At host stop: the proxy closes; namespaces no task is in are let go. */
  async close(): Promise<void> {
    await this.#proxy?.close();
    const rt = this.#deps.runtime;
    if (rt !== undefined) await this.#holders?.stopIdle(rt.hasActiveTasks);
  }

  /** What this machine can confine (probed once per bubblewrap path). */
  probe(): SandboxProbe {
    return probeSandbox(
      this.#deps.config().bwrap_path,
      this.#deps.pathEnv,
      join(this.#deps.holonHome, "run", "sandbox-probe.json"),
    );
  }

  /** The mode for this agent and where it came from. */
  mode(agent: AgentRecord | null): Pick<SandboxSummary, "mode" | "mode_source"> {
    const own = agent?.sandbox?.mode;
    if (own !== undefined) return { mode: own, mode_source: "agent" };
    const host = this.#deps.config();
    return { mode: host.mode, mode_source: host.mode_set ? "host" : "default" };
  }

  /** What holds for this agent's commands (null agent: the host's defaults). */
  summary(agent: AgentRecord | null): SandboxSummary {
    const { mode, mode_source } = this.mode(agent);
    const { network } = this.network(agent);
    if (mode !== "off") {
      const probe = this.probe();
      if (probe.available) {
        const netEnforced = network !== "on" && probe.netns;
        const netWhy =
          network === "on"
            ? ENFORCED_WHY.network
            : probe.netns
              ? NETWORK_WHY[network]
              : `sandbox.network is ${network} but ${probe.netnsReason}: ${mode === "required" ? "commands are refused" : "commands use the host's network"}`;
        return {
          backend: "host_bwrap",
          mode,
          mode_source,
          state: "enforced",
          reason: null,
          enforcement: {
            shell_filesystem: "enforced",
            network: netEnforced ? "enforced" : "not_enforced",
            secrets: "enforced",
            child_processes: "enforced",
          },
          why: { ...ENFORCED_WHY, network: netWhy },
          network,
        };
      }
      const reason =
        mode === "required"
          ? `sandbox.mode is required and ${probe.reason}: commands are refused`
          : `sandbox.mode is auto and ${probe.reason}: commands run unconfined`;
      return unconfined(mode, mode_source, reason, network);
    }
    return unconfined(
      mode,
      mode_source,
      `sandbox.mode is off (set by ${mode_source === "agent" ? "the agent's settings" : "config.json"}): commands run unconfined`,
      network,
    );
  }

  /**
   * The profile this agent's command in `executionRoot` starts under: null when it runs
   * unconfined (mode off, or auto where the machine cannot confine). Throws under `required`
   * when it cannot be confined. `extraWritable`: a caller's own writable paths (an MCP
   * server's `writable_paths`).
   */
  launchFor(
    agent: AgentRecord,
    executionRoot: string,
    extraWritable: readonly string[] = [],
    tmpReadOnly: readonly string[] = [],
  ): SandboxLaunch | null {
    const { mode } = this.mode(agent);
    if (mode === "off") return null;
    const probe = this.probe();
    if (!probe.available) {
      if (mode === "auto") return null;
      throw new HolonError(
        "sandbox_unavailable",
        `the command was refused: sandbox.mode is required for agent '${agent.agent_id}' and it cannot be confined here (${probe.reason})`,
        {
          status: 409,
          hint: "install bubblewrap, fix sandbox.bwrap_path, or have the operator change sandbox.mode",
        },
      );
    }
    const host = this.#deps.config();
    const own = agent.sandbox;
    return sandboxProfile({
      netns: this.#netnsFor(agent, probe, mode),
      probe,
      holonHome: this.#deps.holonHome,
      agentHome: agent.agent_home,
      executionRoot,
      userHome: this.#deps.userHome,
      writablePaths: [...host.writable_paths, ...(own?.writable_paths ?? []), ...extraWritable],
      hiddenPaths: [...host.hidden_paths, ...(own?.hidden_paths ?? [])],
      tmpReadOnly,
    });
  }

  /** The agent's network namespace (started when it has none), or null for the host's network. */
  #netnsFor(agent: AgentRecord, probe: SandboxProbe, mode: SandboxSummary["mode"]) {
    const { network } = this.network(agent);
    if (network === "on") return null;
    if (!probe.netns || this.#holders === null || probe.nsenter === null) {
      if (mode === "auto") return null; // the summary says the network is not enforced, and why
      throw new HolonError(
        "sandbox_unavailable",
        `the command was refused: sandbox.mode is required and agent '${agent.agent_id}' has sandbox.network ${network}, which cannot be enforced here (${probe.netnsReason ?? "no namespace holder in this process"})`,
        { status: 409, hint: "run the host as root, or have the operator set sandbox.network on" },
      );
    }
    const ns = this.#holders.ensure(agent.agent_id, network === "allowlist");
    if (network === "allowlist") this.#proxy!.listen(agent.agent_id, ns.socketPath);
    return {
      mode: network,
      nsenter: probe.nsenter,
      path: ns.path,
      id: ns.id,
      proxyPort: network === "allowlist" ? ns.proxyPort : null,
    };
  }
}

function unconfined(
  mode: SandboxSummary["mode"],
  mode_source: SandboxSummary["mode_source"],
  reason: string,
  network: SandboxSummary["network"],
): SandboxSummary {
  return {
    backend: "host_local",
    mode,
    mode_source,
    state: "not_enforced",
    reason,
    enforcement: {
      shell_filesystem: "not_enforced",
      network: "not_enforced",
      secrets: "not_enforced",
      child_processes: "not_enforced",
    },
    why: {
      shell_filesystem: reason,
      network: reason,
      secrets: `${reason}; secret variables are still removed from the environment`,
      child_processes: reason,
    },
    network,
  };
}
