// OpenAI-family transports against the fake provider: Responses (JSON), Codex (SSE) and
// Chat Completions (JSON and SSE). Checks both what Holon sent and what it understood.
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
} from "openai/resources/chat/completions/completions";
import type {
  ResponseCreateParamsNonStreaming,
  ResponseCreateParamsStreaming,
} from "openai/resources/responses/responses";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ConversationItem, ProviderRequest } from "../src/providers/model.ts";
import {
  buildChatRequest,
  buildChatStreamingRequest,
  createOpenAIChatCompletionsTransport,
} from "../src/providers/openai-chat-completions.ts";
import { buildCodexRequest, createOpenAICodexTransport } from "../src/providers/openai-codex.ts";
import {
  buildResponsesRequest,
  createOpenAIResponsesTransport,
} from "../src/providers/openai-responses.ts";
import { ProviderError } from "../src/providers/errors.ts";
import {
  baseRequest,
  candidateFor,
  patchTool,
  SECRET,
  shellTool,
} from "./fake-provider/fixtures.ts";
import { fault, reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

// Top-level request fields each transport may send (all exist in the SDK param types).
const RESPONSES_FIELDS = new Set<keyof ResponseCreateParamsNonStreaming>([
  "stream",
  "model",
  "input",
  "instructions",
  "tools",
  "parallel_tool_calls",
  "max_output_tokens",
  "prompt_cache_key",
  "previous_response_id",
]);
const CODEX_FIELDS = new Set<keyof ResponseCreateParamsStreaming>([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "reasoning",
  "store",
  "stream",
  "include",
  "prompt_cache_key",
]);
const CHAT_FIELDS = new Set<keyof ChatCompletionCreateParamsStreaming>([
  "model",
  "messages",
  "tools",
  "max_tokens",
  "stream",
  "stream_options",
]);

const signal = () => new AbortController().signal;

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

/** A conversation that has been through one parallel tool round. */
function toolRoundConversation(): ConversationItem[] {
  return [
    { type: "user_text", text: "list files twice" },
    { type: "assistant_text", text: "Running both." },
    { type: "tool_call", call_id: "call_a", name: "exec_command", arguments: '{"cmd":"ls"}' },
    { type: "tool_call", call_id: "call_b", name: "exec_command", arguments: '{"cmd":"ls -a"}' },
    { type: "tool_result", call_id: "call_a", output: "a.txt", is_error: false },
    {
      type: "tool_result",
      call_id: "call_b",
      output: '{"ok":false,"kind":"spawn_failed"}',
      is_error: true,
    },
  ];
}

describe("openai_responses transport", () => {
  it("round-trips text, parallel tool calls and usage, and sends only SDK-typed fields", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses", { max_output_tokens: 2048 });
    fake.enqueue(
      reply.tools(
        [
          { name: "exec_command", arguments: { cmd: "ls" }, call_id: "call_1" },
          { name: "exec_command", arguments: { cmd: "pwd" }, call_id: "call_2" },
        ],
        {
          text: "Let me look.",
          usage: { input_tokens: 120, output_tokens: 30, cached_tokens: 100 },
        },
      ),
    );
    const request = baseRequest();
    const planned: ResponseCreateParamsNonStreaming = transport.plan(candidate, request);
    const response = await transport.send(candidate, request, { signal: signal() });

    expect(response.blocks).toEqual([
      { type: "assistant_text", text: "Let me look." },
      { type: "tool_call", call_id: "call_1", name: "exec_command", arguments: '{"cmd":"ls"}' },
      { type: "tool_call", call_id: "call_2", name: "exec_command", arguments: '{"cmd":"pwd"}' },
    ]);
    expect(response.stop_reason).toBe("tool_use");
    expect(response.token_usage).toEqual({
      input_tokens: 120,
      output_tokens: 30,
      total_tokens: 150,
      cache_read_input_tokens: 100,
      reasoning_tokens: 0,
    });
    expect(response.response_id).toMatch(/^resp_/);

    const sent = fake.requests[0];
    expect(sent?.path).toBe("/v1/responses");
    expect(sent?.headers["authorization"]).toBe(`Bearer ${SECRET}`);
    // Streamed by default: the planned body plus `stream: true`.
    expect(sent?.body).toEqual({ ...JSON.parse(JSON.stringify(planned)), stream: true });
    for (const key of Object.keys(sent?.body))
      expect(RESPONSES_FIELDS.has(key as never), key).toBe(true);
    expect(sent?.body.instructions).toBe("You are a test agent.\n\nStable guidance.");
    expect(sent?.body.prompt_cache_key).toBe("pck_agent_1_v1");
    expect(sent?.body.max_output_tokens).toBe(2048);
    expect(sent?.body.input).toEqual([
      { type: "message", role: "developer", content: "Context: workspace /tmp/x" },
      { type: "message", role: "user", content: "hello" },
    ]);
    expect(sent?.body.tools).toEqual([
      {
        type: "function",
        name: "exec_command",
        description: "Run a shell command.",
        parameters: {
          type: "object",
          properties: { cmd: { type: "string" }, timeout_ms: { type: "integer" } },
          required: ["cmd"],
          additionalProperties: false,
        },
        strict: false,
      },
    ]);
  });

  it("replays tool calls and tool results as function_call / function_call_output items", async () => {
    const transport = createOpenAIResponsesTransport({ incremental: false });
    fake.enqueue(reply.text("Both listed."));
    const request = baseRequest({ conversation: toolRoundConversation() });
    const response = await transport.send(candidateFor(fake, "openai_responses"), request, {
      signal: signal(),
    });
    expect(response.blocks).toEqual([{ type: "assistant_text", text: "Both listed." }]);
    expect(response.stop_reason).toBe("end_turn");
    expect(fake.requests[0]?.body.input.slice(1)).toEqual([
      { type: "message", role: "user", content: "list files twice" },
      { type: "message", role: "assistant", content: "Running both." },
      { type: "function_call", call_id: "call_a", name: "exec_command", arguments: '{"cmd":"ls"}' },
      {
        type: "function_call",
        call_id: "call_b",
        name: "exec_command",
        arguments: '{"cmd":"ls -a"}',
      },
      { type: "function_call_output", call_id: "call_a", output: "a.txt" },
      {
        type: "function_call_output",
        call_id: "call_b",
        output: '{"ok":false,"kind":"spawn_failed"}',
      },
    ]);
  });

  it("lowers a freeform tool to a custom lark tool and wraps its call input as JSON arguments", async () => {
    const transport = createOpenAIResponsesTransport({ incremental: false });
    const diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
    fake.enqueue(reply.tools([{ name: "apply_patch", input: diff, call_id: "call_p" }]));
    const request = baseRequest({ tools: [shellTool, patchTool] });
    const response = await transport.send(candidateFor(fake, "openai_responses"), request, {
      signal: signal(),
    });
    expect(fake.requests[0]?.body.tools[1]).toEqual({
      type: "custom",
      name: "apply_patch",
      description: "Apply a unified diff.",
      format: { type: "grammar", syntax: "lark", definition: patchTool.freeform?.definition },
    });
    expect(response.blocks).toEqual([
      {
        type: "tool_call",
        call_id: "call_p",
        name: "apply_patch",
        arguments: JSON.stringify({ patch: diff }),
      },
    ]);

    // Replayed as custom_tool_call + custom_tool_call_output.
    fake.enqueue(reply.text("patched"));
    const next: ProviderRequest = {
      ...request,
      conversation: [
        ...request.conversation,
        ...response.blocks,
        { type: "tool_result", call_id: "call_p", output: "ok", is_error: false },
      ],
    };
    await transport.send(candidateFor(fake, "openai_responses"), next, { signal: signal() });
    expect(fake.requests[1]?.body.input.slice(-2)).toEqual([
      { type: "custom_tool_call", call_id: "call_p", name: "apply_patch", input: diff },
      { type: "custom_tool_call_output", call_id: "call_p", output: "ok" },
    ]);
  });

  it("emits strict schemas when asked", () => {
    const body = buildResponsesRequest(
      candidateFor(fake, "openai_responses"),
      baseRequest({ schema_mode: "strict" }),
    );
    expect(body.tools?.[0]).toMatchObject({
      strict: true,
      parameters: {
        required: ["cmd", "timeout_ms"],
        properties: { timeout_ms: { type: ["integer", "null"] } },
        additionalProperties: false,
      },
    });
  });

  it("maps an incomplete (max_output_tokens) response to stop_reason max_tokens", async () => {
    const transport = createOpenAIResponsesTransport({ incremental: false });
    fake.enqueue({ text: "partial", stop: "max_tokens" });
    const response = await transport.send(candidateFor(fake, "openai_responses"), baseRequest(), {
      signal: signal(),
    });
    expect(response.stop_reason).toBe("max_tokens");
    expect(response.blocks).toEqual([{ type: "assistant_text", text: "partial" }]);
  });
});

