// An MCP server's question to the user (elicitation) is an input ask: the real server-everything
// asks during `trigger-elicitation-request`, the scripted model's tool call waits, the operator
// answers through the control API and the CLI (a bad answer is refused and the ask stays
// pending), and the server's echo of the answer reaches the model's next request. With no
// answer in time the ask is withdrawn, the server hears `cancel` and the model is told so. A
// fixture server shows the misuse: a nested form, an oversized message, a question out of band.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { executionBinding } from "../src/workspace/roots.ts";
import { reply } from "./fake-provider/server.ts";
import { waitFor, type TestRuntime } from "./helpers/home.ts";
import { useFakeProvider } from "./helpers/provider.ts";
import { useAgentHost } from "./helpers/agent-host.ts";
import { EVERYTHING, NODE, callMcp, fixture, writeMcpConfig } from "./helpers/mcp.ts";
import { openSse } from "./helpers/sse.ts";

const fake = useFakeProvider();
let rt: TestRuntime;
let home: string;

const servers = {
  everything: { command: NODE, args: [EVERYTHING, "stdio"] },
  elic: fixture("elicit"),
};

const agentHost = useAgentHost(fake, { prepare: (dir) => writeMcpConfig(dir, { servers }) });
const { cli, prompt, settled } = agentHost;
beforeAll(() => {
  ({ rt, home } = agentHost);
});

function outputOf(callId: string): string {
  for (const r of fake.requests)
    for (const item of (r.body as { input?: any[] }).input ?? [])
      if (item.type === "function_call_output" && item.call_id === callId)
        return String(item.output);
  return "";
}

async function pendingElicitation(): Promise<any> {
  return waitFor(
    async () => {
      const r = await rt.req("GET", "/control/asks?agent=main");
      return r.json.asks.find((a: any) => a.details?.mcp_elicitation && a.state === "pending");
    },
    { what: "an elicitation ask", timeoutMs: 30_000 },
  );
}

const ELICIT = "mcp__everything__trigger-elicitation-request";

