// Approvals of tool calls through the asks plane. A call the leash must ask about gets the
// tool result `awaiting_approval` (so the provider's call/result pairs stay valid); the calls
// of one model round that need asking go into ONE approval ask, opened when the round's
// calls are done (`flush`), with one decision per call. The ask gates the agent: the turn
// ends `await_operator` and nothing runs (no polling, no turn) until it is decided.
//
// The decision re-enters as one runtime message carrying the turn's taint; the next turn
// runs each approved call before its first model round (`approved`), exactly once:
// `approved → executing` is committed before the call starts, and a restart turns a call it
// finds `executing` into an `interrupted` result (`recover`), never into a second run. An
// approval applies only to what was approved: the input's digest, the execution root and
// cwd, and the rules' digest are checked again just before the call runs; a change voids it.
// Denied, expired and withdrawn calls reach the model as tool errors with the reason.
import type { AskRecord } from "../domain/ask.ts";
import type { ApprovalCallRecord } from "../domain/approval.ts";
import { HolonError } from "../domain/errors.ts";
import type { AuthorityClass } from "../domain/message.ts";
import type { AskDecision, AskEffects, AskService } from "../asks/service.ts";
import type { Ingress, MessageDraft } from "../agent/ingress.ts";
import type { Store } from "../store/db.ts";
import { errorResult, renderError, type CanonicalToolResult } from "../tools/envelope.ts";
import type { GuardDecision, ToolContext, ToolDefinition, ToolGuard } from "../tools/registry.ts";
import {
  digestOf,
  type ApprovalChecks,
  type ApprovalGate,
  type ApprovalSnapshot,
  type ApprovedCall,
} from "./approval.ts";
import { lowestAuthority } from "./taint.ts";

/** Caps: what one ask shows of an input (the full input is kept on the call's row). */
const INPUT_PREVIEW_CHARS = 4_000;
/** An input larger than this is refused outright (an approval must be readable). */
const MAX_INPUT_CHARS = 1_000_000;
const MAX_CALLS_PER_ASK = 16;

export type ApprovalServiceDeps = {
  store: Store;
  asks: AskService;
  ingress: Ingress;
};

export class AskApprovalGate implements ApprovalGate, AskEffects {
  private readonly deps: ApprovalServiceDeps;
  /** The calls of the round in progress, per run: they become one ask at `flush`. */
  private readonly batches = new Map<string, { ask_id: string; calls: ApprovalSnapshot[] }>();

  constructor(deps: ApprovalServiceDeps) {
    this.deps = deps;
  }

  private get store(): Store {
    return this.deps.store;
  }

  private now(): string {
    return this.store.clock.now().toISOString();
  }

  // -------------------------------------------------------------------------------------
  // Asking

  async request(s: ApprovalSnapshot): Promise<CanonicalToolResult> {
    // A one-shot run (`holon run`) ends with its turn: nobody could approve in time.
    if (s.trigger.delivery_surface === "run_once") {
      return errorResult(s.tool_name, {
        kind: "approval_required",
        message: `${s.tool_name} was not run: it ${s.policy.hook_reason ? `needs approval (${s.policy.hook_reason})` : s.policy.verdict.reason}, and a one-shot run cannot wait for the operator's approval`,
        details: { reason: s.policy.verdict.reason, rule: s.policy.verdict.rule },
        recovery_hint:
          "use a command the rules allow, or tell the operator the call needs an agent that can wait for approval",
        retryable: false,
      });
    }
    if (JSON.stringify(s.input ?? null).length > MAX_INPUT_CHARS) {
      return errorResult(s.tool_name, {
        kind: "approval_input_too_large",
        message: `${s.tool_name} was not run: it needs operator approval and its input is larger than ${MAX_INPUT_CHARS} characters, too large to approve`,
        recovery_hint: "split the work into smaller calls",
        retryable: false,
      });
    }
    let batch = this.batches.get(s.run_id);
    if (batch && batch.calls.length >= MAX_CALLS_PER_ASK) {
      return errorResult(s.tool_name, {
        kind: "approval_batch_full",
        message: `${s.tool_name} was not run: ${MAX_CALLS_PER_ASK} calls of this round already await approval`,
        recovery_hint: "wait for the operator's decision on the calls already asked about",
        retryable: false,
      });
    }
    if (!batch) {
      batch = { ask_id: this.store.ids.next("ask"), calls: [] };
      this.batches.set(s.run_id, batch);
    }
    batch.calls.push(s);
    return errorResult(s.tool_name, {
      kind: "awaiting_approval",
      message: `${s.tool_name} needs operator approval (${s.policy.hook_reason ?? s.policy.verdict.reason}); it has not run. Your turn ends after this round; if the operator approves, the runtime runs this exact call once and gives you its result`,
      details: { ask_id: batch.ask_id, call_index: batch.calls.length },
      recovery_hint:
        "do not retry the call or work around it; finish this round, and say what you are waiting for",
      retryable: false,
    });
  }

