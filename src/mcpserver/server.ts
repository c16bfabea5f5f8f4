// Holon as an MCP server: the one set of tools and resources that both transports serve
// (stdio in `holon mcp serve`, streamable HTTP on the host's `/mcp` route). Each tool is a
// thin call of one `HolonOperations` method; its model-facing description is a `.md` in
// tools/ beside this file. The tool set is deliberately small: an MCP client is driven by a
// model that may have read anything, so it gets to hand out and follow work, never the
// operator's whole authority (no asks, budgets, config, permissions, workspaces, deletion or
// URL templates). Arguments are closed schemas: an unknown field is refused, not ignored.
import { readFileSync } from "node:fs";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { AgentId } from "../domain/agent.ts";
import { OperationError, type HolonOperations } from "./operations.ts";

/** The longest `wait_for_brief` holds a call (MCP clients time a request out at 60 s). */
export const MAX_WAIT_SECONDS = 50;
const RecordId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,200}$/, "ids are 1-200 letters, digits, '_', '.', ':' or '-'");
/** A local template id, as under ~/.agents/templates/: never a path or a URL. */
const TemplateId = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,63}$/,
    "only a local template id (a plain name such as holon-developer); paths and URLs are not accepted here",
  );
/** Prompts and objectives are capped well under the host's 256 KiB body limit. */
const MAX_TEXT = 64 * 1024;

function describe(name: string): string {
  return readFileSync(new URL(`./tools/${name}.md`, import.meta.url), "utf8").trim();
}

/** `mcp:<client name>`: the actor every input from this session is admitted as. */
export function actorIdOf(clientName: string | undefined): string {
  const name = (clientName ?? "")
    .replace(/[^A-Za-z0-9._ -]/g, "_")
    .trim()
    .slice(0, 64);
  return `mcp:${name || "unknown"}`;
}

function ok(value: Record<string, unknown>): CallToolResult {
  const { ok: _ok, ...rest } = value;
  return {
    content: [{ type: "text", text: JSON.stringify(rest, null, 2) }],
    structuredContent: rest,
  };
}

function failure(err: unknown): CallToolResult {
  const error =
    err instanceof OperationError
      ? { kind: err.kind, message: err.message, ...(err.hint ? { hint: err.hint } : {}) }
      : { kind: "internal_error", message: err instanceof Error ? err.message : String(err) };
  return { isError: true, content: [{ type: "text", text: JSON.stringify({ error }, null, 2) }] };
}

async function run(fn: () => Promise<Record<string, unknown>>): Promise<CallToolResult> {
  try {
    return ok(await fn());
  } catch (err) {
    return failure(err);
  }
}

/** The agents `list_agents` shows: what a caller needs to pick one, not the whole record. */
function agentLine(a: Record<string, unknown>) {
  return {
    agent_id: a.agent_id,
    status: a.status,
    is_default: a.is_default,
    pending: a.pending,
  };
}

let version: string | undefined;
/** Holon's version, as the MCP handshake reports it (package.json is two levels up). */
function holonVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    }
  ).version;
  return version;
}

