// OpenAI Responses transport, plus the Responses lowering and parsing shared with the Codex
// transport. It streams (SSE) and folds the events into the terminal response, so the retry
// loop can time out silence rather than length; a provider entry with `stream: false` sends
// the same body as one JSON request (the spec's shape). Either way the parsed response is the
// same.
//
// Lowering: system prompt + system blocks → `instructions`; context blocks → a leading
// `developer` message; conversation → input items; tools → `function` tools, or `custom`
// grammar tools for freeform ones. `prompt_cache_key` is sent when the frame has a cache
// identity, and a later turn may be sent as `previous_response_id` + only the new items
// (see `ContinuationCache`, which keeps an OpenAI-shaped provider window per scope).
import { createHash } from "node:crypto";
import type OpenAI from "openai";
import type {
  Response as OpenAIResponse,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
  ResponseOutputItem,
  ResponseReasoningItem,
  ResponseStreamEvent,
  ResponseUsage,
  Tool as ResponsesTool,
} from "openai/resources/responses/responses";
import type { TokenUsage } from "../domain/provider.ts";
import {
  ProviderError,
  classifyError,
  joinUrl,
  streamErrorToProviderError,
  unsupportedShape,
  type ClassifyContext,
} from "./errors.ts";
import {
  contextText,
  systemText,
  type ConversationItem,
  type ProviderRequest,
  type ProviderResponse,
  type ResponseBlock,
  type StopReason,
  type SchemaMode,
  type ToolSpec,
  type TransportClient,
  type TransportSendOptions,
  responseOf,
  stableJson,
  toolSetDigest,
} from "./model.ts";
import { perCandidate, sdkOptions } from "./http-fetch.ts";
import { sseEvents } from "./lite-web.ts";
import { loadOpenAI } from "./sdk.ts";
import { emitToolSchema } from "./schema.ts";
import type { ModelCandidate } from "./types.ts";

// ---------------------------------------------------------------------------
// SDK client

/** An OpenAI SDK client for one candidate: no SDK retries, no environment fallbacks. */
export const openAiClient = perCandidate(async (candidate): Promise<OpenAI> => {
  const OpenAISdk = await loadOpenAI();
  const credential = candidate.credential;
  const headers: Record<string, string | null> = { ...(credential?.headers ?? {}) };
  // Without a credential the SDK still wants a key; send none on the wire.
  if (!credential || credential.kind === "none") headers["Authorization"] = null;
  return new OpenAISdk({
    ...sdkOptions(candidate),
    apiKey: credential && credential.kind !== "none" ? credential.value : "holon-no-credential",
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    defaultHeaders: headers,
  });
});

// ---------------------------------------------------------------------------
// Lowering

export type ResponsesLoweringOptions = {
  /** Lower freeform tools to `custom` grammar tools (true for Responses and Codex). */
  native_freeform: boolean;
  /** Drop reasoning items that carry no `encrypted_content` (stateless `store: false` backends). */
  require_encrypted_reasoning: boolean;
};

function freeformTools(tools: readonly ToolSpec[], native: boolean): Map<string, string> {
  const map = new Map<string, string>();
  if (!native) return map;
  for (const t of tools) if (t.freeform) map.set(t.name, t.freeform.input_field);
  return map;
}

/**
 * The lowered tools, memoized per tool list (the runtime hands every turn of an agent the
 * same array, see `toolSetDigest`) and lowering: every request sends them, and emitting the
 * schemas again for each was wasted work. The result is shared: treat it as read-only.
 */
const loweredTools = new WeakMap<readonly ToolSpec[], Map<string, ResponsesTool[]>>();

export function lowerResponsesTools(
  tools: readonly ToolSpec[],
  request: ProviderRequest,
  native: boolean,
): ResponsesTool[] {
  const mode = request.schema_mode ?? "relaxed";
  let byMode = loweredTools.get(tools);
  if (byMode === undefined) {
    byMode = new Map();
    loweredTools.set(tools, byMode);
  }
  const key = `${mode}:${native}`;
  let out = byMode.get(key);
  if (out === undefined) {
    out = lowerTools(tools, mode, native);
    byMode.set(key, out);
  }
  return out;
}

function lowerTools(
  tools: readonly ToolSpec[],
  mode: SchemaMode,
  native: boolean,
): ResponsesTool[] {
  return tools.map((tool): ResponsesTool => {
    if (native && tool.freeform) {
      return {
        type: "custom",
        name: tool.name,
        description: tool.description,
        format: {
          type: "grammar",
          syntax: tool.freeform.syntax,
          definition: tool.freeform.definition,
        },
      };
    }
    return {
      type: "function",
      name: tool.name,
      description: tool.description,
      parameters: emitToolSchema(tool.parameters, mode),
      strict: mode === "strict",
    };
  });
}

type LowerState = {
  freeform: Map<string, string>;
  /** Call ids of the `custom` tool calls seen so far (their results are `custom_tool_call_output`). */
  customCalls: Set<string>;
};

