// The Responses transport's own wire path: the request body encoded per head (the same bytes
// JSON.stringify gives), the SSE body read without the SDK's stream object, and the
// keep-alive connection kept across rounds although the reader stops at the terminal event.
import { Readable } from "node:stream";
import type { ResponseCreateParamsNonStreaming } from "openai/resources/responses/responses";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LiteHeaders, LiteResponse, sseEvents, type SseEvent } from "../src/providers/lite-web.ts";
import type { ProviderRequest } from "../src/providers/model.ts";
import type { ModelCandidate } from "../src/providers/types.ts";
import {
  createOpenAIResponsesTransport,
  encodeResponsesBody,
  responsesRequestHead,
} from "../src/providers/openai-responses.ts";
import { baseRequest, candidateFor, patchTool, shellTool } from "./fake-provider/fixtures.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

const signal = () => new AbortController().signal;

/** The body as the transport used to write it: JSON.stringify, the tools spliced in last. */
function reference(
  head: Omit<ResponseCreateParamsNonStreaming, "input">,
  input: unknown[],
  prev: string | undefined,
  stream: boolean,
): string {
  const body: Record<string, unknown> = Object.assign({ model: head.model, input }, head);
  if (prev !== undefined) body.previous_response_id = prev;
  const { tools, ...rest } = body as { tools?: unknown[] };
  if (tools === undefined || tools.length === 0) {
    return JSON.stringify(stream ? { ...body, stream: true } : body);
  }
  return JSON.stringify({ ...(stream ? { ...rest, stream: true } : rest), tools });
}

describe("encodeResponsesBody", () => {
  const candidate = {
    model_ref: "openai/m",
    provider_id: "openai",
    model: "m",
    transport: "openai_responses" as const,
    base_url: "http://127.0.0.1:1/v1",
  } as ModelCandidate;
  const input = [
    { type: "message" as const, role: "user" as const, content: 'héllo — 部署 \u2028 "q"' },
  ];
  const requests: [string, ProviderRequest][] = [
    ["tools, instructions and a cache key", baseRequest()],
    ["a freeform tool", { ...baseRequest(), tools: [shellTool, patchTool] }],
    ["no tools", { ...baseRequest(), tools: [] }],
    [
      "no system text and no cache identity",
      {
        ...baseRequest(),
        frame: { system_prompt: "", system_blocks: [], context_blocks: [] },
        max_output_tokens: 77,
      },
    ],
  ];
  for (const [name, request] of requests) {
    it(`gives JSON.stringify's bytes: ${name}`, () => {
      const head = responsesRequestHead(candidate, request);
      for (const prev of [undefined, "resp_7"]) {
        for (const stream of [true, false]) {
          const bytes = encodeResponsesBody({ head, input, previous_response_id: prev }, stream);
          expect(bytes.toString("utf8")).toBe(reference(head, input, prev, stream));
          // The head's part is reused, never the input's.
          const again = encodeResponsesBody(
            { head, input: [], previous_response_id: prev },
            stream,
          );
          expect(again.toString("utf8")).toBe(reference(head, [], prev, stream));
        }
      }
    });
  }
});

/** A LiteResponse over the given body chunks, as providerFetch would answer. */
function responseOf(chunks: (string | Buffer)[]): Response {
  const source = Readable.from(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c)));
  const meta = { status: 200, statusText: "OK", headers: new LiteHeaders(), url: "http://x/" };
  return new LiteResponse(meta, source) as unknown as Response;
}

async function collect(response: Response): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of sseEvents(response)) out.push(e);
  return out;
}