  /** The round's calls are done: open the one ask that holds the ones needing approval. */
  async flush(runId: string): Promise<string | undefined> {
    const batch = this.batches.get(runId);
    if (!batch) return undefined;
    this.batches.delete(runId);
    const calls = batch.calls;
    const first = calls[0]!;
    const now = this.now();
    const multiple = calls.length > 1;
    await this.store.tx(async () => {
      await this.deps.asks.open({
        id: batch.ask_id,
        agent_id: first.agent_id,
        kind: "approval",
        source: "approval",
        scope: "agent",
        about: multiple
          ? `Approve ${calls.length} tool calls: ${calls.map((c) => c.tool_name).join(", ")}`
          : `Approve ${first.tool_name}: ${inputLine(first)}`,
        detail: askDetail(calls),
        options: ["approve", "deny"],
        free_text: multiple,
        details: {
          approval: "calls",
          trigger: first.trigger,
          calls: calls.map((c, i) => ({ index: i + 1, ...shown(c) })),
        },
      });
      for (const [i, c] of calls.entries()) {
        await this.store.approvals.addCall({
          ask_id: batch.ask_id,
          call_id: c.call_id,
          agent_id: c.agent_id,
          index: i + 1,
          state: "pending",
          tool_name: c.tool_name,
          input: c.input,
          input_digest: c.input_digest,
          snapshot: c as unknown as Record<string, unknown>,
          created_at: now,
          updated_at: now,
        });
      }
    });
    return batch.ask_id;
  }

  // -------------------------------------------------------------------------------------
  // The asks plane's effects (inside the decision's transaction)

  async decided(ask: AskRecord, decision: AskDecision): Promise<undefined> {
    if (!isCallAsk(ask)) return undefined;
    const calls = await this.store.approvals.callsOfAsk(ask.id);
    const approved = approvedSet(decision.decision, calls.length);
    for (const c of calls) {
      const ok = approved.has(c.index);
      await this.move(c, "pending", ok ? "approved" : "denied", {
        reason: ask.reason ?? (ok ? "approved by the operator" : "denied by the operator"),
      });
    }
    return undefined;
  }

  async closed(ask: AskRecord): Promise<void> {
    if (!isCallAsk(ask)) return;
    const reason = ask.state === "expired" ? "expired" : (ask.reason ?? "withdrawn");
    for (const c of await this.store.approvals.callsOfAsk(ask.id)) {
      await this.move(c, "pending", "denied", { reason });
    }
  }

  async message(ask: AskRecord, decision: AskDecision | null): Promise<MessageDraft | undefined> {
    if (!isCallAsk(ask)) return undefined;
    const calls = await this.store.approvals.callsOfAsk(ask.id);
    const lines = [
      decision
        ? `The operator decided your approval ask ${ask.id} (${ask.about}): ${ask.decision}.`
        : `Your approval ask ${ask.id} (${ask.about}) expired at ${ask.expires_at} without a decision.`,
    ];
    if (decision && ask.reason) lines.push(`Reason: ${ask.reason}`);
    for (const c of calls) {
      lines.push(
        c.state === "approved"
          ? `- call ${c.index} (${c.tool_name}, call id ${c.call_id}): approved; it runs now, exactly once, and its result follows.`
          : `- call ${c.index} (${c.tool_name}, call id ${c.call_id}): not run. ${renderError(deniedResult(c, ask))}`,
      );
    }
    return runtimeMessage(ask.agent_id, lines.join("\n"), ask.id, trigger(calls), {
      ask_decision: decision ? (ask.decision ?? null) : "expired",
    });
  }

