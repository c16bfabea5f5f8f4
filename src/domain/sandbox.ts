// The sandbox's shapes: the modes, an agent's own sandbox settings (kept in its record and
// changed only through control routes), and what the sandbox enforces, field by field, as
// inspection surfaces and the execution summary show it. The mechanism is in src/sandbox/.
import { z } from "zod";

/**
 * `off`: commands run unconfined (the `host_local` backend). `auto`: confined where the
 * machine can (bubblewrap, `host_bwrap`), unconfined with a loud reason where it cannot.
 * `required`: a command that cannot be confined is refused.
 */
export const SandboxMode = z.enum(["off", "auto", "required"]);
export type SandboxMode = z.infer<typeof SandboxMode>;

/**
 * Network for sandboxed commands. `on`: the host's network. `off`: the agent's own network
 * namespace, only its own loopback. `allowlist`: that namespace, plus the hosts of
 * `network_allow` through the host's proxy (HTTP CONNECT and SOCKS5).
 */
export const SandboxNetwork = z.enum(["on", "off", "allowlist"]);
export type SandboxNetwork = z.infer<typeof SandboxNetwork>;

/**
 * One allowlist entry: a host name (`example.com`), every name under a domain
 * (`*.example.com`), or an IP address, each alone (ports 80 and 443) or with a port
 * (`example.com:8080`, `127.0.0.1:3000`, `[::1]:3000`).
 */
export const NetworkAllowEntry = z
  .string()
  .min(1)
  .max(260)
  .regex(
    /^(?:(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/,
    "must be a host name, *.domain, an IP address or [IPv6], optionally with :port",
  )
  .refine((e) => {
    const m = /:([0-9]{1,5})$/.exec(e.startsWith("[") ? e.slice(e.indexOf("]")) : e);
    return m === null || (Number(m[1]) >= 1 && Number(m[1]) <= 65535);
  }, "the port must be 1-65535");

/** An absolute path, or one starting with `~/` (the user's home directory). */
export const SandboxPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith("/") || p.startsWith("~/"), "must be absolute or start with ~/")
  .refine((p) => !p.includes("\0"), "must not contain a NUL byte");

/** An agent's own sandbox settings; each absent field takes the host's value. */
export const AgentSandboxSettings = z.strictObject({
  mode: SandboxMode.optional(),
  /** Extra writable paths, on top of the host's `sandbox.writable_paths`. */
  writable_paths: z.array(SandboxPath).max(64).optional(),
  /** Extra hidden paths, on top of the host's `sandbox.hidden_paths`. */
  hidden_paths: z.array(SandboxPath).max(64).optional(),
  /** The network its commands get (else the host's `sandbox.network`). */
  network: SandboxNetwork.optional(),
  /** Extra allowlist entries, on top of the host's `sandbox.network_allow`. */
  network_allow: z.array(NetworkAllowEntry).max(256).optional(),
});
export type AgentSandboxSettings = z.infer<typeof AgentSandboxSettings>;

/** The agent-level keys `holon agent set <id> <key> <value>` accepts. */
export const AGENT_SANDBOX_KEYS = [
  "sandbox.mode",
  "sandbox.writable_paths",
  "sandbox.hidden_paths",
  "sandbox.network",
  "sandbox.network_allow",
] as const;

export const SandboxState = z.enum(["enforced", "not_enforced"]);

/** What the sandbox holds for one agent right now (status, /state, config doctor). */
export const SandboxSummary = z.object({
  backend: z.enum(["host_local", "host_bwrap"]),
  mode: SandboxMode,
  /** Where the mode came from. */
  mode_source: z.enum(["default", "host", "agent"]),
  state: SandboxState,
  /** Why it is not enforced (null when it is). */
  reason: z.string().nullable(),
  enforcement: z.object({
    shell_filesystem: SandboxState,
    network: SandboxState,
    secrets: SandboxState,
    child_processes: SandboxState,
  }),
  /** One reason per field (why enforced or not). */
  why: z.object({
    shell_filesystem: z.string(),
    network: z.string(),
    secrets: z.string(),
    child_processes: z.string(),
  }),
  network: SandboxNetwork,
});
export type SandboxSummary = z.infer<typeof SandboxSummary>;

/** The part of the summary every turn and task records in its execution snapshot (small). */
export const SandboxSnapshot = SandboxSummary.pick({
  mode: true,
  mode_source: true,
  state: true,
  reason: true,
  network: true,
});
export type SandboxSnapshot = z.infer<typeof SandboxSnapshot>;

export function sandboxSnapshot(s: SandboxSummary): SandboxSnapshot {
  return {
    mode: s.mode,
    mode_source: s.mode_source,
    state: s.state,
    reason: s.reason,
    network: s.network,
  };
}
