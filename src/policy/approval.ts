// The approval seam: every `ask` decision of the leash goes through `ApprovalGate.request`,
// with a snapshot of everything an approval must be bound to (the call's full input and its
// digest, the execution root, workspace and cwd, the policy and rules digest, the sandbox
// snapshot, the trigger's authority). The gate answers with the call's tool result.
//
// The host wires `AskApprovalGate` (approvals.ts: one approval ask per round, each approved
// call run once, at the start of the agent's next turn, with the guard it comes with).
import { createHash } from "node:crypto";
import type { AuthorityClass } from "../domain/message.ts";
import type { PermissionMode } from "../domain/policy.ts";
import type { ExecutionSnapshot } from "../domain/workspace.ts";
import type { CanonicalToolResult } from "../tools/envelope.ts";
import type { ToolContext, ToolGuard } from "../tools/registry.ts";
import type { Verdict } from "./rules.ts";

export type ApprovalSnapshot = {
  agent_id: string;
  run_id: string;
  message_id: string;
  call_id: string;
  tool_name: string;
  /** The final input (after any hook's updatedInput) and its SHA-256 over canonical JSON. */
  input: unknown;
  input_digest: string;
  execution_root: string;
  cwd: string;
  workspace: { workspace_id: string | null; workspace_anchor: string | null };
  policy: {
    mode: PermissionMode;
    /** The mode after taint (external evidence asks). */
    effective_mode: PermissionMode;
    rules_digest: string;
    verdict: Verdict;
    /** Set when a hook asked (PreToolUse permissionDecision "ask"). */
    hook_reason: string | null;
  };
  execution_snapshot: ExecutionSnapshot | null;
  trigger: {
    policy_authority: AuthorityClass;
    authority_class: AuthorityClass;
    message_kind: string;
    origin: unknown;
    delivery_surface: string | null;
    admission_context: string | null;
  };
};

/** What the leash lends an approved call's guard: the live rules' digest and PostToolUse. */
export type ApprovalChecks = {
  rulesDigest(ctx: ToolContext): string;
  after: ToolGuard["after"];
};

/** An approved call, ready for the turn to dispatch with its own guard. */
export type ApprovedCall = {
  ask_id: string;
  call_id: string;
  tool_name: string;
  /** The approved input as the tool's JSON arguments. */
  arguments: string;
  guard: ToolGuard;
  /** The text that brings the call's result back to the model. */
  report(rendered: string): string;
};

export interface ApprovalGate {
  /** Decide a call that needs an operator's approval; returns the call's tool result. */
  request(snapshot: ApprovalSnapshot): Promise<CanonicalToolResult>;
  /** The round's calls are done: open the ask for the ones requested (approvals.ts). */
  flush?(runId: string): Promise<string | undefined>;
  /** The agent's approved calls, each to run once with the guard it comes with. */
  approved?(agentId: string, checks: ApprovalChecks): Promise<ApprovedCall[]>;
}

/** SHA-256 of a value's canonical JSON (object keys sorted). */
export function digestOf(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
