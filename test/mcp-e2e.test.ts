// MCP end to end through the surfaces a user touches: servers added with `holon mcp add`
// (host level) and `holon agent set … mcp.servers.<name>` (agent level), the scripted fake
// model calling `mcp__everything__get-sum` with the result reaching its next request, the
// tool list staying byte-identical across turns, `holon mcp list | test | remove`, `holon
// status`, a workspace `.mcp.json` that runs nothing until the operator approves it through
// `holon asks` (and again after any edit), and the bad input a user can give.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { reply } from "./fake-provider/server.ts";
import { waitFor, type TestRuntime } from "./helpers/home.ts";
import { useFakeProvider } from "./helpers/provider.ts";
import { useAgentHost } from "./helpers/agent-host.ts";
import { EVERYTHING, FIXTURE, NODE } from "./helpers/mcp.ts";

const fake = useFakeProvider();
const agentHost = useAgentHost(fake, {
  prepare: async (_home, cli) => {
    const add = await cli("mcp", "add", "everything", "--", NODE, EVERYTHING, "stdio");
    expect(add.code, add.stderr).toBe(0);
  },
  env: { HOLON_WS_TEST_VALUE: "ws-value-QQQ" },
});
const { cli, prompt, settled } = agentHost;
let rt: TestRuntime;
let home: string;
let ws: string;

beforeAll(async () => {
  ({ rt, home } = agentHost);
  ws = join(home, "ws");
  mkdirSync(ws);
  const r = await rt.req("POST", "/control/agents/main/workspaces/use", { path: ws });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
});

function toolResults(from: number): string[] {
  const out: string[] = [];
  for (const r of fake.requests.slice(from)) {
    for (const item of (r.body as { input?: { type: string; output?: unknown }[] }).input ?? [])
      if (item.type === "function_call_output") out.push(String(item.output));
  }
  return out;
}

const toolNames = (i: number) =>
  ((fake.requests[i]!.body as { tools: { name: string }[] }).tools ?? []).map((t) => t.name);

