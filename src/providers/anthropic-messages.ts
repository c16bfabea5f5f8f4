// Anthropic Messages transport. It streams (SSE, the SDK's message stream accumulating the
// events into the final message) so the retry loop can time out silence rather than length;
// a provider entry with `stream: false` sends the spec's one JSON request. Both parse the
// same final message.
//
// Lowering: `system` is a list of text blocks — the system prompt, the system blocks, then
// the context blocks — and blocks flagged `cache_breakpoint` get `cache_control` (at most
// three, the latest kept). One more, request-local "rolling" marker goes on the last
// cacheable block of the conversation, so each turn reads the previous turn's prefix from
// the cache. Consecutive items of one role merge into one message (tool results first in
// their user message, as the API requires). Freeform tools use their JSON fallback.
// Anthropic thinking blocks are replayed verbatim; other families' reasoning is dropped.
//
// Usage: Anthropic's `input_tokens` excludes cached tokens; the neutral `input_tokens`
// is the sum of uncached, cache-read and cache-write tokens so it compares with OpenAI's.
import type Anthropic from "@anthropic-ai/sdk";
import type {
  ContentBlockParam,
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
  TextBlockParam,
  Tool as AnthropicTool,
  Usage as AnthropicUsage,
} from "@anthropic-ai/sdk/resources/messages/messages";
import type { TokenUsage } from "../domain/provider.ts";
import { classifyError, joinUrl, unsupportedShape, type ClassifyContext } from "./errors.ts";
import {
  argumentsObject,
  type PromptContentBlock,
  type ProviderRequest,
  type ProviderResponse,
  type ResponseBlock,
  type StopReason,
  type TransportClient,
  type TransportSendOptions,
  type ToolResultItem,
  responseOf,
} from "./model.ts";
import { perCandidate, sdkOptions } from "./http-fetch.ts";
import { loadAnthropic } from "./sdk.ts";
import { emitToolSchema } from "./schema.ts";
import type { ModelCandidate } from "./types.ts";

/** Used when neither the request nor the candidate sets an output budget (the field is required). */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;
/** Anthropic allows four cache breakpoints per request; one is kept for the rolling marker. */
const MAX_FRAME_BREAKPOINTS = 3;

const EPHEMERAL = { type: "ephemeral" } as const;

/** An Anthropic SDK client for one candidate, authenticated as its credential says. */
export const anthropicClient = perCandidate(async (candidate): Promise<Anthropic> => {
  const AnthropicSdk = await loadAnthropic();
  const credential = candidate.credential;
  const headers: Record<string, string | null> = { ...(credential?.headers ?? {}) };
  const kind = credential?.kind ?? "none";
  const options = { ...sdkOptions(candidate), defaultHeaders: headers };
  if (kind === "api_key")
    return new AnthropicSdk({ ...options, apiKey: credential?.value ?? null });
  if (kind === "bearer_token" || kind === "session_token") {
    return new AnthropicSdk({ ...options, authToken: credential?.value ?? null });
  }
  // No credential: give the SDK a placeholder so it reads nothing from the environment,
  // then strip every auth header from the wire.
  return new AnthropicSdk({
    ...options,
    apiKey: "holon-no-credential",
    defaultHeaders: { ...headers, "X-Api-Key": null, Authorization: null },
  });
});

export function lowerAnthropicSystem(request: ProviderRequest): TextBlockParam[] {
  const frame = request.frame;
  const blocks: PromptContentBlock[] = [
    { text: frame.system_prompt, stability: "stable" as const, cache_breakpoint: false },
    ...frame.system_blocks,
    ...frame.context_blocks,
  ].filter((b) => b.text.length > 0);
  const flagged = blocks.map((b, i) => (b.cache_breakpoint ? i : -1)).filter((i) => i >= 0);
  const keep = new Set(flagged.slice(-MAX_FRAME_BREAKPOINTS));
  return blocks.map((b, i): TextBlockParam =>
    keep.has(i)
      ? { type: "text", text: b.text, cache_control: EPHEMERAL }
      : { type: "text", text: b.text },
  );
}

export function lowerAnthropicMessages(request: ProviderRequest): MessageParam[] {
  const messages: MessageParam[] = [];
  const push = (role: "user" | "assistant", block: ContentBlockParam) => {
    const last = messages.at(-1);
    if (last && last.role === role && Array.isArray(last.content)) {
      last.content.push(block);
    } else {
      messages.push({ role, content: [block] });
    }
  };
  for (const item of request.conversation) {
    switch (item.type) {
      case "user_text":
        if (item.text.length > 0) push("user", { type: "text", text: item.text });
        break;
      case "tool_result":
        push("user", {
          type: "tool_result",
          tool_use_id: item.call_id,
          content: toolResultContent(item),
          ...(item.is_error ? { is_error: true } : {}),
        });
        break;
      case "assistant_text":
        if (item.text.length > 0) push("assistant", { type: "text", text: item.text });
        break;
      case "tool_call":
        push("assistant", {
          type: "tool_use",
          id: item.call_id,
          name: item.name,
          input: argumentsObject(item.arguments),
        });
        break;
      case "reasoning": {
        if (item.family !== "anthropic_messages") break;
        const data = item.data as { type?: unknown } | null;
        if (data && (data.type === "thinking" || data.type === "redacted_thinking"))
          push("assistant", data as ContentBlockParam);
        break;
      }
    }
  }
  // Tool results must open their user message.
  for (const m of messages) {
    if (m.role === "user" && Array.isArray(m.content)) {
      const content = m.content as ContentBlockParam[];
      m.content = [
        ...content.filter((b) => b.type === "tool_result"),
        ...content.filter((b) => b.type !== "tool_result"),
      ];
    }
  }
  // Rolling cache marker on the latest cacheable conversation block.
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = messages[i]?.content;
    if (!Array.isArray(content)) continue;
    const block = [...content]
      .reverse()
      .find((b) => b.type === "text" || b.type === "tool_use" || b.type === "tool_result");
    if (
      block &&
      (block.type === "text" || block.type === "tool_use" || block.type === "tool_result")
    ) {
      block.cache_control = EPHEMERAL;
      break;
    }
  }
  return messages;
}

