// Holon as an MCP server over streamable HTTP, on the host's own `/mcp` route: the official
// SDK client (as Codex or Claude Code would configure an HTTP server, with the control token
// as a bearer header) hands an agent work and reads the brief; its input is admitted as
// `control_authenticated`. The route sits behind the guard and the body cap, its session id
// works only with the credential that opened it, sessions are bounded and expire when idle,
// and bad JSON-RPC gets a JSON-RPC error.
import { request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { MCP_SESSION_LIMITS } from "../src/mcpserver/sessions.ts";
import { startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};
const LIST = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };

type Answer = { status: number; headers: Record<string, string>; json: any; text: string };

/** One request to /mcp over TCP or the Unix socket, with the headers MCP clients send. */
function mcp(
  target: { url: string } | { socketPath: string },
  opts: {
    method?: string;
    body?: string;
    token?: string | undefined;
    session?: string | undefined;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      accept: "application/json, text/event-stream",
    };
    if (opts.body !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(Buffer.byteLength(opts.body));
    }
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    if (opts.session !== undefined) headers["mcp-session-id"] = opts.session;
    const where =
      "socketPath" in target
        ? { socketPath: target.socketPath }
        : { host: new URL(target.url).hostname, port: Number(new URL(target.url).port) };
    const req = request(
      { ...where, path: "/mcp", method: opts.method ?? "POST", headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers as Record<string, string>,
            json,
            text,
          });
        });
      },
    );
    req.once("error", reject);
    req.end(opts.body);
  });
}

async function open(rt: TestRuntime, target: { url: string } | { socketPath: string }) {
  const token = "url" in target ? rt.token : undefined;
  const r = await mcp(target, { body: JSON.stringify(INIT), token });
  expect(r.status, r.text).toBe(200);
  const session = r.headers["mcp-session-id"]!;
  expect(session).toMatch(/^[A-Za-z0-9_-]{32}$/);
  return session;
}

let rt: TestRuntime;
let client: Client;
let transport: StreamableHTTPClientTransport;

beforeAll(async () => {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  rt = await startRuntime({ home });
  client = new Client({ name: "codex", version: "0.9" });
  transport = new StreamableHTTPClientTransport(new URL(`${rt.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${rt.token}` } },
  });
  await client.connect(transport);
}, 30_000);

afterAll(async () => {
  await client?.close();
  await rt?.close();
});

