// The ask service: the one way anything waits on a person. Budget checks, the work plane
// (a question, a runaway halt) and later approvals open asks here; the operator (control
// token, operator binding) or, for a child's input ask, its parent agent decides them.
// Every change is one transaction with its event: opening arms the expiry deadline and
// lets the planes hold what the ask is about (an agent-scope ask gates the agent's loop,
// a work-item ask blocks only its item); deciding admits the message that wakes the agent,
// with the decider's authority. Only a pending ask can be decided (409 otherwise), and a
// refused decision writes nothing.
//
// The API the budget code calls (inside its own transaction where it has one):
//   open(draft)                 → AskRecord   (kind "budget", scope agent or work_item)
//   withdraw(id, reason, wake?) → AskRecord   (its window turned over; `wake` tells the agent)
//   decide(id, answer, by)      → decision    (`holon budget raise` answers the ask it names)
//   pendingFor(agentId)         → AskRecord[] (every ask holding the agent or its items)
//   gatedBy(agentId)            → ask id      (the gate the loop and each provider call consult)
import {
  ASK_LIMITS,
  AskRecord,
  DEFAULT_ASK_EXPIRY_HOURS,
  holds,
  matchOption,
  type AskDecider,
  type AskKind,
  type AskScope,
  type AskSource,
} from "../domain/ask.ts";
import { HolonError } from "../domain/errors.ts";
import type { MessageEnvelope } from "../domain/message.ts";
import type { Deadline } from "../domain/deadline.ts";
import type { Ingress, MessageDraft } from "../agent/ingress.ts";
import type { AgentSignals } from "../agent/signals.ts";
import type { Store } from "../store/db.ts";
import { ASKS_PER_AGENT_KEPT } from "../store/asks.ts";

export const ASK_EXPIRY = "ask_expiry";
export const askExpiryKey = (askId: string) => `ask_expiry:${askId}`;

/** What an opener describes; the service adds id, state, times and expiry. */
export type AskDraft = {
  /** A id the opener reserved (`store.ids.next("ask")`) when it must name the ask first. */
  id?: string | undefined;
  agent_id: string;
  kind: AskKind;
  source: AskSource;
  scope: AskScope;
  work_item_id?: string | undefined;
  /** False: the ask holds nothing up while it waits (see AskRecord.gates_agent). */
  gates_agent?: false | undefined;
  about: string;
  detail: string;
  options?: string[] | undefined;
  free_text?: boolean | undefined;
  details?: Record<string, unknown> | undefined;
  /** Overrides the configured expiry (milliseconds from now). */
  expires_in_ms?: number | undefined;
};

/** Who is deciding, as the edge authenticated them. */
export type AskCredential =
  | { kind: "operator"; via: "control" }
  | { kind: "operator"; via: "operator_binding"; binding_id: string; actor_id: string }
  /** An agent (through a tool): only a parent, only for its child's input asks. */
  | { kind: "agent"; agent_id: string; task_id?: string | undefined };

export type AskAnswer = { decision: string; reason?: string | undefined };

/** A decision as the planes see it: the normalized answer and, for `continue N`, N. */
export type AskDecision = { decision: string; option?: string | undefined; count?: number };

/**
 * How a plane takes part in an ask's life, inside the transaction of each change. The work
 * plane blocks the item an ask is about and applies a runaway decision (continue N, block,
 * cancel); the budget code may add its own.
 */
export interface AskEffects {
  opened?(ask: AskRecord): void | Promise<void>;
  /**
   * Before a decision is written: throw (a HolonError with a 4xx status) to refuse it, and
   * the ask stays pending (an MCP elicitation's answer must fit the server's form).
   */
  vetDecision?(ask: AskRecord, decision: AskDecision, by: AskCredential): void;
  /** Decided; returns a line to add to the agent's message, if it has one to say. */
  decided?(ask: AskRecord, decision: AskDecision): string | undefined | Promise<string | undefined>;
  /** Expired or withdrawn. */
  closed?(ask: AskRecord): void | Promise<void>;
  /**
   * The message that tells the agent about a decision or an expiry (`decision` null), when
   * this plane words it instead of the default: an approval's verdict re-enters with runtime
   * authority and the turn's taint, never as an operator instruction. Null: tell the agent
   * nothing (a consent decision changes what runs, not what the agent should do).
   */
  message?(
    ask: AskRecord,
    decision: AskDecision | null,
  ): MessageDraft | null | undefined | Promise<MessageDraft | null | undefined>;
}