/** Lowers one conversation item (records a custom call in `st` for its later result). */
function lowerOne(
  item: ConversationItem,
  st: LowerState,
  options: ResponsesLoweringOptions,
): ResponseInputItem[] {
  switch (item.type) {
    case "user_text":
      return [{ type: "message", role: "user", content: item.text }];
    case "assistant_text":
      return [{ type: "message", role: "assistant", content: item.text }];
    case "tool_call": {
      const field = st.freeform.get(item.name);
      if (field !== undefined) {
        st.customCalls.add(item.call_id);
        return [
          {
            type: "custom_tool_call",
            call_id: item.call_id,
            name: item.name,
            input: freeformInput(item.arguments, field),
          },
        ];
      }
      return [
        {
          type: "function_call",
          call_id: item.call_id,
          name: item.name,
          arguments: item.arguments,
        },
      ];
    }
    case "tool_result":
      return st.customCalls.has(item.call_id)
        ? [{ type: "custom_tool_call_output", call_id: item.call_id, output: item.output }]
        : [
            {
              type: "function_call_output",
              call_id: item.call_id,
              output: item.images?.length
                ? [
                    { type: "input_text", text: item.output },
                    ...item.images.map((i) => ({
                      type: "input_image" as const,
                      image_url: `data:${i.mime_type};base64,${i.data}`,
                      detail: "auto" as const,
                    })),
                  ]
                : item.output,
            },
          ];
    case "reasoning": {
      if (item.family !== "openai_responses") return [];
      const data = item.data as ResponseReasoningItem | null;
      if (!data || typeof data !== "object" || data.type !== "reasoning") return [];
      if (options.require_encrypted_reasoning) {
        if (!data.encrypted_content) return [];
        const { id: _id, status: _status, ...rest } = data;
        return [rest as ResponseReasoningItem];
      }
      return [data];
    }
    case "provider_window":
      // A compacted window from /responses/compact: replayed exactly as returned.
      return item.items as ResponseInputItem[];
  }
}

/**
 * Lowers `conversation[from..]` to input items. Earlier items are still read to know
 * whether a tool result answers a `custom` or a `function` call.
 */
export function lowerResponsesInput(
  conversation: readonly ConversationItem[],
  tools: readonly ToolSpec[],
  options: ResponsesLoweringOptions,
  from = 0,
): ResponseInputItem[] {
  const st: LowerState = {
    freeform: freeformTools(tools, options.native_freeform),
    customCalls: new Set(),
  };
  const out: ResponseInputItem[] = [];
  conversation.forEach((item, index) => {
    if (index >= from) out.push(...lowerOne(item, st, options));
    else if (item.type === "tool_call" && st.freeform.has(item.name))
      st.customCalls.add(item.call_id);
  });
  return out;
}

/** Input items with the canonical JSON of each (what the continuation window compares). */
export type KeyedItems = { items: ResponseInputItem[]; keys: string[] };

/**
 * The lowering of each conversation item and its canonical JSON, memoized per item object.
 * Conversation items are immutable once appended (the turn loop only appends, compaction
 * builds new arrays around the same objects), so a long turn lowers and serializes only its
 * new items each round. `variant` covers what else the lowering depended on.
 */
const lowered = new WeakMap<
  object,
  { options: ResponsesLoweringOptions; variant: string; out: KeyedItems }
>();

function variantOf(item: ConversationItem, st: LowerState): string {
  if (item.type === "tool_call") {
    const field = st.freeform.get(item.name);
    return field === undefined ? "function" : `custom:${field}`;
  }
  if (item.type === "tool_result") return st.customCalls.has(item.call_id) ? "custom" : "function";
  return "";
}

/** `lowerResponsesInput` of the whole conversation, with the canonical JSON of every item. */
export function lowerResponsesInputKeyed(
  conversation: readonly ConversationItem[],
  tools: readonly ToolSpec[],
  options: ResponsesLoweringOptions,
): KeyedItems {
  const st: LowerState = {
    freeform: freeformTools(tools, options.native_freeform),
    customCalls: new Set(),
  };
  const items: ResponseInputItem[] = [];
  const keys: string[] = [];
  for (const item of conversation) {
    const variant = variantOf(item, st);
    let memo = lowered.get(item);
    if (!memo || memo.options !== options || memo.variant !== variant) {
      const out = lowerOne(item, st, options);
      memo = { options, variant, out: { items: out, keys: out.map(stableJson) } };
      lowered.set(item, memo);
    } else if (item.type === "tool_call" && st.freeform.has(item.name)) {
      st.customCalls.add(item.call_id);
    }
    for (const it of memo.out.items) items.push(it);
    for (const k of memo.out.keys) keys.push(k);
  }
  return { items, keys };
}

/** The raw freeform input carried in JSON-fallback arguments. */
function freeformInput(args: string, field: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (
      parsed &&
      typeof parsed === "object" &&
      typeof (parsed as Record<string, unknown>)[field] === "string"
    ) {
      return (parsed as Record<string, string>)[field] as string;
    }
  } catch {
    // not JSON: the arguments are the raw input
  }
  return args;
}

/** Leading input items of the frame: the context blocks as one developer message. */
export function frameInput(request: ProviderRequest): ResponseInputItem[] {
  const ctx = contextText(request.frame);
  return ctx === null ? [] : [{ type: "message", role: "developer", content: ctx }];
}

