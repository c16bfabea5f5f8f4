// Scripted fake model provider: one HTTP server on 127.0.0.1 that speaks the OpenAI
// Responses (JSON + SSE), Chat Completions (JSON + SSE), Anthropic Messages (JSON + SSE)
// and Codex (`/backend-api/codex/responses`, SSE) wire formats.
//
// Each incoming request takes the next entry of the script (a reply, a fault, or a
// function of the request); when the script is empty the fallback handler answers, or a
// 418 says the script ran out. Every request is recorded (path, headers, parsed body).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type FakeKind = "openai" | "anthropic" | "codex";
export type FakeWire = "responses" | "codex" | "chat" | "anthropic";

export type FakeToolCall = {
  name: string;
  /** JSON arguments (object, or a JSON string sent as-is). */
  arguments?: unknown;
  /** Raw freeform input: sent as a `custom_tool_call` when the request declared a `custom` tool of this name. */
  input?: string;
  call_id?: string;
};

export type FakeUsage = {
  input_tokens?: number;
  output_tokens?: number;
  /** Prompt-cache reads (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`). */
  cached_tokens?: number;
  /** Anthropic `cache_creation_input_tokens`. */
  cache_creation_tokens?: number;
};

export type FakeReply = {
  text?: string;
  tool_calls?: FakeToolCall[];
  /** A reasoning item (Responses) or thinking block (Anthropic) before the text. */
  reasoning?: { summary?: string; encrypted_content?: string; signature?: string };
  usage?: FakeUsage;
  /** Ends as if the output budget ran out. */
  stop?: "end_turn" | "max_tokens";
  /** Codex/Responses SSE: leave `output` empty in the terminal event (client must rebuild it). Default: true for codex. */
  empty_terminal_output?: boolean;
  /** SSE only: wait this long before each event (a slow stream). */
  event_delay_ms?: number;
  /**
   * SSE only: send this many events, then nothing more, keeping the connection open (a stall).
   * A number at least the reply's count of events sends them all and still never ends the body.
   */
  stall_after_events?: number;
};

export type FakeFault =
  | {
      fault: "status";
      status: number;
      message?: string;
      code?: string;
      headers?: Record<string, string>;
    }
  | { fault: "context_length_exceeded" }
  /** Never answers (until the server closes). */
  | { fault: "hang" }
  /** Drops the connection without an answer. */
  | { fault: "reset" }
  /** 200 with a body (or SSE event) that is not valid JSON. */
  | { fault: "invalid_json" }
  /** Responses SSE only: a `response.failed` terminal event with this error code. */
  | { fault: "response_failed"; code: string; message?: string };

export type FakeAnswer = FakeReply | FakeFault;

export type RecordedRequest = {
  method: string;
  path: string;
  wire: FakeWire | null;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** Parsed JSON body (or the raw text when it was not JSON). */
  body: any;
  raw: string;
  /** Whether the client asked for SSE. */
  stream: boolean;
  /** The client's port: requests over one keep-alive connection share it. */
  remote_port: number;
  /**
   * Responses/Codex: true when an earlier request with the same `prompt_cache_key` had a
   * byte-identical cacheable prefix (instructions and tools), as a provider cache would hit.
   */
  cache_hit?: boolean;
};

