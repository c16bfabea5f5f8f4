// OpenTelemetry traces through the whole product: a host configured as a user would
// (`holon config set telemetry.traces.*`, the standard OTEL_* variables) runs a real turn
// with tool calls, a command task whose result re-enters later and a child agent, and
// exports over OTLP/HTTP protobuf to a receiver inside the test that decodes with the
// official OpenTelemetry definitions. The span tree, the links, the GenAI attributes and the
// token counts are checked against what the scripted provider reported; content stays off
// until its one switch is on; a public traceparent is only an untrusted link.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { fault, reply, type FakeAnswer, type RecordedRequest } from "./fake-provider/server.ts";
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from "./helpers/otlp-receiver.ts";

const fake = useFakeProvider();
const OTLP_KEY = "SEKRET-OTLP-KEY-7731";

function agentOf(req: RecordedRequest): string {
  const key = String(req.body.prompt_cache_key ?? "");
  return key.slice("holon-".length, key.lastIndexOf("-"));
}
function lastInput(req: RecordedRequest): string {
  const input = req.body.input as unknown[];
  return JSON.stringify(input[input.length - 1]);
}
function toolOutputs(req: RecordedRequest): string[] {
  return (req.body.input as any[])
    .filter((i) => i.type === "function_call_output")
    .map((i) => String(i.output));
}

