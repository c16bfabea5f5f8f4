// `holon mcp …`: the MCP servers agents use. `list` shows each server of an agent (host,
// agent and workspace ones) with its state and the model-facing name of every tool; `add`
// and `remove` change config.json (host level) or, with --agent, the agent's own settings
// through the control plane; `test` connects to a server now and reports its tools and
// latency. Secrets are given by reference (`${VAR}`, `${credential:<profile>}`) and never
// printed. `serve` (mcp-serve.ts) offers Holon's own agents to MCP clients.
import { Option, type Command } from "commander";
import { CliError, action, clientOptions, printJson } from "./output.ts";
import { requester } from "./request.ts";
import type { ClientFlags } from "./connect.ts";
import { registerMcpServe } from "./mcp-serve.ts";

type Flags = ClientFlags & { json?: boolean; agent?: string };

type ServerView = {
  name: string;
  source: string;
  transport: string;
  consent: string;
  state: string;
  pid: number | null;
  last_error: string | null;
  shown: string;
  workspace: string | null;
  tools: { tool: string; name: string | null; enabled: boolean }[];
  rejected_tools: { name: string; reason: string }[];
};

async function list(flags: Flags): Promise<void> {
  const req = await requester(flags);
  const q = flags.agent ? `?agent=${encodeURIComponent(flags.agent)}` : "";
  const res = await req<{ agent_id: string; servers: ServerView[] }>(
    "GET",
    `/control/mcp/servers${q}`,
  );
  if (flags.json) return printJson(res);
  if (res.servers.length === 0) {
    process.stdout.write(
      `no MCP servers for ${res.agent_id} (add one: holon mcp add <name> -- <command> [args…])\n`,
    );
    return;
  }
  const lines: string[] = [];
  for (const s of res.servers) {
    const consent = s.consent === "operator" ? "" : ` [${s.consent}]`;
    lines.push(
      `${s.name}  ${s.transport}, ${s.source}${consent}, ${s.state}${s.pid ? ` (pid ${s.pid})` : ""}`,
    );
    lines.push(`  runs: ${s.shown}${s.workspace ? `  (from ${s.workspace}/.mcp.json)` : ""}`);
    if (s.last_error) lines.push(`  last error: ${s.last_error}`);
    if (s.tools.length === 0) lines.push("  tools: not listed yet (holon mcp test " + s.name + ")");
    for (const t of s.tools) {
      lines.push(`  ${t.name ?? "?"}  ← ${t.tool}${t.enabled ? "" : "  (disabled)"}`);
    }
    for (const r of s.rejected_tools) lines.push(`  left out: ${r.name}: ${r.reason}`);
  }
  process.stdout.write(lines.join("\n") + "\n");
}

type AddFlags = Flags & {
  transport?: string;
  url?: string;
  header?: string[];
  env?: string[];
  cwd?: string;
  shared?: boolean;
  enabledTools?: string;
  disabledTools?: string;
  startupTimeoutMs?: string;
  toolTimeoutMs?: string;
};

function pairs(list: string[] | undefined, what: string): Record<string, string> | undefined {
  if (!list?.length) return undefined;
  const out: Record<string, string> = {};
  for (const item of list) {
    const i = item.indexOf("=");
    if (i <= 0) throw new CliError(`${what} '${item}' is not NAME=VALUE`);
    out[item.slice(0, i)] = item.slice(i + 1);
  }
  return out;
}

function int(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new CliError(`${flag} takes a positive whole number`);
  return n;
}

/** The definition the flags describe (checked by the same rules config.json is). */
function definitionOf(command: string[], f: AddFlags): Record<string, unknown> {
  const transport = f.transport ?? (f.url ? "http" : "stdio");
  const def: Record<string, unknown> = {};
  if (transport === "stdio") {
    if (command.length === 0)
      throw new CliError(
        "a stdio server needs a command",
        "holon mcp add <name> -- <command> [args…]",
      );
    if (f.url) throw new CliError("--url is for http and sse servers");
    def.command = command[0];
    if (command.length > 1) def.args = command.slice(1);
    const env = pairs(f.env, "--env");
    if (env) def.env = env;
    if (f.cwd) def.cwd = f.cwd;
  } else {
    def.type = transport;
    if (command.length) throw new CliError(`a ${transport} server takes --url, not a command`);
    if (f.url) def.url = f.url;
    const headers = pairs(f.header, "--header");
    if (headers) def.headers = headers;
  }
  if (f.shared) def.shared = true;
  if (f.enabledTools) def.enabled_tools = f.enabledTools.split(",").filter(Boolean);
  if (f.disabledTools) def.disabled_tools = f.disabledTools.split(",").filter(Boolean);
  const st = int(f.startupTimeoutMs, "--startup-timeout-ms");
  if (st !== undefined) def.startup_timeout_ms = st;
  const tt = int(f.toolTimeoutMs, "--tool-timeout-ms");
  if (tt !== undefined) def.tool_timeout_ms = tt;
  return def;
}

