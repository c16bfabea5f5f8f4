// The whole product with a scripted model: configure a provider the way a user does, run
// `holon run --json`, and check that a real ExecCommand ran and its output went back.
import { describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HOLON_BIN, runCli, tempHome } from "./helpers/home.ts";
import { reply } from "./fake-provider/server.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

const configure = configureFakeProvider;

/** The text of every tool result the model was sent, whatever the wire format. */
function toolResultsIn(body: any): string[] {
  const out: string[] = [];
  if (Array.isArray(body.input)) {
    for (const item of body.input)
      if (item.type === "function_call_output") out.push(String(item.output));
  }
  if (Array.isArray(body.messages)) {
    for (const m of body.messages) {
      if (m.role === "tool")
        out.push(typeof m.content === "string" ? m.content : JSON.stringify(m.content));
      if (Array.isArray(m.content)) {
        for (const c of m.content) {
          if (c.type === "tool_result")
            out.push(typeof c.content === "string" ? c.content : JSON.stringify(c.content));
        }
      }
    }
  }
  return out;
}

const transports = [
  ["openai_responses", "openai"],
  ["anthropic_messages", "anthropic"],
  ["openai_chat_completions", "openai"],
] as const;

describe.each(transports)("holon run end to end over %s", (transport, kind) => {
  it("runs a real ExecCommand, sends its output back, and returns the final text", async () => {
    const home = tempHome();
    const workspace = join(home, "ws");
    mkdirSync(workspace);
    writeFileSync(join(workspace, "marker.txt"), "marker-content-42\n");
    await configure(home, transport, fake.baseUrl(kind));
    const before = fake.requests.length;
    fake.enqueue(
      reply.tools(
        [
          {
            name: "ExecCommand",
            arguments: { cmd: "cat marker.txt && echo from-stdout" },
            call_id: "call_1",
          },
        ],
        {
          usage: { input_tokens: 100, output_tokens: 20 },
        },
      ),
      reply.text("The marker says marker-content-42.", { input_tokens: 150, output_tokens: 10 }),
    );
    const r = await runCli(["run", "--json", "--workspace-root", workspace, "read the marker"], {
      env: { HOLON_HOME: home },
    });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      ok: true,
      outcome: "completed",
      final_text: "The marker says marker-content-42.",
      raw_final_text: "The marker says marker-content-42.",
      turn_count: 2,
    });
    expect(out.token_usage).toMatchObject({
      input_tokens: 250,
      output_tokens: 30,
      total_tokens: 280,
    });
    expect(out.provider_attempt_timeline.attempts.length).toBe(2);
    expect(out.failure_artifact).toBeUndefined();

    const sent = fake.requests.slice(before);
    expect(sent.length).toBe(2);
    const results = toolResultsIn(sent[1]!.body);
    expect(results.length).toBe(1);
    expect(results[0]).toContain("marker-content-42");
    expect(results[0]).toContain("from-stdout");
    expect(results[0]).toContain("Process exited with code 0");
    // the tool catalog went out with the request
    expect(JSON.stringify(sent[0]!.body.tools)).toContain("ExecCommand");
  });
});

