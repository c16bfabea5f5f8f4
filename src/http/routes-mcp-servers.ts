// MCP client routes (src/mcp/): which MCP servers an agent has, in what state, with the
// model-facing name of every tool; and a test that connects to one now. Control routes
// only: a server's definition and state are the operator's. Definitions are shown with
// their secrets hidden (references stay as written). Holon as an MCP server is elsewhere.
import type { Hono } from "hono";
import { z } from "zod";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { readJson, requireControl, validate, type AppEnv } from "./support.ts";

const Name = z.string().min(1).max(64);
export const McpTestBody = z.strictObject({
  /** Test the server as this agent has it (default: the default agent). */
  agent_id: z.string().min(1).max(200).optional(),
});

const ServerView = z.object({
  name: z.string(),
  source: z.enum(["host", "agent", "workspace"]),
  transport: z.string(),
  shared: z.boolean(),
  workspace: z.string().nullable(),
  consent: z.enum(["operator", "approved", "pending", "denied"]),
  state: z.enum(["stopped", "starting", "running", "backoff", "failed"]),
  pid: z.number().int().nullable(),
  started_at: z.string().nullable(),
  last_error: z.string().nullable(),
  failures: z.number().int(),
  calls_in_flight: z.number().int(),
  definition: z.record(z.string(), z.unknown()),
  shown: z.string(),
  sha256: z.string(),
  listed_at: z.string().nullable(),
  tools: z.array(z.object({ tool: z.string(), name: z.string().nullable(), enabled: z.boolean() })),
  rejected_tools: z.array(z.object({ name: z.string(), reason: z.string() })),
});
const ServersResponse = z.object({
  ok: z.literal(true),
  agent_id: z.string(),
  servers: z.array(ServerView),
});
const TestResponse = z.object({
  ok: z.literal(true),
  agent_id: z.string(),
  test: z.object({
    name: z.string(),
    ok: z.boolean(),
    error: z.string().nullable(),
    latency_ms: z.number().nullable(),
    tools: z.array(z.string()),
    rejected_tools: z.array(z.object({ name: z.string(), reason: z.string() })),
  }),
});

export function mcpServerRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  app.get("/control/mcp/servers", async (c) => {
    requireControl(c);
    const agent = await host.agents.getPublic(c.req.query("agent") ?? host.defaultAgentId);
    return c.json({
      ok: true,
      agent_id: agent.agent_id,
      servers: await host.services.mcp.status(agent),
    });
  });

  app.post("/control/mcp/servers/:name/test", async (c) => {
    requireControl(c);
    const name = validate(Name, c.req.param("name"));
    const body = validate(McpTestBody, await readJson(c, { optional: true }));
    const agent = await host.agents.getPublic(body.agent_id ?? host.defaultAgentId);
    const test = await host.services.mcp.test(agent, name);
    return c.json({ ok: true, agent_id: agent.agent_id, test });
  });
}

export const MCP_SERVER_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/control/mcp/servers",
    summary:
      "An agent's MCP servers (host, agent and approved workspace ones): source, consent, state, pid and each tool's model-facing name",
    access: "control",
    query: [
      { name: "agent", schema: z.string(), description: "the agent (default: the default agent)" },
    ],
    ok: { status: 200, schema: ServersResponse },
  },
  {
    method: "post",
    path: "/control/mcp/servers/:name/test",
    summary: "Connect to one MCP server now, list its tools and report the latency or the error",
    access: "control",
    body: { schema: McpTestBody, optional: true },
    ok: { status: 200, schema: TestResponse },
  },
];
