// What this machine can confine, found by trying it: bubblewrap is started once with the very
// flags commands get (no capabilities, new user namespace where the kernel allows one, own
// PID namespace, new session) to run `true`. The result is kept per bubblewrap path, so a
// host probes once at start and again only when `sandbox.bwrap_path` changes.
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

export type SandboxProbe = {
  available: boolean;
  /** The resolved bubblewrap program (null when none was found). */
  bwrap: string | null;
  /** `bubblewrap 0.8.0`, when it ran. */
  version: string | null;
  /** A new user namespace works (and nested ones are then refused: `--disable-userns`). */
  userns: boolean;
  /** Why the sandbox is unavailable (null when available). */
  reason: string | null;
  /**
   * An agent can have a network namespace of its own that its commands join (`sandbox.network`
   * off or allowlist): bubblewrap makes one, and `nsenter` (found here) can enter it.
   */
  netns: boolean;
  nsenter: string | null;
  /** Why it cannot (null when it can). */
  netnsReason: string | null;
};

const cache = new Map<string, SandboxProbe>();

function onPath(name: string, pathEnv: string | undefined): string | null {
  if (name.includes("/")) {
    try {
      accessSync(name, constants.X_OK);
      return name;
    } catch {
      return null;
    }
  }
  for (const dir of (pathEnv ?? "/usr/local/bin:/usr/bin:/bin").split(delimiter)) {
    if (dir === "") continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return null;
}

/** The namespace and privilege flags every sandboxed process gets (see profile.ts). */
export function isolationFlags(userns: boolean): string[] {
  return [
    ...(userns ? ["--unshare-user", "--disable-userns"] : []),
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
  ];
}

function attempt(bwrap: string, userns: boolean): { ok: boolean; error: string } {
  const r = spawnSync(
    bwrap,
    [
      ...isolationFlags(userns),
      "--new-session",
      "--ro-bind",
      "/",
      "/",
      "--proc",
      "/proc",
      "--dev",
      "/dev",
      "--",
      "true",
    ],
    { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000, env: {} },
  );
  if (r.error) return { ok: false, error: r.error.message };
  if (r.status === 0) return { ok: true, error: "" };
  const text = (r.stderr?.toString("utf8") ?? "").trim().slice(0, 300);
  return { ok: false, error: text || `exit status ${r.status ?? r.signal}` };
}

/** Probe (or return the kept result for) this bubblewrap. */
export function probeSandbox(bwrapPath: string, pathEnv = process.env["PATH"]): SandboxProbe {
  const key = `${bwrapPath}\0${pathEnv ?? ""}`;
  const kept = cache.get(key);
  if (kept !== undefined) return kept;
  const result = runProbe(bwrapPath, pathEnv);
  cache.set(key, result);
  return result;
}

function runProbe(bwrapPath: string, pathEnv: string | undefined): SandboxProbe {
  const none = (reason: string, bwrap: string | null = null): SandboxProbe => ({
    available: false,
    bwrap,
    version: null,
    userns: false,
    reason,
    netns: false,
    nsenter: null,
    netnsReason: reason,
  });
  if (process.platform !== "linux") {
    return none(`platform: bubblewrap needs Linux namespaces (this is ${process.platform})`);
  }
  const bwrap = onPath(bwrapPath, pathEnv);
  if (bwrap === null) {
    return none(
      `bubblewrap (${bwrapPath}) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap)`,
    );
  }
  const v = spawnSync(bwrap, ["--version"], { encoding: "utf8", timeout: 10_000, env: {} });
  if (v.error || v.status !== 0) {
    return none(`${bwrap} does not run: ${v.error?.message ?? (v.stderr || "").trim()}`, bwrap);
  }
  const version = v.stdout.trim();
  const withUserns = attempt(bwrap, true);
  const userns = withUserns.ok;
  if (!userns) {
    const without = attempt(bwrap, false);
    if (!without.ok) return none(`${bwrap} cannot create a sandbox here: ${without.error}`, bwrap);
  }
  return { available: true, bwrap, version, userns, reason: null, ...probeNetns(bwrap, pathEnv) };
}

/**
 * Whether commands can join an agent's network namespace: bubblewrap must make one, and
 * `nsenter` must be allowed to enter a namespace (it needs CAP_SYS_ADMIN, so in practice a
 * host running as root). Tried on the host's own namespace, which changes nothing.
 */
function probeNetns(
  bwrap: string,
  pathEnv: string | undefined,
): Pick<SandboxProbe, "netns" | "nsenter" | "netnsReason"> {
  const no = (why: string, nsenter: string | null = null) => ({
    netns: false,
    nsenter,
    netnsReason: why,
  });
  const nsenter = onPath("nsenter", pathEnv);
  if (nsenter === null) return no("nsenter (util-linux) is not installed");
  const own = spawnSync(nsenter, ["--net=/proc/self/ns/net", "--", "true"], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 10_000,
    env: {},
  });
  if (own.error || own.status !== 0) {
    const text = (own.stderr?.toString("utf8") ?? "").trim().slice(0, 200);
    return no(
      `nsenter cannot enter a network namespace here (${text || own.error?.message || `status ${own.status}`}); the host must run as root`,
      nsenter,
    );
  }
  const net = spawnSync(
    bwrap,
    ["--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"],
    { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000, env: {} },
  );
  if (net.error || net.status !== 0) {
    const text = (net.stderr?.toString("utf8") ?? "").trim().slice(0, 200);
    return no(`bubblewrap cannot make a network namespace: ${text || net.error?.message}`, nsenter);
  }
  return { netns: true, nsenter, netnsReason: null };
}