describe("run outcomes", () => {
  it("a provider failure gives a non-zero exit, a failure artifact and the attempt timeline", async () => {
    const home = tempHome();
    await configure(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue({ fault: "status", status: 401, message: "bad key" });
    const r = await runCli(["run", "--json", "hello"], { env: { HOLON_HOME: home } });
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(false);
    expect(out.outcome).toBe("failed");
    expect(out.failure_artifact.kind).toBeTruthy();
    expect(out.provider_attempt_timeline.attempts[0].failure_kind).toBe("http_401");
  });

  it("without a configured model the run fails and says so", async () => {
    const home = tempHome();
    const r = await runCli(["run", "hello"], { env: { HOLON_HOME: home } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/model/i);
  });

  it("human output prints the final text only when piped", async () => {
    const home = tempHome();
    await configure(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(reply.text("plain answer"));
    const r = await runCli(["run", "say something"], { env: { HOLON_HOME: home } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("plain answer\n");
    // stderr carries one line: the run agent's id and how to resume it.
    expect(r.stderr).toMatch(
      /^holon: run agent run-[0-9a-f]+; continue it with: holon run --resume run-[0-9a-f]+ "…"\n$/,
    );
  });
});

describe("run and model commands against a running host", () => {
  it("holon run uses the running host (/control/run) and agent model set/get/clear work", async () => {
    const { spawnServe } = await import("./helpers/home.ts");
    const home = tempHome();
    await configure(home, "openai_responses", fake.baseUrl("openai"));
    const s = await spawnServe(home);
    try {
      const env = { HOLON_HOME: home };
      fake.enqueue(reply.text("answered by the daemon"));
      const r = await runCli(["run", "--json", "--agent", "builder", "--create-agent", "hello"], {
        env,
      });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({
        ok: true,
        agent_id: "builder",
        final_text: "answered by the daemon",
      });
      // the run went through the host: the agent and its brief live there
      const briefs = (await (
        await fetch(`${s.url}/agents/builder/briefs`, { headers: s.auth })
      ).json()) as any;
      expect(briefs.briefs.at(-1).text).toBe("answered by the daemon");
      // a missing agent without --create-agent is refused clearly
      const missing = await runCli(["run", "--agent", "ghost", "hi"], { env });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("unknown_agent");

      const set = await runCli(["agent", "model", "set", "fake/other", "builder", "--json"], {
        env,
      });
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse(set.stdout)).toMatchObject({
        source: "agent_override",
        effective_model: "fake/other",
      });
      const get = await runCli(["agent", "model", "get", "builder"], { env });
      expect(get.stdout).toContain("fake/other (agent override)");
      const clear = await runCli(["agent", "model", "clear", "builder", "--json"], { env });
      expect(JSON.parse(clear.stdout)).toMatchObject({
        source: "runtime_default",
        effective_model: "fake/test-model",
      });
      const bad = await runCli(["agent", "model", "set", "nonsense", "builder"], { env });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("invalid_model_ref");
    } finally {
      const exited = new Promise((res) => s.proc.once("exit", res));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });
});

describe("live progress", () => {
  it("on a terminal, holon run shows what the agent is doing on stderr", async () => {
    const home = tempHome();
    await configure(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "true" }, call_id: "t1" }]),
      reply.text("done with progress"),
    );
    // `script` gives the child a pseudo-terminal, as an interactive shell would.
    const cmd = `${JSON.stringify(process.execPath)} ${JSON.stringify(HOLON_BIN)} run "go"`;
    const r = await runCli([], {
      env: { HOLON_HOME: home },
      exec: ["script", "-qec", cmd, "/dev/null"],
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("running ExecCommand");
    expect(r.stdout).toContain("done with progress");
  });
});

describe("in-process run", () => {
  it("works only on its own agent: other agents' queued messages stay queued", async () => {
    const home = tempHome();
    await configure(home, "openai_responses", fake.baseUrl("openai"));
    // leave a message queued for main while no host is running
    const { RuntimeHost } = await import("../src/host/host.ts");
    const host = await RuntimeHost.open({ home, autostartAgents: false });
    const queued = await host.ingress.admit({
      agent_id: "main",
      kind: "channel_event",
      origin: { kind: "channel", channel_id: "c" },
      body: { type: "text", text: "later" },
      surface: "http_public_enqueue",
      admission: "public_unauthenticated",
    });
    await host.shutdown();
    const before = fake.requests.length;
    fake.enqueue(reply.text("one-shot answer"));
    const r = await runCli(["run", "--json", "hello"], { env: { HOLON_HOME: home } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).final_text).toBe("one-shot answer");
    expect(fake.requests.length - before).toBe(1);
    const after = await RuntimeHost.open({ home, autostartAgents: false });
    expect((await after.store.messages.get(queued.id))!.status).toBe("queued");
    await after.shutdown();
  });
});