describe("MCP tools in a turn", () => {
  it("the model calls mcp__everything__get-sum and the result reaches its next request", async () => {
    const from = fake.requests.length;
    fake.enqueue(
      reply.tools([
        { name: "mcp__everything__get-sum", arguments: { a: 19, b: 23 }, call_id: "s1" },
      ]),
      reply.text("The sum is 42."),
    );
    await settled(await prompt("add 19 and 23 with the MCP tool"));
    expect(toolNames(from)).toContain("mcp__everything__get-sum");
    const results = toolResults(from);
    expect(results.some((o) => o.includes("42") && o.includes("external evidence"))).toBe(true);
    const event = (await rt.host.store.events.after("main", 0, 1_000_000)).find(
      (e: any) => e.type === "tool_executed" && e.payload.tool_name === "mcp__everything__get-sum",
    );
    expect(event).toBeDefined();

    // The next turn sends the same tool list, byte for byte (the cached prefix holds).
    const next = fake.requests.length;
    fake.enqueue(reply.text("nothing to do"));
    await settled(await prompt("hello again"));
    const a = JSON.stringify((fake.requests[from]!.body as { tools: unknown }).tools);
    const b = JSON.stringify((fake.requests[next]!.body as { tools: unknown }).tools);
    expect(b).toBe(a);
  });

  it("an image a tool returns reaches the model as an image (Responses transport)", async () => {
    const from = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "mcp__everything__get-tiny-image", arguments: {}, call_id: "i1" }]),
      reply.text("I see it."),
    );
    await settled(await prompt("show me the tiny image"));
    const outputs = fake.requests
      .slice(from)
      .flatMap((r) => (r.body as { input?: any[] }).input ?? [])
      .filter((i) => i.type === "function_call_output" && i.call_id === "i1");
    const parts = outputs[0].output as { type: string; text?: string; image_url?: string }[];
    expect(parts[0]!.type).toBe("input_text");
    expect(parts[0]!.text).toContain("image/png");
    expect(
      parts.some(
        (p) => p.type === "input_image" && p.image_url!.startsWith("data:image/png;base64,"),
      ),
    ).toBe(true);
    // The stored envelope keeps the image's size and digest, not its bytes.
    const stored = (await rt.host.store.events.after("main", 0, 1_000_000)).filter(
      (e: any) => e.type === "tool_executed" && e.payload.call_id === "i1",
    );
    expect(JSON.stringify(stored)).not.toContain("base64");
    expect(JSON.stringify(stored)).toContain("sha256");
  });

  it("an MCP result is external evidence: later calls in that turn run under its authority", async () => {
    const from = fake.requests.length;
    fake.enqueue(
      reply.tools([
        { name: "mcp__everything__echo", arguments: { message: "run rm" }, call_id: "e1" },
      ]),
      reply.tools([
        { name: "ExecCommand", arguments: { cmd: "touch tainted-ran" }, call_id: "x1" },
      ]),
      reply.text("done"),
    );
    await settled(await prompt("echo, then run a command"));
    // The host's default external_evidence_mode is `ask`: the command is held for an
    // operator's approval, not run.
    const held = (await rt.host.services.asks.list({ agent_id: "main" })).filter(
      (a) => a.kind === "approval" && a.state === "pending",
    );
    expect(held).toHaveLength(1);
    expect(JSON.stringify(held[0]!.details)).toContain("tainted-ran");
    expect(existsSync(join(ws, "tainted-ran"))).toBe(false);
    const denied = await rt.req("POST", `/control/asks/${held[0]!.id}/decision`, {
      decision: "deny",
      reason: "not in this test",
    });
    expect(denied.status, JSON.stringify(denied.json)).toBe(200);
    await waitFor(
      async () =>
        fake.requests.length > from + 2 &&
        (await rt.host.agents.get("main")).status !== "awake_running" &&
        (await rt.host.store.messages.withStatus("main", "queued")).length === 0,
      { what: "the denial to reach the model and the agent to settle", timeoutMs: 30_000 },
    );
    const results = toolResults(from);
    expect(results[0]).toContain("external evidence");
    const after = JSON.stringify(fake.requests.slice(from + 2).map((r) => r.body));
    expect(after).toMatch(/not in this test/);
    expect(existsSync(join(ws, "tainted-ran"))).toBe(false);
  });

  it("holon mcp list shows the mapping, test reports latency, status shows the state", async () => {
    const list = await cli("mcp", "list");
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("everything  stdio, host, running");
    expect(list.stdout).toContain("mcp__everything__get-sum  ← get-sum");
    const test = await cli("mcp", "test", "everything");
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(/everything: ok in [\d.]+ ms, \d+ tools: .*get-sum/);
    const status = await cli("status");
    expect(status.stdout).toMatch(/mcp:\s+everything \(stdio, host\) running pid \d+, \d+ tools/);
  });

  it("an agent-level server, set through the control plane; bad input is refused cleanly", async () => {
    const set = await cli(
      "agent",
      "set",
      "main",
      "mcp.servers.mine",
      JSON.stringify({ command: NODE, args: [FIXTURE, "ok"] }),
    );
    expect(set.code, set.stderr).toBe(0);
    const from = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "mcp__mine__ping", arguments: {}, call_id: "p1" }]),
      reply.text("done"),
    );
    await settled(await prompt("ping mine"));
    expect(toolResults(from).some((o) => o.includes("pong from ping"))).toBe(true);

    const bad = await rt.req("POST", "/control/agents/main/settings", {
      key: "mcp.servers.w",
      value: { type: "websocket", url: "ws://x" },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.kind).toBe("invalid_mcp_server");
    expect(bad.json.error.message).toContain("unknown transport");
    const cliBad = await cli("mcp", "add", "w", "--transport", "http");
    expect(cliBad.code).not.toBe(0);
    expect(cliBad.stderr).toMatch(/url/);
    const badName = await cli("mcp", "add", "bad name!", "--", "true");
    expect(badName.code).not.toBe(0);
    expect(badName.stderr).toContain("is not allowed");
    // The config file is untouched by the refused adds.
    const cfg = JSON.parse(readFileSync(join(home, "config.json"), "utf8"));
    expect(Object.keys(cfg.mcp.servers)).toEqual(["everything"]);
    const removed = await cli("agent", "unset", "main", "mcp.servers.mine");
    expect(removed.code, removed.stderr).toBe(0);
  });
});

describe("removing a server", () => {
  it("holon mcp remove takes it out of the catalog and stops its process at the next turn", async () => {
    const view = async () =>
      (await rt.host.services.mcp.status(await rt.host.agents.get("main"))).find(
        (v) => v.name === "everything",
      );
    const pid = (await view())?.pid;
    expect(pid).toBeGreaterThan(0);
    const removed = await cli("mcp", "remove", "everything");
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(home, "config.json"), "utf8")).mcp).toBeUndefined();
    const from = fake.requests.length;
    fake.enqueue(reply.text("ok"));
    await settled(await prompt("anything?"));
    expect(toolNames(from).some((n) => n.startsWith("mcp__everything__"))).toBe(false);
    await waitFor(
      () => !existsSync(`/proc/${pid}`) || /\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8")),
      {
        what: "the removed server to exit",
      },
    );
    const again = await cli("mcp", "remove", "everything");
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("no host-level MCP server named 'everything'");
  });
});

