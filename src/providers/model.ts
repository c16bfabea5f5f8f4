// The provider-neutral request/response model. The turn loop builds a `ProviderRequest`
// and reads a `ProviderResponse`; each transport lowers the one to its wire format and
// parses its wire reply into the other. Nothing outside src/providers/ sees a vendor shape.
//
// Shapes are zod schemas so the replayable conversation can be persisted and read back.
import { createHash } from "node:crypto";
import { z } from "zod";
import { TokenUsage } from "../domain/provider.ts";
import type { ModelCandidate, ProviderTransport } from "./types.ts";

// ---------------------------------------------------------------------------
// Prompt frame (spec: "Provider Prompt Frame")

/**
 * How long a block stays the same. `stable` and `agent_scoped` blocks belong to the
 * cacheable prefix; `turn_scoped` ones change every turn.
 */
export const PromptStability = z.enum(["stable", "agent_scoped", "turn_scoped"]);
export type PromptStability = z.infer<typeof PromptStability>;

export const PromptContentBlock = z.object({
  text: z.string(),
  stability: PromptStability,
  /** Ask transports with block-level caching (Anthropic) to end a cache segment here. */
  cache_breakpoint: z.boolean(),
});
export type PromptContentBlock = z.infer<typeof PromptContentBlock>;

/** Cache identity of the prompt: the scope provider-side caches and continuations live in. */
export const ProviderPromptCache = z.object({
  agent_id: z.string(),
  /** Stable across ordinary turns; rotates when the stable/agent-scoped surface changes. */
  prompt_cache_key: z.string(),
  /** Diagnostic fingerprint of the whole projected context; never used as a cache key. */
  context_fingerprint: z.string(),
  working_memory_revision: z.number().int().optional(),
  compression_epoch: z.number().int().optional(),
});
export type ProviderPromptCache = z.infer<typeof ProviderPromptCache>;

export const ProviderPromptFrame = z.object({
  system_prompt: z.string(),
  /** Runtime guidance that belongs with the system prompt (lowered to system/instructions). */
  system_blocks: z.array(PromptContentBlock),
  /** Projected context (work items, memory, environment); lowered ahead of the conversation. */
  context_blocks: z.array(PromptContentBlock),
  cache: ProviderPromptCache.optional(),
});
export type ProviderPromptFrame = z.infer<typeof ProviderPromptFrame>;

// ---------------------------------------------------------------------------
// Replayable conversation

/** Input from outside the model (operator, other agents, runtime notices), already rendered to text. */
export const UserTextItem = z.object({ type: z.literal("user_text"), text: z.string() });
export type UserTextItem = z.infer<typeof UserTextItem>;

/** Visible text the model produced. */
export const AssistantTextItem = z.object({ type: z.literal("assistant_text"), text: z.string() });
export type AssistantTextItem = z.infer<typeof AssistantTextItem>;

/**
 * A tool call the model made. `arguments` is always JSON text of an object. For a
 * freeform-grammar tool called natively (OpenAI `custom` tool) the raw input is wrapped
 * as `{"<freeform.input_field>": "<raw input>"}`, so the turn loop sees one shape.
 */
export const ToolCallItem = z.object({
  type: z.literal("tool_call"),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});
export type ToolCallItem = z.infer<typeof ToolCallItem>;

/** The result of a tool call, as the model should see it. */
export const ToolResultItem = z.object({
  type: z.literal("tool_result"),
  call_id: z.string(),
  output: z.string(),
  is_error: z.boolean(),
  /**
   * Images the tool returned (an MCP server's image content), base64: sent beside the text by
   * the transports whose tool results take images (OpenAI Responses, Anthropic Messages), and
   * by Chat Completions as a user message right after the round's tool messages.
   */
  images: z.array(z.object({ mime_type: z.string(), data: z.string() })).optional(),
});
export type ToolResultItem = z.infer<typeof ToolResultItem>;

