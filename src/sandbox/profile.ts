// A sandbox profile: everything that decides how one agent's commands are confined (the
// bubblewrap, the agent's home, the execution root, HOLON_HOME, the writable and hidden
// paths), and the bubblewrap command line it gives a command. The process layer (tasks/)
// asks a profile for the argv to start; it never builds one itself.
//
// The layout inside, mounted in this order (a later mount wins over an earlier one):
//   1. the whole file system read-only; a fresh /dev and /proc; a private /tmp;
//   2. writable: the execution root and the existing `writable_paths`;
//   3. hidden: HOLON_HOME (an empty private tmpfs), then the agent's home bound back writable with its
//      `.holon/` read-only (process records, patch journals), and the execution root bound
//      back if it lies inside HOLON_HOME;
//   4. hidden: every `hidden_paths` entry that exists (directories as an empty private tmpfs,
//      whose writes go nowhere; files as /dev/null);
//   5. read-only again inside the writable roots: `.git/hooks`, `.git/config`, `.git/info`,
//      `.holon.json`, `.mcp.json`; for a git worktree its main repository's `objects/`,
//      `refs/`, `logs/` and the worktree's own admin directory are made writable (so the agent
//      can commit) while the rest of it stays read-only;
//   6. writable: the few files of this command's process directory its wrapper writes.
// Order matters: a writable root that contains HOLON_HOME or a hidden path must not show it
// again, so hiding comes after the writable binds.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import { isolationFlags, type SandboxProbe } from "./probe.ts";

export type SandboxProfileInput = {
  probe: SandboxProbe;
  holonHome: string;
  agentHome: string;
  executionRoot: string;
  /** The user's home directory, for `~/` paths. */
  userHome: string;
  writablePaths: readonly string[];
  hiddenPaths: readonly string[];
  /**
   * Paths under the host's /tmp shown read-only over the private /tmp (an MCP server whose
   * own command line names files there). HOLON_HOME and the hidden paths stay hidden.
   */
  tmpReadOnly?: readonly string[];
  /**
   * The agent's network namespace its commands join (sandbox.network off or allowlist), with
   * the proxy on its loopback under allowlist; null: the host's network (`on`).
   */
  netns: ProfileNetns | null;
};

export type ProfileNetns = {
  mode: "off" | "allowlist";
  /** `nsenter` to join it. */
  nsenter: string;
  /** `/proc/<holder>/ns/net`. */
  path: string;
  /** The holder's identity (pid and start time). */
  id: string;
  proxyPort: number | null;
};

/**
 * The files and options of one start. The process directory is in the agent's `.holon/`,
 * read-only inside; only these files of it are writable.
 */
export type SandboxStart = {
  /** Files of the process directory the wrapper writes (they must exist). */
  writable: readonly string[];
  /** A PTY keeps the session its terminal made (its own, not the host's). */
  tty: boolean;
  /** The fd number (in the child) bubblewrap reports the sandbox's init pid on. */
  statusFd: number | null;
};

/** How the process layer starts a confined command. */
export type SandboxLaunch = {
  /** Identifies the profile (agent, roots, paths, network); equal digests confine alike. */
  readonly digest: string;
  /** `on`, `off` or `allowlist`. */
  readonly network: "on" | "off" | "allowlist";
  /** The argv (program first) that runs `inner` confined. */
  argv(inner: readonly string[], start: SandboxStart): string[];
};

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

function inside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** `~/x` against the user's home; entries ending in `*` expand to the matching names. */
export function expandPaths(list: readonly string[], userHome: string): string[] {
  const out: string[] = [];
  for (const raw of list) {
    const p = raw.startsWith("~/") ? join(userHome, raw.slice(2)) : raw;
    if (!isAbsolute(p)) continue;
    if (p.endsWith("*")) {
      const dir = dirname(p);
      const prefix = p.slice(dir.length + 1, -1);
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const n of names) if (n.startsWith(prefix)) out.push(join(dir, n));
    } else out.push(p);
  }
  return out;
}

function kindOf(p: string): "dir" | "file" | null {
  try {
    // Most hidden paths do not exist on a given machine and every confined start (spares
    // too) checks all of them: an absent one is answered without building an ENOENT error,
    // which made the check some six times dearer.
    const st = statSync(p, { throwIfNoEntry: false });
    return st === undefined ? null : st.isDirectory() ? "dir" : "file";
  } catch {
    return null;
  }
}

