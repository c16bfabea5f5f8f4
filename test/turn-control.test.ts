// Turn behaviour through the running host: interjections at safe points, operator abort,
// large outputs, sleep, invalid tool input, guidance files, model override, freeform patches.
import { describe, expect, it } from "vitest";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

async function runtimeWithFake(
  transport:
    "openai_responses" | "anthropic_messages" | "openai_chat_completions" = "openai_responses",
  kind: "openai" | "anthropic" = "openai",
): Promise<TestRuntime & { workspace: string }> {
  const home = tempHome();
  await configureFakeProvider(home, transport, fake.baseUrl(kind));
  const workspace = join(home, "ws");
  mkdirSync(workspace);
  const rt = await startRuntime({ home });
  await rt.host.agents.setWorkspace("main", workspace);
  return Object.assign(rt, { workspace });
}

async function prompt(rt: TestRuntime, text: string, priority?: string) {
  const res = await rt.req(
    "POST",
    "/control/agents/main/prompt",
    priority ? { text, priority } : { text },
  );
  expect(res.status).toBe(202);
  return res.json.message_id as string;
}

function settled(rt: TestRuntime, id: string) {
  return waitFor(
    async () => {
      const s = (await rt.host.store.messages.get(id))?.status;
      return s && s !== "queued" && s !== "processing" ? s : undefined;
    },
    { what: `message ${id} to settle` },
  );
}

async function events(rt: TestRuntime) {
  return await rt.host.store.events.query("main", { limit: 100_000, order: "asc" });
}

