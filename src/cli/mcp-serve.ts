// `holon mcp serve`: Holon as an MCP server on stdio, for Claude Code, Codex or any MCP
// client that starts its servers as commands. It is a client of the running host (the Unix
// socket, or loopback TCP with the control token), never a host itself: with no runtime
// running it says so in one line and exits 1. Stdout carries only MCP messages; anything
// else goes to stderr. It ends when its client closes stdin.
import type { Command } from "commander";
import { CliError, action, homeOption, tokenOption } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

/** How long the start-up check waits for the host to answer. */
const PROBE_MS = 5_000;

/** Attach `serve` to the `holon mcp` group. */
export function registerMcpServe(mcp: Command): void {
  mcp
    .command("serve")
    .description(
      "Serve Holon's agents to an MCP client over stdio (a client of the running host; add it to Claude Code or Codex as a command)",
    )
    .addOption(homeOption())
    .addOption(tokenOption())
    .action(action(async (opts: ClientFlags) => serveMcp(opts)));
}

async function serveMcp(flags: ClientFlags): Promise<void> {
  const { tryConnect } = await import("./connect.ts");
  const { resolveHome } = await import("../host/paths.ts");
  const { ClientError, HolonClient } = await import("../client/client.ts");
  const noHost = () =>
    new CliError(
      `no Holon runtime is running for ${resolveHome(flags.home)}; start one with \`holon serve\` (holon mcp serve never runs agents itself)`,
    );
  const found = tryConnect(flags);
  if (!found) throw noHost();
  // Over the Unix socket the local user needs no token, and sending none is what makes its
  // input `local_process` rather than `control_authenticated`.
  const socketPath = found.conn.socketPath;
  const client = socketPath ? new HolonClient({ socketPath }) : found;
  try {
    await client.call("GET", "/", undefined, { timeoutMs: PROBE_MS });
  } catch (err) {
    if (err instanceof ClientError && (err.kind === "connection_failed" || err.kind === "timeout"))
      throw noHost();
    if (err instanceof ClientError) throw new CliError(`${err.message} (${err.kind})`);
    throw err;
  }

  const { controlPlaneOperations, OperationError } = await import("../mcpserver/operations.ts");
  const { createHolonMcpServer } = await import("../mcpserver/server.ts");
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const ops = controlPlaneOperations(async (method, path, body, signal) => {
    try {
      return await client.call(method, path, body, { signal });
    } catch (err) {
      if (err instanceof ClientError) throw new OperationError(err.kind, err.message, err.hint);
      throw err;
    }
  });
  const server = createHolonMcpServer(ops);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    server.server.onclose = () => resolve();
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => {});
}