/** The deadline scheduler as asks use it (waiting/scheduler.ts satisfies it). */
export interface AskDeadlines {
  add(d: {
    agent_id: string;
    kind: string;
    key: string;
    due_at: string;
    payload: Record<string, unknown>;
  }): Promise<unknown>;
  cancelKey(key: string): Promise<boolean>;
}

export type AskServiceDeps = {
  store: Store;
  ingress: Ingress;
  signals: AgentSignals;
  deadlines: AskDeadlines;
  /** Expiry of a new ask in hours (config `asks.expiry_hours`). */
  expiryHours?: () => number;
  /** The planes' hooks, looked up at call time (they are built after this service). */
  effects?: () => AskEffects[];
};

export type AskFilter = {
  state?: AskRecord["state"] | "all" | undefined;
  agent_id?: string | undefined;
  limit?: number | undefined;
};

export class AskService {
  private readonly deps: AskServiceDeps;

  constructor(deps: AskServiceDeps) {
    this.deps = deps;
  }

  private get store(): Store {
    return this.deps.store;
  }

  private effects(): AskEffects[] {
    return this.deps.effects?.() ?? [];
  }

  private now(): string {
    return this.store.clock.now().toISOString();
  }

  // ---------------------------------------------------------------------------
  // Reads

  async get(id: string): Promise<AskRecord> {
    const ask = await this.store.asks.get(id);
    if (!ask) {
      throw new HolonError("unknown_ask", `no ask '${id}'`, {
        status: 404,
        hint: "list the asks with `holon asks` (GET /control/asks)",
        details: { ask_id: id },
      });
    }
    return ask;
  }

  /** Pending asks across agents (oldest first), or the newest of any state. */
  async list(filter: AskFilter = {}): Promise<AskRecord[]> {
    const limit = Math.min(Math.max(filter.limit ?? 100, 1), 500);
    const state = filter.state ?? "pending";
    if (state !== "all" && filter.agent_id === undefined) {
      return await this.store.asks.withState(state, limit);
    }
    const rows = await this.store.asks.recent(state === "all" ? limit : 1_000, filter.agent_id);
    return (state === "all" ? rows : rows.filter((a) => a.state === state)).slice(0, limit);
  }

  /** Every ask that still holds this agent or one of its items, oldest first. */
  pendingFor(agentId: string): Promise<AskRecord[]> {
    return this.store.asks.holdingForAgent(agentId);
  }

  /** The agent-scope ask that gates this agent (no model turn while it stands), if any. */
  gatedBy(agentId: string): Promise<string | undefined> {
    return this.store.asks.gate(agentId);
  }

  /** The asks that hold this work item. */
  holdingItem(workItemId: string): Promise<AskRecord[]> {
    return this.store.asks.holdingForItem(workItemId);
  }

  // ---------------------------------------------------------------------------
  // Changes