describe("turn control", () => {
  it("a prompt to the running host is worked on: result brief, transcript, events, token totals", async () => {
    const rt = await runtimeWithFake();
    fake.enqueue(reply.text("Hello, operator.", { input_tokens: 40, output_tokens: 5 }));
    const id = await prompt(rt, "hi");
    expect(await settled(rt, id)).toBe("processed");
    const briefs = await rt.host.store.briefs.recent("main", 5);
    expect(briefs.at(-1)).toMatchObject({
      kind: "result",
      text: "Hello, operator.",
      related_message_id: id,
    });
    const types = (await events(rt)).map((e) => e.type);
    for (const t of [
      "turn_context_built",
      "provider_round_completed",
      "assistant_round_recorded",
      "turn_terminal",
      "brief_created",
    ]) {
      expect(types).toContain(t);
    }
    const round = (await events(rt)).find((e) => e.type === "provider_round_completed")!;
    expect(round.payload).toMatchObject({ token_usage: { input_tokens: 40, output_tokens: 5 } });
    for (const f of [
      "context_build_ms",
      "provider_round_ms",
      "provider_started_at",
      "provider_completed_at",
    ]) {
      expect(round.payload[f]).toBeDefined();
    }
    const status = (await rt.req("GET", "/status")).json;
    expect(status.token_usage).toMatchObject({
      total_input_tokens: 40,
      total_output_tokens: 5,
      total_model_rounds: 1,
    });
    expect(status.token_usage.last_turn).toMatchObject({ input_tokens: 40, output_tokens: 5 });
    expect(status.model).toMatchObject({
      source: "runtime_default",
      effective_model: "fake/test-model",
    });
    await rt.close();
  });

  it("an interject prompt that arrives during the provider round is shown after the tool results", async () => {
    const rt = await runtimeWithFake("anthropic_messages", "anthropic");
    let interjection = "";
    fake.enqueue(async () => {
      // the operator interjects while the model is still answering
      interjection = await prompt(rt, "also mention bananas", "interject");
      return reply.tools([
        { name: "ExecCommand", arguments: { cmd: "echo tool-done" }, call_id: "c1" },
      ]);
    }, reply.text("finished after interjection"));
    const id = await prompt(rt, "do the thing");
    expect(await settled(rt, id)).toBe("processed");
    expect((await rt.host.store.messages.get(interjection))!.status).toBe("interjected");
    const msgs = fake.requests.at(-1)!.body.messages as any[];
    // assistant tool_use, then the tool_result, then the interjection; never an empty message
    const flat = JSON.stringify(msgs);
    const toolUse = msgs.findIndex(
      (m) => m.role === "assistant" && JSON.stringify(m.content).includes("tool_use"),
    );
    expect(toolUse).toBeGreaterThan(-1);
    expect(flat.indexOf("tool-done")).toBeGreaterThan(-1);
    expect(flat.indexOf("also mention bananas")).toBeGreaterThan(flat.indexOf("tool-done"));
    expect(msgs.at(-1).role).toBe("user");
    for (const m of msgs) {
      expect(
        Array.isArray(m.content) ? m.content.length : String(m.content).length,
      ).toBeGreaterThan(0);
    }
    const admitted = (await events(rt)).find((e) => e.type === "operator_interjection_admitted")!;
    expect(admitted.payload).toMatchObject({
      message_id: interjection,
      boundary: "before_tool_execution",
    });
    // the interjection was not run again as a turn of its own
    expect(
      (await rt.host.store.briefs.recent("main", 10)).filter(
        (b) => b.related_message_id === interjection,
      ),
    ).toEqual([]);
    await rt.close();
  });

  it("abort cancels the in-flight provider call, records an aborted turn, and stops the agent; stale run ids are refused", async () => {
    const rt = await runtimeWithFake();
    fake.enqueue({ fault: "hang" });
    const id = await prompt(rt, "think forever");
    const runId = await waitFor(async () => (await rt.host.agents.get("main")).current_run_id);
    await waitFor(
      async () =>
        fake.requests.length > 0 && (await events(rt)).some((e) => e.type === "turn_context_built"),
    );
    const stale = await rt.req("POST", "/control/agents/main/current-run/abort", {
      run_id: "run_stale",
    });
    expect(stale.status).toBe(409);
    expect(stale.json.error.kind).toBe("stale_run_id");
    const res = await rt.req("POST", "/control/agents/main/current-run/abort", {
      mode: "stop_after_abort",
      run_id: runId,
    });
    expect(res.status).toBe(202);
    expect(await settled(rt, id)).toBe("aborted");
    await waitFor(async () => (await rt.host.agents.get("main")).status === "stopped");
    const terminal = (await events(rt)).find((e) => e.type === "turn_terminal")!;
    expect(terminal.payload).toMatchObject({ kind: "aborted", reason: "operator_aborted" });
    const none = await rt.req("POST", "/control/agents/main/current-run/abort", {});
    expect(none.json.error.kind).toBe("no_active_run");
    await rt.close();
  });

  it("a command printing 5 MB returns a bounded head-and-tail preview and an artifact with all of it", async () => {
    const rt = await runtimeWithFake();
    fake.enqueue(
      reply.tools([
        {
          name: "ExecCommand",
          arguments: { cmd: "head -c 5000000 /dev/zero | tr '\\0' 'x'; echo; echo THE-END" },
          call_id: "big",
        },
      ]),
      reply.text("ok"),
    );
    const id = await prompt(rt, "print a lot");
    expect(await settled(rt, id)).toBe("processed");
    const entry = (await rt.host.store.transcript.recent("main", 50)).find(
      (e) => e.kind === "tool_execution",
    )!;
    const envelope = entry.data.envelope as any;
    expect(envelope.status).toBe("success");
    expect(envelope.result.truncated).toBe(true);
    expect(envelope.result.stdout_bytes).toBe(5_000_009);
    const preview: string = envelope.result.stdout_preview;
    expect(preview.length).toBeLessThan(40_000);
    expect(preview).toContain("THE-END");
    expect(preview).toContain("output truncated");
    const artifact = envelope.result.artifacts[envelope.result.stdout_artifact].path;
    expect(statSync(artifact).size).toBe(5_000_009);
    // what went back to the model is bounded too
    const sent = JSON.stringify(fake.requests.at(-1)!.body);
    expect(sent.length).toBeLessThan(80_000);
    await rt.close();
  });

  it("invalid tool input gets the invalid_tool_input envelope with a hint; path escapes are refused", async () => {
    const rt = await runtimeWithFake();
    fake.enqueue(
      reply.tools([
        { name: "ExecCommand", arguments: { command: "ls" }, call_id: "bad" },
        { name: "ExecCommand", arguments: { cmd: "ls", workdir: "../.." }, call_id: "escape" },
        { name: "NoSuchTool", arguments: {}, call_id: "ghost" },
      ]),
      reply.text("noted"),
    );
    const id = await prompt(rt, "try things");
    expect(await settled(rt, id)).toBe("processed");
    const tools = (await rt.host.store.transcript.recent("main", 50)).filter(
      (e) => e.kind === "tool_execution",
    );
    const byCall = Object.fromEntries(tools.map((t) => [t.data.call_id, t.data.envelope as any]));
    expect(byCall.bad.error).toMatchObject({ kind: "invalid_tool_input", retryable: false });
    expect(byCall.bad.error.recovery_hint).toBeTruthy();
    expect(byCall.escape.error.kind).toBe("execution_root_violation");
    expect(byCall.ghost.error.kind).toBe("unknown_tool");
    const failed = (await events(rt)).filter((e) => e.type === "tool_execution_failed");
    expect(failed.length).toBe(3);
    expect(failed[0]!.payload.tool_error).toBeDefined();
    await rt.close();
  });

  it("ApplyPatch goes out as a freeform grammar tool on Responses and edits the workspace", async () => {
    const rt = await runtimeWithFake();
    writeFileSync(join(rt.workspace, "a.txt"), "one\ntwo\nthree\n");
    const patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";
    fake.enqueue(
      reply.tools([{ name: "ApplyPatch", input: patch, call_id: "p1" }]),
      reply.text("patched"),
    );
    const id = await prompt(rt, "patch it");
    expect(await settled(rt, id)).toBe("processed");
    expect(readFileSync(join(rt.workspace, "a.txt"), "utf8")).toBe("one\nTWO\nthree\n");
    const first = fake.requests.at(-2)!.body;
    const tool = (first.tools as any[]).find((t) => t.name === "ApplyPatch");
    expect(tool.type).toBe("custom");
    expect(tool.format.type).toBe("grammar");
    await rt.close();
  });

  it("AGENTS.md guidance loads in order: agent home, then workspace (CLAUDE.md only as fallback)", async () => {
    const rt = await runtimeWithFake("anthropic_messages", "anthropic");
    const agentHome = (await rt.host.agents.get("main")).agent_home;
    writeFileSync(join(agentHome, "AGENTS.md"), "AGENT-GUIDANCE-MARKER");
    writeFileSync(join(rt.workspace, "CLAUDE.md"), "CLAUDE-FALLBACK-MARKER");
    fake.enqueue(reply.text("one"), reply.text("two"));
    await settled(rt, await prompt(rt, "first"));
    let system = JSON.stringify(fake.requests.at(-1)!.body.system);
    expect(system.indexOf("AGENT-GUIDANCE-MARKER")).toBeGreaterThan(-1);
    expect(system.indexOf("CLAUDE-FALLBACK-MARKER")).toBeGreaterThan(
      system.indexOf("AGENT-GUIDANCE-MARKER"),
    );
    writeFileSync(join(rt.workspace, "AGENTS.md"), "WORKSPACE-AGENTS-MARKER");
    await settled(rt, await prompt(rt, "second"));
    system = JSON.stringify(fake.requests.at(-1)!.body.system);
    expect(system).toContain("WORKSPACE-AGENTS-MARKER");
    expect(system).not.toContain("CLAUDE-FALLBACK-MARKER");
    expect(system.indexOf("Tools:")).toBeGreaterThan(system.indexOf("WORKSPACE-AGENTS-MARKER"));
    await rt.close();
  });

  it("Sleep ends the turn; with a duration the agent is woken by a system tick", async () => {
    const rt = await runtimeWithFake();
    fake.enqueue(
      reply.tools([{ name: "Sleep", arguments: { duration_ms: 50 }, call_id: "s1" }], {
        text: "resting a moment",
      }),
      reply.text("woke up and checked"),
    );
    const id = await prompt(rt, "rest then check");
    expect(await settled(rt, id)).toBe("processed");
    const tick = await waitFor(async () =>
      (await rt.host.store.messages.recent("main", 10)).find(
        (m) => m.kind === "system_tick" && m.status === "processed",
      ),
    );
    expect(tick.origin).toEqual({ kind: "system", subsystem: "sleep" });
    const briefs = (await rt.host.store.briefs.recent("main", 10)).map((b) => b.text);
    expect(briefs).toContain("resting a moment");
    expect(briefs).toContain("woke up and checked");
    await rt.close();
  });

  it("per-agent model override via HTTP: status shows it, turns use it, clear returns to the default", async () => {
    const rt = await runtimeWithFake();
    const set = await rt.req("POST", "/control/agents/main/model", { model: "fake/other-model" });
    expect(set.status).toBe(200);
    expect(set.json.model).toMatchObject({
      source: "agent_override",
      override_model: "fake/other-model",
      effective_model: "fake/other-model",
    });
    fake.enqueue(reply.text("from other"));
    await settled(rt, await prompt(rt, "which model"));
    expect(fake.requests.at(-1)!.body.model).toBe("other-model");
    expect(
      (await rt.req("POST", "/control/agents/main/model", { model: "nope" })).json.error.kind,
    ).toBe("invalid_model_ref");
    expect(
      (await rt.req("POST", "/control/agents/main/model", { model: "ghost/x" })).json.error.kind,
    ).toBe("unknown_provider");
    const cleared = await rt.req("POST", "/control/agents/main/model/clear", {});
    expect(cleared.json.model).toMatchObject({
      source: "runtime_default",
      effective_model: "fake/test-model",
    });
    await rt.close();
  });
});

