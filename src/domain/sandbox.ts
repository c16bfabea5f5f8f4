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

/** Network for sandboxed commands. Only `on` (the host's network) is implemented. */
export const SandboxNetwork = z.enum(["on"]);
export type SandboxNetwork = z.infer<typeof SandboxNetwork>;

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
});
export type AgentSandboxSettings = z.infer<typeof AgentSandboxSettings>;

/** The agent-level keys `holon agent set <id> <key> <value>` accepts. */
export const AGENT_SANDBOX_KEYS = [
  "sandbox.mode",
  "sandbox.writable_paths",
  "sandbox.hidden_paths",
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