  /** Open an ask (joins the caller's transaction). */
  async open(draft: AskDraft): Promise<AskRecord> {
    const about = draft.about.trim();
    if (!about) throw invalid("about", "an ask needs a one-line `about`");
    if ((draft.scope === "work_item") !== (draft.work_item_id !== undefined)) {
      throw invalid("work_item_id", "a work-item ask names its item, an agent-scope ask none");
    }
    const options = (draft.options ?? []).map((o) => o.trim()).filter(Boolean);
    if (options.length > ASK_LIMITS.options) throw invalid("options", "too many options");
    if (options.some((o) => o.length > ASK_LIMITS.option_chars)) {
      throw invalid("options", `an option is longer than ${ASK_LIMITS.option_chars} characters`);
    }
    return await this.store.tx(async () => {
      const agent = await this.store.agents.get(draft.agent_id);
      if (!agent) throw invalid("agent_id", `no agent '${draft.agent_id}'`);
      if (draft.work_item_id !== undefined) {
        const item = await this.store.workItems.get(draft.work_item_id);
        if (!item || item.agent_id !== draft.agent_id || item.state !== "open") {
          throw invalid("work_item_id", `no open work item '${draft.work_item_id}' of this agent`);
        }
      }
      const now = this.store.clock.now();
      const ms =
        draft.expires_in_ms ?? (this.deps.expiryHours?.() ?? DEFAULT_ASK_EXPIRY_HOURS) * 3_600_000;
      const ask: AskRecord = {
        id: draft.id ?? this.store.ids.next("ask"),
        agent_id: draft.agent_id,
        kind: draft.kind,
        source: draft.source,
        scope: draft.scope,
        about: clip(about, ASK_LIMITS.about_chars),
        detail: clip(draft.detail.trim(), ASK_LIMITS.detail_chars),
        options,
        free_text: draft.free_text ?? options.length === 0,
        state: "pending",
        expires_at: new Date(now.getTime() + ms).toISOString(),
        details: draft.details ?? {},
        deliveries: {},
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      if (draft.work_item_id !== undefined) ask.work_item_id = draft.work_item_id;
      if (draft.gates_agent === false) ask.gates_agent = false;
      AskRecord.parse(ask);
      await this.store.asks.put(ask, true);
      await this.deps.deadlines.add({
        agent_id: ask.agent_id,
        kind: ASK_EXPIRY,
        key: askExpiryKey(ask.id),
        due_at: ask.expires_at,
        payload: { ask_id: ask.id },
      });
      await this.store.appendEvent(ask.agent_id, {
        type: "ask_opened",
        provenance: ask.work_item_id ? { work_item_id: ask.work_item_id } : {},
        payload: { ask },
      });
      for (const e of this.effects()) await e.opened?.(ask);
      return ask;
    });
  }

  /**
   * Decide a pending ask. Checks, in order: it exists (404), it is pending (409), the
   * credential may decide it (403), the answer fits its options (400); only then is
   * anything written: the decision, its event, the planes' effects and the message that
   * carries it to the agent, all in one transaction.
   */
  decide(
    id: string,
    answer: AskAnswer,
    by: AskCredential,
  ): Promise<{ ask: AskRecord; message_id: string | null }> {
    return this.store.tx(async () => {
      const ask = await this.get(id);
      if (ask.state !== "pending") {
        throw new HolonError("ask_not_pending", `ask '${id}' is ${ask.state}, not pending`, {
          status: 409,
          hint: "only a pending ask can be decided; see it with `holon asks show`",
          details: { ask_id: id, state: ask.state },
        });
      }
      await this.checkCredential(ask, by);
      if (ask.kind === "budget" && ask.details?.budget_scope !== undefined) {
        // A budget stop is lifted by changing the budget, which withdraws this ask.
        throw new HolonError("budget_ask", `ask '${id}' is a budget stop: raise the budget`, {
          status: 409,
          hint: `holon budget raise ${ask.agent_id}${ask.work_item_id ? ` --scope work_item:${ask.work_item_id}` : ""} --tokens <n> (or holon budget unfreeze for a freeze)`,
          details: { ask_id: id },
        });
      }
      const decision = this.checkAnswer(ask, answer);
      for (const e of this.effects()) e.vetDecision?.(ask, decision, by);
      const reason = answer.reason?.trim();
      if (reason && reason.length > ASK_LIMITS.reason_chars) {
        throw invalid("reason", `the reason is longer than ${ASK_LIMITS.reason_chars} characters`);
      }
      const now = this.now();
      const next: AskRecord = {
        ...ask,
        state: "decided",
        decision: decision.decision,
        decided_by: decider(by),
        decided_at: now,
        closed_at: now,
        updated_at: now,
      };
      if (reason) next.reason = reason;
      await this.store.asks.put(next, false);
      await this.deps.deadlines.cancelKey(askExpiryKey(id));
      const notes: string[] = [];
      for (const e of this.effects()) {
        const note = await e.decided?.(next, decision);
        if (note) notes.push(note);
      }
      const agent = await this.store.agents.get(ask.agent_id);
      let message: MessageEnvelope | undefined;
      if (agent && agent.status !== "stopped") {
        const own = await this.effectMessage(next, decision);
        if (own !== null)
          message = await this.deps.ingress.admit(own ?? decisionMessage(next, by, notes));
      }
      await this.store.appendEvent(ask.agent_id, {
        type: "ask_decided",
        provenance: {
          ...(ask.work_item_id ? { work_item_id: ask.work_item_id } : {}),
          ...(message ? { message_id: message.id } : {}),
        },
        payload: { ask: next, message_id: message?.id ?? null },
      });
      await this.store.asks.pruneClosed(ask.agent_id, ASKS_PER_AGENT_KEPT);
      this.store.afterCommit(() => this.deps.signals.notify(ask.agent_id)); // the loop reads the committed ask
      return { ask: next, message_id: message?.id ?? null };
    });
  }

  /**
   * Withdraw an ask that still holds (pending, or an expired budget ask): what it waited
   * for no longer matters (its item closed, its agent stopped, its budget window turned
   * over). `wake`, when given, is told to the agent as a runtime message. Undefined when
   * the ask no longer holds (nothing to do).
   */
  withdraw(
    id: string,
    reason: string,
    opts: { wake?: string } = {},
  ): Promise<AskRecord | undefined> {
    return this.store.tx(async () => {
      const ask = await this.store.asks.get(id);
      if (!ask || !holds(ask)) return undefined;
      const now = this.now();
      const next: AskRecord = {
        ...ask,
        state: "withdrawn",
        reason: clip(reason, ASK_LIMITS.reason_chars),
        closed_at: now,
        updated_at: now,
      };
      await this.store.asks.put(next, false);
      await this.deps.deadlines.cancelKey(askExpiryKey(id));
      await this.store.appendEvent(ask.agent_id, {
        type: "ask_withdrawn",
        provenance: ask.work_item_id ? { work_item_id: ask.work_item_id } : {},
        payload: { ask: next },
      });
      for (const e of this.effects()) await e.closed?.(next);
      const agent = await this.store.agents.get(ask.agent_id);
      if (opts.wake && agent && agent.status !== "stopped") {
        await this.deps.ingress.admit({
          agent_id: ask.agent_id,
          kind: "system_tick",
          origin: { kind: "system", subsystem: "asks" },
          body: { type: "text", text: opts.wake },
          surface: "runtime_system",
          admission: "runtime_owned",
          metadata: { ask_id: id, ask_state: "withdrawn" },
        });
      }
      await this.store.asks.pruneClosed(ask.agent_id, ASKS_PER_AGENT_KEPT);
      this.store.afterCommit(() => this.deps.signals.notify(ask.agent_id)); // the loop reads the committed ask
      return next;
    });
  }

  /** Withdraw every ask about this work item (it completed or was cancelled). */
  withdrawForItem(workItemId: string, reason: string): Promise<string[]> {
    return this.store.tx(async () => {
      const ids: string[] = [];
      for (const a of await this.store.asks.holdingForItem(workItemId))
        if ((await this.withdraw(a.id, reason)) !== undefined) ids.push(a.id);
      return ids;
    });
  }

  /** Withdraw every ask of this agent (it was stopped or deleted). */
  withdrawForAgent(agentId: string, reason: string): Promise<string[]> {
    return this.store.tx(async () => {
      const ids: string[] = [];
      for (const a of await this.store.asks.holdingForAgent(agentId))
        if ((await this.withdraw(a.id, reason)) !== undefined) ids.push(a.id);
      return ids;
    });
  }

  /**
   * The scheduler's handler for a due expiry (runs inside the fire's transaction). An
   * input ask tells its agent it expired; a budget ask expires quietly and keeps holding.
   */
  /** The first effect's own message for a settled ask (null: none at all; undefined: the default). */
  private async effectMessage(
    ask: AskRecord,
    decision: AskDecision | null,
  ): Promise<MessageDraft | null | undefined> {
    for (const e of this.effects()) {
      const m = await e.message?.(ask, decision);
      if (m !== undefined) return m;
    }
    return undefined;
  }

  expiryHandler() {
    return async (
      d: Deadline,
    ): Promise<
      { draft: MessageDraft; admitted(m: MessageEnvelope): Promise<void> } | "handled" | null
    > => {
      const id = typeof d.payload.ask_id === "string" ? d.payload.ask_id : "";
      const ask = await this.store.asks.get(id);
      if (!ask || ask.state !== "pending") return null;
      const now = this.now();
      const next: AskRecord = {
        ...ask,
        state: "expired",
        reason: `no decision by ${ask.expires_at}`,
        closed_at: now,
        updated_at: now,
      };
      await this.store.asks.put(next, holds(next));
      for (const e of this.effects()) await e.closed?.(next);
      const agent = await this.store.agents.get(ask.agent_id);
      const event = async (message_id: string | null) =>
        await this.store.appendEvent(ask.agent_id, {
          type: "ask_expired",
          provenance: {
            ...(ask.work_item_id ? { work_item_id: ask.work_item_id } : {}),
            ...(message_id ? { message_id } : {}),
          },
          payload: { ask: next, message_id },
        });
      const own = await this.effectMessage(next, null);
      if (ask.kind === "budget" || !agent || agent.status === "stopped" || own === null) {
        await event(null);
        return "handled";
      }
      return {
        draft: own ?? {
          agent_id: ask.agent_id,
          kind: "system_tick",
          origin: { kind: "system", subsystem: "asks" },
          body: { type: "text", text: expiredText(next) },
          surface: "runtime_system",
          admission: "runtime_owned",
          metadata: { ask_id: ask.id, ask_state: "expired" },
        },
        admitted: async (m) => {
          await event(m.id);
        },
      };
    };
  }

  /** Record one binding's delivery of the ask (the transport calls it after each outcome). */
  async noteDelivery(
    id: string,
    bindingId: string,
    status: "accepted_by_transport" | "failed_to_submit",
    attempts: number,
    failure: string | null,
  ): Promise<void> {
    await this.store.tx(async () => {
      const ask = await this.store.asks.get(id);
      if (!ask) return;
      const next: AskRecord = {
        ...ask,
        deliveries: { ...ask.deliveries, [bindingId]: { status, attempts, at: this.now() } },
      };
      await this.store.asks.put(next, holds(next));
      await this.store.appendEvent(ask.agent_id, {
        type: "ask_delivery_recorded",
        payload: { ask_id: id, binding_id: bindingId, status, attempts, failure },
      });
    });
  }

  private async checkCredential(ask: AskRecord, by: AskCredential): Promise<void> {
    if (by.kind === "operator") return;
    if (ask.kind !== "input") {
      throw new HolonError(
        "human_decision_required",
        `ask '${ask.id}' is a ${ask.kind} ask: only the operator can decide it, never an agent`,
        {
          status: 403,
          hint: "the operator decides it with `holon asks answer` (or the budget commands)",
          details: { ask_id: ask.id, kind: ask.kind },
        },
      );
    }
    const agent = await this.store.agents.get(ask.agent_id);
    if (!agent || agent.supervisor_agent_id !== by.agent_id) {
      throw new HolonError(
        "ask_forbidden",
        `agent '${by.agent_id}' may not answer ask '${ask.id}': only the parent of '${ask.agent_id}' may`,
        { status: 403, details: { ask_id: ask.id } },
      );
    }
  }

  private checkAnswer(ask: AskRecord, answer: AskAnswer): AskDecision {
    const text = answer.decision.trim();
    if (!text) throw invalid("decision", "the decision is empty");
    if (text.length > ASK_LIMITS.decision_chars) {
      throw invalid(
        "decision",
        `the decision is longer than ${ASK_LIMITS.decision_chars} characters`,
      );
    }
    const m = matchOption(ask.options, text);
    if (m) return m.count === undefined ? { decision: m.decision, option: m.option } : m;
    if (ask.free_text) return { decision: text };
    throw new HolonError(
      "invalid_decision",
      `'${clip(text, 80)}' is not one of the options of ask '${ask.id}'`,
      {
        status: 400,
        hint: `answer one of: ${ask.options.join(" | ")} (N is a whole number from 1 to ${ASK_LIMITS.max_count})`,
        details: { ask_id: ask.id, options: ask.options },
      },
    );
  }
}

function decider(by: AskCredential): AskDecider {
  if (by.kind === "agent") return { kind: "agent", agent_id: by.agent_id };
  if (by.via === "control") return { kind: "operator", via: "control" };
  return {
    kind: "operator",
    via: "operator_binding",
    binding_id: by.binding_id,
    actor_id: by.actor_id,
  };
}

/** The message that carries a decision to the agent, with the decider's authority. */
function decisionMessage(ask: AskRecord, by: AskCredential, notes: string[]): MessageDraft {
  const subject = ask.work_item_id ? ` about work item ${ask.work_item_id}` : "";
  const lines = [
    by.kind === "agent"
      ? `Follow-up from your supervisor ${by.agent_id}, answering your ask ${ask.id}${subject} (${ask.about}):\n${ask.decision}`
      : `The operator decided your ask ${ask.id}${subject} (${ask.about}): ${ask.decision}`,
    ...(ask.reason ? [`Reason: ${ask.reason}`] : []),
    ...notes,
  ];
  const metadata = { ask_id: ask.id, ask_decision: ask.decision };
  // A decision is what the agent waited for: it goes ahead of ordinary queued input.
  const priority = "next" as const;
  const body = { type: "text" as const, text: lines.join("\n") };
  if (by.kind === "agent") {
    return {
      agent_id: ask.agent_id,
      kind: "internal_followup",
      origin: by.task_id
        ? { kind: "task", task_id: by.task_id }
        : { kind: "system", subsystem: "asks" },
      body,
      surface: "runtime_system",
      admission: "runtime_owned",
      priority,
      ...(by.task_id ? { task_id: by.task_id } : {}),
      metadata: { ...metadata, supervisor_input: true },
    };
  }
  const binding = by.via === "operator_binding";
  return {
    agent_id: ask.agent_id,
    kind: "operator_prompt",
    origin: binding ? { kind: "operator", actor_id: by.actor_id } : { kind: "operator" },
    body,
    surface: binding ? "remote_operator_transport" : "http_control_prompt",
    admission: binding ? "operator_transport_authenticated" : "control_authenticated",
    priority,
    metadata: binding
      ? { ...metadata, operator_transport: { binding_id: by.binding_id } }
      : metadata,
  };
}

function expiredText(ask: AskRecord): string {
  const subject = ask.work_item_id ? ` about work item ${ask.work_item_id}` : "";
  const tail =
    ask.source === "needs_input"
      ? "Nobody answered. The item is runnable again: go on with your best judgement, block it with UpdateWorkItem (blocked_by), or ask again by setting plan_status needs_input and writing your question."
      : "Nobody answered. The item stays halted until the operator unblocks it (holon work unblock); work on other runnable items meanwhile.";
  return `Your ask ${ask.id}${subject} (${ask.about}) expired at ${ask.expires_at} without a decision. ${tail}`;
}

function invalid(field: string, message: string): HolonError {
  return new HolonError("invalid_ask", message, { status: 400, details: { field } });
}

function clip(text: string, n: number): string {
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}
