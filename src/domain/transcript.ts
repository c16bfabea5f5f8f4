// Transcript entries: the durable record of what happened in each turn. Every entry kind
// the runtime writes is one member of a discriminated union on `kind`, each with its own
// `data` schema; `TranscriptRepo.append` takes the typed union, so the compiler checks the
// writers. Entries read back stay loose (`StoredTranscriptEntry`): a row written by another
// version must not crash a reader; `parseTranscriptEntry()` narrows one to the catalog.
import { z } from "zod";
import { CanonicalToolResult } from "./events.ts";
import {
  AuthorityClass,
  MessageDeliverySurface,
  MessageKind,
  MessageOrigin,
  TrustLevel,
} from "./message.ts";
import { FailureArtifact, ProviderAttemptTimeline, TokenUsage } from "./provider.ts";

/** Identity and place of an entry; `seq` is per agent and assigned by the store. */
const EntryHead = z.object({
  id: z.string(),
  agent_id: z.string(),
  seq: z.number().int(),
  created_at: z.string(),
  run_id: z.string().optional(),
  message_id: z.string().optional(),
});
type EntryHead = z.infer<typeof EntryHead>;

/** A stored entry as read back: any kind, any data (the tolerant path). */
export const StoredTranscriptEntry = EntryHead.extend({
  kind: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type StoredTranscriptEntry = z.infer<typeof StoredTranscriptEntry>;

function entry<const K extends string, S extends z.ZodRawShape>(kind: K, data: S) {
  return z.object({ kind: z.literal(kind), data: z.object(data) });
}

/** A tool call as the model made it (a provider `tool_call` block). */
const ToolCallBlock = z.looseObject({
  type: z.string(),
  call_id: z.string().optional(),
  name: z.string().optional(),
  arguments: z.string().optional(),
});

export const TranscriptBody = z.discriminatedUnion("kind", [
  /** The message the turn answers, rendered as the model saw it; or an interjection. */
  entry("incoming_message", {
    text: z.string(),
    kind: MessageKind,
    origin: MessageOrigin.optional(),
    trust: TrustLevel.optional(),
    authority_class: AuthorityClass.optional(),
    delivery_surface: MessageDeliverySurface.nullable().optional(),
    /** Set when an operator prompt was interjected into the running turn. */
    interjected_message_id: z.string().optional(),
  }),
  /** One provider round: the model's text, its tool calls and what the round cost. */
  entry("assistant_round", {
    round: z.number().int(),
    text: z.string(),
    tool_calls: z.array(ToolCallBlock),
    stop_reason: z.string(),
    model_ref: z.string(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    token_usage: TokenUsage.nullable(),
    provider_attempt_timeline: ProviderAttemptTimeline,
  }),
  /** One tool call: arguments, the canonical result and what the model was shown. */
  entry("tool_execution", {
    call_id: z.string(),
    tool_name: z.string(),
    arguments: z.string(),
    envelope: CanonicalToolResult,
    rendered: z.string(),
    duration_ms: z.number(),
    started_at: z.string(),
  }),
  /**
   * How the turn ended. A turn the host found interrupted at restart has only `kind` and
   * `reason`; every other terminal carries the full record.
   */
  entry("turn_terminal", {
    kind: z.enum(["completed", "aborted"]),
    reason: z.string().optional(),
    turn_index: z.number().int().optional(),
    last_assistant_message: z.string().optional(),
    completed_at: z.string().optional(),
    duration_ms: z.number().optional(),
    model_rounds: z.number().int().optional(),
    token_usage: TokenUsage.nullable().optional(),
    provider_attempt_timeline: ProviderAttemptTimeline.optional(),
  }),
  /** Why a turn failed, with the diagnostics the failing path recorded. */
  entry("runtime_failure", {
    summary: z.string(),
    kind: z.string().optional(),
    max_rounds: z.number().int().optional(),
    failure_artifact: FailureArtifact.optional(),
    provider_attempt_timeline: ProviderAttemptTimeline.optional(),
    token_usage: TokenUsage.optional(),
  }),
]);
export type TranscriptBody = z.infer<typeof TranscriptBody>;
export type TranscriptEntryKind = TranscriptBody["kind"];
export type TranscriptData<K extends TranscriptEntryKind> = Extract<
  TranscriptBody,
  { kind: K }
>["data"];

/** A catalog entry with its identity. */
export type TranscriptEntry = EntryHead & TranscriptBody;

/** What a writer hands to `TranscriptRepo.append` (the store assigns `seq`). */
export type NewTranscriptEntry = Omit<EntryHead, "seq"> & TranscriptBody;

type AnyObject = z.ZodObject<z.ZodRawShape>;
/** The catalog with identity, as a schema (OpenAPI, tests). */
export const TranscriptEntry = z.discriminatedUnion(
  "kind",
  TranscriptBody.options.map((o) => EntryHead.extend(o.shape)) as unknown as [
    AnyObject,
    ...AnyObject[],
  ],
) as unknown as z.ZodType<TranscriptEntry>;

/** Narrow a stored entry to the catalog; undefined for a kind or shape this version does not know. */
export function parseTranscriptEntry(e: StoredTranscriptEntry): TranscriptEntry | undefined {
  const r = TranscriptEntry.safeParse(e);
  return r.success ? r.data : undefined;
}
