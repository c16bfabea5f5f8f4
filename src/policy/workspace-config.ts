// Workspace-level leash settings: `.holon.json` at the root of the workspace a call runs in.
// Anything in a workspace can be written by the agent, so these settings only tighten: their
// `allow` rules are ignored, their mode can only make the agent's stricter, and each of their
// hook entries runs only once an operator approved it, bound to the workspace, the entry's
// name and a SHA-256 of its definition (consent.ts; the leash checks). A file that cannot be
// read as settings makes the workspace ask for everything and run none of its hooks.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { HookSettings, PermissionSettings } from "../domain/policy.ts";

export const WORKSPACE_CONFIG_FILE = ".holon.json";
const MAX_BYTES = 256 * 1024;

const WorkspaceFile = z.object({
  permissions: PermissionSettings.optional(),
  hooks: HookSettings.optional(),
});

export type WorkspaceSettings = {
  path: string;
  /** Null when the file is absent. */
  permissions: PermissionSettings | null;
  /** The file's hooks (each entry runs only once approved), null when it has none. */
  hooks: HookSettings | null;
  /** How many hook entries the file declares. */
  pending_hooks: number;
  /** Why the file could not be used, if it could not (the workspace then asks for everything). */
  error: string | null;
};

const cache = new Map<string, { stamp: string; value: WorkspaceSettings }>();
const absentCache = new Map<string, WorkspaceSettings>();

export function readWorkspaceSettings(root: string): WorkspaceSettings {
  const path = join(root, WORKSPACE_CONFIG_FILE);
  let stamp: string | null = null;
  try {
    // Checked on every call (the agent can write the file at any time); an absent file,
    // the common case, is answered without building an ENOENT error.
    const st = statSync(path, { throwIfNoEntry: false });
    if (st) {
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
      if (st.size > MAX_BYTES) {
        return failed(path, `${WORKSPACE_CONFIG_FILE} is larger than ${MAX_BYTES} bytes`);
      }
    }
  } catch {
    // unreadable directory: treated as absent, as before
  }
  if (stamp === null) {
    // Absent: one object per path, so callers can tell "unchanged" by identity.
    let absent = absentCache.get(path);
    if (!absent) {
      absent = { path, permissions: null, hooks: null, pending_hooks: 0, error: null };
      if (absentCache.size > 256) absentCache.clear();
      absentCache.set(path, absent);
    }
    return absent;
  }
  const hit = cache.get(path);
  if (hit && hit.stamp === stamp) return hit.value;
  let value: WorkspaceSettings;
  try {
    const parsed = WorkspaceFile.safeParse(JSON.parse(readFileSync(path, "utf8")));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      value = failed(path, `${issue?.path.join(".") || "file"}: ${issue?.message ?? "invalid"}`);
    } else {
      const hooks = parsed.data.hooks ?? {};
      value = {
        path,
        permissions: parsed.data.permissions ?? null,
        hooks: Object.keys(hooks).length ? hooks : null,
        pending_hooks: Object.values(hooks).reduce((n, list) => n + (list?.length ?? 0), 0),
        error: null,
      };
    }
  } catch (err) {
    value = failed(path, `not valid JSON: ${(err as Error).message}`);
  }
  if (cache.size > 256) cache.clear();
  cache.set(path, { stamp, value });
  return value;
}

function failed(path: string, error: string): WorkspaceSettings {
  return { path, permissions: { mode: "ask" }, hooks: null, pending_hooks: 0, error };
}