describe("previous_response_id continuation", () => {
  it("sends only the new items for a strict append-only extension", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue(
      reply.tools([{ name: "exec_command", arguments: { cmd: "ls" }, call_id: "call_1" }]),
      reply.text("done"),
    );
    const first = baseRequest();
    const r1 = await transport.send(candidate, first, { signal: signal() });
    const second: ProviderRequest = {
      ...first,
      conversation: [
        ...first.conversation,
        ...r1.blocks,
        { type: "tool_result", call_id: "call_1", output: "a.txt", is_error: false },
      ],
    };
    const r2 = await transport.send(candidate, second, { signal: signal() });
    expect(r2.incremental).toBe(true);
    const body = fake.requests[1]?.body;
    expect(body.previous_response_id).toBe(r1.response_id);
    expect(body.input).toEqual([
      { type: "function_call_output", call_id: "call_1", output: "a.txt" },
    ]);
    expect(body.instructions).toBe(fake.requests[0]?.body.instructions);
    expect(body.prompt_cache_key).toBe("pck_agent_1_v1");
  });

  it("sends the full request after a tool-catalog change", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue(reply.text("one"), reply.text("two"));
    const first = baseRequest();
    const r1 = await transport.send(candidate, first, { signal: signal() });
    const second: ProviderRequest = {
      ...first,
      tools: [shellTool, patchTool],
      conversation: [...first.conversation, ...r1.blocks, { type: "user_text", text: "again" }],
    };
    await transport.send(candidate, second, { signal: signal() });
    const body = fake.requests[1]?.body;
    expect(body.previous_response_id).toBeUndefined();
    expect(body.input).toHaveLength(4);
  });

  it("sends the full request when history was rewritten, the frame changed, or there is no cache identity", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue(
      reply.text("one"),
      reply.text("two"),
      reply.text("three"),
      reply.text("four"),
      reply.text("five"),
    );
    const first = baseRequest();
    const r1 = await transport.send(candidate, first, { signal: signal() });
    // History rewritten (first user message changed).
    const rewritten: ProviderRequest = {
      ...first,
      conversation: [
        { type: "user_text", text: "HELLO" },
        ...r1.blocks,
        { type: "user_text", text: "again" },
      ],
    };
    const r2 = await transport.send(candidate, rewritten, { signal: signal() });
    expect(fake.requests[1]?.body.previous_response_id).toBeUndefined();
    // Turn-scoped context changed: the frame is part of the prefix, so full again.
    const changedFrame: ProviderRequest = {
      ...rewritten,
      frame: {
        ...rewritten.frame,
        context_blocks: [
          { text: "Context: other", stability: "turn_scoped", cache_breakpoint: false },
        ],
      },
      conversation: [...rewritten.conversation, ...r2.blocks, { type: "user_text", text: "more" }],
    };
    const r3 = await transport.send(candidate, changedFrame, { signal: signal() });
    expect(fake.requests[2]?.body.previous_response_id).toBeUndefined();
    // Same frame, append-only: incremental.
    const appended: ProviderRequest = {
      ...changedFrame,
      conversation: [...changedFrame.conversation, ...r3.blocks, { type: "user_text", text: "x" }],
    };
    await transport.send(candidate, appended, { signal: signal() });
    expect(fake.requests[3]?.body.previous_response_id).toBe(r3.response_id);
    // No cache identity: never incremental.
    const { cache: _cache, ...frameNoCache } = appended.frame;
    await transport.send(candidate, { ...appended, frame: frameNoCache }, { signal: signal() });
    expect(fake.requests[4]?.body.previous_response_id).toBeUndefined();
    expect(fake.requests[4]?.body.prompt_cache_key).toBeUndefined();
  });

  it("sends the full request after a provider error in the same scope", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue(reply.text("one"), fault.status(500), reply.text("three"));
    const first = baseRequest();
    const r1 = await transport.send(candidate, first, { signal: signal() });
    const second: ProviderRequest = {
      ...first,
      conversation: [...first.conversation, ...r1.blocks, { type: "user_text", text: "again" }],
    };
    await expect(transport.send(candidate, second, { signal: signal() })).rejects.toBeInstanceOf(
      ProviderError,
    );
    expect(fake.requests[1]?.body.previous_response_id).toBe(r1.response_id);
    await transport.send(candidate, second, { signal: signal() });
    expect(fake.requests[2]?.body.previous_response_id).toBeUndefined();
  });

  it("falls back to the full request once when the provider rejects the continuation", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue(
      reply.text("one"),
      fault.status(400, { code: "previous_response_not_found" }),
      reply.text("two"),
    );
    const first = baseRequest();
    const r1 = await transport.send(candidate, first, { signal: signal() });
    const second: ProviderRequest = {
      ...first,
      conversation: [...first.conversation, ...r1.blocks, { type: "user_text", text: "again" }],
    };
    const r2 = await transport.send(candidate, second, { signal: signal() });
    expect(r2.blocks).toEqual([{ type: "assistant_text", text: "two" }]);
    expect(fake.requests[1]?.body.previous_response_id).toBe(r1.response_id);
    expect(fake.requests[2]?.body.previous_response_id).toBeUndefined();
    expect(fake.requests[2]?.body.input).toHaveLength(4);
  });
});