async function tracedHost(
  receiver: OtlpReceiver,
  extra: [string, string][] = [],
): Promise<TestRuntime> {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  for (const [k, v] of [
    ["telemetry.traces.enabled", "true"],
    ["telemetry.traces.endpoint", receiver.url],
    ["telemetry.metrics.enabled", "true"],
    ...extra,
  ]) {
    const r = await runCli(["config", "set", k!, v!], { env: { HOLON_HOME: home } });
    expect(r.code, r.stderr).toBe(0);
  }
  return await startRuntime({
    home,
    env: {
      ...process.env,
      HOLON_HOME: home,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${OTLP_KEY}`,
    },
  });
}

const byName = (spans: ReceivedSpan[], prefix: string) =>
  spans.filter((s) => s.name.startsWith(prefix));

describe("traces", () => {
  let receiver: OtlpReceiver;
  let rt: TestRuntime;
  /** Usage the scripted provider reported, per request, as [input, cached, output]. */
  const given: [number, number, number][] = [];
  let n = 0;
  const usage = () => {
    n++;
    const u = { input_tokens: 2000 + n, cached_tokens: 1500 + n, output_tokens: 20 + n };
    given.push([u.input_tokens, u.cached_tokens, u.output_tokens]);
    return u;
  };
  let child = "";
  let gate = "";
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  const parentSpan = "00f067aa0ba902b7";

  beforeAll(async () => {
    // Commands start from the host process's environment: the collector key lives there.
    process.env.OTEL_EXPORTER_OTLP_HEADERS = `x-collector-key=${OTLP_KEY}`;
    process.env.OTEL_EXPORTER_OTLP_TRACES_HEADERS = `x-other=${OTLP_KEY}`;
    process.env.OTEL_SERVICE_NAME = "holon";
    receiver = await startOtlpReceiver();
    rt = await tracedHost(receiver);
    gate = join((await rt.host.agents.get("main")).agent_home, "gate");
    fake.setFallback((req): FakeAnswer => {
      const who = agentOf(req);
      const last = lastInput(req);
      if (who !== "main") return reply.text("CHILD-REPORT: done", usage());
      if (last.includes("GO-TRACE"))
        return reply.tools(
          [
            {
              name: "ExecCommand",
              arguments: { cmd: "env | grep ^OTEL_; echo ENV-DONE" },
              call_id: "t-env",
            },
            {
              name: "ExecCommand",
              arguments: { cmd: "sleep 0.4; echo task-finished", yield_time_ms: 50 },
              call_id: "t-bg",
            },
            { name: "SpawnAgent", arguments: { initial_message: "CHILD-JOB" }, call_id: "t-spawn" },
          ],
          { usage: usage() },
        );
      if (last.includes("INTERJECT-BASE"))
        return reply.tools(
          [
            {
              name: "ExecCommand",
              arguments: { cmd: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo gate-open` },
              call_id: "t-gate",
            },
          ],
          { usage: usage() },
        );
      if (last.includes("t-spawn")) {
        child = /Spawned private child ([\w.-]+)\./.exec(
          toolOutputs(req).find((o) => o.includes("Spawned private child"))!,
        )![1]!;
        return reply.text("started both", usage());
      }
      return reply.text("noted", usage());
    });
    const res = await rt.req(
      "POST",
      "/control/agents/main/prompt",
      { text: "GO-TRACE" },
      { traceparent: `00-${traceId}-${parentSpan}-01` },
    );
    expect(res.status).toBe(202);
    // The first turn, the command task's result and the child's result: three main turns.
    await waitFor(
      async () =>
        (await rt.host.store.messages.withStatus("main", "processed")).filter(
          (m) => m.kind === "task_result",
        ).length >= 2,
      { what: "both results to come back to main", timeoutMs: 30_000 },
    );
    await waitFor(() => byName(receiver.spans, "invoke_agent main").length >= 3, {
      what: "the turns' spans at the receiver",
      timeoutMs: 10_000,
    });
    await rt.host.services.tracing.flush();
  }, 60_000);

  afterAll(async () => {
    delete process.env.OTEL_EXPORTER_OTLP_HEADERS;
    delete process.env.OTEL_EXPORTER_OTLP_TRACES_HEADERS;
    delete process.env.OTEL_SERVICE_NAME;
    fake.setFallback(null);
    await rt?.close();
    await receiver?.close();
  });

  it("parents the operator's turn on its traceparent and nests chat and tool spans under it", () => {
    const spans = receiver.spans;
    const first = byName(spans, "invoke_agent main").find(
      (s) => s.attributes["holon.message.kind"] === "operator_prompt",
    )!;
    expect(first.traceId).toBe(traceId);
    expect(first.parentSpanId).toBe(parentSpan);
    expect(first.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": "main",
      "holon.trigger.kind": "operator_input",
      "holon.trigger.authority": "operator_instruction",
      "holon.turn.outcome": expect.any(String),
    });
    const children = spans.filter((s) => s.parentSpanId === first.spanId);
    expect(children.map((s) => s.name).sort()).toEqual([
      "admission operator_prompt",
      "chat test-model",
      "chat test-model",
      "execute_tool ExecCommand",
      "execute_tool ExecCommand",
      "execute_tool SpawnAgent",
    ]);
    for (const s of children) expect(s.traceId).toBe(traceId);
    const tools = children.filter((s) => s.name.startsWith("execute_tool"));
    expect(tools.map((t) => t.attributes["gen_ai.tool.call.id"]).sort()).toEqual([
      "t-bg",
      "t-env",
      "t-spawn",
    ]);
    // Spans and resource say who made them.
    expect(first.resource["service.name"]).toBe("holon");
    expect(receiver.headers[0]!["x-collector-key"]).toBe(OTLP_KEY);
    expect(receiver.headers[0]!["content-type"]).toBe("application/x-protobuf");
  });

  it("puts the provider's reported tokens, model and finish reason on every chat span", () => {
    const chats = byName(receiver.spans, "chat ");
    expect(chats.length).toBe(given.length);
    const seen = chats
      .map((c) => [
        c.attributes["gen_ai.usage.input_tokens"],
        c.attributes["gen_ai.usage.cache_read.input_tokens"],
        c.attributes["gen_ai.usage.output_tokens"],
      ])
      .sort();
    expect(seen).toEqual([...given].sort());
    for (const c of chats) {
      expect(c.kind).toBe(3); // CLIENT
      expect(c.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fake",
        "gen_ai.request.model": "test-model",
        "gen_ai.response.model": expect.any(String),
        "holon.provider.attempt": 1,
        "holon.provider.fallback": 0,
      });
      expect(["stop", "tool_call"]).toContain(
        (c.attributes["gen_ai.response.finish_reasons"] as string[])[0],
      );
    }
    // The turn's totals equal the sum of its calls.
    const first = byName(receiver.spans, "invoke_agent main").find(
      (s) => s.attributes["holon.message.kind"] === "operator_prompt",
    )!;
    const mine = chats.filter((c) => c.parentSpanId === first.spanId);
    expect(first.attributes["gen_ai.usage.input_tokens"]).toBe(
      mine.reduce((a, c) => a + Number(c.attributes["gen_ai.usage.input_tokens"]), 0),
    );
  });

  it("links the later turns to the tool calls that caused them instead of nesting them", () => {
    const spans = receiver.spans;
    const tool = (id: string) => spans.find((s) => s.attributes["gen_ai.tool.call.id"] === id)!;
    const turns = byName(spans, "invoke_agent main").filter(
      (s) => s.attributes["holon.message.kind"] === "task_result",
    );
    expect(turns).toHaveLength(2);
    const linkTo = (span: ReceivedSpan) =>
      turns.find((t) => t.links.some((l) => l.spanId === span.spanId));
    const taskTurn = linkTo(tool("t-bg"))!;
    const childTurn = linkTo(tool("t-spawn"))!;
    expect(taskTurn).toBeDefined();
    expect(childTurn).toBeDefined();
    expect(taskTurn).not.toBe(childTurn);
    expect(taskTurn.links[0]!.attributes).toMatchObject({
      "holon.link.kind": "task_result",
      "holon.link.trusted": true,
    });
    expect(childTurn.links[0]!.attributes["holon.link.kind"]).toBe("child_result");
    for (const t of turns) {
      expect(t.parentSpanId).toBe(""); // a root of its own trace, not a child of the old turn
      expect(t.traceId).not.toBe(traceId);
      expect(t.attributes["holon.trigger.authority"]).toBe("runtime_instruction");
    }
    // The child's turn names its parent and links to the SpawnAgent call.
    const childSpan = byName(spans, `invoke_agent ${child}`)[0]!;
    expect(childSpan.attributes["holon.agent.parent_id"]).toBe("main");
    expect(childSpan.links.map((l) => [l.spanId, l.attributes["holon.link.kind"]])).toContainEqual([
      tool("t-spawn").spanId,
      "spawn",
    ]);
  });

  it("exports no content while its switch is off, and keeps collector keys from commands", async () => {
    for (const s of receiver.spans) {
      for (const k of [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "holon.brief.text",
      ])
        expect(s.attributes[k]).toBeUndefined();
    }
    // `env` ran as a command: its output reached the model without the OTLP headers variable.
    const envOut = fake.requests.flatMap(toolOutputs).find((o) => o.includes("ENV-DONE"));
    expect(envOut).toContain("OTEL_SERVICE_NAME=holon"); // ordinary OTEL_* variables pass
    expect(envOut).not.toContain(OTLP_KEY);
    expect(envOut).not.toContain("OTEL_EXPORTER_OTLP_HEADERS");
    const metrics = await rt.req("GET", "/metrics");
    expect(metrics.json).toMatch(/^holon_telemetry_spans_exported_total [1-9]/m);
    expect(metrics.json).toMatch(/^holon_telemetry_spans_dropped_total\{reason="queue_full"\} 0$/m);
  });

  it("gives a turn one link for each further message it consumes (an interjection)", async () => {
    const a = "55555555555555555555555555555555";
    const b = "66666666666666666666666666666666";
    const asked = fake.requests.length;
    const base = await rt.req(
      "POST",
      "/control/agents/main/prompt",
      { text: "INTERJECT-BASE" },
      { traceparent: `00-${a}-5555555555555555-01` },
    );
    expect(base.status).toBe(202);
    await waitFor(() => fake.requests.length > asked, { what: "the base turn's first call" });
    const extra = await rt.req(
      "POST",
      "/control/agents/main/prompt",
      { text: "INTERJECTED-NOTE", priority: "interject" },
      { traceparent: `00-${b}-6666666666666666-01` },
    );
    expect(extra.status).toBe(202);
    writeFileSync(gate, "");
    const turn = await waitFor(
      () =>
        byName(receiver.spans, "invoke_agent main").find(
          (s) => s.attributes["holon.message.id"] === base.json.message_id,
        ),
      { what: "the base turn's span", timeoutMs: 15_000 },
    );
    expect(turn.traceId).toBe(a);
    expect(turn.parentSpanId).toBe("5555555555555555");
    expect(turn.links).toEqual([
      {
        traceId: b,
        spanId: "6666666666666666",
        attributes: {
          "holon.link.kind": "ingress",
          "holon.link.trusted": true,
          "holon.message.id": extra.json.message_id,
        },
      },
    ]);
    const admissions = receiver.spans.filter(
      (s) => s.parentSpanId === turn.spanId && s.name.startsWith("admission "),
    );
    expect(admissions.map((s) => s.attributes["holon.message.id"]).sort()).toEqual(
      [base.json.message_id, extra.json.message_id].sort(),
    );
  });

  it("links a timer's fire to the request that created the timer", async () => {
    const before = byName(receiver.spans, "invoke_agent main").length;
    const tp = "33333333333333333333333333333333";
    const res = await rt.req(
      "POST",
      "/control/agents/main/timers",
      { summary: "TIMER-CHECK", duration_ms: 200 },
      { traceparent: `00-${tp}-4444444444444444-01` },
    );
    expect(res.status).toBe(201);
    await waitFor(
      () =>
        byName(receiver.spans, "invoke_agent main")
          .slice(before)
          .find((s) => s.attributes["holon.message.kind"] === "timer_tick"),
      { what: "the timer's turn", timeoutMs: 15_000 },
    );
    const turn = byName(receiver.spans, "invoke_agent main").find(
      (s) => s.attributes["holon.message.kind"] === "timer_tick",
    )!;
    expect(turn.attributes["holon.trigger.kind"]).toBe("timer_fire");
    expect(turn.links).toEqual([
      {
        traceId: tp,
        spanId: "4444444444444444",
        attributes: {
          "holon.link.kind": "timer",
          "holon.link.trusted": true,
          "holon.message.id": turn.attributes["holon.message.id"],
        },
      },
    ]);
  });

  it("parents the turn a capability callback wakes on the callback's traceparent", async () => {
    const before = byName(receiver.spans, "invoke_agent main").length;
    const trigger = await rt.req("GET", "/control/agents/main/external-trigger");
    expect(trigger.status).toBe(200);
    const tp = "77777777777777777777777777777777";
    const res = await fetch(trigger.json.external_trigger.trigger_url as string, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        traceparent: `00-${tp}-8888888888888888-01`,
      },
      body: JSON.stringify({ event: "ci_finished" }),
    });
    expect(res.status).toBe(202);
    const turn = await waitFor(
      () =>
        byName(receiver.spans, "invoke_agent main")
          .slice(before)
          .find((s) => s.traceId === tp),
      { what: "the callback's turn in the callback's trace", timeoutMs: 15_000 },
    );
    expect(turn.parentSpanId).toBe("8888888888888888");
  });

  it("records a traceparent from public ingress as an untrusted link, never a parent", async () => {
    const before = byName(receiver.spans, "invoke_agent main").length;
    const foreign = "11111111111111111111111111111111";
    const res = await rt.req(
      "POST",
      "/agents/main/enqueue",
      { text: "hello from outside", origin: { kind: "channel", channel_id: "c1" } },
      { authorization: "", traceparent: `00-${foreign}-2222222222222222-01` },
    );
    expect(res.status).toBe(202);
    await waitFor(() => byName(receiver.spans, "invoke_agent main").length > before, {
      what: "the public message's turn",
      timeoutMs: 15_000,
    });
    const turn = byName(receiver.spans, "invoke_agent main").find(
      (s) => s.attributes["holon.message.id"] === res.json.message_id,
    )!;
    expect(turn.traceId).not.toBe(foreign);
    expect(turn.parentSpanId).toBe("");
    expect(turn.links).toEqual([
      {
        traceId: foreign,
        spanId: "2222222222222222",
        attributes: {
          "holon.link.kind": "ingress",
          "holon.link.trusted": false,
          "holon.message.id": res.json.message_id,
        },
      },
    ]);
  });
});