/** Everything of a Responses request but its input: depends only on the candidate, frame and tools. */
export function responsesRequestHead(
  candidate: ModelCandidate,
  request: ProviderRequest,
): Omit<ResponseCreateParamsNonStreaming, "input"> {
  const head: Omit<ResponseCreateParamsNonStreaming, "input"> = { model: candidate.model };
  const instructions = systemText(request.frame);
  if (instructions) head.instructions = instructions;
  if (request.tools.length > 0) {
    head.tools = lowerResponsesTools(request.tools, request, true);
    head.parallel_tool_calls = true;
  }
  const maxOut = request.max_output_tokens ?? candidate.max_output_tokens;
  if (maxOut !== undefined) head.max_output_tokens = maxOut;
  if (request.frame.cache) head.prompt_cache_key = request.frame.cache.prompt_cache_key;
  return head;
}

function withInput(
  head: Omit<ResponseCreateParamsNonStreaming, "input">,
  input: ResponseInputItem[],
): ResponseCreateParamsNonStreaming {
  // `model` then `input` first, as a hand-written request reads.
  return Object.assign({ model: head.model, input }, head) as ResponseCreateParamsNonStreaming;
}

/** The JSON text of a lowered tool list, kept per (memoized, shared) list. */
const toolsJson = new WeakMap<readonly ResponsesTool[], string>();

/** The bytes of a request that depend only on its head, kept per head object. */
type HeadBytes = {
  /** `{"model":…,"input":` */
  open: Buffer;
  /** The head's other fields but the tools, each after a comma (or nothing). */
  middle: Buffer;
  /** `,"tools":[…]}`, or `}` when the tool list is empty or absent. */
  close: Buffer;
};

const headBytes = new WeakMap<object, HeadBytes>();

function headBytesOf(head: Omit<ResponseCreateParamsNonStreaming, "input">): HeadBytes {
  let bytes = headBytes.get(head);
  if (bytes === undefined) {
    const { model, ...rest } = head;
    const tools = head.tools;
    const spliced = tools !== undefined && tools !== null && tools.length > 0;
    let close = "}";
    if (spliced) {
      delete rest.tools;
      let json = toolsJson.get(tools);
      if (json === undefined) {
        json = JSON.stringify(tools);
        toolsJson.set(tools, json);
      }
      close = `,"tools":${json}}`;
    }
    const restJson = JSON.stringify(rest);
    bytes = {
      open: Buffer.from(`{"model":${JSON.stringify(model)},"input":`),
      middle: Buffer.from(restJson === "{}" ? "" : `,${restJson.slice(1, -1)}`),
      close: Buffer.from(close),
    };
    headBytes.set(head, bytes);
  }
  return bytes;
}

/** What one POST to `/responses` carries: the head, the input items, maybe the chain link. */
type Wire = {
  head: Omit<ResponseCreateParamsNonStreaming, "input">;
  input: ResponseInputItem[];
  previous_response_id?: string | undefined;
};

/**
 * The request body as bytes, the same bytes `JSON.stringify` gives for the body object
 * (`model`, `input`, the head's fields, `previous_response_id`, `stream`, then the tools).
 * The head's part (instructions and tool schemas: most of a request) is encoded once per
 * head, which every round of a turn shares, so a round serializes and encodes only its
 * input items. The SDK passes a byte body with a content type through unchanged; its auth,
 * retries (off), timeout and stream handling are those of `responses.create`.
 */
export function encodeResponsesBody(wire: Wire, stream: boolean): Buffer {
  const { open, middle, close } = headBytesOf(wire.head);
  const prev = wire.previous_response_id;
  const after =
    (prev !== undefined ? `,"previous_response_id":${JSON.stringify(prev)}` : "") +
    (stream ? `,"stream":true` : "");
  const parts = [open, Buffer.from(JSON.stringify(wire.input)), middle];
  if (after) parts.push(Buffer.from(after));
  parts.push(close);
  return Buffer.concat(parts);
}

function encoded(wire: Wire, stream: boolean, signal: AbortSignal) {
  return {
    body: encodeResponsesBody(wire, stream),
    headers: { "content-type": "application/json" },
    stream,
    signal,
    maxRetries: 0,
  };
}

const LOWERING: ResponsesLoweringOptions = {
  native_freeform: true,
  require_encrypted_reasoning: false,
};

/** The full non-streaming Responses request for a candidate. */
export function buildResponsesRequest(
  candidate: ModelCandidate,
  request: ProviderRequest,
): ResponseCreateParamsNonStreaming {
  return withInput(responsesRequestHead(candidate, request), [
    ...frameInput(request),
    ...lowerResponsesInput(request.conversation, request.tools, LOWERING),
  ]);
}

// ---------------------------------------------------------------------------
// Parsing

export function parseResponsesUsage(u: ResponseUsage | undefined | null): TokenUsage | undefined {
  if (
    !u ||
    typeof u !== "object" ||
    typeof u.input_tokens !== "number" ||
    typeof u.output_tokens !== "number"
  )
    return undefined;
  const out: TokenUsage = {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    total_tokens:
      typeof u.total_tokens === "number" ? u.total_tokens : u.input_tokens + u.output_tokens,
  };
  const cached = u.input_tokens_details?.cached_tokens;
  if (typeof cached === "number") out.cache_read_input_tokens = cached;
  const written = u.input_tokens_details?.cache_write_tokens;
  if (typeof written === "number" && written > 0) out.cache_creation_input_tokens = written;
  const reasoning = u.output_tokens_details?.reasoning_tokens;
  if (typeof reasoning === "number") out.reasoning_tokens = reasoning;
  return out;
}