async function add(name: string, command: string[], f: AddFlags): Promise<void> {
  const def = definitionOf(command, f);
  const { parseDefinition, McpConfigError, redactDefinition } = await import("../mcp/config.ts");
  let checked;
  try {
    checked = parseDefinition(name, def);
  } catch (err) {
    if (err instanceof McpConfigError) throw new CliError(err.message, err.hint);
    throw err;
  }
  if (f.agent) {
    if (f.shared) throw new CliError("--shared is for host-level servers only");
    const req = await requester(f);
    const res = await req("POST", `/control/agents/${encodeURIComponent(f.agent)}/settings`, {
      key: `mcp.servers.${name}`,
      value: def,
    });
    if (f.json) return printJson(res);
    process.stdout.write(`${f.agent}: MCP server ${name} added\n`);
    return;
  }
  const path = await changeHostServers(f, (servers) => {
    servers[name] = def;
  });
  if (f.json) return printJson({ ok: true, name, definition: redactDefinition(checked), path });
  process.stdout.write(`MCP server ${name} added (stored in ${path}); it starts on first use\n`);
}

async function remove(name: string, f: Flags): Promise<void> {
  if (f.agent) {
    const req = await requester(f);
    const res = await req("POST", `/control/agents/${encodeURIComponent(f.agent)}/settings`, {
      key: `mcp.servers.${name}`,
      value: null,
    });
    if (f.json) return printJson(res);
    process.stdout.write(`${f.agent}: MCP server ${name} removed\n`);
    return;
  }
  let found = false;
  const path = await changeHostServers(f, (servers) => {
    found = name in servers;
    delete servers[name];
  });
  if (!found) throw new CliError(`no host-level MCP server named '${name}'`, "see holon mcp list");
  if (f.json) return printJson({ ok: true, name, removed: true, path });
  process.stdout.write(`MCP server ${name} removed (${path})\n`);
}

/** Edit `mcp.servers` of config.json under its lock; the whole file is checked before writing. */
async function changeHostServers(
  f: Flags,
  change: (servers: Record<string, unknown>) => void,
): Promise<string> {
  const { resolveHome, homePaths } = await import("../host/paths.ts");
  const { updateConfigFile, ConfigValueError, ConfigFileError } = await import("../host/config.ts");
  const home = resolveHome(f.home);
  try {
    updateConfigFile(home, (data) => {
      const mcp = { ...((data.mcp as Record<string, unknown> | undefined) ?? {}) };
      const servers = { ...((mcp.servers as Record<string, unknown> | undefined) ?? {}) };
      change(servers);
      if (Object.keys(servers).length) mcp.servers = servers;
      else delete mcp.servers;
      if (Object.keys(mcp).length) data.mcp = mcp;
      else delete data.mcp;
    });
  } catch (err) {
    if (err instanceof ConfigValueError || err instanceof ConfigFileError)
      throw new CliError(err.message, (err as { hint?: string }).hint);
    throw err;
  }
  return homePaths(home).config;
}

async function test(name: string, f: Flags): Promise<void> {
  const req = await requester(f);
  const res = await req<{
    agent_id: string;
    test: { ok: boolean; error: string | null; latency_ms: number | null; tools: string[] };
  }>(
    "POST",
    `/control/mcp/servers/${encodeURIComponent(name)}/test`,
    f.agent ? { agent_id: f.agent } : {},
  );
  if (f.json) printJson(res);
  else if (res.test.ok) {
    process.stdout.write(
      `${name}: ok in ${res.test.latency_ms} ms, ${res.test.tools.length} tools: ${res.test.tools.join(", ")}\n`,
    );
  } else process.stderr.write(`${name}: failed: ${res.test.error}\n`);
  if (!res.test.ok) process.exitCode = 1;
}

/** Create the `holon mcp` group with list, add, remove and test; returns it for others to extend. */
export function registerMcpCommands(program: Command): Command {
  const mcp = program
    .command("mcp")
    .description("Model Context Protocol: servers agents take tools from, and Holon as a server");
  const agentOpt = () =>
    new Option("--agent <id>", "the agent's own servers (default: host level / the default agent)");
  const common = (cmd: Command) => clientOptions(cmd.addOption(agentOpt()));
  common(
    mcp
      .command("list")
      .description("each MCP server of an agent: where it comes from, its state, its tools' names"),
  ).action(action(async (opts: Flags) => list(opts)));
  const addCmd = mcp
    .command("add <name> [command...]")
    .description(
      "add a server: `holon mcp add fs -- npx server-filesystem .` or `--transport http --url …`",
    )
    .addOption(
      new Option("--transport <t>", "stdio (default), http or sse").choices([
        "stdio",
        "http",
        "sse",
      ]),
    )
    .option("--url <url>", "the server's URL (http, sse)")
    .option("--header <k=v...>", "an HTTP header; use ${VAR} or ${credential:<id>} for secrets")
    .option(
      "--env <k=v...>",
      "an environment variable; use ${VAR} or ${credential:<id>} for secrets",
    )
    .option("--cwd <dir>", "working directory (default: the agent's execution root)")
    .option("--shared", "one process for all agents, with no roots (host level only)")
    .option("--enabled-tools <a,b>", "only these tools")
    .option("--disabled-tools <a,b>", "all tools but these")
    .option("--startup-timeout-ms <ms>", "startup timeout (default 10000)")
    .option("--tool-timeout-ms <ms>", "per-call timeout (default 60000)");
  common(addCmd).action(
    action(async (name: string, command: string[], opts: AddFlags) => add(name, command, opts)),
  );
  common(
    mcp
      .command("remove <name>")
      .description("remove a server (host level, or the agent's own with --agent)"),
  ).action(action(async (name: string, opts: Flags) => remove(name, opts)));
  common(
    mcp
      .command("test <name>")
      .description("connect now, list the tools, report the latency or the error"),
  ).action(action(async (name: string, opts: Flags) => test(name, opts)));
  registerMcpServe(mcp);
  return mcp;
}
