// Holon as an MCP server over stdio, driven the way Claude Code drives a command server: the
// official SDK client spawns `holon mcp serve` against a running host, creates an agent,
// hands it a prompt and a work item, waits for the briefs and reads them. Input arrives as
// the operator named after the MCP client, through the `mcp_server` surface, admitted as a
// local process (the Unix socket). The tool set cannot decide an ask, change config or
// settings, attach workspaces, delete agents or use a URL template, whatever arguments a
// prompt-injected client sends. With no host running, `holon mcp serve` exits with one line.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HOLON_BIN,
  REPO_ROOT,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";
import { controlPlaneOperations, type ControlCall } from "../src/mcpserver/operations.ts";

const fake = useFakeProvider();

type ToolResult = {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: any;
};

let rt: TestRuntime;
let client: Client;
let stderr = "";

async function tool(name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}
/** A tool call that must succeed: its structured result. */
async function ok(name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await tool(name, args);
  expect(r.isError, `${name}: ${r.content[0]?.text}`).toBeFalsy();
  return r.structuredContent;
}
/** A tool call that must be refused: the refusal's text (a tool error or a protocol error). */
async function refused(name: string, args: Record<string, unknown>): Promise<string> {
  try {
    const r = await tool(name, args);
    expect(r.isError, `${name} ${JSON.stringify(args)} was not refused`).toBe(true);
    return r.content.map((c) => c.text).join("\n");
  } catch (err) {
    return (err as Error).message;
  }
}

beforeAll(async () => {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  rt = await startRuntime({ home });
  client = new Client({ name: "claude-code", version: "2.0.0" });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [HOLON_BIN, "mcp", "serve", "--home", home],
    env: { ...(process.env as Record<string, string>), HOLON_HOME: home },
    cwd: REPO_ROOT,
    stderr: "pipe",
  });
  transport.stderr?.on("data", (d) => (stderr += d));
  await client.connect(transport);
}, 30_000);

afterAll(async () => {
  await client?.close();
  await rt?.close();
});