/** A fresh MCP server (one per session) over `ops`. */
export function createHolonMcpServer(ops: HolonOperations): McpServer {
  const server = new McpServer(
    { name: "holon", version: holonVersion() },
    { capabilities: { tools: {}, resources: {} } },
  );
  const actor = () => actorIdOf(server.server.getClientVersion()?.name);
  const read = { readOnlyHint: true, openWorldHint: false } as const;

  server.registerTool(
    "list_agents",
    { description: describe("list_agents"), inputSchema: z.strictObject({}), annotations: read },
    () =>
      run(async () => {
        const r = await ops.listAgents();
        const agents = Array.isArray(r.agents) ? (r.agents as Record<string, unknown>[]) : [];
        return { agents: agents.map(agentLine) };
      }),
  );

  server.registerTool(
    "create_agent",
    {
      description: describe("create_agent"),
      inputSchema: z.strictObject({ agent_id: AgentId, template: TemplateId.optional() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (a) => run(() => ops.createAgent(a.agent_id, a.template)),
  );

  server.registerTool(
    "send_prompt",
    {
      description: describe("send_prompt"),
      inputSchema: z.strictObject({
        agent_id: AgentId,
        text: z.string().min(1).max(MAX_TEXT),
        priority: z.enum(["next", "normal", "background"]).optional(),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    (a) =>
      run(() =>
        ops.sendPrompt(a.agent_id, { text: a.text, actorId: actor(), priority: a.priority }),
      ),
  );

  server.registerTool(
    "add_work_item",
    {
      description: describe("add_work_item"),
      inputSchema: z.strictObject({
        agent_id: AgentId,
        objective: z.string().min(1).max(MAX_TEXT),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    (a) => run(() => ops.addWorkItem(a.agent_id, { objective: a.objective, actorId: actor() })),
  );

  server.registerTool(
    "agent_status",
    {
      description: describe("agent_status"),
      inputSchema: z.strictObject({ agent_id: AgentId }),
      annotations: read,
    },
    (a) => run(() => ops.status(a.agent_id)),
  );

  server.registerTool(
    "read_briefs",
    {
      description: describe("read_briefs"),
      inputSchema: z.strictObject({
        agent_id: AgentId,
        limit: z.number().int().min(1).max(100).optional(),
      }),
      annotations: read,
    },
    (a) => run(() => ops.briefs(a.agent_id, a.limit ?? 10)),
  );

  server.registerTool(
    "read_work_item",
    {
      description: describe("read_work_item"),
      inputSchema: z.strictObject({ agent_id: AgentId, work_item_id: RecordId }),
      annotations: read,
    },
    (a) => run(() => ops.workItem(a.agent_id, a.work_item_id)),
  );

  server.registerTool(
    "wait_for_brief",
    {
      description: describe("wait_for_brief"),
      inputSchema: z.strictObject({
        agent_id: AgentId,
        message_id: RecordId.optional(),
        after_brief_id: RecordId.optional(),
        timeout_seconds: z.number().int().min(0).max(MAX_WAIT_SECONDS).optional(),
      }),
      annotations: read,
    },
    (a, extra) =>
      run(async () => {
        const r = await ops.nextBrief(
          a.agent_id,
          {
            messageId: a.message_id,
            after: a.after_brief_id,
            waitMs: (a.timeout_seconds ?? 30) * 1000,
          },
          extra.signal,
        );
        return r.brief === null ? { ...r, timed_out: true } : { ...r, timed_out: false };
      }),
  );

  server.registerTool(
    "stop_agent",
    {
      description: describe("stop_agent"),
      inputSchema: z.strictObject({ agent_id: AgentId }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (a) => run(() => ops.stop(a.agent_id)),
  );

  const listAgents = async (suffix: string, what: string) => {
    const r = await ops.listAgents();
    const agents = Array.isArray(r.agents) ? (r.agents as Record<string, unknown>[]) : [];
    return {
      resources: agents.map((a) => ({
        uri: `holon://agents/${String(a.agent_id)}/${suffix}`,
        name: `${String(a.agent_id)} ${what}`,
        mimeType: "application/json",
      })),
    };
  };
  const resource =
    (fetch: (agentId: string) => Promise<Record<string, unknown>>) =>
    async (uri: URL, vars: Record<string, string | string[]>): Promise<ReadResourceResult> => {
      const parsed = AgentId.safeParse(vars.agent_id);
      if (!parsed.success) throw new Error(`'${String(vars.agent_id)}' is not an agent id`);
      try {
        const { ok: _ok, ...body } = await fetch(parsed.data);
        return {
          contents: [
            { uri: uri.href, mimeType: "application/json", text: JSON.stringify(body, null, 2) },
          ],
        };
      } catch (err) {
        if (err instanceof OperationError) throw new Error(`${err.message} (${err.kind})`);
        throw err;
      }
    };
  server.registerResource(
    "briefs",
    new ResourceTemplate("holon://agents/{agent_id}/briefs", {
      list: () => listAgents("briefs", "briefs"),
    }),
    {
      description: "An agent's 50 most recent briefs (its results and failures), oldest first",
      mimeType: "application/json",
    },
    resource((id) => ops.briefs(id, 50)),
  );
  server.registerResource(
    "transcript",
    new ResourceTemplate("holon://agents/{agent_id}/transcript", {
      list: () => listAgents("transcript", "transcript"),
    }),
    {
      description: "An agent's 100 most recent transcript entries, oldest first",
      mimeType: "application/json",
    },
    resource((id) => ops.transcript(id, 100)),
  );
  return server;
}
