// The sandbox as the rest of the runtime sees it: for an agent, which mode holds (its own
// setting, else the host's), whether this machine can confine (probed once, see probe.ts),
// what is enforced field by field and why, and the profile its commands start under. A
// command that cannot be confined under `required` is refused here, with the reason; under
// `auto` it runs unconfined and every surface says so. Nothing falls back silently.
import { HolonError } from "../domain/errors.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { SandboxSummary } from "../domain/sandbox.ts";
import type { SandboxConfig } from "./config.ts";
import { probeSandbox, type SandboxProbe } from "./probe.ts";
import { sandboxProfile, type SandboxLaunch } from "./profile.ts";

export type SandboxDeps = {
  /** The host-level settings now (config.json, read live). */
  config: () => SandboxConfig;
  holonHome: string;
  /** The user's home directory, for `~/` paths. */
  userHome: string;
  /** PATH to find bubblewrap on. */
  pathEnv: string | undefined;
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

export class SandboxService {
  readonly #deps: SandboxDeps;

  constructor(deps: SandboxDeps) {
    this.#deps = deps;
  }

  /** What this machine can confine (probed once per bubblewrap path). */
  probe(): SandboxProbe {
    return probeSandbox(this.#deps.config().bwrap_path, this.#deps.pathEnv);
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
    const network = this.#deps.config().network;
    if (mode !== "off") {
      const probe = this.probe();
      if (probe.available) {
        return {
          backend: "host_bwrap",
          mode,
          mode_source,
          state: "enforced",
          reason: null,
          enforcement: {
            shell_filesystem: "enforced",
            network: "not_enforced",
            secrets: "enforced",
            child_processes: "enforced",
          },
          why: { ...ENFORCED_WHY },
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
      probe,
      holonHome: this.#deps.holonHome,
      agentHome: agent.agent_home,
      executionRoot,
      userHome: this.#deps.userHome,
      writablePaths: [...host.writable_paths, ...(own?.writable_paths ?? []), ...extraWritable],
      hiddenPaths: [...host.hidden_paths, ...(own?.hidden_paths ?? [])],
    });
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
