// What this machine can confine, found by trying it: bubblewrap is started once with the very
// flags commands get (no capabilities, new user namespace where the kernel allows one, own
// PID namespace, new session) to run `true`. The result is kept per bubblewrap path, so a
// host probes once at start and again only when `sandbox.bwrap_path` changes.
//
// Probing starts bubblewrap three or four times (some 50 ms on a quiet machine), which every
// `holon run` paid before its first model call. With a cache file the result is also kept
// on disk, under the home's run/ directory, for an hour, and only for exactly this machine
// as it was probed: the same programs (path, inode, size, modification time), the same
// kernel and user, the same namespace limits. Anything different probes again.
import { spawnSync } from "node:child_process";
import {
  accessSync,
  constants,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { release } from "node:os";
import { delimiter, dirname, join } from "node:path";

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

/** How long a probe kept on disk is trusted. */
export const PROBE_CACHE_MS = 60 * 60 * 1000;
/** The cache file is small; anything larger is not ours. */
const MAX_CACHE_BYTES = 16 * 1024;

/**
 * Probe (or return the kept result for) this bubblewrap. `cacheFile` also keeps the result
 * on disk between processes (see the header).
 */
export function probeSandbox(
  bwrapPath: string,
  pathEnv = process.env["PATH"],
  cacheFile?: string,
): SandboxProbe {
  const key = `${bwrapPath}\0${pathEnv ?? ""}`;
  const kept = cache.get(key);
  if (kept !== undefined) return kept;
  const machine = cacheFile === undefined ? null : machineKey(bwrapPath, pathEnv);
  let result = machine === null ? undefined : readCached(cacheFile!, machine);
  if (result === undefined) {
    result = runProbe(bwrapPath, pathEnv);
    if (machine !== null) writeCached(cacheFile!, machine, result);
  }
  cache.set(key, result);
  return result;
}

/** Identity of a file, or "-" when it is missing. */
function fileKey(path: string | null): string {
  if (path === null) return "-";
  try {
    const st = statSync(path);
    return `${path}:${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return "-";
  }
}

function readSmall(path: string): string {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return "-";
  }
}

/**
 * What the probe's answer depends on, as one string: the programs it would run, the kernel,
 * who runs it, and the user-namespace limits. Null when there is nothing to probe.
 */
function machineKey(bwrapPath: string, pathEnv: string | undefined): string | null {
  if (process.platform !== "linux") return null;
  const bwrap = onPath(bwrapPath, pathEnv);
  if (bwrap === null) return null; // nothing is spawned then: no need to keep anything
  return [
    fileKey(bwrap),
    fileKey(onPath("nsenter", pathEnv)),
    release(),
    process.getuid?.() ?? -1,
    readSmall("/proc/sys/user/max_user_namespaces"),
    readSmall("/proc/sys/kernel/unprivileged_userns_clone"),
    readSmall("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
  ].join("|");
}

function readCached(file: string, machine: string): SandboxProbe | undefined {
  try {
    if (statSync(file).size > MAX_CACHE_BYTES) return undefined;
    const kept = JSON.parse(readFileSync(file, "utf8")) as {
      machine?: unknown;
      at?: unknown;
      probe?: unknown;
    };
    if (kept.machine !== machine || typeof kept.at !== "number") return undefined;
    const age = Date.now() - kept.at;
    if (age < 0 || age > PROBE_CACHE_MS) return undefined;
    const p = kept.probe as SandboxProbe | null;
    if (typeof p !== "object" || p === null || typeof p.available !== "boolean") return undefined;
    if (typeof p.userns !== "boolean" || typeof p.netns !== "boolean") return undefined;
    return p;
  } catch {
    return undefined; // missing, unreadable, not JSON: probe
  }
}

function writeCached(file: string, machine: string, probe: SandboxProbe): void {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ machine, at: Date.now(), probe }), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // a home we cannot write to probes again next time; nothing else changes
  }
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