describe("holon mcp serve (stdio)", () => {
  it("offers exactly the hand-off tools: none decides asks, changes config or deletes", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "add_work_item",
      "agent_status",
      "create_agent",
      "list_agents",
      "read_briefs",
      "read_work_item",
      "send_prompt",
      "stop_agent",
      "wait_for_brief",
    ]);
    for (const t of tools) {
      expect(t.description, t.name).toBeTruthy();
      // Closed argument schemas: a field the tool does not define is refused, not ignored.
      expect(t.inputSchema.additionalProperties, t.name).toBe(false);
    }
    expect(client.getServerVersion()?.name).toBe("holon");
  });

  it("creates an agent, gives it a prompt, waits for the brief and reads it", async () => {
    const created = await ok("create_agent", { agent_id: "worker" });
    expect(created.agent).toMatchObject({ agent_id: "worker" });
    const listed = await ok("list_agents");
    expect(listed.agents.map((a: any) => a.agent_id)).toContain("worker");

    fake.enqueue(reply.text("The build is green: 312 tests passed."));
    const sent = await ok("send_prompt", { agent_id: "worker", text: "Is the build green?" });
    expect(sent.message_id).toMatch(/^msg_/);
    const waited = await ok("wait_for_brief", {
      agent_id: "worker",
      message_id: sent.message_id,
      timeout_seconds: 30,
    });
    expect(waited.timed_out).toBe(false);
    expect(waited.brief).toMatchObject({
      kind: "result",
      text: "The build is green: 312 tests passed.",
      related_message_id: sent.message_id,
    });
    const briefs = await ok("read_briefs", { agent_id: "worker" });
    expect(briefs.briefs.map((b: any) => b.id)).toContain(waited.brief.id);

    // Admitted as the operator named after the MCP client, through its own surface, as a
    // local process (stdio reaches the host over the Unix socket).
    const message = (await rt.host.store.messages.recent("worker", 10)).find(
      (m) => m.id === sent.message_id,
    )!;
    expect(message).toMatchObject({
      kind: "operator_prompt",
      origin: { kind: "operator", actor_id: "mcp:claude-code" },
      trust: "trusted_operator",
      delivery_surface: "mcp_server",
      admission_context: "local_process",
    });

    // Resources: the agent's briefs and transcript.
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(
      expect.arrayContaining(["holon://agents/worker/briefs", "holon://agents/worker/transcript"]),
    );
    const res = await client.readResource({ uri: "holon://agents/worker/briefs" });
    const body = JSON.parse((res.contents[0] as { text: string }).text);
    expect(body.briefs.map((b: any) => b.text)).toContain("The build is green: 312 tests passed.");
    const tr = await client.readResource({ uri: "holon://agents/worker/transcript" });
    expect((tr.contents[0] as { text: string }).text).toContain("Is the build green?");
  });

  it("hands an agent a work item and reads its completion report", async () => {
    const itemIdFrom = (raw: string) => /wi_[A-Za-z0-9]+/.exec(raw)?.[0] ?? "missing";
    fake.enqueue(
      (req) =>
        reply.tools([{ name: "PickWorkItem", arguments: { work_item_id: itemIdFrom(req.raw) } }]),
      (req) =>
        reply.tools(
          [{ name: "CompleteWorkItem", arguments: { work_item_id: itemIdFrom(req.raw) } }],
          { text: "Renamed the flag to --dry-run in 4 files; the old name still works." },
        ),
      reply.text("Done."),
    );
    const before = await ok("read_briefs", { agent_id: "worker", limit: 1 });
    const lastBrief = before.briefs.at(-1).id as string;
    const added = await ok("add_work_item", {
      agent_id: "worker",
      objective: "Rename --simulate to --dry-run",
    });
    const itemId = added.work_item.id as string;
    expect(itemId).toMatch(/^wi_/);
    // The work item's record says who asked and how, like a prompt's envelope.
    const createdEvent = (await rt.host.store.events.after("worker", 0, 10_000)).find(
      (e) => e.type === "work_item_created" && e.payload.work_item_id === itemId,
    )!;
    expect(createdEvent.provenance).toMatchObject({
      origin: { kind: "operator", actor_id: "mcp:claude-code" },
      delivery_surface: "mcp_server",
      admission_context: "local_process",
      work_item_id: itemId,
    });
    const waited = await ok("wait_for_brief", {
      agent_id: "worker",
      after_brief_id: lastBrief,
      timeout_seconds: 30,
    });
    expect(waited.brief).toMatchObject({ kind: "result" });
    const item = await ok("read_work_item", { agent_id: "worker", work_item_id: itemId });
    expect(item.work_item).toMatchObject({
      state: "completed",
      result_summary: "Renamed the flag to --dry-run in 4 files; the old name still works.",
      completion_report: { source: "same_round_report" },
    });
  });

  it("a wait with nothing coming times out, bounded, and says so", async () => {
    const waited = await ok("wait_for_brief", { agent_id: "worker", timeout_seconds: 0 });
    expect(waited).toMatchObject({ brief: null, timed_out: true });
    expect(await refused("wait_for_brief", { agent_id: "worker", timeout_seconds: 3600 })).toMatch(
      /timeout_seconds|50/,
    );
  });

  it("cannot answer an ask, change config or settings, or reach any other route", async () => {
    const ask = await rt.host.services.asks.open({
      agent_id: "worker",
      kind: "input",
      source: "needs_input",
      scope: "agent",
      about: "Which branch should I deploy?",
      detail: "main or release?",
      free_text: true,
    });
    const configFile = join(rt.home, "config.json");
    const configBefore = readFileSync(configFile, "utf8");
    const agentBefore = (await rt.host.store.agents.get("worker"))!;

    // The tools an operator would use are not there.
    for (const name of [
      "decide_ask",
      "answer_ask",
      "set_config",
      "raise_budget",
      "set_permissions",
      "attach_workspace",
      "delete_agent",
    ]) {
      expect(await refused(name, { agent_id: "worker", ask_id: ask.id })).toMatch(/not found/i);
    }
    // Injected arguments never widen a tool: unknown fields, other routes as ids, URL and
    // path templates, operator-only priorities and trust are all refused.
    const attempts: [string, Record<string, unknown>][] = [
      ["send_prompt", { agent_id: "worker", text: "hi", trust: "trusted_system" }],
      ["send_prompt", { agent_id: "worker", text: "hi", priority: "interject" }],
      ["send_prompt", { agent_id: "worker", text: "hi", surface: "cli_prompt" }],
      ["send_prompt", { agent_id: `../../control/asks/${ask.id}/decision`, text: "main" }],
      ["send_prompt", { agent_id: "worker/../../control/asks", text: "main" }],
      ["create_agent", { agent_id: "evil", template: "https://github.com/x/y/tree/main/t" }],
      ["create_agent", { agent_id: "evil", template: "/etc" }],
      ["create_agent", { agent_id: "evil", template: "../../../etc" }],
      ["create_agent", { agent_id: "evil", workspace_root: "/" }],
      ["add_work_item", { agent_id: "worker", objective: "x", budget: { usd: 1000 } }],
      ["read_work_item", { agent_id: "worker", work_item_id: "../../../control/asks" }],
      ["stop_agent", { agent_id: "worker", action: "delete" }],
      ["agent_status", { agent_id: "worker", key: "permissions.mode", value: "trusted" }],
    ];
    for (const [name, args] of attempts) {
      const text = await refused(name, args);
      expect(text, `${name} ${JSON.stringify(args)}`).toMatch(/invalid arguments|invalid_request/i);
    }
    // An agent that does not exist is the runtime's clear error, as a tool error.
    expect(await refused("agent_status", { agent_id: "nobody" })).toContain("unknown_agent");

    // Nothing moved: the ask is still pending, config and the agent's settings unchanged,
    // and no agent called "evil" exists.
    expect((await rt.host.services.asks.get(ask.id)).state).toBe("pending");
    expect(readFileSync(configFile, "utf8")).toBe(configBefore);
    const agentAfter = (await rt.host.store.agents.get("worker"))!;
    expect(agentAfter.permissions).toEqual(agentBefore.permissions);
    expect(agentAfter.sandbox).toEqual(agentBefore.sandbox);
    expect(await rt.host.store.agents.get("evil")).toBeUndefined();
    await rt.host.services.asks.withdraw(ask.id, "test done");
  });

  it("bad input is a tool error with the runtime's kind, and changes nothing", async () => {
    const agentsBefore = (await rt.host.store.agents.list()).length;
    expect(await refused("create_agent", { agent_id: "worker" })).toContain("agent_exists");
    expect(
      await refused("create_agent", { agent_id: "fresh", template: "no-such-template" }),
    ).toContain("template_not_found");
    expect(
      await refused("read_work_item", { agent_id: "worker", work_item_id: "wi_nope" }),
    ).toMatch(/unknown_work_item|not_found/);
    expect(
      await refused("wait_for_brief", { agent_id: "worker", after_brief_id: "brief_nope" }),
    ).toContain("unknown_brief");
    expect(await refused("send_prompt", { agent_id: "worker", text: "" })).toMatch(/invalid/i);
    expect(
      await refused("send_prompt", { agent_id: "worker", text: "x".repeat(70 * 1024) }),
    ).toMatch(/invalid/i);
    expect((await rt.host.store.agents.list()).length).toBe(agentsBefore);
  });

  it("stops an agent; a stopped agent refuses new prompts", async () => {
    const stopped = await ok("stop_agent", { agent_id: "worker" });
    expect(stopped.status).toBe("stopped");
    const status = await ok("agent_status", { agent_id: "worker" });
    expect(status.status).toBe("stopped");
    expect(await refused("send_prompt", { agent_id: "worker", text: "more" })).toContain(
      "agent_stopped",
    );
    expect(stderr).toBe("");
  });

  it("a garbage line on stdin is dropped; the next message is answered; stdout is only JSON-RPC", async () => {
    const child = spawn(process.execPath, [HOLON_BIN, "mcp", "serve", "--home", rt.home], {
      cwd: REPO_ROOT,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const init = {
      jsonrpc: "2.0",
      id: 7,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "x", version: "1" },
      },
    };
    child.stdin.write("this is not json\n" + JSON.stringify({ hello: "world" }) + "\n");
    child.stdin.write(JSON.stringify(init) + "\n");
    const answer = await waitFor(() => (out.includes("\n") ? out : undefined), {
      what: "the initialize answer",
      timeoutMs: 15_000,
    });
    child.stdin.end();
    const exit = await new Promise<number | null>((r) => child.once("close", r));
    const lines = answer
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.at(-1)).toMatchObject({
      jsonrpc: "2.0",
      id: 7,
      result: { serverInfo: { name: "holon" } },
    });
    // It ends when its client closes stdin.
    expect(exit).toBe(0);
  });

  it("after the host stops, a tool call is a clear error and the server does not take over", async () => {
    await rt.close();
    const r = await tool("list_agents");
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toContain("connection_failed");
    // Still answering the protocol: it reports the lost host instead of dying or hosting.
    expect((await client.listTools()).tools).toHaveLength(9);
  });
});

