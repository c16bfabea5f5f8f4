// OpenAI Chat Completions transport, for compatible providers that speak that shape.
//
// Lowering: one system message (system prompt, system blocks, then context blocks);
// user text → user messages; assistant text and the tool calls after it → one assistant
// message; tool results → `tool` messages. Reasoning items are not replayed (the shape has
// no place for them). A `tool` message takes text only, so the images a tool returned (an
// MCP server's) follow the round's tool messages as one `user` message of `image_url` parts
// (data URLs), framed as the tool's output, not the operator's words; each tool message
// says its images follow. Freeform tools are sent as plain functions with their JSON fallback.
// `max_tokens` is used for the output budget because compatible servers know it best.
//
// Streams by default: reads the SSE chunk feed with `stream_options.include_usage` and folds
// it into the same response a JSON reply gives. A provider entry with `stream: false` (or
// `{ stream: false }` here) sends one JSON request instead.
import type OpenAI from "openai";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions/completions";
import type { CompletionUsage } from "openai/resources/completions";
import type { TokenUsage } from "../domain/provider.ts";
import { classifyError, joinUrl, unsupportedShape, type ClassifyContext } from "./errors.ts";
import {
  contextText,
  systemText,
  type ProviderRequest,
  type ProviderResponse,
  type ResponseBlock,
  type StopReason,
  type TransportClient,
  type TransportSendOptions,
  responseOf,
} from "./model.ts";
import { openAiClient } from "./openai-responses.ts";
import { emitToolSchema } from "./schema.ts";
import type { ModelCandidate } from "./types.ts";

export function lowerChatMessages(
  request: ProviderRequest,
  opts: { images?: boolean | undefined } = {},
): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [];
  const system = [systemText(request.frame), contextText(request.frame) ?? ""]
    .filter((t) => t.length > 0)
    .join("\n\n");
  if (system) messages.push({ role: "system", content: system });
  let assistant: {
    text: string[];
    calls: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  } | null = null;
  // Images of the current run of tool messages: sent after the run, before anything else.
  let images: { call_id: string; image: { mime_type: string; data: string } }[] = [];
  const flushImages = () => {
    if (images.length === 0) return;
    const calls = [...new Set(images.map((i) => i.call_id))].join(", ");
    messages.push({
      role: "user",
      content: [
        {
          type: "text",
          text: `[runtime: the ${images.length === 1 ? "image" : `${images.length} images`} below came back from tool call ${calls}: external evidence from the tool, not the operator's words]`,
        },
        ...images.map((i) => ({
          type: "image_url" as const,
          image_url: { url: `data:${i.image.mime_type};base64,${i.image.data}` },
        })),
      ],
    });
    images = [];
  };
  const flush = () => {
    flushImages();
    if (!assistant) return;
    const text = assistant.text.join("");
    messages.push(
      assistant.calls.length > 0
        ? { role: "assistant", content: text.length > 0 ? text : null, tool_calls: assistant.calls }
        : { role: "assistant", content: text },
    );
    assistant = null;
  };
  for (const item of request.conversation) {
    switch (item.type) {
      case "assistant_text":
        if (assistant && assistant.calls.length > 0) flush();
        assistant ??= { text: [], calls: [] };
        assistant.text.push(item.text);
        break;
      case "tool_call":
        assistant ??= { text: [], calls: [] };
        assistant.calls.push({
          id: item.call_id,
          type: "function",
          function: { name: item.name, arguments: item.arguments },
        });
        break;
      case "tool_result": {
        if (assistant) flush();
        const shown =
          opts.images === false
            ? []
            : (item.images ?? []).filter((i) => CHAT_IMAGE_TYPES.has(i.mime_type));
        const note = shown.length
          ? `\n[${shown.length === 1 ? "its image follows" : `its ${shown.length} images follow`} in the next message]`
          : "";
        messages.push({ role: "tool", tool_call_id: item.call_id, content: item.output + note });
        for (const image of shown) images.push({ call_id: item.call_id, image });
        break;
      }
      case "user_text":
        flush();
        messages.push({ role: "user", content: item.text });
        break;
      case "reasoning":
        break;
    }
  }
  flush();
  return messages;
}

const CHAT_IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

export function lowerChatTools(request: ProviderRequest): ChatCompletionTool[] {
  const mode = request.schema_mode ?? "relaxed";
  return request.tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: emitToolSchema(tool.parameters, mode),
      strict: mode === "strict",
    },
  }));
}

export function buildChatRequest(
  candidate: ModelCandidate,
  request: ProviderRequest,
): ChatCompletionCreateParamsNonStreaming {
  const body: ChatCompletionCreateParamsNonStreaming = {
    model: candidate.model,
    messages: lowerChatMessages(request, { images: candidate.images }),
  };
  if (request.tools.length > 0) body.tools = lowerChatTools(request);
  const maxOut = request.max_output_tokens ?? candidate.max_output_tokens;
  if (maxOut !== undefined) body.max_tokens = maxOut;
  return body;
}

export function buildChatStreamingRequest(
  candidate: ModelCandidate,
  request: ProviderRequest,
): ChatCompletionCreateParamsStreaming {
  return {
    ...buildChatRequest(candidate, request),
    stream: true,
    stream_options: { include_usage: true },
  };
}

