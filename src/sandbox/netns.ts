// One network namespace per agent whose `sandbox.network` is off or allowlist, shared by all
// of its commands and tasks (its own loopback: a dev server one command starts, the next one
// reaches), while each command keeps its own PID namespace. A namespace lives as long as a
// process is in it, so each agent has a holder: a small process bubblewrap starts in a fresh
// network namespace (loopback only). Commands join it with `nsenter --net=/proc/<holder>/ns/net`
// before their own bubblewrap starts. Under allowlist the holder is the proxy's bridge
// (net-bridge.js, listening on 127.0.0.1:PROXY_PORT inside); under off it is `sleep`.
//
// The holder outlives the host, like the tasks in its namespace: its pid, start time and boot
// id are recorded in `<holon_home>/run/sandbox-net/<agent key>/holder.json` (out of every
// command's sight), a restarted host reattaches to it, and the bridge finds the host's proxy
// again at the same socket path there. A holder no task of its agent needs is stopped when
// the host stops. This is the one process the sandbox starts itself: it runs no code of
// the agent's, and commands reach only its network namespace, never its processes or files.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { HolonError } from "../domain/errors.ts";
import { atomicWriteFile } from "../store/files.ts";
import type { SandboxProbe } from "./probe.ts";

const BRIDGE_PATH = fileURLToPath(new URL("./net-bridge.js", import.meta.url));

/** The proxy's port on the loopback of every agent's namespace (private to it). */
export const PROXY_PORT = 3128;

/** Process identity as the process layer reads it from /proc (injected: tasks/ owns /proc). */
export type ProcIdentity = {
  /** Start time of a live, non-zombie process in clock ticks; null when there is none. */
  startTicks(pid: number): number | null;
  bootId(): string;
};

/** An agent's namespace as a command joins it. */
export type AgentNetns = {
  /** `/proc/<holder pid>/ns/net`. */
  readonly path: string;
  /** Identifies the holder (pid and start time): profiles with equal ids share a namespace. */
  readonly id: string;
  /** The proxy on the namespace's loopback (null under off). */
  readonly proxyPort: number | null;
  /** The host's end of the proxy, bound into the holder. */
  readonly socketPath: string;
};

type HolderRecord = {
  version: 1;
  agent_id: string;
  pid: number;
  start_ticks: number;
  boot_id: string;
  bridge: boolean;
  port: number;
};

export type HolderDeps = {
  holonHome: string;
  probe: () => SandboxProbe;
  procs: ProcIdentity;
};

const pause = new Int32Array(new SharedArrayBuffer(4));

export class NetnsHolders {
  readonly #deps: HolderDeps;
  readonly #live = new Map<string, HolderRecord>();

  constructor(deps: HolderDeps) {
    this.#deps = deps;
  }

