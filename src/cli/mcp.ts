// `holon mcp …`: Model Context Protocol in both directions. `serve` (mcp-serve.ts) offers
// Holon's agents to MCP clients.
import type { Command } from "commander";
import { registerMcpServe } from "./mcp-serve.ts";

export function registerMcpCommands(program: Command): void {
  const mcp = program.command("mcp").description("Model Context Protocol: Holon as an MCP server");
  registerMcpServe(mcp);
}