/** Which wire family produced an opaque reasoning item; it is replayed only to the same family. */
export const ReasoningFamily = z.enum(["openai_responses", "anthropic_messages"]);
export type ReasoningFamily = z.infer<typeof ReasoningFamily>;

/**
 * Provider reasoning state (OpenAI reasoning item, Anthropic thinking block). Opaque:
 * `data` is the provider's own object, replayed verbatim to the same family and dropped
 * for others. `summary` is a readable preview when the provider gave one.
 */
export const ReasoningItem = z.object({
  type: z.literal("reasoning"),
  family: ReasoningFamily,
  data: z.unknown(),
  summary: z.string().optional(),
});
export type ReasoningItem = z.infer<typeof ReasoningItem>;

/**
 * A provider-compacted window (OpenAI Responses `/responses/compact` output): opaque items
 * that stand for the conversation up to this point, replayed as-is to the same family and
 * dropped for others. Provider transport state, never Holon memory.
 */
export const ProviderWindowItem = z.object({
  type: z.literal("provider_window"),
  family: z.literal("openai_responses"),
  items: z.array(z.unknown()),
});
export type ProviderWindowItem = z.infer<typeof ProviderWindowItem>;

export const ConversationItem = z.discriminatedUnion("type", [
  UserTextItem,
  AssistantTextItem,
  ToolCallItem,
  ToolResultItem,
  ReasoningItem,
  ProviderWindowItem,
]);
export type ConversationItem = z.infer<typeof ConversationItem>;

/** What a model reply consists of; these items can be appended to the conversation as-is. */
export const ResponseBlock = z.discriminatedUnion("type", [
  AssistantTextItem,
  ToolCallItem,
  ReasoningItem,
]);
export type ResponseBlock = z.infer<typeof ResponseBlock>;

// ---------------------------------------------------------------------------
// Tool catalog

/**
 * A freeform tool input: on `openai_responses` / `openai_codex_responses` the tool is
 * lowered to a `custom` tool with this grammar; everywhere else to a function whose
 * single string parameter `input_field` carries the same text (see `parameters`).
 */
export const FreeformGrammar = z.object({
  syntax: z.enum(["lark", "regex"]),
  definition: z.string(),
  /** Name of the string property of the JSON fallback that carries the raw input (e.g. `patch`). */
  input_field: z.string(),
});
export type FreeformGrammar = z.infer<typeof FreeformGrammar>;