  // -------------------------------------------------------------------------------------
  // Running what was approved

  /** The agent's approved calls, oldest first, each with the guard that runs it once. */
  async approved(agentId: string, checks: ApprovalChecks): Promise<ApprovedCall[]> {
    return (await this.store.approvals.callsOf(agentId, "approved")).map((c) => ({
      ask_id: c.ask_id,
      call_id: c.call_id,
      tool_name: c.tool_name,
      arguments: JSON.stringify(c.input ?? {}),
      guard: new ApprovedCallGuard(this, c, checks),
      report: (rendered) =>
        `Result of your call ${c.call_id} (${c.tool_name}), run once after the operator approved it (ask ${c.ask_id}):\n${rendered}`,
    }));
  }

  /**
   * After a restart: a call found `executing` is recorded `interrupted` and its agent told
   * (never run again); an approved call whose decision message no longer waits gets one.
   * Only the calls of `agents` (the groups a host acquires: host.ts).
   */
  async recover(agents: ReadonlySet<string>): Promise<void> {
    const store = this.store;
    const byAsk = new Map<string, ApprovalCallRecord[]>();
    for (const c of await store.approvals.callsIn("executing")) {
      if (!agents.has(c.agent_id)) continue;
      const next = await this.move(c, "executing", "interrupted", {
        reason: "the runtime restarted while the call ran",
      });
      if (next) byAsk.set(c.ask_id, [...(byAsk.get(c.ask_id) ?? []), next]);
    }
    for (const [askId, calls] of byAsk) {
      const agent = await store.agents.get(calls[0]!.agent_id);
      if (!agent || agent.status === "stopped") continue;
      const lines = calls.map(
        (c) =>
          `Your approved call ${c.call_id} (${c.tool_name}, ask ${askId}) was interrupted: the runtime restarted while it ran. It was NOT run again, and what it did before the restart is unknown; check before you retry. ${renderError(interruptedResult(c))}`,
      );
      await this.deps.ingress.admit(
        runtimeMessage(agent.agent_id, lines.join("\n"), askId, trigger(calls), {
          ask_decision: "interrupted",
        }),
      );
    }
    const waiting = new Map<string, ApprovalCallRecord[]>();
    for (const c of await store.approvals.callsIn("approved")) {
      if (!agents.has(c.agent_id)) continue;
      waiting.set(c.ask_id, [...(waiting.get(c.ask_id) ?? []), c]);
    }
    for (const [askId, calls] of waiting) {
      const agentId = calls[0]!.agent_id;
      const agent = await store.agents.get(agentId);
      if (!agent || agent.status === "stopped") continue;
      const queued = (await store.messages.withStatus(agentId, "queued")).some(
        (m) => m.metadata?.ask_id === askId,
      );
      if (queued) continue;
      await this.deps.ingress.admit(
        runtimeMessage(
          agentId,
          `The operator approved ${calls.length === 1 ? "a call" : `${calls.length} calls`} of your ask ${askId} before the runtime restarted; ${calls.length === 1 ? "it runs" : "they run"} now, once, and the result follows.`,
          askId,
          trigger(calls),
          { ask_decision: "approve" },
        ),
      );
    }
  }

  /** Compare-and-set one call's state; undefined when it was not in `from`. */
  async move(
    c: ApprovalCallRecord,
    from: ApprovalCallRecord["state"],
    to: ApprovalCallRecord["state"],
    extra: Partial<Pick<ApprovalCallRecord, "reason" | "outcome">> = {},
  ): Promise<ApprovalCallRecord | undefined> {
    const next: ApprovalCallRecord = { ...c, ...extra, state: to, updated_at: this.now() };
    return await this.store.tx(async () =>
      (await this.store.approvals.transition(next, from)) ? next : undefined,
    );
  }
}