  /** The directory of an agent's namespace files (0700, under run/). */
  dirOf(agentId: string): string {
    const key = createHash("sha256").update(agentId).digest("hex").slice(0, 16);
    return join(this.#deps.holonHome, "run", "sandbox-net", key);
  }

  socketPath(agentId: string): string {
    return join(this.dirOf(agentId), "proxy.sock");
  }

  /**
   * The agent's namespace, started if it has none (a holder with a bridge when `bridge`).
   * Synchronous, like every command start; a few milliseconds once per agent and host.
   */
  ensure(agentId: string, bridge: boolean): AgentNetns {
    let rec = this.#alive(agentId);
    if (rec !== null && bridge && !rec.bridge) {
      // off → allowlist: a namespace needs its bridge. Commands already in the old one keep it.
      this.#kill(rec);
      rec = null;
    }
    rec ??= this.#start(agentId, bridge);
    return this.#view(rec);
  }

  /** The recorded holder of an agent when it is still alive (after a restart, too). */
  current(agentId: string): AgentNetns | null {
    const rec = this.#alive(agentId);
    return rec === null ? null : this.#view(rec);
  }

  /** Agents with a live holder recorded (a restarted host reattaches to these). */
  recorded(): string[] {
    const root = join(this.#deps.holonHome, "run", "sandbox-net");
    let names: string[] = [];
    try {
      names = readdirSync(root);
    } catch {
      return [];
    }
    const out: string[] = [];
    for (const n of names) {
      const rec = readRecord(join(root, n, "holder.json"));
      if (rec !== null && this.#alive(rec.agent_id) !== null) out.push(rec.agent_id);
    }
    return out;
  }

  /**
   * At host stop: end every holder no task needs (`busy` says which agents have tasks that
   * outlive the host). An unused spare or a finishing command in the namespace does not count.
   */
  async stopIdle(busy: (agentId: string) => Promise<boolean>): Promise<void> {
    for (const agentId of this.recorded()) {
      const rec = this.#alive(agentId);
      if (rec !== null && !(await busy(agentId))) this.#kill(rec);
    }
  }

  #view(rec: HolderRecord): AgentNetns {
    return {
      path: `/proc/${rec.pid}/ns/net`,
      id: `${rec.pid}:${rec.start_ticks}`,
      proxyPort: rec.bridge ? rec.port : null,
      socketPath: this.socketPath(rec.agent_id),
    };
  }

  #alive(agentId: string): HolderRecord | null {
    const rec = this.#live.get(agentId) ?? readRecord(join(this.dirOf(agentId), "holder.json"));
    if (rec === null || rec.agent_id !== agentId) return null;
    const procs = this.#deps.procs;
    const alive =
      rec.boot_id === procs.bootId() &&
      procs.startTicks(rec.pid) === rec.start_ticks &&
      ownNamespace(rec.pid);
    if (!alive) {
      this.#live.delete(agentId);
      return null;
    }
    this.#live.set(agentId, rec);
    return rec;
  }

  #kill(rec: HolderRecord): void {
    if (this.#deps.procs.startTicks(rec.pid) === rec.start_ticks) {
      try {
        process.kill(rec.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    this.#live.delete(rec.agent_id);
    rmSync(join(this.dirOf(rec.agent_id), "holder.json"), { force: true });
  }

  #start(agentId: string, bridge: boolean): HolderRecord {
    const probe = this.#deps.probe();
    if (!probe.netns || probe.bwrap === null) {
      throw netnsError(agentId, probe.netnsReason ?? "network namespaces are unavailable");
    }
    const dir = this.dirOf(agentId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const statusPath = join(dir, "holder.status");
    const readyPath = join(dir, "holder.ready");
    const logPath = join(dir, "holder.log");
    rmSync(statusPath, { force: true });
    rmSync(readyPath, { force: true });
    const statusFd = openSync(statusPath, "wx", 0o600);
    const readyFd = openSync(readyPath, "wx", 0o600);
    const logFd = openSync(logPath, "w", 0o600);
    const inner = bridge
      ? [process.execPath, BRIDGE_PATH, String(PROXY_PORT), this.socketPath(agentId)]
      : ["sleep", "infinity"];
    const argv = [
      "--unshare-net",
      "--new-session",
      "--cap-drop",
      "ALL",
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      // Its own view of the host's files, read-only: the proxy's socket stays where it is.
      "--json-status-fd",
      "3",
      "--",
      ...inner,
    ];
    let outer: number | undefined;
    try {
      const child = spawn(probe.bwrap, argv, {
        cwd: "/",
        env: { PATH: process.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin" },
        detached: true,
        stdio: ["ignore", readyFd, logFd, statusFd],
      });
      child.on("error", () => {});
      child.unref();
      outer = child.pid;
    } finally {
      closeSync(statusFd);
      closeSync(readyFd);
      closeSync(logFd);
    }
    const fail = (why: string): never => {
      if (outer !== undefined) {
        try {
          process.kill(outer, "SIGKILL");
        } catch {
          // gone
        }
      }
      let log = "";
      try {
        log = readFileSync(logPath, "utf8").trim().slice(0, 300);
      } catch {
        // none
      }
      throw netnsError(agentId, `${why}${log ? `: ${log}` : ""}`);
    };
    if (outer === undefined) return fail("bubblewrap did not start");
    const pid = this.#waitFor(
      () => /"child-pid":\s*(\d+)/.exec(readText(statusPath))?.[1],
      outer,
      10_000,
    );
    if (pid === undefined) return fail("bubblewrap could not make the namespace");
    const holder = Number(pid);
    if (
      bridge &&
      this.#waitFor(() => readText(readyPath).includes("ready") || undefined, outer, 10_000) ===
        undefined
    ) {
      try {
        process.kill(holder, "SIGKILL");
      } catch {
        // gone
      }
      return fail("the proxy bridge did not start");
    }
    const ticks = this.#deps.procs.startTicks(holder);
    if (ticks === null) return fail("the holder exited at once");
    const rec: HolderRecord = {
      version: 1,
      agent_id: agentId,
      pid: holder,
      start_ticks: ticks,
      boot_id: this.#deps.procs.bootId(),
      bridge,
      port: PROXY_PORT,
    };
    atomicWriteFile(join(dir, "holder.json"), JSON.stringify(rec) + "\n", { mode: 0o600 });
    this.#live.set(agentId, rec);
    return rec;
  }

  /** Poll (blocking, briefly) until `get` yields, the outer bubblewrap dies, or time runs out. */
  #waitFor<T>(get: () => T | undefined, outer: number, ms: number): T | undefined {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = get();
      if (v !== undefined) return v;
      if (this.#deps.procs.startTicks(outer) === null || Date.now() > deadline) return get();
      Atomics.wait(pause, 0, 0, 0.5);
    }
  }
}

function netnsError(agentId: string, why: string): HolonError {
  return new HolonError(
    "sandbox_unavailable",
    `the command was refused: agent '${agentId}' has sandbox.network off or allowlist and its network namespace cannot be made (${why})`,
    { status: 409, hint: "fix the machine, or have the operator set sandbox.network on" },
  );
}

function readText(p: string): string {
  try {
    return readFileSync(p, "utf8");
  } catch {
    return "";
  }
}

function readRecord(p: string): HolderRecord | null {
  try {
    const r = JSON.parse(readFileSync(p, "utf8")) as HolderRecord;
    return r.version === 1 && Number.isInteger(r.pid) && typeof r.agent_id === "string" ? r : null;
  } catch {
    return null;
  }
}

function netOf(pid: number | "self"): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return null;
  }
}

/** The process is in a network namespace other than the host's (a holder, not a reused pid). */
function ownNamespace(pid: number): boolean {
  const ns = netOf(pid);
  return ns !== null && ns !== netOf("self");
}
