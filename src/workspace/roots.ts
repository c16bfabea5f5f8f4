// Execution roots and path confinement: the one place that says where an agent's commands
// and file edits happen (its workspace, or its home when it has none) and whether a path
// stays inside a root. Every tool, route and the turn ask here; none decides on its own.
import { realpathSync, statSync } from "node:fs";
import path, { isAbsolute, resolve } from "node:path";
import { HolonError } from "../domain/errors.ts";
import type { AgentRecord } from "../domain/agent.ts";
import { sandboxSnapshot, type SandboxSummary } from "../domain/sandbox.ts";
import {
  AGENT_HOME_WORKSPACE_ID,
  type ExecutionPolicySnapshot,
  type ExecutionSnapshot,
  type ProjectionKind,
} from "../domain/workspace.ts";

export type ExecutionBinding = {
  /** Root every file and shell path must stay inside. */
  execution_root: string;
  /** Working directory inside the execution root. */
  cwd: string;
  /** The anchor of a project workspace; null while the agent works in its home. */
  workspace_root: string | null;
  workspace_id: string;
  /** Stable project identity: instructions and workspace skills load from here. */
  workspace_anchor: string;
  execution_root_id: string;
  projection_kind: ProjectionKind;
};

/**
 * Where an agent works right now: its active workspace entry, else the legacy
 * `workspace_root`/`cwd` of an older record, else its home (the `agent_home` workspace).
 */
export function executionBinding(agent: AgentRecord): ExecutionBinding {
  const active = agent.active_workspace;
  if (active) {
    return {
      execution_root: active.execution_root,
      cwd: active.cwd,
      workspace_root:
        active.workspace_id === AGENT_HOME_WORKSPACE_ID ? null : active.workspace_anchor,
      workspace_id: active.workspace_id,
      workspace_anchor: active.workspace_anchor,
      execution_root_id: active.execution_root_id,
      projection_kind: active.projection_kind,
    };
  }
  const root = agent.workspace_root ?? agent.agent_home;
  return {
    execution_root: root,
    cwd: agent.cwd ?? root,
    workspace_root: agent.workspace_root ?? null,
    workspace_id: agent.workspace_root ? "legacy" : AGENT_HOME_WORKSPACE_ID,
    workspace_anchor: root,
    execution_root_id: agent.workspace_root ? "legacy" : AGENT_HOME_WORKSPACE_ID,
    projection_kind: "canonical_root",
  };
}

/**
 * The honest policy: `host_local` (no sandbox, or the sandbox could not confine), or
 * `host_bwrap` when the sandbox confines this agent's commands (`sandbox` says what and why).
 */
export function executionPolicy(
  attachPolicy: ExecutionPolicySnapshot["attach_policy"] = "any_readable",
  sandbox?: SandboxSummary,
): ExecutionPolicySnapshot {
  if (sandbox !== undefined && sandbox.backend === "host_bwrap") {
    return {
      backend: "host_bwrap",
      process_execution: "exposed",
      background_tasks: "available",
      managed_worktrees: "available",
      attach_policy: attachPolicy,
      enforcement: { runtime_resolved_paths: "enforced", ...sandbox.enforcement },
      note:
        "host_bwrap: commands run confined by bubblewrap: they write only the execution root, the " +
        "agent's home and the configured writable paths, cannot see HOLON_HOME or the hidden " +
        "credential paths, and have no capabilities in their own PID namespace. The network is the host's.",
      sandbox: sandboxSnapshot(sandbox),
    };
  }
  const base: ExecutionPolicySnapshot = {
    backend: "host_local",
    process_execution: "exposed",
    background_tasks: "available",
    managed_worktrees: "available",
    attach_policy: attachPolicy,
    enforcement: {
      runtime_resolved_paths: "enforced",
      shell_filesystem: "not_enforced",
      network: "not_enforced",
      secrets: "not_enforced",
      child_processes: "not_enforced",
    },
    note:
      "host_local: the runtime confines the paths it resolves (workdir, ApplyPatch, UseWorkspace); " +
      "a running command can read and write anything its user can, reach the network and start " +
      "processes. Commands get an environment without the host's credentials, but that is not a sandbox.",
  };
  if (sandbox !== undefined) {
    base.sandbox = sandboxSnapshot(sandbox);
    base.note += ` Sandbox: ${sandbox.reason ?? "not enforced"}.`;
  }
  return base;
}

/** The execution snapshot a turn and a task record, so a restart resumes in the same place. */
export function executionSnapshot(
  agent: AgentRecord,
  policy: ExecutionPolicySnapshot = executionPolicy(),
): ExecutionSnapshot {
  const b = executionBinding(agent);
  return {
    profile: agent.profile_preset,
    policy,
    workspace_id: b.workspace_id,
    workspace_anchor: b.workspace_anchor,
    execution_root: b.execution_root,
    execution_root_id: b.execution_root_id,
    cwd: b.cwd,
    projection_kind: b.projection_kind,
  };
}

/**
 * The path of `target` relative to `root`, or null when it leaves the root. Both must be
 * absolute and already resolved (realpath) by the caller when symlinks matter. A name that
 * merely starts with dots (`..cache`) is inside.
 */
export function relativeInside(root: string, target: string): string | null {
  const rel = path.relative(root, target);
  if (rel === "") return "";
  if (rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return null;
  return rel;
}

export function isInside(root: string, target: string): boolean {
  return relativeInside(root, target) !== null;
}

/** Resolve `workdir` (relative to `cwd`) and refuse anything outside the execution root. */
export function confinedWorkdir(
  root: string,
  cwd: string,
  workdir: string | undefined,
  /** The agent, when an operator asked: the refusal then names the command that attaches. */
  agentId?: string,
): string {
  const target =
    workdir === undefined ? cwd : isAbsolute(workdir) ? workdir : resolve(cwd, workdir);
  let real: string;
  let rootReal: string;
  try {
    rootReal = realpathSync.native(root);
  } catch {
    throw new HolonError("workspace_unavailable", `the execution root ${root} does not exist`, {
      details: { execution_root: root },
    });
  }
  try {
    real = realpathSync.native(target);
  } catch {
    throw new HolonError("workdir_not_found", `working directory ${target} does not exist`, {
      details: { workdir: workdir ?? null, field: "workdir" },
      hint: "omit workdir or pass an existing directory inside the workspace",
    });
  }
  if (!isInside(rootReal, real)) {
    throw new HolonError(
      "execution_root_violation",
      `working directory ${real} is outside the execution root ${root}`,
      {
        details: { workdir: workdir ?? null, execution_root: root, field: "workdir" },
        hint: "omit workdir or use a relative path inside the active workspace",
        ...(agentId
          ? {
              operatorHint: `attach the directory to the agent first: holon workspace attach ${agentId} ${real}`,
            }
          : {}),
      },
    );
  }
  if (!statSync(real).isDirectory()) {
    throw new HolonError("workdir_not_found", `${target} is not a directory`, {
      details: { workdir: workdir ?? null, field: "workdir" },
    });
  }
  return real;
}
