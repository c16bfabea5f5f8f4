// Execution roots and path confinement: the one place that says where an agent's commands
// and file edits happen (its workspace, or its home when it has none) and whether a path
// stays inside a root. Every tool, route and the turn ask here; none decides on its own.
import { realpathSync, statSync } from "node:fs";
import path, { isAbsolute, resolve } from "node:path";
import { HolonError } from "../domain/errors.ts";
import type { AgentRecord } from "../domain/agent.ts";

export type ExecutionBinding = {
  /** Root every file and shell path must stay inside. */
  execution_root: string;
  /** Working directory inside the execution root. */
  cwd: string;
  workspace_root: string | null;
};

/** Where an agent works right now. */
export function executionBinding(agent: AgentRecord): ExecutionBinding {
  const root = agent.workspace_root ?? agent.agent_home;
  return {
    execution_root: root,
    cwd: agent.cwd ?? root,
    workspace_root: agent.workspace_root ?? null,
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
export function confinedWorkdir(root: string, cwd: string, workdir: string | undefined): string {
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
      "requested working directory is outside the current execution root",
      {
        details: { workdir: workdir ?? null, execution_root: root, field: "workdir" },
        hint: "omit workdir or use a relative path inside the active workspace",
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
