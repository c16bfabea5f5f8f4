// Anthropic Messages transport against the fake provider, plus the fake's own Anthropic
// SSE feed checked through the vendor SDK.
import Anthropic from "@anthropic-ai/sdk";
import type { MessageCreateParamsNonStreaming } from "@anthropic-ai/sdk/resources/messages/messages";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  buildAnthropicRequest,
  createAnthropicMessagesTransport,
} from "../src/providers/anthropic-messages.ts";
import type { ProviderRequest } from "../src/providers/model.ts";
import {
  baseRequest,
  candidateFor,
  patchTool,
  SECRET,
  shellTool,
} from "./fake-provider/fixtures.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

const ANTHROPIC_FIELDS = new Set<keyof MessageCreateParamsNonStreaming>([
  "stream",
  "model",
  "max_tokens",
  "messages",
  "system",
  "tools",
]);

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
});

const signal = () => new AbortController().signal;

describe("anthropic_messages transport", () => {
  it("round-trips text, parallel tool calls, tool results and usage", async () => {
    const transport = createAnthropicMessagesTransport();
    const candidate = candidateFor(fake, "anthropic_messages");
    fake.enqueue(
      reply.tools(
        [
          { name: "exec_command", arguments: { cmd: "ls" }, call_id: "toolu_1" },
          { name: "exec_command", arguments: { cmd: "pwd" }, call_id: "toolu_2" },
        ],
        {
          text: "Checking.",
          usage: {
            input_tokens: 20,
            output_tokens: 8,
            cached_tokens: 100,
            cache_creation_tokens: 30,
          },
        },
      ),
    );
    const request = baseRequest();
    const planned: MessageCreateParamsNonStreaming = buildAnthropicRequest(candidate, request);
    const r1 = await transport.send(candidate, request, { signal: signal() });
    expect(r1.blocks).toEqual([
      { type: "assistant_text", text: "Checking." },
      { type: "tool_call", call_id: "toolu_1", name: "exec_command", arguments: '{"cmd":"ls"}' },
      { type: "tool_call", call_id: "toolu_2", name: "exec_command", arguments: '{"cmd":"pwd"}' },
    ]);
    expect(r1.stop_reason).toBe("tool_use");
    expect(r1.token_usage).toEqual({
      input_tokens: 150,
      output_tokens: 8,
      total_tokens: 158,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 30,
    });

    const sent = fake.requests[0];
    expect(sent?.path).toBe("/v1/messages");
    // This SDK generation sends API keys as a bearer token.
    expect(sent?.headers["authorization"]).toBe(`Bearer ${SECRET}`);
    expect(sent?.headers["anthropic-version"]).toBeDefined();
    // Streamed by default: the planned body plus `stream: true`.
    expect(sent?.body).toEqual({ ...JSON.parse(JSON.stringify(planned)), stream: true });
    for (const key of Object.keys(sent?.body))
      expect(ANTHROPIC_FIELDS.has(key as never), key).toBe(true);
    expect(sent?.body.max_tokens).toBe(8192);
    expect(sent?.body.system).toEqual([
      { type: "text", text: "You are a test agent." },
      { type: "text", text: "Stable guidance.", cache_control: { type: "ephemeral" } },
      { type: "text", text: "Context: workspace /tmp/x" },
    ]);
    expect(sent?.body.messages).toEqual([
      {
        role: "user",
        content: [{ type: "text", text: "hello", cache_control: { type: "ephemeral" } }],
      },
    ]);
    expect(sent?.body.tools).toEqual([
      {
        name: "exec_command",
        description: "Run a shell command.",
        input_schema: {
          type: "object",
          properties: { cmd: { type: "string" }, timeout_ms: { type: "integer" } },
          required: ["cmd"],
          additionalProperties: false,
        },
      },
    ]);

    // Second round: tool results go back in one user message, errors flagged; one rolling marker.
    fake.enqueue(reply.text("Done."));
    const next: ProviderRequest = {
      ...request,
      conversation: [
        ...request.conversation,
        ...r1.blocks,
        { type: "tool_result", call_id: "toolu_1", output: "a.txt", is_error: false },
        { type: "tool_result", call_id: "toolu_2", output: "boom", is_error: true },
      ],
    };
    const r2 = await transport.send(candidate, next, { signal: signal() });
    expect(r2.blocks).toEqual([{ type: "assistant_text", text: "Done." }]);
    expect(r2.stop_reason).toBe("end_turn");
    expect(fake.requests[1]?.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "hello" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool_use", id: "toolu_1", name: "exec_command", input: { cmd: "ls" } },
          { type: "tool_use", id: "toolu_2", name: "exec_command", input: { cmd: "pwd" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "a.txt" },
          {
            type: "tool_result",
            tool_use_id: "toolu_2",
            content: "boom",
            is_error: true,
            cache_control: { type: "ephemeral" },
          },
        ],
      },
    ]);
    const markers = JSON.stringify(fake.requests[1]?.body).split('"cache_control"').length - 1;
    expect(markers).toBe(2);
  });

  it("keeps thinking blocks for replay and sends freeform tools as JSON functions", async () => {
    const transport = createAnthropicMessagesTransport();
    const candidate = candidateFor(fake, "anthropic_messages", {
      credential: { kind: "bearer_token", value: SECRET, source_label: "x" },
    });
    fake.enqueue(
      reply.tools(
        [{ name: "apply_patch", arguments: { patch: "--- a/x\n+++ b/x\n" }, call_id: "toolu_p" }],
        {
          reasoning: { summary: "plan", signature: "sig_abc" },
        },
      ),
      reply.text("ok"),
    );
    const request = baseRequest({ tools: [shellTool, patchTool] });
    const r1 = await transport.send(candidate, request, { signal: signal() });
    expect(fake.requests[0]?.headers["authorization"]).toBe(`Bearer ${SECRET}`);
    expect(fake.requests[0]?.headers["x-api-key"]).toBeUndefined();
    expect(fake.requests[0]?.body.tools[1]).toMatchObject({
      name: "apply_patch",
      input_schema: { required: ["patch"] },
    });
    expect(r1.blocks[0]).toMatchObject({
      type: "reasoning",
      family: "anthropic_messages",
      summary: "plan",
    });
    expect(r1.blocks[1]).toEqual({
      type: "tool_call",
      call_id: "toolu_p",
      name: "apply_patch",
      arguments: '{"patch":"--- a/x\\n+++ b/x\\n"}',
    });

    await transport.send(
      candidate,
      {
        ...request,
        conversation: [
          ...request.conversation,
          ...r1.blocks,
          { type: "tool_result", call_id: "toolu_p", output: "applied", is_error: false },
        ],
      },
      { signal: signal() },
    );
    expect(fake.requests[1]?.body.messages[1].content[0]).toEqual({
      type: "thinking",
      thinking: "plan",
      signature: "sig_abc",
    });
  });

  it("limits frame cache breakpoints to three (the fourth is the rolling marker)", () => {
    const block = (text: string) => ({
      text,
      stability: "stable" as const,
      cache_breakpoint: true,
    });
    const body = buildAnthropicRequest(
      candidateFor(fake, "anthropic_messages"),
      baseRequest({
        frame: {
          system_prompt: "s",
          system_blocks: [block("a"), block("b"), block("c"), block("d")],
          context_blocks: [],
        },
      }),
    );
    const system = body.system as { text: string; cache_control?: unknown }[];
    expect(system.filter((b) => b.cache_control).map((b) => b.text)).toEqual(["b", "c", "d"]);
  });
});

describe("fake provider Anthropic SSE", () => {
  it("is a feed the vendor SDK can fold into a message", async () => {
    fake.enqueue(
      reply.tools([{ name: "exec_command", arguments: { cmd: "ls" }, call_id: "toolu_s" }], {
        text: "streamed",
      }),
    );
    const client = new Anthropic({
      apiKey: "k",
      baseURL: fake.baseUrl("anthropic"),
      maxRetries: 0,
      logLevel: "off",
    });
    const message = await client.messages
      .stream({ model: "fake-model", max_tokens: 100, messages: [{ role: "user", content: "hi" }] })
      .finalMessage();
    expect(message.content).toMatchObject([
      { type: "text", text: "streamed" },
      { type: "tool_use", id: "toolu_s", name: "exec_command", input: { cmd: "ls" } },
    ]);
    expect(message.stop_reason).toBe("tool_use");
    expect(message.usage.output_tokens).toBe(5);
  });
});