export function lowerAnthropicTools(request: ProviderRequest): AnthropicTool[] {
  const mode = request.schema_mode ?? "relaxed";
  return request.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: emitToolSchema(tool.parameters, mode) as AnthropicTool["input_schema"],
  }));
}

export function buildAnthropicRequest(
  candidate: ModelCandidate,
  request: ProviderRequest,
): MessageCreateParamsNonStreaming {
  const body: MessageCreateParamsNonStreaming = {
    model: candidate.model,
    max_tokens:
      request.max_output_tokens ?? candidate.max_output_tokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
    messages: lowerAnthropicMessages(request),
  };
  const system = lowerAnthropicSystem(request);
  if (system.length > 0) body.system = system;
  if (request.tools.length > 0) body.tools = lowerAnthropicTools(request);
  return body;
}

export function parseAnthropicUsage(
  u: Partial<AnthropicUsage> | undefined | null,
): TokenUsage | undefined {
  if (!u || typeof u.input_tokens !== "number" || typeof u.output_tokens !== "number")
    return undefined;
  const read =
    typeof u.cache_read_input_tokens === "number" ? u.cache_read_input_tokens : undefined;
  const written =
    typeof u.cache_creation_input_tokens === "number" ? u.cache_creation_input_tokens : undefined;
  const input = u.input_tokens + (read ?? 0) + (written ?? 0);
  const out: TokenUsage = {
    input_tokens: input,
    output_tokens: u.output_tokens,
    total_tokens: input + u.output_tokens,
  };
  if (read !== undefined) out.cache_read_input_tokens = read;
  if (written !== undefined) out.cache_creation_input_tokens = written;
  return out;
}

function stopReason(reason: string | null | undefined, hasCalls: boolean): StopReason {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return hasCalls ? "tool_use" : "end_turn";
    case "tool_use":
      return "tool_use";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens";
    case "refusal":
      return "refusal";
    default:
      return hasCalls ? "tool_use" : "other";
  }
}

export function parseAnthropicMessage(raw: unknown, ctx: ClassifyContext): ProviderResponse {
  if (!raw || typeof raw !== "object") throw unsupportedShape("body is not a JSON object", ctx);
  const msg = raw as Partial<Message>;
  if (!Array.isArray(msg.content)) throw unsupportedShape("missing `content` array", ctx);
  const blocks: ResponseBlock[] = [];
  for (const block of msg.content) {
    switch (block.type) {
      case "text":
        if (block.text.length > 0) blocks.push({ type: "assistant_text", text: block.text });
        break;
      case "tool_use":
        blocks.push({
          type: "tool_call",
          call_id: block.id,
          name: block.name,
          arguments: JSON.stringify(block.input ?? {}),
        });
        break;
      case "thinking":
        blocks.push({
          type: "reasoning",
          family: "anthropic_messages",
          data: block,
          summary: block.thinking,
        });
        break;
      case "redacted_thinking":
        blocks.push({ type: "reasoning", family: "anthropic_messages", data: block });
        break;
      default:
        break;
    }
  }
  return responseOf({
    blocks,
    stop_reason: stopReason(
      msg.stop_reason,
      blocks.some((b) => b.type === "tool_call"),
    ),
    model: msg.model,
    fallback_model: ctx.candidate.model,
    token_usage: parseAnthropicUsage(msg.usage),
    id: msg.id,
  });
}

export function createAnthropicMessagesTransport(): TransportClient {
  return {
    transport: "anthropic_messages",
    async send(
      candidate: ModelCandidate,
      request: ProviderRequest,
      opts: TransportSendOptions,
    ): Promise<ProviderResponse> {
      const ctx: ClassifyContext = { candidate, url: joinUrl(candidate.base_url, "v1/messages") };
      try {
        const client = await anthropicClient(candidate);
        const body = buildAnthropicRequest(candidate, request);
        const options = { signal: opts.signal, maxRetries: 0 };
        if (candidate.stream === false) {
          const raw: unknown = await client.messages.create(body, options);
          return parseAnthropicMessage(raw, ctx);
        }
        const raw: unknown = await client.messages.stream(body, options).finalMessage();
        if (opts.signal.aborted) throw opts.signal.reason;
        return parseAnthropicMessage(raw, ctx);
      } catch (err) {
        if (opts.signal.aborted) throw classifyError(opts.signal.reason ?? err, ctx);
        throw classifyError(err, ctx);
      }
    },
  };
}

const ANTHROPIC_IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

/** A tool result's content: its text, and the images it returned in the types Anthropic takes. */
function toolResultContent(item: ToolResultItem) {
  const text = item.output.length > 0 ? item.output : "(no output)";
  const images = (item.images ?? []).filter((i) => ANTHROPIC_IMAGE_TYPES.has(i.mime_type));
  if (images.length === 0) return text;
  return [
    { type: "text" as const, text },
    ...images.map((i) => ({
      type: "image" as const,
      source: {
        type: "base64" as const,
        media_type: i.mime_type as "image/png",
        data: i.data,
      },
    })),
  ];
}
