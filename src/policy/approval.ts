// The approval seam: every `ask` decision of the leash goes through `ApprovalGate.request`,
// with a snapshot of everything an approval must be bound to (the call's full input and its
// digest, the execution root, workspace and cwd, the policy and rules digest, the sandbox
// snapshot, the trigger's authority). The gate answers with the call's tool result.
//
// The host wires `AskApprovalGate` (approvals.ts: an approval ask per round, each approved
// call run once). `UnavailableApprovalGate` fails closed where no asks plane is wired (a
// test's smaller graph): the call does not run and the model gets `approval_unavailable`.
import { createHash } from "node:crypto";
import type { AuthorityClass } from "../domain/message.ts";
import type { PermissionMode } from "../domain/policy.ts";
import type { ExecutionSnapshot } from "../domain/workspace.ts";
import { errorResult, type CanonicalToolResult } from "../tools/envelope.ts";
import type { Verdict } from "./rules.ts";
import type { ApprovalChecks, ApprovedCall } from "./approvals.ts";

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

export interface ApprovalGate {
  /** Decide a call that needs an operator's approval; returns the call's tool result. */
  request(snapshot: ApprovalSnapshot): Promise<CanonicalToolResult>;
  /** The round's calls are done: open the ask for the ones requested (approvals.ts). */
  flush?(runId: string): string | undefined;
  /** The agent's approved calls, each to run once with the guard it comes with. */
  approved?(agentId: string, checks: ApprovalChecks): ApprovedCall[];
}

/** Fail closed: without an asks plane nothing that needs approval runs. */
export class UnavailableApprovalGate implements ApprovalGate {
  async request(s: ApprovalSnapshot): Promise<CanonicalToolResult> {
    return errorResult(s.tool_name, {
      kind: "approval_unavailable",
      message: `${s.tool_name} was not run: it ${s.policy.verdict.reason.replace(/^needs approval/, "needs operator approval")}, and this runtime has no approval mechanism yet`,
      details: {
        reason: s.policy.verdict.reason,
        rule: s.policy.verdict.rule,
        hook_reason: s.policy.hook_reason,
        effective_mode: s.policy.effective_mode,
        policy_authority: s.trigger.policy_authority,
        input_digest: s.input_digest,
        rules_digest: s.policy.rules_digest,
      },
      recovery_hint:
        "do not retry the same call; use a command the rules allow, or tell the operator what you need and why",
      retryable: false,
    });
  }
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