describe("/mcp on the host", () => {
  it("the SDK client hands an agent work and reads the brief; input is control_authenticated", async () => {
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = (await client.callTool({ name, arguments: args })) as any;
      expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
      return r.structuredContent;
    };
    await call("create_agent", { agent_id: "remote" });
    fake.enqueue(reply.text("Three open pull requests, none failing."));
    const sent = await call("send_prompt", { agent_id: "remote", text: "How are the PRs?" });
    const waited = await call("wait_for_brief", {
      agent_id: "remote",
      message_id: sent.message_id,
      timeout_seconds: 30,
    });
    expect(waited.brief).toMatchObject({
      kind: "result",
      text: "Three open pull requests, none failing.",
    });
    const message = (await rt.host.store.messages.recent("remote", 10)).find(
      (m) => m.id === sent.message_id,
    )!;
    expect(message).toMatchObject({
      origin: { kind: "operator", actor_id: "mcp:codex" },
      delivery_surface: "mcp_server",
      admission_context: "control_authenticated",
    });
    // The same tool set as stdio: nothing that decides asks or changes config.
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).not.toEqual(expect.arrayContaining(["decide_ask"]));
    expect(names).toHaveLength(9);
  });

  it("a session id works only with the credential that opened it", async () => {
    const session = transport.sessionId!;
    expect(session).toBeTruthy();
    const socket = { socketPath: rt.server.socketPath! };
    // Over the Unix socket (another credential) the TCP session does not exist.
    const viaSocket = await mcp(socket, { body: JSON.stringify(LIST), session });
    expect(viaSocket.status).toBe(404);
    expect(viaSocket.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32001 } });
    // A wrong token or none never reaches the route.
    const wrong = await mcp(rt, { body: JSON.stringify(LIST), session, token: "not-the-token" });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.kind).toBe("unauthorized");
    const none = await mcp(rt, { body: JSON.stringify(LIST), session });
    expect(none.status).toBe(401);
    expect(none.json.error.kind).toBe("unauthorized");
    // The owner still has it.
    const own = await mcp(rt, { body: JSON.stringify(LIST), session, token: rt.token });
    expect(own.status).toBe(200);
    expect(own.json.result.tools).toHaveLength(9);

    // And the other way round: a session opened over the socket is not usable over TCP.
    const local = await open(rt, socket);
    const fromTcp = await mcp(rt, { body: JSON.stringify(LIST), session: local, token: rt.token });
    expect(fromTcp.status).toBe(404);
    const fromSocket = await mcp(socket, { body: JSON.stringify(LIST), session: local });
    expect(fromSocket.status).toBe(200);
    // Ended with DELETE, it is gone.
    expect((await mcp(socket, { method: "DELETE", session: local })).status).toBe(200);
    expect((await mcp(socket, { body: JSON.stringify(LIST), session: local })).status).toBe(404);
  });

  it("refuses an oversized body, bad JSON and bad JSON-RPC with clear errors", async () => {
    const session = transport.sessionId!;
    const big = JSON.stringify({ ...LIST, params: { pad: "x".repeat(300 * 1024) } });
    const tooBig = await mcp(rt, { body: big, session, token: rt.token });
    expect(tooBig.status).toBe(413);
    expect(tooBig.json.error.kind).toBe("payload_too_large");

    const notJson = await mcp(rt, { body: "{not json", session, token: rt.token });
    expect(notJson.status).toBe(400);
    expect(notJson.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 } });

    const deep = await mcp(rt, { body: "[".repeat(100) + "]".repeat(100), token: rt.token });
    expect(deep.status).toBe(400);
    expect(deep.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32600 } });

    // JSON, but not JSON-RPC: without a session, and within one.
    const noSession = await mcp(rt, { body: JSON.stringify({ hello: 1 }), token: rt.token });
    expect(noSession.status).toBe(400);
    expect(noSession.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
    const garbage = await mcp(rt, { body: JSON.stringify({ hello: 1 }), session, token: rt.token });
    expect(garbage.status).toBe(400);
    expect(garbage.json.error.code).toBeLessThan(0);
    // A method the server does not have.
    const unknown = await mcp(rt, {
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "asks/decide", params: {} }),
      session,
      token: rt.token,
    });
    expect(unknown.json).toMatchObject({ jsonrpc: "2.0", id: 9, error: { code: -32601 } });
    // A form post never reaches it (the guard's content-type rule).
    const form = await fetch(`${rt.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${rt.token}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "a=1",
    });
    expect(form.status).toBe(415);
    // GET opens no stream.
    expect((await mcp(rt, { method: "GET", token: rt.token, session })).status).toBe(405);
    // The client's session survived all of it.
    expect((await client.listTools()).tools).toHaveLength(9);
  });
});

describe("GET /agents/:id/briefs/next", () => {
  it("answers at once when the brief is written, waits bounded otherwise, refuses bad input", async () => {
    const briefs = (await rt.req("GET", "/agents/remote/briefs")).json.briefs;
    const last = briefs.at(-1);
    const byMessage = await rt.req(
      "GET",
      `/agents/remote/briefs/next?message_id=${last.related_message_id}`,
    );
    expect(byMessage.status).toBe(200);
    expect(byMessage.json.brief.id).toBe(last.id);
    const none = await rt.req("GET", `/agents/remote/briefs/next?after=${last.id}&wait_ms=0`);
    expect(none.json).toMatchObject({ ok: true, agent_id: "remote", brief: null });

    const unknown = await rt.req("GET", "/agents/remote/briefs/next?after=brief_nope");
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.kind).toBe("unknown_brief");
    const tooLong = await rt.req("GET", "/agents/remote/briefs/next?wait_ms=600000");
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error.kind).toBe("invalid_request");
    const badId = await rt.req("GET", "/agents/remote/briefs/next?message_id=a%20b");
    expect(badId.status).toBe(400);
    const noAgent = await rt.req("GET", "/agents/nobody/briefs/next");
    expect(noAgent.status).toBe(404);
    const noToken = await rt.req("GET", "/agents/remote/briefs/next", undefined, {
      authorization: "",
    });
    expect(noToken.status).toBe(401);
  });
});

describe("/mcp sessions are bounded", () => {
  it("at most max_sessions at once; an idle one expires and frees its place", async () => {
    let offset = 0;
    const clock: Clock = {
      now: () => new Date(Date.now() + offset),
      sleep: (ms, signal) => systemClock.sleep(ms, signal),
    };
    const local = await startRuntime({ home: tempHome(), clock });
    try {
      const sessions: string[] = [];
      for (let i = 0; i < MCP_SESSION_LIMITS.max_sessions; i++)
        sessions.push(await open(local, local));
      expect(new Set(sessions).size).toBe(sessions.length);
      const full = await mcp(local, { body: JSON.stringify(INIT), token: local.token });
      expect(full.status).toBe(503);
      expect(full.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
      expect(full.json.error.message).toMatch(/too many open MCP sessions/);

      // Keep one in use; let the rest go idle past the limit.
      offset += MCP_SESSION_LIMITS.idle_ms - 60_000;
      const used = await mcp(local, {
        body: JSON.stringify(LIST),
        session: sessions[0],
        token: local.token,
      });
      expect(used.status).toBe(200);
      offset += 120_000;
      const fresh = await open(local, local);
      expect(fresh).toBeTruthy();
      const expired = await mcp(local, {
        body: JSON.stringify(LIST),
        session: sessions[1],
        token: local.token,
      });
      expect(expired.status).toBe(404);
      const kept = await mcp(local, {
        body: JSON.stringify(LIST),
        session: sessions[0],
        token: local.token,
      });
      expect(kept.status).toBe(200);
    } finally {
      await local.close();
    }
  });
});