describe("openai_codex_responses transport", () => {
  it("streams, follows the codex request shape, and rebuilds output from output_item.done", async () => {
    const transport = createOpenAICodexTransport();
    const candidate = candidateFor(fake, "openai_codex_responses", {
      max_output_tokens: 4096,
      credential: {
        kind: "bearer_token",
        value: SECRET,
        source_label: "external_cli:codex",
        headers: { "chatgpt-account-id": "acct_1" },
      },
    });
    fake.enqueue(
      reply.tools(
        [
          { name: "exec_command", arguments: { cmd: "ls" }, call_id: "c1" },
          { name: "exec_command", arguments: { cmd: "pwd" }, call_id: "c2" },
        ],
        {
          text: "Looking.",
          reasoning: { summary: "think" },
          usage: { input_tokens: 50, output_tokens: 7 },
        },
      ),
    );
    const request = baseRequest({ max_output_tokens: 999 });
    const planned: ResponseCreateParamsStreaming = buildCodexRequest(candidate, request);
    const response = await transport.send(candidate, request, { signal: signal() });

    const sent = fake.requests[0];
    expect(sent?.path).toBe("/backend-api/codex/responses");
    expect(sent?.headers["authorization"]).toBe(`Bearer ${SECRET}`);
    expect(sent?.headers["chatgpt-account-id"]).toBe("acct_1");
    expect(sent?.body).toEqual(JSON.parse(JSON.stringify(planned)));
    for (const key of Object.keys(sent?.body))
      expect(CODEX_FIELDS.has(key as never), key).toBe(true);
    expect("max_output_tokens" in sent?.body).toBe(false);
    expect("previous_response_id" in sent?.body).toBe(false);
    expect(sent?.body).toMatchObject({
      stream: true,
      store: false,
      reasoning: null,
      include: [],
      tool_choice: "auto",
      parallel_tool_calls: true,
    });
    expect(sent?.body.instructions).toBe("You are a test agent.\n\nStable guidance.");

    expect(response.blocks.map((b) => b.type)).toEqual([
      "reasoning",
      "assistant_text",
      "tool_call",
      "tool_call",
    ]);
    expect(response.blocks.slice(1)).toEqual([
      { type: "assistant_text", text: "Looking." },
      { type: "tool_call", call_id: "c1", name: "exec_command", arguments: '{"cmd":"ls"}' },
      { type: "tool_call", call_id: "c2", name: "exec_command", arguments: '{"cmd":"pwd"}' },
    ]);
    expect(response.token_usage).toMatchObject({
      input_tokens: 50,
      output_tokens: 7,
      total_tokens: 57,
    });
  });

  it("always sends instructions and drops reasoning items it cannot replay statelessly", async () => {
    const transport = createOpenAICodexTransport();
    fake.enqueue(reply.text("ok"));
    const request = baseRequest({
      frame: { system_prompt: "", system_blocks: [], context_blocks: [] },
      conversation: [
        { type: "user_text", text: "hi" },
        {
          type: "reasoning",
          family: "openai_responses",
          data: { type: "reasoning", id: "rs_1", summary: [] },
        },
        {
          type: "reasoning",
          family: "openai_responses",
          data: { type: "reasoning", id: "rs_2", summary: [], encrypted_content: "enc" },
        },
        { type: "assistant_text", text: "hello" },
        { type: "user_text", text: "and?" },
      ],
    });
    await transport.send(candidateFor(fake, "openai_codex_responses"), request, {
      signal: signal(),
    });
    const body = fake.requests[0]?.body;
    expect(body.instructions).toBe("");
    expect(body.input).toEqual([
      { type: "message", role: "user", content: "hi" },
      { type: "reasoning", summary: [], encrypted_content: "enc" },
      { type: "message", role: "assistant", content: "hello" },
      { type: "message", role: "user", content: "and?" },
    ]);
  });

  it("classifies response.failed by its error code", async () => {
    const transport = createOpenAICodexTransport();
    const candidate = candidateFor(fake, "openai_codex_responses");
    fake.enqueue(
      fault.responseFailed("rate_limit_exceeded"),
      fault.responseFailed("context_length_exceeded"),
      fault.responseFailed("invalid_prompt"),
    );
    const kinds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const err = await transport
        .send(candidate, baseRequest(), { signal: signal() })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      kinds.push((err as ProviderError).kind);
    }
    expect(kinds).toEqual(["http_429", "context_length_exceeded", "response_failed"]);
  });

  it("maps response.incomplete to stop_reason max_tokens", async () => {
    fake.enqueue({ text: "cut", stop: "max_tokens" });
    const response = await createOpenAICodexTransport().send(
      candidateFor(fake, "openai_codex_responses"),
      baseRequest(),
      { signal: signal() },
    );
    expect(response.stop_reason).toBe("max_tokens");
    expect(response.blocks).toEqual([{ type: "assistant_text", text: "cut" }]);
  });
});