describe("workspace .mcp.json needs the operator's consent", () => {
  it("starts nothing until approved; an edit after approval needs a new approval", async () => {
    const pidFile = join(ws, "server.pid"); // inside the root: the sandbox lets it write there
    const def = {
      command: NODE,
      args: [FIXTURE, "ok"],
      env: { FIXTURE_PID_FILE: pidFile, SOME_KEY: "${HOLON_WS_TEST_VALUE}" },
    };
    writeFileSync(join(ws, ".mcp.json"), JSON.stringify({ mcpServers: { wsfix: def } }));
    const from = fake.requests.length;
    fake.enqueue(reply.text("working without it"));
    await settled(await prompt("anything new?"));
    expect(toolNames(from).some((n) => n.startsWith("mcp__wsfix__"))).toBe(false);
    const asks = await rt.req("GET", "/control/asks?agent=main");
    const ask = asks.json.asks.find((a: any) => a.details?.mcp_consent?.server === "wsfix");
    expect(ask).toMatchObject({ kind: "approval", options: ["approve", "deny"] });
    expect(ask.detail).toContain(`${NODE} ${FIXTURE} ok`);
    expect(ask.detail).toContain("${HOLON_WS_TEST_VALUE}");
    expect(() => readFileSync(pidFile)).toThrow(); // nothing ran
    // The agent is not held by the consent ask.
    expect(await rt.host.services.asks.gatedBy("main")).toBeUndefined();

    const decided = await cli("asks", "answer", ask.id, "approve");
    expect(decided.code, decided.stderr).toBe(0);
    const after = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "mcp__wsfix__ping", arguments: {}, call_id: "w1" }]),
      reply.text("pinged"),
    );
    await settled(await prompt("ping the workspace server"));
    // (the decision message is one turn, the prompt another: look at every request since)
    expect(
      toolResults(after).some((o) => o.includes("pong from ping")),
      JSON.stringify(toolResults(after)) +
        JSON.stringify(
          (await rt.host.services.mcp.status(await rt.host.agents.get("main"))).map((v) => [
            v.name,
            v.consent,
            v.state,
            v.last_error,
          ]),
        ),
    ).toBe(true);
    expect(Number(readFileSync(pidFile, "utf8"))).toBeGreaterThan(0);

    // The agent (or anyone) edits the definition: it is a new server, unapproved.
    writeFileSync(
      join(ws, ".mcp.json"),
      JSON.stringify({ mcpServers: { wsfix: { ...def, args: [FIXTURE, "garbage"] } } }),
    );
    const edited = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "mcp__wsfix__ping", arguments: {}, call_id: "w2" }]),
      reply.text("could not"),
    );
    await settled(await prompt("ping it again"));
    expect(toolNames(edited).some((n) => n.startsWith("mcp__wsfix__"))).toBe(false);
    expect(toolResults(edited).join("\n")).toContain("unknown_tool");
    const again = await rt.req("GET", "/control/asks?agent=main");
    const second = again.json.asks.find(
      (a: any) => a.details?.mcp_consent?.server === "wsfix" && a.id !== ask.id,
    );
    expect(second).toBeDefined();
    expect(second.details.mcp_consent.sha256).not.toBe(ask.details.mcp_consent.sha256);
  });

  it("a workspace server pointing at the host's own listener is refused even when approved", async () => {
    writeFileSync(
      join(ws, ".mcp.json"),
      JSON.stringify({ mcpServers: { self: { type: "http", url: `${rt.url}/control/asks` } } }),
    );
    fake.enqueue(reply.text("ok"));
    await settled(await prompt("look around"));
    const asks = await rt.req("GET", "/control/asks?agent=main");
    const ask = asks.json.asks.find((a: any) => a.details?.mcp_consent?.server === "self");
    expect(ask.detail).toContain(rt.url);
    expect((await cli("asks", "answer", ask.id, "approve")).code).toBe(0);
    const test = await cli("mcp", "test", "self");
    expect(test.code).toBe(1);
    expect(test.stderr).toContain("points at this host's own listener");
  });
});
