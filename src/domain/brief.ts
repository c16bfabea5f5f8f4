// Briefs: the user-facing output of an agent, kept apart from reasoning and tool traces.
import { z } from "zod";
import { BriefAttachment } from "./message.ts";

/** `action_required`: the runtime stopped something and needs the operator (runaway guard). */
export const BriefKind = z.enum(["ack", "result", "failure", "action_required"]);
export type BriefKind = z.infer<typeof BriefKind>;

export const BriefRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  work_item_id: z.string().optional(),
  /** The agent's active workspace when the brief was written. */
  workspace_id: z.string().optional(),
  kind: BriefKind,
  created_at: z.string(),
  text: z.string(),
  attachments: z.array(BriefAttachment).optional(),
  related_message_id: z.string().optional(),
  related_task_id: z.string().optional(),
});
export type BriefRecord = z.infer<typeof BriefRecord>;