/**
 * The guard an approved call runs under: no PreToolUse hook and no ask again (both happened
 * before the approval); instead what was approved is checked, `executing` committed, and
 * after the call its outcome recorded and the PostToolUse hooks run.
 */
class ApprovedCallGuard implements ToolGuard {
  private readonly gate: AskApprovalGate;
  private readonly call: ApprovalCallRecord;
  private readonly checks: ApprovalChecks;

  constructor(gate: AskApprovalGate, call: ApprovalCallRecord, checks: ApprovalChecks) {
    this.gate = gate;
    this.call = call;
    this.checks = checks;
  }

  async before(def: ToolDefinition, input: unknown, ctx: ToolContext): Promise<GuardDecision> {
    const c = this.call;
    const s = c.snapshot as unknown as ApprovalSnapshot;
    const changed: string[] = [];
    if (digestOf(input) !== c.input_digest) changed.push("the input differs from the approved one");
    if (ctx.execution_root !== s.execution_root) {
      changed.push(
        `the execution root is now ${ctx.execution_root}, not the approved ${s.execution_root}`,
      );
    } else if (ctx.cwd !== s.cwd) {
      changed.push(`the working directory is now ${ctx.cwd}, not the approved ${s.cwd}`);
    }
    if (this.checks.rulesDigest(ctx) !== s.policy.rules_digest) {
      changed.push("the permission rules changed since the approval");
    }
    if (changed.length) {
      const reason = changed.join("; ");
      await this.gate.move(c, "approved", "void", { reason });
      return {
        kind: "result",
        canonical: errorResult(def.name, {
          kind: "approval_void",
          message: `${def.name} was approved but not run: ${reason}. An approval covers exactly what was approved`,
          details: { ask_id: c.ask_id, call_id: c.call_id },
          recovery_hint: "call it again if it is still needed; it will be asked about afresh",
          retryable: false,
        }),
      };
    }
    // Durable before the call starts: a crash from here on can never run it a second time.
    if (!(await this.gate.move(c, "approved", "executing"))) {
      return {
        kind: "result",
        canonical: errorResult(def.name, {
          kind: "approval_used",
          message: `${def.name} was not run again: its approval (ask ${c.ask_id}) was already used`,
          retryable: false,
        }),
      };
    }
    return { kind: "run", input, context: null };
  }

  async after(
    def: ToolDefinition,
    input: unknown,
    canonical: CanonicalToolResult,
    ctx: ToolContext,
  ): Promise<string | null> {
    const c = this.call;
    const running: ApprovalCallRecord = { ...c, state: "executing" };
    await this.gate.move(running, "executing", "completed", {
      outcome: { status: canonical.status, summary_text: canonical.summary_text.slice(0, 500) },
    });
    return this.checks.after(def, input, canonical, ctx);
  }
}

function isCallAsk(ask: AskRecord): boolean {
  return ask.kind === "approval" && ask.details?.approval === "calls";
}

/**
 * Which calls a decision approves: `approve` all, `deny` none, or `approve 1,3` (the calls
 * named by number; the others are denied). Anything else is refused (nothing is written).
 */
export function approvedSet(decision: string, count: number): Set<number> {
  const text = decision.trim().toLowerCase();
  const all = new Set(Array.from({ length: count }, (_, i) => i + 1));
  if (text === "approve") return all;
  if (text === "deny") return new Set();
  const m = /^approve\s+(\d{1,2}(?:\s*[, ]\s*\d{1,2})*)$/.exec(text);
  const picked = m ? m[1]!.split(/[\s,]+/).map(Number) : [];
  if (!m || picked.some((n) => !all.has(n))) {
    throw new HolonError(
      "invalid_decision",
      `'${decision.slice(0, 80)}' is not a decision on this approval: answer approve, deny, or approve followed by the numbers of the calls to run (1 to ${count})`,
      { status: 400, hint: "for example: approve 1,3 (the others are denied)" },
    );
  }
  return new Set(picked);
}