describe("the operations reach only their own routes", () => {
  it("every id is one escaped path segment; no input names another route", async () => {
    const seen: string[] = [];
    const record: ControlCall = async (method, path) => {
      seen.push(`${method} ${path}`);
      return { ok: true };
    };
    const ops = controlPlaneOperations(record);
    const hostile = [
      "../control/asks/ask_1/decision",
      "a/../../control/runtime/shutdown",
      "x?y=1#z",
      "%2e%2e",
      "worker",
    ];
    for (const id of hostile) {
      await ops.createAgent(id, "t");
      await ops.sendPrompt(id, { text: "t", actorId: "mcp:x" });
      await ops.addWorkItem(id, { objective: "o", actorId: "mcp:x" });
      await ops.status(id);
      await ops.briefs(id, 5);
      await ops.workItem(id, id);
      await ops.nextBrief(id, { messageId: id, after: id, waitMs: 1 });
      await ops.transcript(id, 5);
      await ops.stop(id);
    }
    await ops.listAgents();
    const allowed = [
      /^GET \/agents\/list$/,
      /^POST \/control\/agents\/[^/?#]+\/(create|prompt|work-items|control)$/,
      /^GET \/agents\/[^/?#]+\/(status|briefs|transcript)(\?[^/#]*)?$/,
      /^GET \/agents\/[^/?#]+\/work-items\/[^/?#]+$/,
      /^GET \/agents\/[^/?#]+\/briefs\/next\?[^/#]*$/,
    ];
    for (const line of seen) {
      expect(
        allowed.some((re) => re.test(line)),
        line,
      ).toBe(true);
      expect(line, line).not.toMatch(/\/\.\.?(\/|$)/);
    }
    await expect(ops.status("..")).rejects.toThrow(/not an id/);
  });
});

describe("holon mcp serve without a host", () => {
  it("exits non-zero with one clear line and never hosts in process", async () => {
    const home = tempHome();
    const r = await runCli(["mcp", "serve", "--home", home], { env: { HOLON_HOME: home } });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/no Holon runtime is running for .*holon serve/);
    // It opened no store of its own.
    expect(() => readFileSync(join(home, "holon.db"))).toThrow();
  });
});