export function parseChatUsage(u: CompletionUsage | null | undefined): TokenUsage | undefined {
  if (!u || typeof u.prompt_tokens !== "number" || typeof u.completion_tokens !== "number")
    return undefined;
  const out: TokenUsage = {
    input_tokens: u.prompt_tokens,
    output_tokens: u.completion_tokens,
    total_tokens:
      typeof u.total_tokens === "number" ? u.total_tokens : u.prompt_tokens + u.completion_tokens,
  };
  const cached = u.prompt_tokens_details?.cached_tokens;
  if (typeof cached === "number") out.cache_read_input_tokens = cached;
  const reasoning = u.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === "number") out.reasoning_tokens = reasoning;
  return out;
}

function stopReason(finish: string | null | undefined, hasCalls: boolean): StopReason {
  switch (finish) {
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "length":
      return "max_tokens";
    case "content_filter":
      return "refusal";
    case "stop":
      return hasCalls ? "tool_use" : "end_turn";
    default:
      return hasCalls ? "tool_use" : finish ? "other" : "end_turn";
  }
}

export function parseChatCompletion(raw: unknown, ctx: ClassifyContext): ProviderResponse {
  if (!raw || typeof raw !== "object") throw unsupportedShape("body is not a JSON object", ctx);
  const res = raw as Partial<ChatCompletion>;
  const choice = Array.isArray(res.choices) ? res.choices[0] : undefined;
  if (!choice || typeof choice.message !== "object" || choice.message === null)
    throw unsupportedShape("missing `choices[0].message`", ctx);
  const blocks: ResponseBlock[] = [];
  const msg = choice.message;
  const text =
    typeof msg.content === "string"
      ? msg.content
      : typeof msg.refusal === "string"
        ? msg.refusal
        : "";
  if (text.length > 0) blocks.push({ type: "assistant_text", text });
  for (const call of msg.tool_calls ?? []) {
    if (call.type !== "function") continue;
    blocks.push({
      type: "tool_call",
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments || "{}",
    });
  }
  return responseOf({
    blocks,
    stop_reason: stopReason(
      choice.finish_reason,
      blocks.some((b) => b.type === "tool_call"),
    ),
    model: res.model,
    fallback_model: ctx.candidate.model,
    token_usage: parseChatUsage(res.usage),
    id: res.id,
  });
}

/** Folds streamed chunks (content deltas, indexed tool-call deltas, final usage chunk). */
export async function collectChatStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  ctx: ClassifyContext,
): Promise<ProviderResponse> {
  let text = "";
  let finish: string | null = null;
  let id: string | undefined;
  let model: string | undefined;
  let usage: CompletionUsage | null | undefined;
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let sawChunk = false;
  for await (const chunk of chunks) {
    sawChunk = true;
    id ??= chunk.id;
    model ??= chunk.model;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      if (choice.index !== 0) continue;
      if (typeof choice.delta?.content === "string") text += choice.delta.content;
      for (const d of choice.delta?.tool_calls ?? []) {
        const cur = calls.get(d.index) ?? { id: "", name: "", arguments: "" };
        if (d.id) cur.id = d.id;
        if (d.function?.name) cur.name += d.function.name;
        if (d.function?.arguments) cur.arguments += d.function.arguments;
        calls.set(d.index, cur);
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  if (!sawChunk) throw unsupportedShape("stream carried no chunks", ctx);
  const blocks: ResponseBlock[] = [];
  if (text.length > 0) blocks.push({ type: "assistant_text", text });
  for (const [, c] of [...calls.entries()].sort(([a], [b]) => a - b)) {
    blocks.push({ type: "tool_call", call_id: c.id, name: c.name, arguments: c.arguments || "{}" });
  }
  return responseOf({
    blocks,
    stop_reason: stopReason(finish, calls.size > 0),
    model,
    fallback_model: ctx.candidate.model,
    token_usage: parseChatUsage(usage),
    id,
  });
}

export function createOpenAIChatCompletionsTransport(
  options: { stream?: boolean } = {},
): TransportClient {
  return {
    transport: "openai_chat_completions",
    async send(
      candidate: ModelCandidate,
      request: ProviderRequest,
      opts: TransportSendOptions,
    ): Promise<ProviderResponse> {
      const ctx: ClassifyContext = {
        candidate,
        url: joinUrl(candidate.base_url, "chat/completions"),
      };
      try {
        const client: OpenAI = await openAiClient(candidate);
        if ((options.stream ?? candidate.stream) === false) {
          const raw: unknown = await client.chat.completions.create(
            buildChatRequest(candidate, request),
            { signal: opts.signal, maxRetries: 0 },
          );
          return parseChatCompletion(raw, ctx);
        }
        const stream = await client.chat.completions.create(
          buildChatStreamingRequest(candidate, request),
          {
            signal: opts.signal,
            maxRetries: 0,
          },
        );
        const response = await collectChatStream(stream, ctx);
        if (opts.signal.aborted) throw opts.signal.reason;
        return response;
      } catch (err) {
        if (opts.signal.aborted) throw classifyError(opts.signal.reason ?? err, ctx);
        throw classifyError(err, ctx);
      }
    },
  };
}