/** Output items → neutral blocks. Unknown item types (server-side tools) are skipped. */
export function parseResponsesOutput(
  output: readonly ResponseOutputItem[],
  tools: readonly ToolSpec[],
): ResponseBlock[] {
  const freeform = freeformTools(tools, true);
  const blocks: ResponseBlock[] = [];
  for (const item of output) {
    switch (item.type) {
      case "message": {
        const text = item.content
          .map((part) =>
            part.type === "output_text" ? part.text : part.type === "refusal" ? part.refusal : "",
          )
          .join("");
        if (text.length > 0) blocks.push({ type: "assistant_text", text });
        break;
      }
      case "function_call":
        blocks.push({
          type: "tool_call",
          call_id: item.call_id,
          name: item.name,
          arguments: item.arguments,
        });
        break;
      case "custom_tool_call": {
        const field = freeform.get(item.name) ?? "input";
        blocks.push({
          type: "tool_call",
          call_id: item.call_id,
          name: item.name,
          arguments: JSON.stringify({ [field]: item.input }),
        });
        break;
      }
      case "reasoning": {
        const summary = (item.summary ?? []).map((s) => s.text).join("\n");
        blocks.push(
          summary
            ? { type: "reasoning", family: "openai_responses", data: item, summary }
            : { type: "reasoning", family: "openai_responses", data: item },
        );
        break;
      }
      default:
        break;
    }
  }
  return blocks;
}

/** Validates a Responses object and converts it (the caller handles `failed`). */
export function parseResponsesResponse(
  raw: unknown,
  tools: readonly ToolSpec[],
  ctx: ClassifyContext,
): ProviderResponse {
  if (!raw || typeof raw !== "object") throw unsupportedShape("body is not a JSON object", ctx);
  const res = raw as Partial<OpenAIResponse>;
  if (!Array.isArray(res.output)) throw unsupportedShape("missing `output` array", ctx);
  if (res.status === "failed" || (res.error && typeof res.error === "object")) {
    throw streamFailure(res, ctx);
  }
  const blocks = parseResponsesOutput(res.output, tools);
  let stop: StopReason = blocks.some((b) => b.type === "tool_call") ? "tool_use" : "end_turn";
  if (res.status === "incomplete") {
    const reason = res.incomplete_details?.reason;
    stop =
      reason === "max_output_tokens"
        ? "max_tokens"
        : reason === "content_filter"
          ? "refusal"
          : "other";
  }
  return responseOf({
    blocks,
    stop_reason: stop,
    model: res.model,
    fallback_model: ctx.candidate.model,
    token_usage: parseResponsesUsage(res.usage),
    id: res.id,
  });
}

/** A `failed` response (or `response.failed` event) as a classified error. */
export function streamFailure(res: Partial<OpenAIResponse>, ctx: ClassifyContext): ProviderError {
  const err = res.error ?? null;
  return streamErrorToProviderError(
    err?.code ?? undefined,
    err?.message ?? "response failed without an error object",
    ctx,
  );
}

