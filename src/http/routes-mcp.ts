// `/mcp`: Holon's MCP server over streamable HTTP, on the host itself. The request has
// passed the guard (Host, Origin, JSON content type, the control token over TCP) and is a
// control request; its body is read under the same cap as every route. Each session gets
// its own MCP server whose operations run through this app in process, with the auth of the
// request that opened the session, so an MCP tool reaches exactly the routes (and the
// admission context, `control_authenticated` over TCP, `local_process` over the socket)
// that the same caller would reach directly. The session id is bound to the credential that
// opened it (mcpserver/sessions.ts). Responses are JSON; there is no server-initiated
// stream, so GET answers 405.
import type { Context, Hono } from "hono";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { createHash } from "node:crypto";
import { z } from "zod";
import {
  OperationError,
  controlPlaneOperations,
  type ControlCall,
} from "../mcpserver/operations.ts";
import { createHolonMcpServer } from "../mcpserver/server.ts";
import { MCP_SESSION_LIMITS, McpSessions } from "../mcpserver/sessions.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import {
  MAX_JSON_DEPTH,
  bearerOf,
  jsonDepth,
  readBodyText,
  requireControl,
  type AppEnv,
  type AuthState,
} from "./support.ts";

type Session = {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  close(): Promise<void>;
};

/** A JSON-RPC error answer, as MCP clients expect for transport-level refusals. */
function rpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}

/** What a session is bound to: the token presented over TCP, or the Unix socket itself. */
function credentialOf(c: Context<AppEnv>): string {
  const auth = c.get("auth");
  if (auth.transport === "unix") return "unix-socket";
  const token = bearerOf(c.req.header("authorization")) ?? "";
  return `tcp:${createHash("sha256").update(token).digest("hex")}`;
}

/** The operations of one session: this app's own routes, called in process with `auth`. */
function inHostCall(app: Hono<AppEnv>, auth: AuthState): ControlCall {
  return async (method, path, body, signal) => {
    const init: RequestInit = { method, headers: { accept: "application/json" } };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)["content-type"] = "application/json";
    }
    if (signal) init.signal = signal;
    const res = await app.fetch(new Request(`http://holon.internal${path}`, init), {
      holon_auth: auth,
    });
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok) {
      const e = (json.error ?? {}) as { kind?: string; message?: string; hint?: string };
      throw new OperationError(e.kind ?? "http_error", e.message ?? `HTTP ${res.status}`, e.hint);
    }
    return json;
  };
}

export function mcpRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const sessions = new McpSessions<Session>(() => host.clock.now().getTime(), MCP_SESSION_LIMITS);

  app.post("/mcp", async (c) => {
    requireControl(c);
    const text = (await readBodyText(c)) ?? "";
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      return rpcError(400, -32600, `request body nests deeper than ${MAX_JSON_DEPTH} levels`);
    }
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return rpcError(400, -32700, "Parse error: the body is not JSON");
    }
    const credential = credentialOf(c);
    const sessionId = c.req.header("mcp-session-id");
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId, credential);
      if (!session) return rpcError(404, -32001, "Session not found");
      return session.transport.handleRequest(c.req.raw, { parsedBody: message });
    }
    if (!isInitializeRequest(message)) {
      return rpcError(
        400,
        -32000,
        "Bad Request: no Mcp-Session-Id; start a session with an initialize request",
      );
    }
    const id = McpSessions.newId();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      enableJsonResponse: true,
      onsessionclosed: () => sessions.remove(id),
    });
    const server = createHolonMcpServer(controlPlaneOperations(inHostCall(app, c.get("auth"))));
    const session: Session = {
      transport,
      server,
      close: async () => {
        await server.close();
      },
    };
    if (!sessions.add(id, credential, session)) {
      return rpcError(
        503,
        -32000,
        `too many open MCP sessions (${MCP_SESSION_LIMITS.max_sessions}); end one with DELETE /mcp or wait for an idle one to expire`,
      );
    }
    await server.connect(transport);
    const res = await transport.handleRequest(c.req.raw, { parsedBody: message });
    if (!res.ok) {
      sessions.remove(id);
      await server.close();
    }
    return res;
  });

  app.delete("/mcp", async (c) => {
    requireControl(c);
    const sessionId = c.req.header("mcp-session-id");
    const session = sessionId === undefined ? undefined : sessions.get(sessionId, credentialOf(c));
    if (!session) return rpcError(404, -32001, "Session not found");
    const res = await session.transport.handleRequest(c.req.raw);
    sessions.remove(sessionId!);
    await session.server.close();
    return res;
  });

  app.get("/mcp", (c) => {
    requireControl(c);
    return new Response(
      JSON.stringify({
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method not allowed: this server sends no stream" },
        id: null,
      }),
      { status: 405, headers: { allow: "POST, DELETE", "content-type": "application/json" } },
    );
  });
}

const RpcMessage = z.looseObject({ jsonrpc: z.literal("2.0") });

export const MCP_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "post",
    path: "/mcp",
    summary:
      "Holon's MCP server over streamable HTTP: a JSON-RPC message (initialize starts a session; its Mcp-Session-Id goes on every later request, with the same credential)",
    access: "control",
    headers: [
      {
        name: "mcp-session-id",
        schema: z.string(),
        description:
          "the session, from the initialize response (bound to the token that opened it)",
      },
    ],
    body: { schema: RpcMessage },
    ok: { status: 200, schema: RpcMessage, description: "the JSON-RPC response" },
  },
  {
    method: "delete",
    path: "/mcp",
    summary: "End an MCP session",
    access: "control",
    headers: [{ name: "mcp-session-id", schema: z.string(), description: "the session to end" }],
    ok: { status: 200, schema: z.unknown(), description: "the session is closed" },
  },
  {
    method: "get",
    path: "/mcp",
    summary: "405: this MCP server opens no server-to-client stream",
    access: "control",
    ok: { status: 405, schema: RpcMessage },
  },
];