describe("an MCP server's elicitation is an input ask", () => {
  it("the operator's answer, checked against the form, reaches the server and the model", async () => {
    fake.enqueue(reply.tools([{ name: ELICIT, arguments: {}, call_id: "el1" }]), reply.text("ok"));
    const msg = await prompt("fill in the form the server asks for");
    const ask = await pendingElicitation();
    expect(ask).toMatchObject({ kind: "input", source: "mcp_elicitation", gates_agent: false });
    expect(ask.details.mcp_elicitation).toMatchObject({
      server: "everything",
      tool: "trigger-elicitation-request",
      call_id: "el1",
      message: "Please provide inputs for the following fields:",
    });
    expect(ask.details.mcp_elicitation.requested_schema.required).toEqual(["name"]);
    expect(ask.detail).toContain("name (string, required)");
    // The ask surfaces show it as an input ask; its opening is an event on the agent's stream.
    const list = await cli("asks");
    expect(list.stdout, list.stderr).toMatch(new RegExp(`${ask.id}\\s+main\\s+input`));
    const opened = (await rt.host.store.events.after("main", 0, 1_000_000)).find(
      (e: any) => e.type === "ask_opened" && e.payload.ask.id === ask.id,
    )!;
    const sse = await openSse(
      `${rt.url}/agents/main/events/stream?after_seq=${opened.event_seq - 1}`,
      { authorization: `Bearer ${rt.token}` },
    );
    for await (const f of sse.frames) {
      const e = JSON.parse(f.data);
      if (e.type !== "ask_opened") continue;
      expect(e.payload.ask).toMatchObject({ id: ask.id, kind: "input", source: "mcp_elicitation" });
      break;
    }
    sse.close();

    // Answers that do not fit the form are refused; the ask stays pending.
    for (const [bad, problem] of [
      ['{"check": true}', "name: required"],
      ['{"name": "Ada", "integer": 500}', "integer: at most 100"],
      ['{"name": "Ada", "email": "not-an-email"}', "email: not a valid email"],
      ['{"name": "Ada", "shoe": 42}', "shoe: not a field"],
      ["Ada", "neither decline, cancel nor a JSON object"],
    ]) {
      const r = await rt.req("POST", `/control/asks/${ask.id}/decision`, { decision: bad });
      expect(r.status, bad).toBe(400);
      expect(r.json.error.kind).toBe("invalid_elicitation_answer");
      expect(r.json.error.message).toContain(problem);
    }
    expect((await rt.host.services.asks.get(ask.id)).state).toBe("pending");

    const answer = JSON.stringify({
      name: "Ada Lovelace",
      check: true,
      integer: 7,
      untitledMultipleSelectEnum: ["Piano"],
    });
    const decided = await cli("asks", "answer", ask.id, answer, "--json");
    expect(decided.code, decided.stderr).toBe(0);
    // The answer goes to the server, not into the agent's queue as a new message.
    expect(JSON.parse(decided.stdout).message_id).toBeNull();
    await settled(msg);
    const out = outputOf("el1");
    expect(out).toContain("Name: Ada Lovelace");
    expect(out).toContain("Favorite Integer: 7");
    expect(out).toContain(`ask ${ask.id}); the operator answered "accept"`);
    expect(out).toContain("external evidence");
  });

  it("decline by the operator: the server hears decline", async () => {
    fake.enqueue(reply.tools([{ name: ELICIT, arguments: {}, call_id: "el2" }]), reply.text("ok"));
    const msg = await prompt("try the form again");
    const ask = await pendingElicitation();
    const r = await rt.req("POST", `/control/asks/${ask.id}/decision`, { decision: "decline" });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    await settled(msg);
    expect(outputOf("el2")).toContain("User declined");
    expect(outputOf("el2")).toContain('the operator answered "decline"');
  });

  it("no answer in time: the ask is withdrawn, the server hears cancel, the model is told", async () => {
    writeMcpConfig(home, { servers, elicitation_timeout_ms: 1_000 });
    fake.enqueue(reply.tools([{ name: ELICIT, arguments: {}, call_id: "el3" }]), reply.text("ok"));
    const msg = await prompt("the form once more; nobody will answer");
    const ask = await pendingElicitation();
    await settled(msg);
    const out = outputOf("el3");
    expect(out).toContain("User cancelled");
    expect(out).toContain(`ask ${ask.id}); the operator did not answer in time`);
    const closed = await rt.host.services.asks.get(ask.id);
    expect(["withdrawn", "expired"]).toContain(closed.state);
    const late = await rt.req("POST", `/control/asks/${ask.id}/decision`, { decision: "cancel" });
    expect(late.status).toBe(409);
    writeMcpConfig(home, { servers });
  });

  it("stopping the agent mid-question withdraws the ask and ends the call", async () => {
    fake.enqueue(reply.tools([{ name: ELICIT, arguments: {}, call_id: "el4" }]), reply.text("ok"));
    await prompt("the form, then you will be stopped");
    const ask = await pendingElicitation();
    const stop = await rt.req("POST", "/control/agents/main/control", { action: "stop" });
    expect(stop.status, JSON.stringify(stop.json)).toBe(200);
    await waitFor(async () => (await rt.host.services.asks.get(ask.id)).state === "withdrawn", {
      what: "the ask withdrawn",
    });
    await waitFor(
      async () =>
        (await rt.host.services.mcp.status(await rt.host.agents.get("main"))).every(
          (v) => v.calls_in_flight === 0,
        ),
      { what: "the call to end" },
    );
    const start = await rt.req("POST", "/control/agents/main/control", { action: "start" });
    expect(start.status, JSON.stringify(start.json)).toBe(200);
  });

  it("an ask a dead host left behind is withdrawn at the next start", async () => {
    // What a host killed mid-question leaves: a pending elicitation ask nobody waits on.
    const left = await rt.host.services.asks.open({
      agent_id: "main",
      kind: "input",
      source: "mcp_elicitation",
      scope: "agent",
      gates_agent: false,
      about: "left behind",
      detail: "left behind",
      options: ["decline", "cancel"],
      free_text: true,
      details: {
        mcp_elicitation: {
          server: "everything",
          tool: "trigger-elicitation-request",
          call_id: "gone",
          message: "?",
          requested_schema: { type: "object", properties: { name: { type: "string" } } },
        },
      },
    });
    rt = await agentHost.restart();
    const after = await rt.host.services.asks.get(left.id);
    expect(after.state).toBe("withdrawn");
    expect(after.reason).toContain("host restarted");
  });
});

describe("elicitation misuse is refused", () => {
  it("a nested form is refused by the client; an oversized message is declined", async () => {
    const nested = await callMcp(rt.host, "mcp__elic__ask-nested", {});
    expect(JSON.parse(nested.result.text)).toEqual({ action: "decline" });
    const huge = await callMcp(rt.host, "mcp__elic__ask-huge", {});
    expect(JSON.parse(huge.result.text)).toEqual({ action: "decline" });
    // Neither became an ask.
    const asks = await rt.host.services.asks.list({ state: "all", agent_id: "main" });
    expect(asks.filter((a) => a.details.mcp_elicitation && a.state === "pending")).toEqual([]);
  });

  it("a question out of band (no call in flight) is declined without an ask", async () => {
    const before = (await rt.host.services.asks.list({ state: "all", agent_id: "main" })).length;
    const done = await callMcp(rt.host, "mcp__elic__ask-later", {});
    expect(done.result.text).toBe("done");
    const root = executionBinding(await rt.host.agents.get("main")).execution_root;
    const last = await waitFor(
      () => {
        try {
          return readFileSync(join(root, "oob-reply.json"), "utf8");
        } catch {
          return null;
        }
      },
      { what: "the out-of-band reply" },
    );
    expect(JSON.parse(last)).toEqual({ action: "decline" });
    expect((await rt.host.services.asks.list({ state: "all", agent_id: "main" })).length).toBe(
      before,
    );
  });
});