/** Folds a Responses event stream into the terminal response (output rebuilt when needed). */
export async function collectResponsesStream(
  events: AsyncIterable<ResponseStreamEvent>,
  ctx: ClassifyContext,
): Promise<Partial<OpenAIResponse>> {
  const done = new Map<number, ResponseOutputItem>();
  for await (const event of events) {
    switch (event.type) {
      case "response.output_item.done":
        done.set(event.output_index, event.item);
        break;
      case "response.completed":
      case "response.incomplete": {
        const res: Partial<OpenAIResponse> = { ...event.response };
        if (!Array.isArray(res.output) || res.output.length === 0) {
          res.output = [...done.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
        }
        return res;
      }
      case "response.failed":
        throw streamFailure(event.response, ctx);
      case "error":
        throw streamErrorToProviderError(event.code ?? undefined, event.message, ctx);
      default:
        break;
    }
  }
  throw unsupportedShape("stream ended without a terminal response event", ctx);
}

/**
 * The events of a Responses SSE body, parsed: what the SDK's stream yields for it. A `[DONE]`
 * sentinel is skipped; data that is not JSON throws its `SyntaxError` (`invalid_json`); an
 * event carrying an `error` object throws the SDK's `APIError` without a status, as the
 * SDK's stream does.
 */
export async function* responsesEvents(
  response: Response,
  APIError: typeof OpenAI.APIError,
): AsyncGenerator<ResponseStreamEvent> {
  for await (const sse of sseEvents(response)) {
    if (sse.data.startsWith("[DONE]")) continue;
    const data = JSON.parse(sse.data) as ResponseStreamEvent & { error?: unknown };
    if (data && typeof data === "object" && data.error) {
      throw new APIError(undefined, data.error as object, undefined, response.headers);
    }
    yield data;
  }
}

// ---------------------------------------------------------------------------
// Incremental continuation (`previous_response_id`) over an OpenAI-shaped provider window
// (openai-remote-compaction.md phase 2)

/**
 * What the provider has seen in one continuation scope, in its own item shape: the input
 * items sent (the frame's developer message included) followed by the output items returned,
 * exchange after exchange, or the replacement window of a remote compaction. A request may
 * chain on `response_id` only while its own provider-shaped input starts with exactly these
 * items. The output is kept in the form it is replayed in (the lowered reply blocks).
 */
export type ProviderWindow = {
  /** The response to chain from; null while a freshly compacted window waits for its first exchange. */
  response_id: string | null;
  /** Digest of everything but the input (instructions, tools, frame, options): must not change. */
  shape: string;
  /** Provider-shaped items, oldest first. */
  items: readonly unknown[];
  /** Canonical JSON of each item. */
  keys: readonly string[];
  /** Items the last exchange sent (its whole input, or only the incremental tail). */
  sent_items: number;
  /** Output items the last exchange returned (the end of `items`). */
  returned_items: number;
  /** Input items planned on top of the window and not answered yet. */
  pending: readonly unknown[];
  /** Indexes of the `type: "compaction"` items in `items` (there may be several). */
  compaction_indexes: readonly number[];
  latest_compaction_index: number | null;
  /** How the window began: a plain exchange, or the output of `/responses/compact`. */
  origin: "exchange" | "remote_compaction";
};

/** Why a Responses request went out in full rather than as a `previous_response_id` step. */
export type ContinuationDiagnostics = {
  mode: "full";
  reason:
    | "no_previous_exchange"
    | "request_shape_changed"
    | "conversation_not_strict_append_only"
    | "previous_response_rejected"
    | "compaction_reset";
  /**
   * True when the runtime rebuilt the window on purpose (compaction); false for unexpected
   * drift, the case worth a look.
   */
  intentional: boolean;
  /** For `compaction_reset`: which compaction rewrote the conversation. */
  compaction?: string;
  /** After a remote compaction: whether the request replayed the compacted window as-is. */
  window_replayed?: boolean;
  /** Compaction items in the window the request starts from. */
  compaction_items?: number;
  request_shape_hash?: string;
  previous_prefix_length?: number;
  current_input_length?: number;
  first_mismatch_index?: number;
  expected_type?: string | null;
  expected_id?: string | null;
  expected_hash?: string | null;
  actual_type?: string | null;
  actual_id?: string | null;
  actual_hash?: string | null;
};

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}

/** The short form of a shape digest: what `shortHash` gives for the shape's text. */
function shapeHashOf(shape: string): string {
  return shape.slice(0, 12);
}

function itemType(item: unknown): string | null {
  const t = (item as { type?: unknown } | null)?.type;
  if (typeof t === "string") return t;
  const role = (item as { role?: unknown } | null)?.role;
  return typeof role === "string" ? "message" : null;
}

/** The stable id of a provider item: its call id, else its id. */
function itemId(item: unknown): string | null {
  const o = item as { call_id?: unknown; id?: unknown } | null;
  if (typeof o?.call_id === "string") return o.call_id;
  return typeof o?.id === "string" ? o.id : null;
}

function compactionIndexes(items: readonly unknown[]): number[] {
  const out: number[] = [];
  items.forEach((it, i) => {
    if (itemType(it) === "compaction") out.push(i);
  });
  return out;
}

/** Index of the first key of `window` that `input` does not repeat, or -1 when it repeats all. */
function firstMismatch(window: readonly string[], input: readonly string[]): number {
  const n = Math.min(window.length, input.length);
  for (let i = 0; i < n; i++) if (window[i] !== input[i]) return i;
  return input.length < window.length ? input.length : -1;
}

/**
 * Per-scope OpenAI-shaped provider windows. A scope is (agent id, prompt cache key, model ref,
 * base URL). A request goes out as `previous_response_id` + only its new items when, and only
 * when, the scope's window is still valid for it: same shape, a response to chain from, and
 * a provider-shaped input that repeats the window's items exactly and adds at least one.
 */
export class ContinuationCache {
  readonly #windows = new Map<string, ProviderWindow>();

  static scopeOf(candidate: ModelCandidate, request: ProviderRequest): string | null {
    const cache = request.frame.cache;
    if (!cache) return null;
    return stableJson([
      cache.agent_id,
      cache.prompt_cache_key,
      candidate.model_ref,
      candidate.base_url,
    ]);
  }

  static shapeOf(
    body: Omit<ResponseCreateParamsNonStreaming, "input"> & { input?: unknown },
    request: ProviderRequest,
  ): string {
    // The head's instructions are the frame's system text and its tools are the request's
    // tools lowered under the schema mode, so the frame and the tool list's digest stand for
    // them: the system prompt and the schemas are not serialized again for every request.
    const {
      input: _input,
      previous_response_id: _prev,
      instructions: _instructions,
      tools: _tools,
      ...rest
    } = body;
    // A digest, not the text: a window lives as long as its scope, and the text (system
    // prompt and tool schemas) is some 150 KB per agent. The frame is serialized as built
    // (the runtime builds every frame with the same key order): sorting its keys cost more
    // than the rest of the request's planning, and a frame built in another order only
    // costs one full request.
    return createHash("sha256")
      .update(
        stableJson({
          rest,
          tools: toolSetDigest(request.tools),
          schema_mode: request.schema_mode ?? "relaxed",
        }),
      )
      .update("\n")
      .update(JSON.stringify(request.frame))
      .digest("hex");
  }