export const ToolSpec = z.object({
  name: z.string(),
  description: z.string(),
  /** Source JSON Schema of the arguments (an object schema, e.g. from `z.toJSONSchema`). */
  parameters: z.record(z.string(), z.unknown()),
  freeform: FreeformGrammar.optional(),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

/** JSON with every object's keys sorted, so equal values give equal text. */
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

const toolSetDigests = new WeakMap<readonly ToolSpec[], string>();

/**
 * SHA-256 of a tool list's canonical JSON, memoized per array. The runtime builds its tool
 * list once and hands the same array to every turn, and the schemas are tens of KB that
 * would otherwise be serialized and hashed again for every request: treat a list as
 * read-only once it has been digested.
 */
export function toolSetDigest(tools: readonly ToolSpec[]): string {
  let digest = toolSetDigests.get(tools);
  if (digest === undefined) {
    digest = createHash("sha256").update(stableJson(tools)).digest("hex");
    toolSetDigests.set(tools, digest);
  }
  return digest;
}

/** Provider JSON Schema emission mode (spec: "Provider Tool Schema Contract"). */
export const SchemaMode = z.enum(["relaxed", "strict"]);
export type SchemaMode = z.infer<typeof SchemaMode>;

// ---------------------------------------------------------------------------
// Request and response

export const ProviderRequest = z.object({
  frame: ProviderPromptFrame,
  /** Full replayable conversation, oldest first. Transports decide what to actually send. */
  conversation: z.array(ConversationItem),
  tools: z.array(ToolSpec),
  /** Overrides the candidate's `max_output_tokens`. Ignored by the Codex transport. */
  max_output_tokens: z.number().int().positive().optional(),
  /** Default `relaxed`. */
  schema_mode: SchemaMode.optional(),
  /**
   * Set when context compaction rewrote the conversation for this request: transports with
   * continuation state (OpenAI Responses) start over, and say it was intentional.
   */
  continuation_reset: z.enum(["turn_local_recap", "remote_compaction"]).optional(),
});
export type ProviderRequest = z.infer<typeof ProviderRequest>;

/**
 * Why the model stopped: `end_turn` (finished), `tool_use` (wants tool results),
 * `max_tokens` (output budget hit), `refusal` (content filter / refusal), `other`.
 */
export const StopReason = z.enum(["end_turn", "tool_use", "max_tokens", "refusal", "other"]);
export type StopReason = z.infer<typeof StopReason>;

export const ProviderResponse = z.object({
  blocks: z.array(ResponseBlock),
  stop_reason: StopReason,
  /** Absent when the provider reported none. */
  token_usage: TokenUsage.optional(),
  response_id: z.string().optional(),
  /** Model id the provider says answered. */
  model: z.string(),
  /** True when the OpenAI Responses transport sent only an incremental tail with `previous_response_id`. */
  incremental: z.boolean().optional(),
  /** Responses transport: why this request went out in full (continuation diagnostics). */
  continuation: z.record(z.string(), z.unknown()).optional(),
});
export type ProviderResponse = z.infer<typeof ProviderResponse>;

// ---------------------------------------------------------------------------
// Small helpers shared by the transports

/** System prompt followed by the system blocks, separated by blank lines. */
export function systemText(frame: ProviderPromptFrame): string {
  return [frame.system_prompt, ...frame.system_blocks.map((b) => b.text)]
    .filter((t) => t.length > 0)
    .join("\n\n");
}

/** The context blocks as one text, or null when there are none. */
export function contextText(frame: ProviderPromptFrame): string | null {
  const text = frame.context_blocks
    .map((b) => b.text)
    .filter((t) => t.length > 0)
    .join("\n\n");
  return text.length > 0 ? text : null;
}

/** Parses tool-call arguments into an object; text that is not a JSON object is kept under `_raw`. */
export function argumentsObject(args: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(args);
    if (value !== null && typeof value === "object" && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  return { _raw: args };
}

/** Usage with `total_tokens` filled in. */
export function usage(input: number, output: number, extra: Partial<TokenUsage> = {}): TokenUsage {
  return { input_tokens: input, output_tokens: output, total_tokens: input + output, ...extra };
}

// ---------------------------------------------------------------------------
// The transport seam

export type TransportSendOptions = {
  /** Fires on operator abort or request timeout; the transport must stop at once. */
  signal: AbortSignal;
};

/** One wire transport. Throws `ProviderError` (or anything `classifyError` understands). */
export interface TransportClient {
  readonly transport: ProviderTransport;
  send(
    candidate: ModelCandidate,
    request: ProviderRequest,
    options: TransportSendOptions,
  ): Promise<ProviderResponse>;
}

/**
 * A parsed reply in the neutral shape. `model` and `id` come from the wire and may be
 * missing; the candidate's model stands in for an absent one.
 */
export function responseOf(r: {
  blocks: ResponseBlock[];
  stop_reason: StopReason;
  model: unknown;
  fallback_model: string;
  token_usage: TokenUsage | undefined;
  id: unknown;
}): ProviderResponse {
  const out: ProviderResponse = {
    blocks: r.blocks,
    stop_reason: r.stop_reason,
    model: typeof r.model === "string" ? r.model : r.fallback_model,
  };
  if (r.token_usage) out.token_usage = r.token_usage;
  if (typeof r.id === "string" && r.id) out.response_id = r.id;
  return out;
}
