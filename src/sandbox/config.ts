// The `sandbox` section of config.json (host-level settings): the mode, the paths commands may
// write besides their roots, the paths hidden from them, and which bubblewrap to run.
// config-schema.ts folds it into the file schema, the effective configuration and the key
// list. Agent-level settings are not here: they live in the agent record (domain/sandbox.ts).
import { z } from "zod";
import {
  NetworkAllowEntry,
  SandboxMode,
  SandboxNetwork,
  SandboxPath,
  type SandboxMode as Mode,
  type SandboxNetwork as Network,
} from "../domain/sandbox.ts";

/** Caches builds write to, so `npm ci`, `cargo build` or `go build` keep working confined. */
export const DEFAULT_WRITABLE_PATHS: readonly string[] = [
  "~/.cache",
  "~/.npm",
  "~/.cargo/registry",
  "~/go/pkg",
  "~/.local/share/pnpm",
];

/**
 * Credentials and private history a command has no business reading. A trailing `*` matches
 * every entry of the parent directory starting with the rest of the name.
 */
export const DEFAULT_HIDDEN_PATHS: readonly string[] = [
  "~/.ssh",
  "~/.aws",
  "~/.config/gcloud",
  "~/.gnupg",
  "~/.netrc",
  "~/.docker/config.json",
  "~/.kube",
  "~/.npmrc",
  "~/.git-credentials",
  "~/.config/gh",
  "~/.pypirc",
  "~/.cargo/credentials*",
  "~/.azure",
  "~/.oci",
  "~/.password-store",
  "~/.local/share/keyrings",
  "~/.mozilla",
  "~/.config/google-chrome",
  "~/.config/chromium",
  "~/.config/BraveSoftware",
  "~/.bash_history",
  "~/.zsh_history",
  "~/.history",
  "~/.python_history",
  "~/.node_repl_history",
  "~/.psql_history",
  "~/.mysql_history",
  "~/.sqlite_history",
  "~/.lesshst",
];

const PathList = z.array(SandboxPath).max(256);
const AllowList = z.array(NetworkAllowEntry).max(256);

export const SandboxFileSchema = z.strictObject({
  mode: SandboxMode.optional(),
  network: SandboxNetwork.optional(),
  network_allow: AllowList.optional(),
  writable_paths: PathList.optional(),
  hidden_paths: PathList.optional(),
  /** The bubblewrap program (a path, or a name looked up on PATH). */
  bwrap_path: z.string().min(1).max(4096).optional(),
});
export type SandboxFile = z.infer<typeof SandboxFileSchema>;

export type SandboxConfig = {
  mode: Mode;
  /** Whether the mode was set in config.json (else the default `auto`). */
  mode_set: boolean;
  network: Network;
  /** Hosts confined commands reach through the proxy under `allowlist`. */
  network_allow: string[];
  writable_paths: string[];
  hidden_paths: string[];
  bwrap_path: string;
};

export function effectiveSandbox(file: SandboxFile | undefined): SandboxConfig {
  return {
    mode: file?.mode ?? "auto",
    mode_set: file?.mode !== undefined,
    network: file?.network ?? "on",
    network_allow: file?.network_allow ?? [],
    writable_paths: file?.writable_paths ?? [...DEFAULT_WRITABLE_PATHS],
    hidden_paths: file?.hidden_paths ?? [...DEFAULT_HIDDEN_PATHS],
    bwrap_path: file?.bwrap_path ?? "bwrap",
  };
}

type KeyDefLike = {
  key: string;
  type: "enum" | "string" | "string_list";
  default?: unknown;
  description: string;
  values?: readonly string[];
  schema: z.ZodType;
};

export const SANDBOX_KEY_DEFS: readonly KeyDefLike[] = [
  {
    key: "sandbox.mode",
    type: "enum",
    default: "auto",
    values: SandboxMode.options,
    description:
      "Confine every command an agent runs: off, auto (confine where bubblewrap works, say so where it cannot) or required (refuse commands that cannot be confined); an agent's own setting wins",
    schema: SandboxMode,
  },
  {
    key: "sandbox.network",
    type: "enum",
    default: "on",
    values: SandboxNetwork.options,
    description:
      "Network for confined commands: on (the host's network), off (the agent's own network namespace, loopback only) or allowlist (that namespace plus sandbox.network_allow through the host's proxy); an agent's own setting wins",
    schema: SandboxNetwork,
  },
  {
    key: "sandbox.network_allow",
    type: "string_list",
    default: [],
    description:
      "Hosts confined commands may reach under sandbox.network allowlist: name, *.domain or IP, optionally :port (without a port: 80 and 443)",
    schema: AllowList,
  },
  {
    key: "sandbox.writable_paths",
    type: "string_list",
    default: [...DEFAULT_WRITABLE_PATHS],
    description:
      "Paths confined commands may write besides the execution root, the agent's home and a private /tmp (absolute or ~/…)",
    schema: PathList,
  },
  {
    key: "sandbox.hidden_paths",
    type: "string_list",
    default: [...DEFAULT_HIDDEN_PATHS],
    description:
      "Paths confined commands cannot see at all (absolute or ~/…; a trailing * matches by prefix)",
    schema: PathList,
  },
  {
    key: "sandbox.bwrap_path",
    type: "string",
    default: "bwrap",
    description: "The bubblewrap program confined commands start under",
    schema: z.string().min(1).max(4096),
  },
];