describe("links across a restart", () => {
  it("a task started before a host restart links its later turn to the tool call that started it", async () => {
    const receiver = await startOtlpReceiver();
    let rt = await tracedHost(receiver);
    const gate = join((await rt.host.agents.get("main")).agent_home, "restart-gate");
    try {
      fake.enqueue(
        reply.tools([
          {
            name: "ExecCommand",
            arguments: {
              cmd: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo after-restart`,
              yield_time_ms: 50,
            },
            call_id: "r-bg",
          },
        ]),
        reply.text("started it"),
      );
      expect(
        (await rt.req("POST", "/control/agents/main/prompt", { text: "RESTART-TRACE" })).status,
      ).toBe(202);
      const started = await waitFor(
        () => receiver.spans.find((s) => s.attributes["gen_ai.tool.call.id"] === "r-bg"),
        { what: "the tool call's span", timeoutMs: 15_000 },
      );
      await waitFor(async () => (await rt.host.agents.get("main")).status !== "awake_running", {
        what: "the turn to end",
      });
      const home = rt.home;
      await rt.close();
      rt = await startRuntime({
        home,
        env: { ...process.env, HOLON_HOME: home, OTEL_BSP_SCHEDULE_DELAY: "50" },
      });
      fake.enqueue(reply.text("saw the task end"));
      writeFileSync(gate, "");
      const turn = await waitFor(
        () =>
          byName(receiver.spans, "invoke_agent main").find(
            (s) => s.attributes["holon.message.kind"] === "task_result",
          ),
        { what: "the task result's turn after the restart", timeoutMs: 20_000 },
      );
      expect(turn.links.map((l) => [l.spanId, l.attributes["holon.link.kind"]])).toContainEqual([
        started.spanId,
        "task_result",
      ]);
    } finally {
      await rt.close();
      await receiver.close();
    }
  });
});

describe("content capture", () => {
  it("one switch puts prompts, completions, instructions, tool arguments and results and the brief on spans", async () => {
    const receiver = await startOtlpReceiver();
    const rt = await tracedHost(receiver, [["telemetry.traces.capture_content", "true"]]);
    try {
      fake.enqueue(
        reply.tools([
          { name: "ExecCommand", arguments: { cmd: "echo CONTENT-OUT" }, call_id: "k1" },
        ]),
        reply.text("FINAL-ANSWER-TEXT"),
      );
      expect(
        (await rt.req("POST", "/control/agents/main/prompt", { text: "PROMPT-XYZ" })).status,
      ).toBe(202);
      await waitFor(() => byName(receiver.spans, "invoke_agent main").length >= 1, {
        what: "the turn span",
        timeoutMs: 15_000,
      });
      const spans = receiver.spans;
      const chats = byName(spans, "chat ");
      expect(String(chats[0]!.attributes["gen_ai.input.messages"])).toContain("PROMPT-XYZ");
      expect(String(chats[0]!.attributes["gen_ai.system_instructions"]).length).toBeGreaterThan(10);
      expect(String(chats[1]!.attributes["gen_ai.output.messages"])).toContain("FINAL-ANSWER-TEXT");
      const tool = byName(spans, "execute_tool ExecCommand")[0]!;
      expect(String(tool.attributes["gen_ai.tool.call.arguments"])).toContain("echo CONTENT-OUT");
      expect(String(tool.attributes["gen_ai.tool.call.result"])).toContain("CONTENT-OUT");
      const turn = byName(spans, "invoke_agent main")[0]!;
      expect(turn.attributes["holon.brief.text"]).toBe("FINAL-ANSWER-TEXT");
    } finally {
      await rt.close();
      await receiver.close();
    }
  }, 30_000);
});

describe("compaction", () => {
  it("a turn that outgrows its window shows each compaction as a span of its own", async () => {
    const receiver = await startOtlpReceiver();
    const rt = await tracedHost(receiver, [
      [
        "models.catalog.fake/test-model",
        JSON.stringify({ context_window_tokens: 16_000, runtime_max_output_tokens: 2_000 }),
      ],
    ]);
    let calls = 0;
    fake.setFallback((req) => {
      if (Math.ceil(Buffer.byteLength(req.raw) / 4) > 16_000) return fault.contextLength();
      calls++;
      if (calls > 14) return reply.text("ROUNDS-DONE");
      return reply.tools([
        {
          name: "ExecCommand",
          arguments: { cmd: `head -c 4096 /dev/zero | tr '\\0' a; echo " r${calls}"` },
          call_id: `cc_${calls}`,
        },
      ]);
    });
    try {
      const res = await rt.req("POST", "/control/agents/main/prompt", { text: "LOOP" });
      expect(res.status).toBe(202);
      const turn = await waitFor(
        () =>
          byName(receiver.spans, "invoke_agent main").find(
            (s) => s.attributes["holon.message.id"] === res.json.message_id,
          ),
        { what: "the long turn's span", timeoutMs: 60_000 },
      );
      const compactions = receiver.spans.filter(
        (s) => s.name === "compact_context" && s.parentSpanId === turn.spanId,
      );
      const recorded = (
        await rt.host.store.events.query("main", { limit: 1000, order: "asc" })
      ).filter((e) => e.type === "context_compacted");
      expect(recorded.length).toBeGreaterThan(0);
      expect(compactions).toHaveLength(recorded.length);
      expect(compactions[0]!.attributes).toMatchObject({
        "holon.compaction.strategy": "turn_local_recap",
        "holon.compaction.before_tokens": expect.any(Number),
        "holon.compaction.after_tokens": expect.any(Number),
      });
    } finally {
      fake.setFallback(null);
      await rt.close();
      await receiver.close();
    }
  }, 90_000);
});