function deniedResult(c: ApprovalCallRecord, ask: AskRecord): CanonicalToolResult {
  const expired = ask.state === "expired";
  const reason = c.reason ?? (expired ? "expired" : "denied by the operator");
  return errorResult(c.tool_name, {
    kind: expired ? "approval_expired" : "approval_denied",
    message: expired
      ? `${c.tool_name} was not run: its approval expired without a decision (reason: expired)`
      : `${c.tool_name} was not run: the operator denied it (reason: ${reason})`,
    details: { ask_id: ask.id, call_id: c.call_id, reason },
    recovery_hint: "do not retry the same call; choose another approach or ask the operator",
    retryable: false,
  });
}

function interruptedResult(c: ApprovalCallRecord): CanonicalToolResult {
  return errorResult(c.tool_name, {
    kind: "interrupted",
    message: `${c.tool_name} was interrupted by a runtime restart while it ran; it was not run again`,
    details: { ask_id: c.ask_id, call_id: c.call_id },
    recovery_hint: "check what the call did before deciding whether to do it again",
    retryable: false,
  });
}

/** The lowest policy authority among the calls' triggers: the message carries the taint. */
function trigger(calls: ApprovalCallRecord[]): AuthorityClass {
  return lowestAuthority(
    ...calls.map((c) => (c.snapshot as unknown as ApprovalSnapshot).trigger?.policy_authority),
  );
}

function runtimeMessage(
  agentId: string,
  text: string,
  askId: string,
  authority: AuthorityClass,
  metadata: Record<string, unknown>,
): MessageDraft {
  return {
    agent_id: agentId,
    kind: "internal_followup",
    origin: { kind: "system", subsystem: "approvals" },
    body: { type: "text", text },
    surface: "runtime_system",
    admission: "runtime_owned",
    priority: "next",
    // The turn that resumes keeps the taint of the turn that asked.
    metadata: { ask_id: askId, approval: true, policy_authority: authority, ...metadata },
  };
}

function inputLine(s: ApprovalSnapshot): string {
  const i = (s.input ?? {}) as Record<string, unknown>;
  const text =
    typeof i.cmd === "string"
      ? i.cmd
      : Array.isArray(i.items)
        ? (i.items as { cmd?: unknown }[]).map((x) => String(x.cmd)).join(" ; ")
        : JSON.stringify(s.input);
  const line = text.replace(/\s+/g, " ");
  return line.length > 200 ? line.slice(0, 199) + "…" : line;
}

/** What an ask shows of one call: everything it is bound to; the input clipped for reading. */
function shown(s: ApprovalSnapshot): Record<string, unknown> {
  const text = JSON.stringify(s.input ?? null);
  return {
    call_id: s.call_id,
    tool_name: s.tool_name,
    input:
      text.length <= INPUT_PREVIEW_CHARS
        ? s.input
        : { preview: text.slice(0, INPUT_PREVIEW_CHARS), chars: text.length },
    input_digest: s.input_digest,
    execution_root: s.execution_root,
    cwd: s.cwd,
    workspace: s.workspace,
    policy: s.policy,
    sandbox: s.execution_snapshot?.policy ?? null,
    trigger: s.trigger,
    run_id: s.run_id,
  };
}

function askDetail(calls: ApprovalSnapshot[]): string {
  const t = calls[0]!.trigger;
  const lines = [
    `Triggered by a ${t.message_kind} message (authority ${t.authority_class}; the turn runs with policy authority ${t.policy_authority}).`,
  ];
  for (const [i, c] of calls.entries()) {
    lines.push(
      "",
      `${i + 1}. ${c.tool_name} — ${c.policy.hook_reason ?? c.policy.verdict.reason}`,
      `   input: ${inputLine(c)}`,
      `   root: ${c.execution_root}   cwd: ${c.cwd}`,
      `   mode: ${c.policy.effective_mode}   input sha256: ${c.input_digest.slice(0, 16)}…   rules sha256: ${c.policy.rules_digest.slice(0, 16)}…`,
    );
  }
  lines.push(
    "",
    calls.length > 1
      ? "Answer approve (all), deny (all), or approve followed by the numbers to run (approve 1,3); each approved call runs once."
      : "Answer approve or deny; an approved call runs exactly once.",
  );
  return lines.join("\n");
}
