// Workspace confinement for command working directories.
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { ToolFailure } from "../envelope.ts";

/** Resolve `workdir` (relative to `cwd`) and refuse anything outside the execution root. */
export function confinedWorkdir(root: string, cwd: string, workdir: string | undefined): string {
  const target =
    workdir === undefined ? cwd : isAbsolute(workdir) ? workdir : resolve(cwd, workdir);
  let real: string;
  let rootReal: string;
  try {
    rootReal = realpathSync.native(root);
  } catch {
    throw new ToolFailure("workspace_unavailable", `the execution root ${root} does not exist`, {
      details: { execution_root: root },
    });
  }
  try {
    real = realpathSync.native(target);
  } catch {
    throw new ToolFailure("workdir_not_found", `working directory ${target} does not exist`, {
      details: { workdir: workdir ?? null, field: "workdir" },
      recovery_hint: "omit workdir or pass an existing directory inside the workspace",
    });
  }
  const rel = relative(rootReal, real);
  if (rel.startsWith("..") || isAbsolute(rel)) {
    throw new ToolFailure(
      "execution_root_violation",
      "requested working directory is outside the current execution root",
      {
        details: { workdir: workdir ?? null, execution_root: root, field: "workdir" },
        recovery_hint: "omit workdir or use a relative path inside the active workspace",
      },
    );
  }
  if (!statSync(real).isDirectory()) {
    throw new ToolFailure("workdir_not_found", `${target} is not a directory`, {
      details: { workdir: workdir ?? null, field: "workdir" },
    });
  }
  return real;
}