describe("openai_chat_completions transport", () => {
  for (const stream of [false, true]) {
    it(`round-trips text, parallel tool calls, tool results and usage (${stream ? "SSE" : "JSON"})`, async () => {
      const transport = createOpenAIChatCompletionsTransport({ stream });
      const candidate = candidateFor(fake, "openai_chat_completions", {
        provider_id: "compat",
        model_ref: "compat/fake-model",
      });
      fake.enqueue(
        reply.tools(
          [
            { name: "exec_command", arguments: { cmd: "ls" }, call_id: "call_x" },
            { name: "exec_command", arguments: { cmd: "pwd" }, call_id: "call_y" },
          ],
          { text: "Both.", usage: { input_tokens: 40, output_tokens: 9, cached_tokens: 32 } },
        ),
      );
      const request = baseRequest({
        conversation: toolRoundConversation(),
        max_output_tokens: 512,
      });
      const planned: ChatCompletionCreateParamsNonStreaming | ChatCompletionCreateParamsStreaming =
        stream
          ? buildChatStreamingRequest(candidate, request)
          : buildChatRequest(candidate, request);
      const response = await transport.send(candidate, request, { signal: signal() });

      expect(response.blocks).toEqual([
        { type: "assistant_text", text: "Both." },
        { type: "tool_call", call_id: "call_x", name: "exec_command", arguments: '{"cmd":"ls"}' },
        { type: "tool_call", call_id: "call_y", name: "exec_command", arguments: '{"cmd":"pwd"}' },
      ]);
      expect(response.stop_reason).toBe("tool_use");
      expect(response.token_usage).toEqual({
        input_tokens: 40,
        output_tokens: 9,
        total_tokens: 49,
        cache_read_input_tokens: 32,
      });

      const sent = fake.requests[0];
      expect(sent?.path).toBe("/v1/chat/completions");
      expect(sent?.body).toEqual(JSON.parse(JSON.stringify(planned)));
      for (const key of Object.keys(sent?.body))
        expect(CHAT_FIELDS.has(key as never), key).toBe(true);
      if (stream) expect(sent?.body.stream_options).toEqual({ include_usage: true });
      expect(sent?.body.messages).toEqual([
        {
          role: "system",
          content: "You are a test agent.\n\nStable guidance.\n\nContext: workspace /tmp/x",
        },
        { role: "user", content: "list files twice" },
        {
          role: "assistant",
          content: "Running both.",
          tool_calls: [
            {
              id: "call_a",
              type: "function",
              function: { name: "exec_command", arguments: '{"cmd":"ls"}' },
            },
            {
              id: "call_b",
              type: "function",
              function: { name: "exec_command", arguments: '{"cmd":"ls -a"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_a", content: "a.txt" },
        { role: "tool", tool_call_id: "call_b", content: '{"ok":false,"kind":"spawn_failed"}' },
      ]);
      expect(sent?.body.max_tokens).toBe(512);
    });
  }

  it("sends freeform tools as plain functions with the JSON fallback", async () => {
    fake.enqueue(reply.tools([{ name: "apply_patch", arguments: { patch: "diff" } }]));
    const response = await createOpenAIChatCompletionsTransport().send(
      candidateFor(fake, "openai_chat_completions"),
      baseRequest({ tools: [patchTool] }),
      { signal: signal() },
    );
    expect(fake.requests[0]?.body.tools[0]).toMatchObject({
      type: "function",
      function: { name: "apply_patch", parameters: { required: ["patch"] } },
    });
    expect(response.blocks).toEqual([
      {
        type: "tool_call",
        call_id: expect.any(String),
        name: "apply_patch",
        arguments: '{"patch":"diff"}',
      },
    ]);
  });
});

describe("credentials", () => {
  it("sends no Authorization header for a candidate without a credential", async () => {
    fake.enqueue(reply.text("hi"));
    await createOpenAIResponsesTransport().send(
      candidateFor(fake, "openai_responses", { credential: null }),
      baseRequest(),
      {
        signal: signal(),
      },
    );
    expect(fake.requests[0]?.headers["authorization"]).toBeUndefined();
  });
});
