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
// (see `ContinuationCache`).
import { createHash } from "node:crypto";
import OpenAI from "openai";
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
  type ToolSpec,
  type TransportClient,
  type TransportSendOptions,
  responseOf,
} from "./model.ts";
import { perCandidate, sdkOptions } from "./http-fetch.ts";
import { emitToolSchema } from "./schema.ts";
import type { ModelCandidate } from "./types.ts";

// ---------------------------------------------------------------------------
// SDK client

/** An OpenAI SDK client for one candidate: no SDK retries, no environment fallbacks. */
export const openAiClient = perCandidate((candidate): OpenAI => {
  const credential = candidate.credential;
  const headers: Record<string, string | null> = { ...(credential?.headers ?? {}) };
  // Without a credential the SDK still wants a key; send none on the wire.
  if (!credential || credential.kind === "none") headers["Authorization"] = null;
  return new OpenAI({
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

export function lowerResponsesTools(
  tools: readonly ToolSpec[],
  request: ProviderRequest,
  native: boolean,
): ResponsesTool[] {
  const mode = request.schema_mode ?? "relaxed";
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
  const freeform = freeformTools(tools, options.native_freeform);
  const customCalls = new Set<string>();
  const out: ResponseInputItem[] = [];
  conversation.forEach((item, index) => {
    const emit = index >= from;
    switch (item.type) {
      case "user_text":
        if (emit) out.push({ type: "message", role: "user", content: item.text });
        break;
      case "assistant_text":
        if (emit) out.push({ type: "message", role: "assistant", content: item.text });
        break;
      case "tool_call": {
        const field = freeform.get(item.name);
        if (field !== undefined) {
          customCalls.add(item.call_id);
          const raw = freeformInput(item.arguments, field);
          if (emit)
            out.push({
              type: "custom_tool_call",
              call_id: item.call_id,
              name: item.name,
              input: raw,
            });
        } else if (emit) {
          out.push({
            type: "function_call",
            call_id: item.call_id,
            name: item.name,
            arguments: item.arguments,
          });
        }
        break;
      }
      case "tool_result":
        if (!emit) break;
        if (customCalls.has(item.call_id)) {
          out.push({ type: "custom_tool_call_output", call_id: item.call_id, output: item.output });
        } else {
          out.push({ type: "function_call_output", call_id: item.call_id, output: item.output });
        }
        break;
      case "reasoning": {
        if (!emit || item.family !== "openai_responses") break;
        const data = item.data as ResponseReasoningItem | null;
        if (!data || typeof data !== "object" || data.type !== "reasoning") break;
        if (options.require_encrypted_reasoning) {
          if (!data.encrypted_content) break;
          const { id: _id, status: _status, ...rest } = data;
          out.push(rest as ResponseReasoningItem);
        } else {
          out.push(data);
        }
        break;
      }
      case "provider_window":
        // A compacted window from /responses/compact: replayed exactly as returned.
        if (emit) out.push(...(item.items as ResponseInputItem[]));
        break;
    }
  });
  return out;
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

// ---------------------------------------------------------------------------
// Incremental continuation (`previous_response_id`)

type Snapshot = {
  /** Everything but the input: must be identical for an incremental request. */
  shape: string;
  /** Canonical JSON of each neutral item the provider has seen: last request + its reply. */
  items: string[];
  response_id: string;
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
  /** For `compaction_reset`: which compaction rewrote the conversation. */
  compaction?: string;
  previous_prefix_length?: number;
  current_input_length?: number;
  first_mismatch_index?: number;
  expected_hash?: string | null;
  actual_type?: string | null;
  actual_hash?: string | null;
};

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}

/** Stable JSON (sorted object keys) for comparing neutral items. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) =>
            a < b ? -1 : a > b ? 1 : 0,
          ),
        )
      : v,
  );
}

/**
 * Canonical JSON of a conversation item, memoized per item object. Conversation items are
 * immutable once appended (the turn loop only ever appends), so a long turn compares its
 * history in O(new items) per round instead of re-serializing everything.
 */
const itemJson = new WeakMap<object, string>();
function itemKey(item: object): string {
  let key = itemJson.get(item);
  if (key === undefined) {
    key = stableJson(item);
    itemJson.set(item, key);
  }
  return key;
}

/**
 * Per-scope memory of the last successful Responses exchange. A scope is
 * (agent id, prompt cache key, model ref, base URL). A request may be sent incrementally
 * only when everything but the conversation is unchanged and the conversation begins
 * with exactly the items of the last request followed by the items of its reply.
 */
export class ContinuationCache {
  readonly #snapshots = new Map<string, Snapshot>();

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
    const { input: _input, previous_response_id: _prev, ...rest } = body;
    return stableJson({
      rest,
      frame: request.frame,
      tools: request.tools,
      schema_mode: request.schema_mode ?? "relaxed",
    });
  }

  /** Why the last `plan` sent a full request (openai-remote-compaction.md phase 1). */
  lastMiss: ContinuationDiagnostics | undefined;

  /** Index of the first conversation item the provider has not seen, or null for a full request. */
  plan(
    scope: string | null,
    shape: string,
    conversation: readonly ConversationItem[],
  ): { from: number; response_id: string } | null {
    this.lastMiss = undefined;
    if (scope === null) return null;
    const snap = this.#snapshots.get(scope);
    if (!snap) {
      this.lastMiss = { mode: "full", reason: "no_previous_exchange" };
      return null;
    }
    if (snap.shape !== shape) {
      this.lastMiss = { mode: "full", reason: "request_shape_changed" };
      return null;
    }
    const miss = (index: number): null => {
      const actual = conversation[index];
      this.lastMiss = {
        mode: "full",
        reason: "conversation_not_strict_append_only",
        previous_prefix_length: snap.items.length,
        current_input_length: conversation.length,
        first_mismatch_index: index,
        expected_hash: snap.items[index] !== undefined ? shortHash(snap.items[index]) : null,
        actual_type: actual?.type ?? null,
        actual_hash: actual ? shortHash(itemKey(actual)) : null,
      };
      return null;
    };
    if (conversation.length <= snap.items.length) return miss(conversation.length);
    for (let i = 0; i < snap.items.length; i++) {
      if (itemKey(conversation[i]!) !== snap.items[i]) return miss(i);
    }
    return { from: snap.items.length, response_id: snap.response_id };
  }

  remember(
    scope: string | null,
    shape: string,
    conversation: readonly ConversationItem[],
    response: ProviderResponse,
  ): void {
    if (scope === null) return;
    if (!response.response_id) {
      this.#snapshots.delete(scope);
      return;
    }
    this.#snapshots.set(scope, {
      shape,
      items: [...conversation, ...response.blocks].map(itemKey),
      response_id: response.response_id,
    });
  }

  forget(scope: string | null): void {
    if (scope !== null) this.#snapshots.delete(scope);
  }

  clear(): void {
    this.#snapshots.clear();
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
      last = {
        candidate,
        frame: request.frame,
        tools: request.tools,
        mode: request.schema_mode,
        maxOut,
        head,
        shape,
      };
    }
    return last;
  };

  const plan = (candidate: ModelCandidate, request: ProviderRequest) => {
    const { head, shape } = headOf(candidate, request);
    const scope = ContinuationCache.scopeOf(candidate, request);
    const full = () =>
      withInput(head, [
        ...frameInput(request),
        ...lowerResponsesInput(request.conversation, request.tools, LOWERING),
      ]);
    if (request.continuation_reset && scope !== null) {
      // Compaction rewrote the conversation on purpose: start over, and say so.
      continuation.forget(scope);
      const body = full();
      const miss: ContinuationDiagnostics = {
        mode: "full",
        reason: "compaction_reset",
        compaction: request.continuation_reset,
      };
      return { body, full: () => body, scope, shape, incremental: false, miss };
    }
    const step = incrementalEnabled ? continuation.plan(scope, shape, request.conversation) : null;
    if (!step) {
      const body = full();
      const miss = continuation.lastMiss;
      return { body, full: () => body, scope, shape, incremental: false, miss };
    }
    const tail = lowerResponsesInput(request.conversation, request.tools, LOWERING, step.from);
    const body: ResponseCreateParamsNonStreaming = {
      ...withInput(head, tail),
      previous_response_id: step.response_id,
    };
    return { body, full, scope, shape, incremental: true, miss: undefined };
  };

  const post = async (
    client: OpenAI,
    body: ResponseCreateParamsNonStreaming,
    signal: AbortSignal,
    ctx: ClassifyContext,
  ): Promise<unknown> => {
    if (ctx.candidate.stream === false) {
      return client.responses.create(body, { signal, maxRetries: 0 });
    }
    const events = await client.responses.create(
      { ...body, stream: true },
      { signal, maxRetries: 0 },
    );
    const terminal = await collectResponsesStream(events, ctx);
    // The SDK ends the iteration quietly on abort; do not mistake that for an answer.
    if (signal.aborted) throw signal.reason;
    return terminal;
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
    const { head } = headOf(candidate, request);
    const input = lowerResponsesInput(request.conversation, request.tools, LOWERING);
    try {
      const res = await openAiClient(candidate).responses.compact(
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
      const client = openAiClient(candidate);
      const p = plan(candidate, request);
      let raw: unknown;
      let incremental = p.incremental;
      let miss: ContinuationDiagnostics | undefined = p.miss;
      try {
        try {
          raw = await post(client, p.body, opts.signal, ctx);
        } catch (err) {
          // The provider no longer knows the previous response: fall back to the full request once.
          const status = (err as { status?: unknown }).status;
          if (!p.incremental || opts.signal.aborted || (status !== 400 && status !== 404))
            throw err;
          incremental = false;
          miss = { mode: "full", reason: "previous_response_rejected" };
          raw = await post(client, p.full(), opts.signal, ctx);
        }
        const response = parseResponsesResponse(raw, request.tools, ctx);
        if (incremental) response.incremental = true;
        else if (miss) response.continuation = miss;
        continuation.remember(p.scope, p.shape, request.conversation, response);
        return response;
      } catch (err) {
        continuation.forget(p.scope);
        throw classifyError(err, ctx);
      }
    },
  };
}