describe("restart during a turn", () => {
  it("an interrupted turn is recorded as interrupted after restart, not redone or dropped", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue({ fault: "hang" });
    const { spawnServe } = await import("./helpers/home.ts");
    const s = await spawnServe(home);
    const res = await fetch(`${s.url}/control/agents/main/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json", ...s.auth },
      body: JSON.stringify({ text: "long thought" }),
    });
    const { message_id } = (await res.json()) as { message_id: string };
    await waitFor(async () => {
      const st = (await (await fetch(`${s.url}/status`, { headers: s.auth })).json()) as {
        status: string;
      };
      return st.status === "awake_running";
    });
    const exited = new Promise((r) => s.proc.once("exit", r));
    s.proc.kill("SIGKILL");
    await exited;
    const rt = await startRuntime({ home });
    expect((await rt.host.store.messages.get(message_id))!.status).toBe("interrupted");
    const evs = await rt.host.store.events.query("main", { limit: 1000, order: "asc" });
    expect(
      evs.some((e) => e.type === "message_interrupted" && e.payload.message_id === message_id),
    ).toBe(true);
    expect((await rt.host.store.briefs.recent("main", 5)).at(-1)).toMatchObject({
      kind: "failure",
      related_message_id: message_id,
    });
    expect((await rt.host.agents.get("main")).status).not.toBe("awake_running");
    expect(existsSync(home)).toBe(true);
    await rt.close();
  });
});

describe("model catalog", () => {
  it("GET /models lists configured models with availability and never a credential", async () => {
    const rt = await runtimeWithFake();
    const res = await rt.req("GET", "/models");
    expect(res.status).toBe(200);
    expect(res.json.model_availability["fake/test-model"]).toBe(true);
    expect(res.json.available_models.some((m: any) => m.id === "fake/test-model")).toBe(true);
    await rt.close();
  });
});

describe("process directories", () => {
  it("a finished command whose output fit in the preview leaves no process directory behind", async () => {
    const rt = await runtimeWithFake();
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "echo small" }, call_id: "s" }]),
      reply.text("ok"),
    );
    const id = await prompt(rt, "small output");
    expect(await settled(rt, id)).toBe("processed");
    const { readdirSync } = await import("node:fs");
    const dir = join((await rt.host.agents.get("main")).agent_home, ".holon", "processes");
    // Removed in the background once the result is recorded.
    await waitFor(() => (existsSync(dir) ? readdirSync(dir) : []).length === 0, {
      what: "the process directory to be removed",
    });
    await rt.close();
  });
});