describe("sseEvents", () => {
  const text =
    ": a comment\r\n" +
    "event: response.created\r\n" +
    'data: {"a":1}\r\n' +
    "\r\n" +
    "event:no-space\n" +
    "data: line one\n" +
    "data:line two\n" +
    "id: 3\n" +
    "\n" +
    "data: 部署 — ünïcode\r" +
    "\r" +
    "\n\n" +
    "data: [DONE]\n\n" +
    "event: cut\n" +
    "data: never ended";
  const expected: SseEvent[] = [
    { event: "response.created", data: '{"a":1}' },
    { event: "no-space", data: "line one\nline two" },
    { event: null, data: "部署 — ünïcode" },
    { event: null, data: "[DONE]" },
  ];

  it("parses CRLF, LF and CR lines, comments, joined data and drops an event cut off", async () => {
    expect(await collect(responseOf([text]))).toEqual(expected);
  });

  it("fails a body whose line never ends past its cap, and reads a long line cut into many chunks", async () => {
    const chunk = "x".repeat(1024 * 1024);
    const endless = ["data: ", ...Array.from({ length: 17 }, () => chunk)];
    await expect(collect(responseOf(endless))).rejects.toThrow(/longer than/);
    const long = ["data: ", ...Array.from({ length: 8 }, () => chunk), "\n\n"];
    const events = await collect(responseOf(long));
    expect(events.map((e) => e.data.length)).toEqual([8 * chunk.length]);
  });

  it("gives the same events however the body is cut into chunks", async () => {
    const bytes = Buffer.from(text);
    // Every split point, multi-byte characters and CR|LF pairs included.
    for (let i = 1; i < bytes.length; i++) {
      const parts = [bytes.subarray(0, i), bytes.subarray(i)];
      expect(await collect(responseOf(parts)), `split at ${i}`).toEqual(expected);
    }
    const single = [...bytes].map((b) => Buffer.from([b]));
    expect(await collect(responseOf(single))).toEqual(expected);
  });

  it("reads a body that the caller already turned into a web stream", async () => {
    const response = responseOf([text]);
    expect(response.body).not.toBeNull();
    expect(await collect(response)).toEqual(expected);
    await expect(collect(response)).rejects.toThrow(/already been read/);
  });
});

describe("the Responses transport over the fake's SSE", () => {
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

  it("keeps one keep-alive connection across rounds and sends JSON.stringify's bytes", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    let request = baseRequest();
    for (let i = 0; i < 5; i++) {
      fake.enqueue(reply.tools([{ name: "exec_command", arguments: { cmd: "ls" } }]));
      const planned = transport.plan(candidate, request);
      const res = await transport.send(candidate, request, { signal: signal() });
      const call = res.blocks.find((b) => b.type === "tool_call")!;
      const { tools, ...rest } = planned;
      expect(fake.requests[i]!.raw).toBe(JSON.stringify({ ...rest, stream: true, tools }));
      request = {
        ...request,
        conversation: [
          ...request.conversation,
          ...res.blocks,
          {
            type: "tool_result",
            call_id: (call as { call_id: string }).call_id,
            output: "ok",
            is_error: false,
          },
        ],
      };
      // The round after the reply: as the runtime does, the next request comes later.
      await new Promise((r) => setImmediate(r));
    }
    expect(fake.requests.slice(1).every((q) => q.body.previous_response_id)).toBe(true);
    expect(new Set(fake.requests.map((q) => q.remote_port)).size).toBe(1);
  });

  it("answers at the terminal event of a body that never ends, and the next round still goes", async () => {
    const transport = createOpenAIResponsesTransport();
    const candidate = candidateFor(fake, "openai_responses");
    fake.enqueue({ ...reply.text("held open"), stall_after_events: 1_000 }, reply.text("next"));
    const first = await transport.send(candidate, baseRequest(), { signal: signal() });
    expect(first.blocks).toEqual([{ type: "assistant_text", text: "held open" }]);
    const second = await transport.send(candidate, baseRequest(), { signal: signal() });
    expect(second.blocks).toEqual([{ type: "assistant_text", text: "next" }]);
    // The held connection was still busy: the second round took another.
    expect(fake.requests[0]!.remote_port).not.toBe(fake.requests[1]!.remote_port);
  });
});