/** The git admin paths of a writable root: what stays read-only, and what must be writable. */
function gitLayout(root: string): { readOnly: string[]; writable: string[] } {
  const dotGit = join(root, ".git");
  const k = kindOf(dotGit);
  if (k === "dir") {
    // Create the protected directories if missing, so the agent cannot create them (a hooks
    // directory it made would run its code the next time anyone commits outside the sandbox).
    for (const d of ["hooks", "info"]) {
      try {
        mkdirSync(join(dotGit, d), { recursive: true });
      } catch {
        // a read-only repository: nothing can create it inside either
      }
    }
    return { readOnly: ["hooks", "config", "info"].map((n) => join(dotGit, n)), writable: [] };
  }
  if (k !== "file") return { readOnly: [], writable: [] };
  // A worktree: `.git` names its admin directory, whose `commondir` names the main `.git`.
  let admin: string;
  try {
    const m = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, "utf8"));
    if (m === null) return { readOnly: [], writable: [] };
    admin = real(resolve(root, m[1]!.trim()));
  } catch {
    return { readOnly: [], writable: [] };
  }
  let common = admin;
  try {
    common = real(resolve(admin, readFileSync(join(admin, "commondir"), "utf8").trim()));
  } catch {
    // no commondir: the admin directory is the repository
  }
  for (const d of ["hooks", "info"]) {
    try {
      mkdirSync(join(common, d), { recursive: true });
    } catch {
      // read-only repository
    }
  }
  return {
    readOnly: ["hooks", "config", "info"].map((n) => join(common, n)),
    writable: [join(common, "objects"), join(common, "refs"), join(common, "logs"), admin],
  };
}

export function sandboxProfile(input: SandboxProfileInput): SandboxLaunch {
  const bwrap = input.probe.bwrap;
  if (!input.probe.available || bwrap === null) {
    throw new Error(`sandbox unavailable: ${input.probe.reason ?? "unknown"}`);
  }
  const holonHome = real(input.holonHome);
  const agentHome = real(input.agentHome);
  const root = real(input.executionRoot);
  const writable = expandPaths(input.writablePaths, input.userHome).map(real);
  const hidden = expandPaths(input.hiddenPaths, input.userHome);
  const tmpReadOnly = (input.tmpReadOnly ?? []).filter((p) => p.startsWith("/tmp/"));
  const digest = createHash("sha256")
    .update(
      JSON.stringify([
        bwrap,
        input.probe.userns,
        holonHome,
        agentHome,
        root,
        writable,
        hidden,
        tmpReadOnly,
        input.netns === null ? "on" : [input.netns.mode, input.netns.id, input.netns.proxyPort],
      ]),
    )
    .digest("hex")
    .slice(0, 16);

  const net = input.netns;
  return {
    digest,
    network: net === null ? "on" : net.mode,
    argv(inner, start) {
      // Off or allowlist: join the agent's network namespace first (as the host, which may),
      // then bubblewrap makes the rest new, as for every command.
      const a: string[] = net === null ? [] : [net.nsenter, `--net=${net.path}`, "--"];
      a.push(bwrap, ...isolationFlags(input.probe.userns));
      if (!start.tty) a.push("--new-session");
      a.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp");
      for (const t of tmpReadOnly) a.push("--ro-bind-try", t, t); // hidden again below if need be
      // 2. writable roots
      a.push("--bind", root, root);
      for (const w of writable) a.push("--bind-try", w, w);
      // 3. HOLON_HOME hidden; the agent's home back, its .holon/ read-only
      if (existsSync(holonHome)) a.push("--tmpfs", holonHome);
      a.push("--bind", agentHome, agentHome);
      const dotHolon = join(agentHome, ".holon");
      if (existsSync(dotHolon)) a.push("--ro-bind", dotHolon, dotHolon);
      if (inside(holonHome, root) && !inside(agentHome, root)) a.push("--bind", root, root);
      // 4. hidden paths
      for (const h of hidden) {
        const k = kindOf(h);
        if (k === "dir") a.push("--tmpfs", h);
        else if (k === "file") a.push("--ro-bind", "/dev/null", h);
      }
      // 5. read-only inside the writable roots; a worktree's shared objects and refs writable
      for (const r of root === agentHome ? [root] : [root, agentHome]) {
        const g = gitLayout(r);
        for (const w of g.writable) if (existsSync(w)) a.push("--bind", w, w);
        for (const p of [...g.readOnly, join(r, ".holon.json"), join(r, ".mcp.json")]) {
          if (existsSync(p)) a.push("--ro-bind", p, p);
        }
      }
      // 6. this command's own files
      for (const f of start.writable) a.push("--bind", f, f);
      a.push("--setenv", "TMPDIR", "/tmp");
      if (net !== null && net.proxyPort !== null) {
        // Everything but the namespace's own loopback goes through the proxy.
        const http = `http://127.0.0.1:${net.proxyPort}`;
        const socks = `socks5h://127.0.0.1:${net.proxyPort}`;
        for (const [k, v] of [
          ["HTTP_PROXY", http],
          ["HTTPS_PROXY", http],
          ["ALL_PROXY", socks],
          ["NO_PROXY", "localhost,127.0.0.1,::1"],
        ] as const) {
          a.push("--setenv", k, v, "--setenv", k.toLowerCase(), v);
        }
      }
      if (start.statusFd !== null) a.push("--json-status-fd", String(start.statusFd));
      a.push("--", ...inner);
      return a;
    },
  };
}