export type FakeScriptEntry =
  FakeAnswer | ((request: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>);

export type FakeProvider = {
  port: number;
  /** `openai`: `<origin>/v1`; `anthropic`: `<origin>` (the SDK adds `/v1/messages`); `codex`: `<origin><codexPath>`. */
  baseUrl(kind: FakeKind): string;
  enqueue(...entries: FakeScriptEntry[]): void;
  /** Answers requests once the script is empty. */
  setFallback(
    handler: ((request: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>) | null,
  ): void;
  /**
   * Answer the Responses compact route (`POST …/responses/compact`) with the output items the
   * handler returns (wrapped in a `response.compaction` object). Null (the default): no such
   * route, a 404 like an endpoint without compaction.
   */
  setCompact(handler: ((request: RecordedRequest) => unknown[]) | null): void;
  /** Every request received, oldest first. */
  requests: RecordedRequest[];
  /** Entries not consumed yet. */
  pending(): number;
  close(): Promise<void>;
};

/** Shorthands for script entries. */
export const reply = {
  text: (text: string, usage?: FakeUsage): FakeReply => (usage ? { text, usage } : { text }),
  tools: (calls: FakeToolCall[], extra: Omit<FakeReply, "tool_calls"> = {}): FakeReply => ({
    ...extra,
    tool_calls: calls,
  }),
};
export const fault = {
  status: (
    status: number,
    extra: Omit<Extract<FakeFault, { fault: "status" }>, "fault" | "status"> = {},
  ): FakeFault => ({
    fault: "status",
    status,
    ...extra,
  }),
  contextLength: (): FakeFault => ({ fault: "context_length_exceeded" }),
  hang: (): FakeFault => ({ fault: "hang" }),
  reset: (): FakeFault => ({ fault: "reset" }),
  invalidJson: (): FakeFault => ({ fault: "invalid_json" }),
  responseFailed: (code: string, message?: string): FakeFault =>
    message === undefined
      ? { fault: "response_failed", code }
      : { fault: "response_failed", code, message },
};

export async function startFakeProvider(
  options: { codexPath?: string } = {},
): Promise<FakeProvider> {
  const codexPath = (options.codexPath ?? "/backend-api/codex").replace(/\/+$/, "");
  const script: FakeScriptEntry[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let fallback: ((request: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>) | null = null;
  let compactHandler: ((request: RecordedRequest) => unknown[]) | null = null;
  const cachePrefixes = new Map<string, string>();
  let counter = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(599, { "content-type": "text/plain" });
        res.end(`fake provider error: ${String(err)}`);
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: unknown = raw;
    try {
      body = raw.length > 0 ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : (v ?? "");
    const wire: FakeWire | null =
      path === `${codexPath}/responses`
        ? "codex"
        : path.endsWith("/responses")
          ? "responses"
          : path.endsWith("/chat/completions")
            ? "chat"
            : path.endsWith("/messages")
              ? "anthropic"
              : null;
    const stream = !!(
      body &&
      typeof body === "object" &&
      (body as { stream?: unknown }).stream === true
    );
    const recorded: RecordedRequest = {
      method: req.method ?? "GET",
      path,
      wire,
      headers,
      body,
      raw,
      stream,
      remote_port: req.socket.remotePort ?? 0,
    };
    const cacheKey = (body as { prompt_cache_key?: unknown } | null)?.prompt_cache_key;
    if ((wire === "responses" || wire === "codex") && typeof cacheKey === "string") {
      const b = body as { instructions?: unknown; tools?: unknown };
      const prefix = JSON.stringify([b.instructions ?? null, b.tools ?? null]);
      recorded.cache_hit = cachePrefixes.get(cacheKey) === prefix;
      cachePrefixes.set(cacheKey, prefix);
    }
    requests.push(recorded);

    if (compactHandler && req.method === "POST" && path.endsWith("/responses/compact")) {
      const output = compactHandler(recorded);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: `cmp_${++counter}`,
          object: "response.compaction",
          created_at: Math.floor(Date.now() / 1000),
          output,
          usage: {
            input_tokens: Math.ceil(raw.length / 4),
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 50,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: Math.ceil(raw.length / 4) + 50,
          },
        }),
      );
      return;
    }
    if (wire === null || req.method !== "POST") {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: { message: `fake provider: no route ${req.method} ${path}`, type: "not_found" },
        }),
      );
      return;
    }
    const entry = script.shift();
    let answer: FakeAnswer;
    if (entry === undefined) {
      if (!fallback) {
        res.writeHead(418, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            error: { message: "fake provider script exhausted", type: "fake_script_exhausted" },
          }),
        );
        return;
      }
      answer = await fallback(recorded);
    } else {
      answer = typeof entry === "function" ? await entry(recorded) : entry;
    }
    counter += 1;
    if ("fault" in answer) return sendFault(answer, wire, recorded, res, req);
    return sendReply(answer, wire, recorded, res, counter);
  }

  function sendFault(
    f: FakeFault,
    wire: FakeWire,
    request: RecordedRequest,
    res: ServerResponse,
    req: IncomingMessage,
  ): void {
    switch (f.fault) {
      case "hang":
        return;
      case "reset":
        req.socket.resetAndDestroy();
        return;
      case "invalid_json":
        if (request.stream) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(
            wire === "chat" ? "data: {not json\n\n" : "event: message_start\ndata: {not json\n\n",
          );
        } else {
          res.writeHead(200, { "content-type": "application/json" });
          res.end('{"id": "broken", "output": [');
        }
        return;
      case "context_length_exceeded":
        if (wire === "anthropic") {
          return errorResponse(
            res,
            400,
            anthropicError(
              "invalid_request_error",
              "prompt is too long: 250000 tokens > 200000 maximum",
            ),
          );
        }
        return errorResponse(
          res,
          400,
          openAiError(
            "invalid_request_error",
            "Your input exceeds the context window of this model. (maximum context length reached)",
            "context_length_exceeded",
          ),
        );
      case "status": {
        const type = errorType(f.status, wire);
        const message = f.message ?? `fake ${f.status}`;
        const body =
          wire === "anthropic"
            ? anthropicError(type, message)
            : openAiError(type, message, f.code ?? null);
        return errorResponse(res, f.status, body, f.headers);
      }
      case "response_failed": {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const response = {
          ...responsesEnvelope(request, "resp_failed", [], undefined),
          status: "failed",
        };
        res.write(
          sse("response.created", {
            type: "response.created",
            sequence_number: 0,
            response: { ...response, status: "in_progress" },
          }),
        );
        res.end(
          sse("response.failed", {
            type: "response.failed",
            sequence_number: 1,
            response: {
              ...response,
              error: { code: f.code, message: f.message ?? `fake failure ${f.code}` },
            },
          }),
        );
        return;
      }
    }
  }

  function sendReply(
    r: FakeReply,
    wire: FakeWire,
    request: RecordedRequest,
    res: ServerResponse,
    n: number,
  ): void {
    if (request.stream && (r.event_delay_ms !== undefined || r.stall_after_events !== undefined))
      res = paced(res, r.event_delay_ms ?? 0, r.stall_after_events);
    switch (wire) {
      case "responses":
      case "codex":
        return sendResponses(r, wire, request, res, n);
      case "chat":
        return sendChat(r, request, res, n);
      case "anthropic":
        return sendAnthropic(r, request, res, n);
    }
  }

  // ---------------------------------------------------------------- Responses

  function declaredCustom(request: RecordedRequest, name: string): boolean {
    const tools = (request.body as { tools?: { type?: string; name?: string }[] })?.tools ?? [];
    return tools.some((t) => t.type === "custom" && t.name === name);
  }

  function responsesOutput(r: FakeReply, request: RecordedRequest, n: number): any[] {
    const out: any[] = [];
    if (r.reasoning) {
      const item: any = {
        type: "reasoning",
        id: `rs_${n}`,
        summary: r.reasoning.summary ? [{ type: "summary_text", text: r.reasoning.summary }] : [],
      };
      if (r.reasoning.encrypted_content) item.encrypted_content = r.reasoning.encrypted_content;
      out.push(item);
    }
    if (r.text !== undefined) {
      out.push({
        type: "message",
        id: `msg_${n}`,
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: r.text, annotations: [] }],
      });
    }
    (r.tool_calls ?? []).forEach((call, i) => {
      const callId = call.call_id ?? `call_${n}_${i}`;
      if (call.input !== undefined && declaredCustom(request, call.name)) {
        out.push({
          type: "custom_tool_call",
          id: `ctc_${n}_${i}`,
          call_id: callId,
          name: call.name,
          input: call.input,
        });
      } else {
        out.push({
          type: "function_call",
          id: `fc_${n}_${i}`,
          call_id: callId,
          name: call.name,
          arguments: argumentsText(call),
          status: "completed",
        });
      }
    });
    return out;
  }

  function responsesUsage(u: FakeUsage | undefined) {
    const input = u?.input_tokens ?? 10;
    const output = u?.output_tokens ?? 5;
    return {
      input_tokens: input,
      input_tokens_details: { cached_tokens: u?.cached_tokens ?? 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + output,
    };
  }

  function responsesEnvelope(
    request: RecordedRequest,
    id: string,
    output: any[],
    r: FakeReply | undefined,
  ) {
    const body = request.body as { model?: string };
    const incomplete = r?.stop === "max_tokens";
    return {
      id,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status: incomplete ? "incomplete" : "completed",
      incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
      error: null,
      model: body?.model ?? "fake-model",
      output,
      parallel_tool_calls: true,
      tool_choice: "auto",
      tools: [],
      temperature: null,
      top_p: null,
      instructions: null,
      metadata: {},
      usage: responsesUsage(r?.usage),
    };
  }

  function sendResponses(
    r: FakeReply,
    wire: FakeWire,
    request: RecordedRequest,
    res: ServerResponse,
    n: number,
  ): void {
    const output = responsesOutput(r, request, n);
    const full = responsesEnvelope(request, `resp_${n}`, output, r);
    if (!request.stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(full));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    let seq = 0;
    const emit = (type: string, data: Record<string, unknown>) =>
      res.write(sse(type, { type, sequence_number: seq++, ...data }));
    emit("response.created", {
      response: { ...full, status: "in_progress", output: [], usage: null },
    });
    output.forEach((item, index) => {
      emit("response.output_item.added", {
        output_index: index,
        item: { ...item, status: "in_progress" },
      });
      if (item.type === "message") {
        const text: string = item.content[0].text;
        const half = Math.ceil(text.length / 2);
        for (const delta of [text.slice(0, half), text.slice(half)].filter((d) => d.length > 0)) {
          emit("response.output_text.delta", {
            item_id: item.id,
            output_index: index,
            content_index: 0,
            delta,
            logprobs: [],
          });
        }
      }
      emit("response.output_item.done", { output_index: index, item });
    });
    const emptyOutput = r.empty_terminal_output ?? wire === "codex";
    const terminal = full.status === "incomplete" ? "response.incomplete" : "response.completed";
    emit(terminal, { response: { ...full, output: emptyOutput ? [] : output } });
    res.end();
  }

  // ---------------------------------------------------------------- Chat Completions

  function sendChat(r: FakeReply, request: RecordedRequest, res: ServerResponse, n: number): void {
    const body = request.body as { model?: string; stream_options?: { include_usage?: boolean } };
    const model = body?.model ?? "fake-model";
    const calls = (r.tool_calls ?? []).map((c, i) => ({
      id: c.call_id ?? `call_${n}_${i}`,
      type: "function",
      function: { name: c.name, arguments: argumentsText(c) },
    }));
    const finish = r.stop === "max_tokens" ? "length" : calls.length > 0 ? "tool_calls" : "stop";
    const input = r.usage?.input_tokens ?? 10;
    const outputTokens = r.usage?.output_tokens ?? 5;
    const usage = {
      prompt_tokens: input,
      completion_tokens: outputTokens,
      total_tokens: input + outputTokens,
      prompt_tokens_details: { cached_tokens: r.usage?.cached_tokens ?? 0 },
    };
    const id = `chatcmpl-${n}`;
    const created = Math.floor(Date.now() / 1000);
    if (!request.stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: r.text ?? null,
                refusal: null,
                ...(calls.length > 0 ? { tool_calls: calls } : {}),
              },
              finish_reason: finish,
              logprobs: null,
            },
          ],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      res.write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...extra })}\n\n`,
      );
    chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
    if (r.text) {
      const half = Math.ceil(r.text.length / 2);
      for (const piece of [r.text.slice(0, half), r.text.slice(half)].filter((p) => p.length > 0)) {
        chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]);
      }
    }
    calls.forEach((c, index) => {
      chunk([
        {
          index: 0,
          delta: {
            tool_calls: [
              {
                index,
                id: c.id,
                type: "function",
                function: { name: c.function.name, arguments: "" },
              },
            ],
          },
          finish_reason: null,
        },
      ]);
      const args = c.function.arguments;
      const half = Math.ceil(args.length / 2);
      for (const piece of [args.slice(0, half), args.slice(half)].filter((p) => p.length > 0)) {
        chunk([
          {
            index: 0,
            delta: { tool_calls: [{ index, function: { arguments: piece } }] },
            finish_reason: null,
          },
        ]);
      }
    });
    chunk([{ index: 0, delta: {}, finish_reason: finish }]);
    if (body?.stream_options?.include_usage) chunk([], { usage });
    res.end("data: [DONE]\n\n");
  }

  // ---------------------------------------------------------------- Anthropic Messages

  function sendAnthropic(
    r: FakeReply,
    request: RecordedRequest,
    res: ServerResponse,
    n: number,
  ): void {
    const body = request.body as { model?: string };
    const content: any[] = [];
    if (r.reasoning) {
      content.push({
        type: "thinking",
        thinking: r.reasoning.summary ?? "",
        signature: r.reasoning.signature ?? `sig_${n}`,
      });
    }
    if (r.text !== undefined) content.push({ type: "text", text: r.text, citations: null });
    (r.tool_calls ?? []).forEach((c, i) => {
      const input =
        c.arguments === undefined
          ? c.input !== undefined
            ? { input: c.input }
            : {}
          : parseMaybe(c.arguments);
      content.push({ type: "tool_use", id: c.call_id ?? `toolu_${n}_${i}`, name: c.name, input });
    });
    const stop =
      r.stop === "max_tokens"
        ? "max_tokens"
        : (r.tool_calls ?? []).length > 0
          ? "tool_use"
          : "end_turn";
    const usage = {
      input_tokens: r.usage?.input_tokens ?? 10,
      output_tokens: r.usage?.output_tokens ?? 5,
      cache_creation_input_tokens: r.usage?.cache_creation_tokens ?? 0,
      cache_read_input_tokens: r.usage?.cached_tokens ?? 0,
    };
    const message = {
      id: `msg_${n}`,
      type: "message",
      role: "assistant",
      model: body?.model ?? "fake-model",
      content,
      stop_reason: stop,
      stop_sequence: null,
      usage,
    };
    if (!request.stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(message));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const emit = (type: string, data: Record<string, unknown>) =>
      res.write(sse(type, { type, ...data }));
    emit("message_start", {
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { ...usage, output_tokens: 1 },
      },
    });
    content.forEach((block, index) => {
      if (block.type === "text") {
        emit("content_block_start", { index, content_block: { type: "text", text: "" } });
        emit("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
      } else if (block.type === "tool_use") {
        emit("content_block_start", {
          index,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        });
        emit("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
        });
      } else {
        emit("content_block_start", {
          index,
          content_block: { type: "thinking", thinking: "", signature: "" },
        });
        emit("content_block_delta", {
          index,
          delta: { type: "thinking_delta", thinking: block.thinking },
        });
        emit("content_block_delta", {
          index,
          delta: { type: "signature_delta", signature: block.signature },
        });
      }
      emit("content_block_stop", { index });
    });
    emit("message_delta", {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    });
    emit("message_stop", {});
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;

  return {
    port,
    baseUrl: (kind) =>
      kind === "openai" ? `${origin}/v1` : kind === "anthropic" ? origin : `${origin}${codexPath}`,
    enqueue: (...entries) => {
      script.push(...entries);
    },
    setCompact: (handler) => {
      compactHandler = handler;
    },
    setFallback: (handler) => {
      fallback = handler;
    },
    requests,
    pending: () => script.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------- helpers

/**
 * A response whose writes (one SSE event each) are played out with a delay before each, and
 * cut off (connection left open, nothing more sent) after `stallAfter` of them.
 */
function paced(res: ServerResponse, delayMs: number, stallAfter?: number): ServerResponse {
  const queue: string[] = [];
  const play = async () => {
    for (let i = 0; i < queue.length; i++) {
      if (stallAfter !== undefined && i >= stallAfter) return;
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      if (res.destroyed) return;
      res.write(queue[i]!);
    }
    if (stallAfter !== undefined && stallAfter >= queue.length) return;
    res.end();
  };
  const shim = {
    writeHead: (...args: Parameters<ServerResponse["writeHead"]>) => {
      res.writeHead(...args);
      res.flushHeaders();
      return shim;
    },
    write: (chunk: string) => {
      queue.push(chunk);
      return true;
    },
    end: (chunk?: string) => {
      if (chunk) queue.push(chunk);
      void play();
      return shim;
    },
  };
  return shim as unknown as ServerResponse;
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function argumentsText(call: FakeToolCall): string {
  if (call.arguments === undefined)
    return call.input !== undefined ? JSON.stringify({ input: call.input }) : "{}";
  return typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
}

function parseMaybe(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return { _raw: value };
  }
}

function errorType(status: number, wire: FakeWire): string {
  if (wire === "anthropic") {
    if (status === 401) return "authentication_error";
    if (status === 403) return "permission_error";
    if (status === 404) return "not_found_error";
    if (status === 429) return "rate_limit_error";
    if (status === 529) return "overloaded_error";
    if (status >= 500) return "api_error";
    return "invalid_request_error";
  }
  if (status === 401) return "invalid_api_key";
  if (status === 429) return "rate_limit_exceeded";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

function openAiError(type: string, message: string, code: string | null) {
  return { error: { message, type, param: null, code } };
}

function anthropicError(type: string, message: string) {
  return { type: "error", error: { type, message } };
}

function errorResponse(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
