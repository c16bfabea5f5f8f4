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
  ContinuationCache,
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

describe("provider-shaped continuation window", () => {
  const LEAD = { type: "message", role: "developer", content: "Context: workspace /tmp/x" };

  it("a multi-round turn chains previous_response_id and sends only the new provider items", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue(
      reply.tools([{ name: "exec_command", arguments: { cmd: "ls" }, call_id: "call_1" }], {
        reasoning: { summary: "look first", encrypted_content: "ENC-R1" },
      }),
      reply.tools([{ name: "apply_patch", arguments: { patch: "*** diff" }, call_id: "call_2" }]),
      reply.text("all done"),
    );
    const tools = [shellTool, patchTool];
    const req1 = baseRequest({ tools });
    const scope = ContinuationCache.scopeOf(candidate, req1);
    const r1 = await transport.send(candidate, req1, { signal: signal() });
    expect(r1.continuation).toMatchObject({ reason: "no_previous_exchange", intentional: false });
    let win = transport.continuation.window(scope)!;
    expect(win.response_id).toBe(r1.response_id);
    // sent: developer message + user message; returned: reasoning + function_call
    expect(win.items.map((i: any) => i.type ?? "message")).toEqual([
      "message",
      "message",
      "reasoning",
      "function_call",
    ]);
    expect([win.sent_items, win.returned_items, win.compaction_indexes]).toEqual([2, 2, []]);

    const conv2: ConversationItem[] = [
      ...req1.conversation,
      ...r1.blocks,
      { type: "tool_result", call_id: "call_1", output: "a.txt", is_error: false },
    ];
    const r2 = await transport.send(
      candidate,
      { ...req1, conversation: conv2 },
      { signal: signal() },
    );
    expect(r2.incremental).toBe(true);
    expect(fake.requests[1]?.body.previous_response_id).toBe(r1.response_id);
    expect(fake.requests[1]?.body.input).toEqual([
      { type: "function_call_output", call_id: "call_1", output: "a.txt" },
    ]);

    // Previewing another request (`plan`) leaves the window alone.
    const before = transport.continuation.window(scope);
    const preview = transport.plan(candidate, {
      ...req1,
      conversation: [{ type: "user_text", text: "something else" }],
    });
    expect(preview.previous_response_id).toBeUndefined();
    expect(transport.continuation.window(scope)).toBe(before);

    const conv3: ConversationItem[] = [
      ...conv2,
      ...r2.blocks,
      { type: "tool_result", call_id: "call_2", output: "patched", is_error: false },
    ];
    const r3 = await transport.send(
      candidate,
      { ...req1, conversation: conv3 },
      { signal: signal() },
    );
    expect(r3.incremental).toBe(true);
    expect(r3.blocks).toEqual([{ type: "assistant_text", text: "all done" }]);
    const body3 = fake.requests[2]?.body;
    expect(body3.previous_response_id).toBe(r2.response_id);
    // the freeform call went back as a custom tool call, so its result is a custom output
    expect(body3.input).toEqual([
      { type: "custom_tool_call_output", call_id: "call_2", output: "patched" },
    ]);
    win = transport.continuation.window(scope)!;
    expect(win.response_id).toBe(r3.response_id);
    expect(win.items).toHaveLength(2 + 2 + 1 + 1 + 1 + 1);
    expect(win.items[0]).toEqual(LEAD);
    expect(win.items.at(-1)).toEqual({ type: "message", role: "assistant", content: "all done" });
    expect([win.sent_items, win.returned_items, win.pending]).toEqual([1, 1, []]);
    expect(win.origin).toBe("exchange");
  });

  it("chains across equal requests built afresh, and goes out in full when the tools, system prompt or schema mode change", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    let conversation: ConversationItem[] = [{ type: "user_text", text: "one" }];
    const send = async (overrides: Partial<ProviderRequest>) => {
      fake.enqueue(reply.text(`answer ${fake.requests.length + 1}`));
      const res = await transport.send(candidate, baseRequest({ conversation, ...overrides }), {
        signal: signal(),
      });
      conversation = [...conversation, ...res.blocks, { type: "user_text", text: "more" }];
      return res;
    };
    await send({ tools: [shellTool] });
    // Equal content in new objects (a new tool array, a new frame): the same shape.
    const again = await send({ tools: [structuredClone(shellTool)] });
    expect(again.incremental).toBe(true);
    const changed = [
      await send({ tools: [shellTool, patchTool] }),
      await send({
        tools: [shellTool, patchTool],
        frame: { ...baseRequest().frame, system_prompt: "You are another agent." },
      }),
      await send({ tools: [shellTool, patchTool], schema_mode: "strict" }),
    ];
    for (const res of changed) {
      expect(res.incremental).toBeUndefined();
      expect(res.continuation).toMatchObject({ reason: "request_shape_changed" });
    }
    expect(fake.requests.map((r) => r.body.previous_response_id === undefined)).toEqual([
      true,
      false,
      true,
      true,
      true,
    ]);
  });

  it("a diverging input goes out in full with the reason, and continuation resumes after it", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue(
      reply.tools([{ name: "exec_command", arguments: { cmd: "ls" }, call_id: "call_1" }]),
      reply.tools([{ name: "exec_command", arguments: { cmd: "ls -l" }, call_id: "call_2" }]),
      reply.tools([{ name: "exec_command", arguments: { cmd: "pwd" }, call_id: "call_3" }]),
      reply.text("four"),
      reply.text("five"),
      reply.text("six"),
    );
    const req = baseRequest();
    const r1 = await transport.send(candidate, req, { signal: signal() });
    const result = (id: string, output: string): ConversationItem => ({
      type: "tool_result",
      call_id: id,
      output,
      is_error: false,
    });
    const conv2 = [...req.conversation, ...r1.blocks, result("call_1", "a.txt")];
    const r2 = await transport.send(
      candidate,
      { ...req, conversation: conv2 },
      { signal: signal() },
    );
    expect(r2.incremental).toBe(true);

    // Local compaction rewrote the history: the runtime says so, the request goes out whole.
    const recap: ConversationItem = { type: "user_text", text: "[recap] round 1 ran ls" };
    const conv3 = [...req.conversation, recap, ...r2.blocks, result("call_2", "total 0")];
    const r3 = await transport.send(
      candidate,
      { ...req, conversation: conv3, continuation_reset: "turn_local_recap" },
      { signal: signal() },
    );
    expect(r3.incremental).toBeUndefined();
    expect(r3.continuation).toMatchObject({
      reason: "compaction_reset",
      compaction: "turn_local_recap",
      intentional: true,
      // the recap took the place of the first reply's function call
      first_mismatch_index: 2,
      expected_type: "function_call",
      actual_type: "message",
    });
    expect(fake.requests[2]?.body.previous_response_id).toBeUndefined();
    expect(fake.requests[2]?.body.input).toHaveLength(1 + conv3.length);

    // ...and the next round continues from that full request.
    const conv4 = [...conv3, ...r3.blocks, result("call_3", "/tmp/x")];
    const r4 = await transport.send(
      candidate,
      { ...req, conversation: conv4 },
      { signal: signal() },
    );
    expect(r4.incremental).toBe(true);
    expect(fake.requests[3]?.body.previous_response_id).toBe(r3.response_id);
    expect(fake.requests[3]?.body.input).toEqual([
      { type: "function_call_output", call_id: "call_3", output: "/tmp/x" },
    ]);

    // Unannounced drift (a tool output changed in place): full, and flagged as unexpected,
    // with the first mismatch located in provider shape.
    const drifted = conv4.map((it) =>
      it.type === "tool_result" && it.call_id === "call_2" ? result("call_2", "CHANGED") : it,
    );
    const conv5 = [...drifted, ...r4.blocks, { type: "user_text", text: "next" } as const];
    const r5 = await transport.send(
      candidate,
      { ...req, conversation: conv5 },
      { signal: signal() },
    );
    expect(r5.continuation).toMatchObject({
      reason: "conversation_not_strict_append_only",
      intentional: false,
      first_mismatch_index: 4,
      expected_type: "function_call_output",
      expected_id: "call_2",
      actual_type: "function_call_output",
      actual_id: "call_2",
    });
    const d = r5.continuation as { expected_hash: string; actual_hash: string };
    expect(d.expected_hash).not.toBe(d.actual_hash);
    expect(fake.requests[4]?.body.previous_response_id).toBeUndefined();
    const conv6 = [...conv5, ...r5.blocks, { type: "user_text", text: "more" } as const];
    const r6 = await transport.send(
      candidate,
      { ...req, conversation: conv6 },
      { signal: signal() },
    );
    expect(r6.incremental).toBe(true);
    expect(fake.requests[5]?.body.previous_response_id).toBe(r5.response_id);
  });

  it("after a remote compaction the next request replays the compacted window, then continues incrementally; a second compaction keeps both items", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    let compactions = 0;
    fake.setCompact((r) => {
      compactions++;
      // like OpenAI: earlier compaction items stay, a new one covers the rest
      const kept = (r.body.input as any[]).filter((i) => i.type === "compaction");
      return [
        ...kept,
        { type: "message", role: "user", content: [{ type: "input_text", text: "hello" }] },
        {
          type: "compaction",
          id: `cmp_item_${compactions}`,
          encrypted_content: `ENC-${compactions}`,
        },
      ];
    });
    try {
      fake.enqueue(
        reply.tools([{ name: "exec_command", arguments: { cmd: "ls" }, call_id: "call_1" }]),
        reply.tools([{ name: "exec_command", arguments: { cmd: "pwd" }, call_id: "call_2" }]),
        reply.tools([{ name: "exec_command", arguments: { cmd: "id" }, call_id: "call_3" }]),
        reply.tools([{ name: "exec_command", arguments: { cmd: "df" }, call_id: "call_4" }]),
        reply.text("done"),
      );
      const req = baseRequest();
      const scope = ContinuationCache.scopeOf(candidate, req);
      const result = (id: string): ConversationItem => ({
        type: "tool_result",
        call_id: id,
        output: `out ${id}`,
        is_error: false,
      });
      const r1 = await transport.send(candidate, req, { signal: signal() });
      const conv1 = [...req.conversation, ...r1.blocks, result("call_1")];

      // (c) compact the window, then replay it.
      const c1 = await transport.compact(candidate, { ...req, conversation: conv1 }, signal());
      if (!c1.ok) throw new Error(c1.message);
      let win = transport.continuation.window(scope)!;
      expect(win).toMatchObject({ origin: "remote_compaction", response_id: null });
      expect(win.items[0]).toEqual(LEAD);
      expect(win.compaction_indexes).toEqual([2]);
      const window1: ConversationItem = {
        type: "provider_window",
        family: "openai_responses",
        items: c1.items,
      };
      const r2 = await transport.send(
        candidate,
        { ...req, conversation: [window1], continuation_reset: "remote_compaction" },
        { signal: signal() },
      );
      expect(r2.continuation).toMatchObject({
        reason: "compaction_reset",
        compaction: "remote_compaction",
        intentional: true,
        window_replayed: true,
        compaction_items: 1,
      });
      const body2 = fake.requests.at(-1)!.body;
      expect(body2.previous_response_id).toBeUndefined();
      expect(body2.input).toEqual([LEAD, ...c1.items]);
      expect(JSON.stringify(body2.input)).toContain("ENC-1");
      expect(JSON.stringify(body2.input)).not.toContain("out call_1");

      const conv2 = [window1, ...r2.blocks, result("call_2")];
      const r3 = await transport.send(
        candidate,
        { ...req, conversation: conv2 },
        { signal: signal() },
      );
      expect(r3.incremental).toBe(true);
      expect(fake.requests.at(-1)!.body.previous_response_id).toBe(r2.response_id);
      expect(fake.requests.at(-1)!.body.input).toEqual([
        { type: "function_call_output", call_id: "call_2", output: "out call_2" },
      ]);
      win = transport.continuation.window(scope)!;
      expect(win.compaction_indexes).toEqual([2]);
      expect(win.latest_compaction_index).toBe(2);

      // (d) a second compaction: the window now holds two compaction items, replayed as-is.
      const conv3 = [...conv2, ...r3.blocks, result("call_3")];
      const c2 = await transport.compact(candidate, { ...req, conversation: conv3 }, signal());
      if (!c2.ok) throw new Error(c2.message);
      expect(c2.compaction_items).toBe(2);
      win = transport.continuation.window(scope)!;
      expect(win.compaction_indexes).toEqual([1, 3]);
      expect(win.latest_compaction_index).toBe(3);
      const window2: ConversationItem = {
        type: "provider_window",
        family: "openai_responses",
        items: c2.items,
      };
      const r4 = await transport.send(
        candidate,
        { ...req, conversation: [window2], continuation_reset: "remote_compaction" },
        { signal: signal() },
      );
      expect(r4.continuation).toMatchObject({ window_replayed: true, compaction_items: 2 });
      const body4 = fake.requests.at(-1)!.body;
      expect(body4.input).toEqual([LEAD, ...c2.items]);
      expect(body4.input.filter((i: any) => i.type === "compaction")).toEqual([
        { type: "compaction", id: "cmp_item_1", encrypted_content: "ENC-1" },
        { type: "compaction", id: "cmp_item_2", encrypted_content: "ENC-2" },
      ]);

      const conv4 = [window2, ...r4.blocks, result("call_4")];
      const r5 = await transport.send(
        candidate,
        { ...req, conversation: conv4 },
        { signal: signal() },
      );
      expect(r5.incremental).toBe(true);
      expect(r5.blocks).toEqual([{ type: "assistant_text", text: "done" }]);
      expect(fake.requests.at(-1)!.body.input).toEqual([
        { type: "function_call_output", call_id: "call_4", output: "out call_4" },
      ]);
      win = transport.continuation.window(scope)!;
      expect(win.response_id).toBe(r5.response_id);
      expect(win.compaction_indexes).toEqual([1, 3]);
      expect(win.latest_compaction_index).toBe(3);
      expect(win.origin).toBe("remote_compaction");
    } finally {
      fake.setCompact(null);
    }
  });

  it("a compacted window the next request does not replay is dropped and reported as such", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.setCompact(() => [{ type: "compaction", id: "cmp_x", encrypted_content: "ENC-X" }]);
    try {
      fake.enqueue(reply.text("one"), reply.text("two"));
      const req = baseRequest();
      const scope = ContinuationCache.scopeOf(candidate, req);
      const c = await transport.compact(candidate, req, signal());
      expect(c.ok).toBe(true);
      // the runtime sent its local history instead of the compacted window
      const r1 = await transport.send(candidate, req, { signal: signal() });
      expect(r1.continuation).toMatchObject({
        reason: "compaction_reset",
        window_replayed: false,
        first_mismatch_index: 1,
        expected_type: "compaction",
        actual_type: "message",
      });
      expect(transport.continuation.window(scope)).toMatchObject({ origin: "exchange" });
      const conv = [...req.conversation, ...r1.blocks, { type: "user_text", text: "x" } as const];
      const r2 = await transport.send(
        candidate,
        { ...req, conversation: conv },
        { signal: signal() },
      );
      expect(r2.incremental).toBe(true);
    } finally {
      fake.setCompact(null);
    }
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