  /** Why the last `plan` sent a full request (openai-remote-compaction.md phase 1). */
  lastMiss: ContinuationDiagnostics | undefined;

  /** The scope's provider window (read-only; for diagnostics and tests). */
  window(scope: string | null): ProviderWindow | undefined {
    return scope === null ? undefined : this.#windows.get(scope);
  }

  /** Every scope's window (read-only). */
  windows(): ProviderWindow[] {
    return [...this.#windows.values()];
  }

  /**
   * Index of the first provider item the window does not hold, with the response to chain
   * from, or null for a full request (`lastMiss` says why). `reset`: the runtime rebuilt the
   * conversation on purpose for this request. Reads only: the exchange that follows replaces
   * the window (`remember`), a failed one drops it (`forget`).
   */
  plan(
    scope: string | null,
    shape: string,
    input: KeyedItems,
    reset?: ProviderRequest["continuation_reset"],
  ): { from: number; response_id: string } | null {
    this.lastMiss = undefined;
    if (scope === null) return null;
    const win = this.#windows.get(scope);
    const shapeHash = shapeHashOf(shape);
    const mismatch = (w: ProviderWindow, index: number) => {
      const expected = w.items[index];
      const actual = input.items[index];
      return {
        previous_prefix_length: w.items.length,
        current_input_length: input.items.length,
        first_mismatch_index: index,
        expected_type: expected === undefined ? null : itemType(expected),
        expected_id: expected === undefined ? null : itemId(expected),
        expected_hash: w.keys[index] !== undefined ? shortHash(w.keys[index]) : null,
        actual_type: actual === undefined ? null : itemType(actual),
        actual_id: actual === undefined ? null : itemId(actual),
        actual_hash: input.keys[index] !== undefined ? shortHash(input.keys[index]) : null,
      };
    };
    // A window freshly installed by remote compaction has nothing to chain from: the request
    // that replays it goes out in full, and that is the compaction's doing.
    const compacted = win?.origin === "remote_compaction" && win.response_id === null;
    if (reset || compacted) {
      const diag: ContinuationDiagnostics = {
        mode: "full",
        reason: "compaction_reset",
        intentional: true,
        compaction: reset ?? "remote_compaction",
        request_shape_hash: shapeHash,
      };
      if (win && win.shape === shape) {
        // Where the rebuilt input leaves the window (for a compacted window: whether it was
        // replayed as-is).
        const at = firstMismatch(win.keys, input.keys);
        if (compacted) {
          diag.window_replayed = at === -1;
          diag.compaction_items = win.compaction_indexes.length;
        }
        if (at !== -1) Object.assign(diag, mismatch(win, at));
      } else if (compacted) {
        diag.window_replayed = false;
      }
      this.lastMiss = diag;
      return null;
    }
    if (!win) {
      this.lastMiss = {
        mode: "full",
        reason: "no_previous_exchange",
        intentional: false,
        request_shape_hash: shapeHash,
      };
      return null;
    }
    if (win.shape !== shape) {
      this.lastMiss = {
        mode: "full",
        reason: "request_shape_changed",
        intentional: false,
        request_shape_hash: shapeHash,
      };
      return null;
    }
    const at = firstMismatch(win.keys, input.keys);
    if (at !== -1 || input.keys.length === win.keys.length || win.response_id === null) {
      this.lastMiss = {
        mode: "full",
        reason: "conversation_not_strict_append_only",
        intentional: false,
        request_shape_hash: shapeHash,
        ...mismatch(win, at === -1 ? input.keys.length : at),
      };
      return null;
    }
    return { from: win.keys.length, response_id: win.response_id };
  }

  /** Marks the input items sent on top of the window, not answered yet. */
  markPending(scope: string | null, items: readonly unknown[]): void {
    const win = scope === null ? undefined : this.#windows.get(scope);
    if (win) this.#windows.set(scope!, { ...win, pending: items });
  }

  /**
   * After a successful exchange: the window is now everything the provider has seen, the
   * full provider-shaped input of the request (`sent` of which went out) and the reply.
   * `extended`: the request built on the previous window (chained on it, or replayed a
   * compacted one), so the window keeps its origin.
   */
  remember(
    scope: string | null,
    shape: string,
    input: KeyedItems,
    sent: number,
    response: ProviderResponse,
    tools: readonly ToolSpec[],
    extended: boolean,
  ): void {
    if (scope === null) return;
    if (!response.response_id) {
      this.#windows.delete(scope);
      return;
    }
    const prev = this.#windows.get(scope);
    const reply = lowerResponsesInputKeyed(response.blocks, tools, LOWERING);
    const items = [...input.items, ...reply.items];
    const indexes = compactionIndexes(items);
    this.#windows.set(scope, {
      response_id: response.response_id,
      shape,
      items,
      keys: [...input.keys, ...reply.keys],
      sent_items: sent,
      returned_items: reply.items.length,
      pending: [],
      compaction_indexes: indexes,
      latest_compaction_index: indexes.at(-1) ?? null,
      origin: extended && prev ? prev.origin : "exchange",
    });
  }

  /**
   * After `/responses/compact`: the replacement window (frame input + returned items) becomes
   * the scope's canonical provider window. Nothing chains from it until the next exchange.
   */
  installCompacted(scope: string | null, shape: string, input: KeyedItems): void {
    if (scope === null) return;
    const indexes = compactionIndexes(input.items);
    this.#windows.set(scope, {
      response_id: null,
      shape,
      items: input.items,
      keys: input.keys,
      sent_items: 0,
      returned_items: input.items.length,
      pending: [],
      compaction_indexes: indexes,
      latest_compaction_index: indexes.at(-1) ?? null,
      origin: "remote_compaction",
    });
  }

  forget(scope: string | null): void {
    if (scope !== null) this.#windows.delete(scope);
  }

  clear(): void {
    this.#windows.clear();
  }
}

