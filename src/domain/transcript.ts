// Transcript entries: the durable record of what happened in each turn.
import { z } from "zod";

export const TranscriptEntryKind = z.enum([
  "incoming_message",
  "assistant_round",
  "tool_execution",
  "turn_terminal",
  "runtime_failure",
  "message_outcome",
]);
export type TranscriptEntryKind = z.infer<typeof TranscriptEntryKind>;

export const TranscriptEntry = z.object({
  id: z.string(),
  agent_id: z.string(),
  seq: z.number().int(),
  created_at: z.string(),
  kind: TranscriptEntryKind,
  run_id: z.string().optional(),
  message_id: z.string().optional(),
  /** The entry's own shape; each kind documents its fields in docs/architecture.md. */
  data: z.record(z.string(), z.unknown()),
});
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;
