// MCP test helpers: the real servers installed from npm (dev dependencies, run through their
// installed bin, never downloaded), small fixture servers for the ugly cases, writing a
// home's config.json the way `holon mcp add` does, and one tool call through the real
// catalog bridge and dispatch.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RuntimeHost } from "../../src/host/host.ts";
import { McpToolBridge } from "../../src/tools/mcp/mcp-tool.ts";
import { ToolRegistry, dispatch } from "../../src/tools/registry.ts";
import { REPO_ROOT } from "./home.ts";
import { toolContext } from "./tool-context.ts";
import { preloadMcp } from "../../src/host/mcp-facade.ts";

// Hosts these tests open in process hold the MCP client from their start, as `holon serve`
// does (they read its status right after opening); the on-demand path `holon run` takes is
// test/mcp-run.test.ts.
await preloadMcp();

export const NODE = process.execPath;
export const EVERYTHING = join(
  REPO_ROOT,
  "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
);
export const FILESYSTEM = join(
  REPO_ROOT,
  "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
);
export const FIXTURE = join(REPO_ROOT, "test/fixtures/mcp/fixture-server.mjs");

/** Merge `mcp` settings into the home's config.json (as `holon mcp add` would write them). */
export function writeMcpConfig(home: string, mcp: Record<string, unknown>): void {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const path = join(home, "config.json");
  let data: Record<string, unknown> = {};
  try {
    data = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    // a new file
  }
  data.mcp = mcp;
  writeFileSync(path, JSON.stringify(data, null, 2), { mode: 0o600 });
}

/** A fixture server definition: `mode` picks its misbehaviour (see fixture-server.mjs). */
export function fixture(mode: string, extra: Record<string, unknown> = {}) {
  return { command: NODE, args: [FIXTURE, mode], ...extra };
}

/** Call one MCP tool of an agent the way a turn does: catalog bridge, then dispatch. */
export async function callMcp(
  host: RuntimeHost,
  name: string,
  args: Record<string, unknown>,
  agentId = "main",
  signal?: AbortSignal,
) {
  const bridge = new McpToolBridge(host.services.mcp);
  const agent = await host.agents.get(agentId);
  const registry = new ToolRegistry();
  for (const t of await bridge.toolsFor(agent)) registry.register(t);
  const ctx = await toolContext(host, agentId);
  if (signal) ctx.signal = signal;
  const out = await dispatch(registry, name, JSON.stringify(args), ctx);
  return {
    ...out,
    result: out.canonical.result as any,
    error: out.canonical.error,
    names: registry.list().map((t) => t.name),
  };
}