// ---------------------------------------------------------------------------
// Transport

/** The outcome of a standalone `/responses/compact` call (openai-remote-compaction.md phase 3). */
export type RemoteCompaction =
  | {
      ok: true;
      /** The replacement window, opaque, to be replayed as-is. */
      items: unknown[];
      compaction_items: number;
      encrypted_bytes: number;
      input_items: number;
      token_usage: TokenUsage | undefined;
    }
  | {
      ok: false;
      reason: "skipped_unsupported_endpoint" | "unsupported_endpoint" | "invalid_input" | "failed";
      status: number | null;
      message: string;
    };

export type OpenAIResponsesTransport = TransportClient & {
  readonly continuation: ContinuationCache;
  /** Compacts the request's conversation through the provider (the frame stays local). */
  compact(
    candidate: ModelCandidate,
    request: ProviderRequest,
    signal: AbortSignal,
  ): Promise<RemoteCompaction>;
  /** Builds the body that `send` would post now (with `previous_response_id` when eligible). */
  plan(candidate: ModelCandidate, request: ProviderRequest): ResponseCreateParamsNonStreaming;
};

export function createOpenAIResponsesTransport(
  options: { incremental?: boolean } = {},
): OpenAIResponsesTransport {
  const continuation = new ContinuationCache();
  const incrementalEnabled = options.incremental ?? true;

  // The head (and its shape string) is the same for every round of a turn: same candidate,
  // frame and tools. Remember the last one so a long turn does not re-lower and re-serialize
  // the tool schemas and system prompt on every round.
  let last: {
    candidate: ModelCandidate;
    frame: ProviderRequest["frame"];
    tools: ProviderRequest["tools"];
    mode: ProviderRequest["schema_mode"];
    maxOut: number | undefined;
    head: Omit<ResponseCreateParamsNonStreaming, "input">;
    shape: string;
    /** The frame's leading input items (the developer message) and their canonical JSON. */
    lead: KeyedItems;
  } | null = null;
  const headOf = (candidate: ModelCandidate, request: ProviderRequest) => {
    const maxOut = request.max_output_tokens;
    if (
      last === null ||
      last.candidate !== candidate ||
      last.frame !== request.frame ||
      last.tools !== request.tools ||
      last.mode !== request.schema_mode ||
      last.maxOut !== maxOut
    ) {
      const head = responsesRequestHead(candidate, request);
      const shape = ContinuationCache.shapeOf(head, request);
      const items = frameInput(request);
      last = {
        candidate,
        frame: request.frame,
        tools: request.tools,
        mode: request.schema_mode,
        maxOut,
        head,
        shape,
        lead: { items, keys: items.map(stableJson) },
      };
    }
    return last;
  };

  /** The request's whole input in provider shape: frame items, then the conversation. */
  const inputOf = (lead: KeyedItems, request: ProviderRequest): KeyedItems => {
    const conv = lowerResponsesInputKeyed(request.conversation, request.tools, LOWERING);
    return { items: [...lead.items, ...conv.items], keys: [...lead.keys, ...conv.keys] };
  };

  const plan = (candidate: ModelCandidate, request: ProviderRequest) => {
    const { head, shape, lead } = headOf(candidate, request);
    const scope = ContinuationCache.scopeOf(candidate, request);
    const input = inputOf(lead, request);
    const fullBody = withInput(head, input.items);
    const fullWire: Wire = { head, input: input.items };
    const full = () => fullWire;
    const step = incrementalEnabled
      ? continuation.plan(scope, shape, input, request.continuation_reset)
      : null;
    if (!step) {
      const miss = incrementalEnabled ? continuation.lastMiss : undefined;
      return {
        body: fullBody,
        wire: fullWire,
        full,
        scope,
        shape,
        input,
        tail: input.items,
        incremental: false,
        miss,
      };
    }
    const tail = input.items.slice(step.from);
    const body: ResponseCreateParamsNonStreaming = {
      ...withInput(head, tail),
      previous_response_id: step.response_id,
    };
    const wire: Wire = { head, input: tail, previous_response_id: step.response_id };
    return { body, wire, full, scope, shape, input, tail, incremental: true, miss: undefined };
  };

  const post = async (
    client: OpenAI,
    body: Wire,
    signal: AbortSignal,
    ctx: ClassifyContext,
  ): Promise<unknown> => {
    if (ctx.candidate.stream === false) {
      return client.post("/responses", encoded(body, false, signal));
    }
    // The raw response, read here (sse.ts) rather than through the SDK's stream object; a
    // status other than 2xx still comes back as the SDK's error.
    const response = await client.post("/responses", encoded(body, true, signal)).asResponse();
    const APIError = (await loadOpenAI()).APIError;
    try {
      return await collectResponsesStream(responsesEvents(response, APIError), ctx);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw err;
    }
  };

  /** Endpoints that answered the compact route with a permanent "not here" (404/405/410/501). */
  const unsupported = new Set<string>();
  const compact = async (
    candidate: ModelCandidate,
    request: ProviderRequest,
    signal: AbortSignal,
  ): Promise<RemoteCompaction> => {
    if (unsupported.has(candidate.base_url)) {
      return {
        ok: false,
        reason: "skipped_unsupported_endpoint",
        status: null,
        message: "the compact route of this endpoint is known to be unsupported",
      };
    }
    const { head, shape, lead } = headOf(candidate, request);
    const input = lowerResponsesInput(request.conversation, request.tools, LOWERING);
    try {
      const res = await (
        await openAiClient(candidate)
      ).responses.compact(
        {
          model: candidate.model,
          input,
          instructions: typeof head.instructions === "string" ? head.instructions : null,
          ...(head.prompt_cache_key ? { prompt_cache_key: head.prompt_cache_key } : {}),
        },
        { signal, maxRetries: 0 },
      );
      const items = Array.isArray(res.output) ? (res.output as unknown[]) : [];
      const compactions = items.filter(
        (i) => (i as { type?: unknown } | null)?.type === "compaction",
      ) as { encrypted_content?: unknown }[];
      if (compactions.length === 0) {
        return {
          ok: false,
          reason: "failed",
          status: null,
          message: "the compact response held no compaction item",
        };
      }
      // Sent back without provider item ids (stateless use); call ids keep tool pairing.
      const window = items.map((i) => {
        if (!i || typeof i !== "object") return i;
        const { id, ...rest } = i as Record<string, unknown>;
        const r = rest as Record<string, unknown>;
        if (r.type === "compaction") return i;
        if ((r.type === "function_call" || r.type === "custom_tool_call") && !r.call_id)
          r.call_id = id;
        return r;
      });
      // The replacement becomes the canonical provider window of the scope (after the frame's
      // own items, which stay local and are sent with every request).
      continuation.installCompacted(ContinuationCache.scopeOf(candidate, request), shape, {
        items: [...lead.items, ...(window as ResponseInputItem[])],
        keys: [...lead.keys, ...window.map(stableJson)],
      });
      return {
        ok: true,
        items: window,
        compaction_items: compactions.length,
        encrypted_bytes: compactions.reduce(
          (n, c) => n + (typeof c.encrypted_content === "string" ? c.encrypted_content.length : 0),
          0,
        ),
        input_items: input.length,
        token_usage: parseResponsesUsage(res.usage as ResponseUsage | undefined),
      };
    } catch (err) {
      if (signal.aborted) throw err;
      const status =
        typeof (err as { status?: unknown }).status === "number"
          ? (err as { status: number }).status
          : null;
      const message = err instanceof Error ? err.message : String(err);
      if (status === 404 && /persist|not found.*item|item.*not found/i.test(message)) {
        return { ok: false, reason: "invalid_input", status, message };
      }
      if (status !== null && [404, 405, 410, 501].includes(status)) {
        unsupported.add(candidate.base_url);
        return { ok: false, reason: "unsupported_endpoint", status, message };
      }
      return { ok: false, reason: "failed", status, message };
    }
  };

  return {
    transport: "openai_responses",
    continuation,
    compact,
    plan: (candidate, request) => plan(candidate, request).body,
    async send(
      candidate: ModelCandidate,
      request: ProviderRequest,
      opts: TransportSendOptions,
    ): Promise<ProviderResponse> {
      const ctx: ClassifyContext = { candidate, url: joinUrl(candidate.base_url, "responses") };
      const client = await openAiClient(candidate);
      const p = plan(candidate, request);
      let raw: unknown;
      let incremental = p.incremental;
      const extended = p.incremental || p.miss?.window_replayed === true;
      let miss: ContinuationDiagnostics | undefined = p.miss;
      let sent = p.tail.length;
      if (incremental) continuation.markPending(p.scope, p.tail);
      try {
        try {
          raw = await post(client, p.wire, opts.signal, ctx);
        } catch (err) {
          // The provider no longer knows the previous response: fall back to the full request once.
          const status = (err as { status?: unknown }).status;
          if (!incremental || opts.signal.aborted || (status !== 400 && status !== 404)) throw err;
          incremental = false;
          sent = p.input.items.length;
          miss = {
            mode: "full",
            reason: "previous_response_rejected",
            intentional: false,
            request_shape_hash: shapeHashOf(p.shape),
          };
          raw = await post(client, p.full(), opts.signal, ctx);
        }
        const response = parseResponsesResponse(raw, request.tools, ctx);
        if (incremental) response.incremental = true;
        else if (miss) response.continuation = miss;
        continuation.remember(p.scope, p.shape, p.input, sent, response, request.tools, extended);
        return response;
      } catch (err) {
        continuation.forget(p.scope);
        throw classifyError(err, ctx);
      }
    },
  };
}
