// Approvals of the action leash, as stored. A call approval is one tool call an `ask`
// verdict held back: it is bound to the call's full input (and its digest), the execution
// root, cwd and workspace, the rules' digest and the trigger's authority, and it runs at
// most once: `approved → executing` is committed before the call starts, so a crash leaves
// `executing`, which a restart turns into `interrupted`, never into a second run.
// A consent grant is an operator's approval of a workspace-level definition (a workspace
// hook; an MCP server of a workspace): bound to the workspace, the entry's name and the
// SHA-256 of its full definition, so any change to the definition needs a new approval.
import { z } from "zod";

export const ApprovalCallState = z.enum([
  /** Waiting for the operator's decision. */
  "pending",
  /** Approved; runs at the start of the agent's next turn. */
  "approved",
  /** Committed just before the call starts. */
  "executing",
  /** Ran; its result re-entered the agent. */
  "completed",
  /** A restart found it executing: it is never run again. */
  "interrupted",
  /** Denied by the operator, expired, or withdrawn (the model got a tool error). */
  "denied",
  /** Approved, but what was approved no longer holds (input, rules or root changed). */
  "void",
]);
export type ApprovalCallState = z.infer<typeof ApprovalCallState>;

export const ApprovalCallRecord = z.object({
  ask_id: z.string(),
  call_id: z.string(),
  agent_id: z.string(),
  /** 1-based position in its ask (a decision can name calls by number). */
  index: z.number().int().positive(),
  state: ApprovalCallState,
  tool_name: z.string(),
  /** The final input (after any hook's updatedInput) and its SHA-256 over canonical JSON. */
  input: z.unknown(),
  input_digest: z.string(),
  /** The full approval snapshot (src/policy/approval.ts `ApprovalSnapshot`). */
  snapshot: z.record(z.string(), z.unknown()),
  /** Why it ended as it did (the operator's reason, `expired`, what changed). */
  reason: z.string().optional(),
  /** The executed call's status and summary. */
  outcome: z.object({ status: z.enum(["success", "error"]), summary_text: z.string() }).optional(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ApprovalCallRecord = z.infer<typeof ApprovalCallRecord>;

export const ConsentSubject = z.enum(["workspace_hook", "mcp_server"]);
export type ConsentSubject = z.infer<typeof ConsentSubject>;

export const ConsentState = z.enum(["pending", "granted", "refused"]);
export type ConsentState = z.infer<typeof ConsentState>;

export const ConsentGrant = z.object({
  subject: ConsentSubject,
  /** The workspace root the definition lives in (its real path). */
  workspace: z.string(),
  /** The entry's name (a hook entry `PreToolUse[0]`, an MCP server's name). */
  name: z.string(),
  /** SHA-256 of the entry's full definition, over canonical JSON. */
  digest: z.string(),
  state: ConsentState,
  /** The approval ask that asked for it. */
  ask_id: z.string(),
  /** The definition as the operator was shown it. */
  definition: z.unknown(),
  reason: z.string().optional(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConsentGrant = z.infer<typeof ConsentGrant>;
