// The budget gate: checked in the pre-provider-call hook before every model request. A
// request goes out only if, in every scope it falls in (the run, the work item, the agent
// and its ancestors up to the first carved reservation, each total and calendar window),
// spent + estimated input + the request's max output tokens ≤ the limit (model rounds:
// spent + 1; wall time: spent < limit; dollars: the same sum priced at the dearest
// candidate model, and a dollar limit with an unpriced candidate stops the call: fail
// closed). Exhaustion becomes durable state: a budget hold on the agent (the agent runs no
// model turn until it clears) or on the work item (only that item is blocked), with a
// `budget_exhausted` event; a periodic window's hold lifts by itself at the window's end
// (a deadline). `onExhausted` / `onCleared` are the one seam where an operator ask is
// opened and withdrawn. A `holon run` budget fails the run instead.
import type { AgentRecord } from "../domain/agent.ts";
import {
  DIMENSIONS,
  hasLimits,
  spentIn,
  windowOf,
  type BudgetHold,
  type BudgetLimits,
  type Dimension,
  type SpendTotals,
} from "../domain/budget.ts";
import type { Deadline } from "../domain/deadline.ts";
import type { QueuedMessage } from "../domain/message.ts";
import type { Ingress } from "../agent/ingress.ts";
import type { ProviderRequest } from "../providers/model.ts";
import type { ModelCandidate } from "../providers/types.ts";
import { modelMetadata } from "../providers/builtin.ts";
import type { ProviderConfig } from "../providers/config.ts";
import type { Store } from "../store/db.ts";
import { estimateRequest } from "../memory/tokens.ts";
import type { SpendLedger } from "./ledger.ts";

export const BUDGET_WINDOW = "budget_window";
/** Used when neither the request, the candidate nor the catalog names a max output. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8192;
const WARN_AT = 0.8;

/** The deadline scheduler, as the gate needs it (waiting/scheduler.ts). */
export interface WindowDeadlines {
  add(d: { agent_id: string; kind: string; key: string; due_at: string }): Promise<unknown>;
  cancelKey(key: string): Promise<boolean>;
}

export type BudgetVerdict =
  | { ok: true; request: ProviderRequest }
  | { ok: false; action: "hold_agent" | "hold_work_item" | "fail_run"; hold: BudgetHold };

export type GateContext = {
  agent: AgentRecord;
  run_id: string;
  round: number;
  message: QueuedMessage;
  /** The turn's model candidates (looked up again when absent). */
  candidates?: ModelCandidate[] | undefined;
};

/** The run budget a `holon run` carries in its message (`metadata.run_budget`). */
export function runBudgetOf(message: QueuedMessage): BudgetLimits | undefined {
  const b = message.metadata?.run_budget;
  if (!b || typeof b !== "object") return undefined;
  const out: BudgetLimits = {};
  for (const d of DIMENSIONS) {
    const v = (b as Record<string, unknown>)[d];
    if (typeof v === "number" && Number.isFinite(v) && v >= 0) out[d] = v;
  }
  return hasLimits(out) ? out : undefined;
}

type Check = {
  scope: string;
  limits: BudgetLimits;
  spent: SpendTotals;
  /** Reserved for carved children (counts as spent for this scope). */
  reserved?: Partial<Record<Dimension, number>> | undefined;
  until?: string;
  action: "hold_agent" | "hold_work_item" | "fail_run";
};

export class BudgetGate {
  private readonly store: Store;
  private readonly ledger: SpendLedger;
  private readonly ingress: Ingress;
  private readonly deadlines: WindowDeadlines;
  private readonly config: () => ProviderConfig;
  private readonly candidates: (agent: AgentRecord) => ModelCandidate[];
  private readonly inputEstimate: (runId: string) => number | undefined;
  /** Scopes the agent was told about at 80% (scope + dimension + window), once each. */
  private readonly warned = new Set<string>();
  /** Called when a hold is recorded: the seam where a budget ask is opened. */
  onExhausted: (
    hold: BudgetHold,
    where: { agent_id: string; work_item_id?: string },
  ) => Promise<void> = async () => {};
  /** Called when a hold is cleared: the seam where the budget ask is withdrawn or answered. */
  onCleared: (scope: string, where: { agent_id: string; work_item_id?: string }) => Promise<void> =
    async () => {};

  constructor(opts: {
    store: Store;
    ledger: SpendLedger;
    ingress: Ingress;
    deadlines: WindowDeadlines;
    config: () => ProviderConfig;
    candidates: (agent: AgentRecord) => ModelCandidate[];
    inputEstimate: (runId: string) => number | undefined;
  }) {
    this.store = opts.store;
    this.ledger = opts.ledger;
    this.ingress = opts.ingress;
    this.deadlines = opts.deadlines;
    this.config = opts.config;
    this.candidates = opts.candidates;
    this.inputEstimate = opts.inputEstimate;
  }

  /** The pre-provider-call check. Records the hold itself; the turn ends as the verdict says. */
  async check(request: ProviderRequest, ctx: GateContext): Promise<BudgetVerdict> {
    const store = this.store;
    const agent = (await store.agents.get(ctx.agent.agent_id)) ?? ctx.agent;
    const now = store.clock.now();
    if (agent.budget_hold) return { ok: false, action: "hold_agent", hold: agent.budget_hold };
    const checks = await this.scopes(agent, ctx, now);
    if (checks.length === 0) return { ok: true, request };

    // What this request may cost: estimated input + its max output, at the dearest model.
    const input = this.inputEstimate(ctx.run_id) ?? estimateRequest(request);
    const cfg = this.config();
    const usable = (ctx.candidates ?? this.candidates(agent)).filter(
      (c) => c.unavailable_reason === undefined,
    );
    let maxOut = 0;
    let usdNeed: number | null = 0;
    let unpriced: string | undefined;
    for (const c of usable) {
      const entry = modelMetadata(c.model_ref, cfg).entry;
      const out =
        request.max_output_tokens ??
        c.max_output_tokens ??
        entry.runtime_max_output_tokens ??
        DEFAULT_MAX_OUTPUT_TOKENS;
      maxOut = Math.max(maxOut, out);
      const p = entry.pricing;
      if (!p) {
        unpriced ??= c.model_ref;
        usdNeed = null;
      } else if (usdNeed !== null) {
        usdNeed = Math.max(usdNeed, (input * p.input_per_mtok + out * p.output_per_mtok) / 1e6);
      }
    }
    const need: Record<Dimension, number | null> = {
      tokens: input + maxOut,
      usd: usdNeed,
      rounds: 1,
      time_ms: 0,
    };

    let warning: string | undefined;
    for (const c of checks) {
      for (const d of DIMENSIONS) {
        const limit = c.limits[d];
        if (limit === undefined) continue;
        const spent = spentIn(c.spent, d) + (c.reserved?.[d] ?? 0);
        const n = need[d];
        if (n === null) {
          return await this.stop(c, agent, ctx, now, {
            reason: "unpriced_model",
            dimension: d,
            limit,
            spent,
            summary: `${c.scope} has a dollar budget, but the model ${unpriced} has no price in the model catalog; the call is not sent (fail closed)`,
          });
        }
        const over = d === "time_ms" ? spent >= limit : spent + n > limit;
        if (over) {
          return await this.stop(c, agent, ctx, now, {
            reason: "exhausted",
            dimension: d,
            limit,
            spent,
            needed: n,
            summary: `${c.scope} budget exhausted: ${fmt(d, spent)} of ${fmt(d, limit)} ${label(d)} spent${d === "time_ms" ? "" : `, the next call may need ${fmt(d, n)} more`}`,
          });
        }
        if (limit > 0 && spent >= WARN_AT * limit) {
          const key = `${c.scope}\u0000${d}\u0000${c.until ?? ""}`;
          if (!this.warned.has(key)) {
            this.warned.add(key);
            warning = `Budget note: ${c.scope} has ${fmt(d, spent)} of ${fmt(d, limit)} ${label(d)} spent (${Math.round((100 * spent) / limit)}%). Finish the essential part of the work first; when the budget runs out, the runtime stops before the next model call until the operator raises it.`;
            await store.tx(
              async () =>
                await store.appendEvent(agent.agent_id, {
                  type: "budget_warning",
                  payload: { run_id: ctx.run_id, scope: c.scope, dimension: d, spent, limit },
                }),
            );
          }
        }
      }
    }
    if (!warning) return { ok: true, request };
    // A late block: the cached prefix (frame and earlier conversation) stays as it was.
    return {
      ok: true,
      request: {
        ...request,
        conversation: [...request.conversation, { type: "user_text", text: warning }],
      },
    };
  }

  /** Every budgeted scope this call falls in. */
  private async scopes(agent: AgentRecord, ctx: GateContext, now: Date): Promise<Check[]> {
    const out: Check[] = [];
    const runBudget = runBudgetOf(ctx.message);
    if (runBudget) {
      out.push({
        scope: `run ${ctx.run_id}`,
        limits: runBudget,
        spent: await this.ledger.run(ctx.run_id),
        action: "fail_run",
      });
    }
    const itemId = workItemOf(agent, ctx.message);
    if (itemId) {
      const item = await this.store.workItems.get(itemId);
      if (item?.state === "open" && hasLimits(item.budget)) {
        out.push({
          scope: `work_item:${itemId}`,
          limits: item.budget,
          spent: await this.ledger.workItem(itemId),
          action: "hold_work_item",
        });
      }
    }
    // Items the agent's spawn chain ran under: their budgets bound this child too.
    for (const parentItem of (await this.ledger.lineage(agent.agent_id)).items) {
      const item = await this.store.workItems.get(parentItem);
      if (item?.state === "open" && hasLimits(item.budget)) {
        out.push({
          scope: `work_item:${parentItem}`,
          limits: item.budget,
          spent: await this.ledger.workItem(parentItem),
          action: "hold_agent",
        });
      }
    }
    // The agent and its ancestors, up to the first carved reservation (it bounds the rest).
    let cur: AgentRecord | undefined = agent;
    const seen = new Set<string>();
    while (cur && !seen.has(cur.agent_id)) {
      seen.add(cur.agent_id);
      const reserved = await this.outstandingReservations(cur.agent_id);
      const r = cur.budget_reservation;
      if (r && !r.returned_at) {
        out.push({
          scope: `reservation:${cur.agent_id}`,
          limits: r.limits,
          spent: await this.ledger.agentTree(cur.agent_id),
          reserved,
          action: "hold_agent",
        });
      }
      const b = cur.budgets;
      if (b) {
        if (hasLimits(b.total)) {
          out.push({
            scope: `agent:${cur.agent_id}`,
            limits: b.total,
            spent: await this.ledger.agentTree(cur.agent_id),
            reserved,
            action: "hold_agent",
          });
        }
        const tz = b.time_zone ?? "UTC";
        for (const p of ["day", "week", "month"] as const) {
          const limits = b[p];
          if (!hasLimits(limits)) continue;
          out.push({
            scope: `agent:${cur.agent_id}:${p}`,
            limits,
            spent: await this.ledger.agentWindow(cur.agent_id, p, now, tz),
            reserved,
            until: windowOf(p, now, tz).end.toISOString(),
            action: "hold_agent",
          });
        }
      }
      if (r && !r.returned_at) break;
      cur = cur.lineage_parent_agent_id
        ? await this.store.agents.get(cur.lineage_parent_agent_id)
        : undefined;
    }
    return out;
  }

  /** What the agent's carved children still hold: reservation minus their spend, per dimension. */
  async outstandingReservations(
    agentId: string,
  ): Promise<Partial<Record<Dimension, number>> | undefined> {
    let out: Partial<Record<Dimension, number>> | undefined;
    for (const child of await this.reservedChildren(agentId)) {
      const rec = await this.store.agents.get(child);
      const r = rec?.budget_reservation;
      if (!r || r.returned_at || r.from_agent_id !== agentId) continue;
      const spent = await this.ledger.agentTree(child);
      for (const d of DIMENSIONS) {
        const l = r.limits[d];
        if (l === undefined) continue;
        out ??= {};
        out[d] = (out[d] ?? 0) + Math.max(0, l - spentIn(spent, d));
      }
    }
    return out;
  }

  private readonly childrenOf = new Map<string, Set<string>>();
  private async reservedChildren(agentId: string): Promise<Set<string>> {
    let s = this.childrenOf.get(agentId);
    if (!s) {
      s = new Set(await this.store.agents.reservedFrom(agentId));
      this.childrenOf.set(agentId, s);
    }
    return s;
  }

  /** A child was given (or gave back) a reservation: its parent's list is read again. */
  reservationsChanged(parentId: string): void {
    this.childrenOf.delete(parentId);
  }

  private async stop(
    c: Check,
    agent: AgentRecord,
    ctx: GateContext,
    now: Date,
    h: Omit<BudgetHold, "scope" | "since">,
  ): Promise<BudgetVerdict> {
    const hold: BudgetHold = { scope: c.scope, since: now.toISOString(), ...h };
    if (c.until && h.reason === "exhausted") hold.until = c.until;
    if (c.action === "fail_run") {
      await this.store.tx(
        async () =>
          await this.store.appendEvent(agent.agent_id, {
            type: "budget_exhausted",
            payload: { run_id: ctx.run_id, hold },
          }),
      );
      return { ok: false, action: "fail_run", hold };
    }
    if (c.action === "hold_work_item") {
      const itemId = c.scope.slice("work_item:".length);
      await this.holdWorkItem(agent.agent_id, itemId, hold, ctx.run_id);
      return { ok: false, action: "hold_work_item", hold };
    }
    await this.holdAgent(agent.agent_id, hold, ctx.run_id);
    return { ok: false, action: "hold_agent", hold };
  }

  async holdAgent(agentId: string, hold: BudgetHold, runId?: string): Promise<void> {
    const store = this.store;
    await store.tx(async () => {
      const a = await store.agents.get(agentId);
      if (!a) return;
      await store.agents.put({
        ...a,
        budget_hold: hold,
        updated_at: store.clock.now().toISOString(),
      });
      await store.appendEvent(agentId, {
        type: "budget_exhausted",
        payload: { ...(runId ? { run_id: runId } : {}), hold },
      });
      if (hold.until) {
        await this.deadlines.add({
          agent_id: agentId,
          kind: BUDGET_WINDOW,
          key: windowKey(agentId),
          due_at: hold.until,
        });
      }
    });
    await this.onExhausted(hold, { agent_id: agentId });
  }

  private async holdWorkItem(
    agentId: string,
    itemId: string,
    hold: BudgetHold,
    runId: string,
  ): Promise<void> {
    const store = this.store;
    await store.tx(async () => {
      const item = await store.workItems.get(itemId);
      if (!item) return;
      await store.workItems.put({
        ...item,
        budget_hold: hold,
        revision: item.revision + 1,
        updated_at: store.clock.now().toISOString(),
      });
      await store.appendEvent(agentId, {
        type: "budget_exhausted",
        provenance: { work_item_id: itemId },
        payload: { run_id: runId, work_item_id: itemId, hold },
      });
    });
    await this.onExhausted(hold, { agent_id: agentId, work_item_id: itemId });
  }

  /**
   * Lift the agent's hold (raised, unfrozen, window over) and wake it with a note, in one
   * transaction. No hold: nothing happens (returns false).
   */
  async clearAgent(
    agentId: string,
    reason: string,
    note: string,
    only?: (h: BudgetHold) => boolean,
  ) {
    const store = this.store;
    const cleared = await store.tx(async () => {
      const a = await store.agents.get(agentId);
      if (!a?.budget_hold || (only && !only(a.budget_hold))) return undefined;
      const { budget_hold: hold, ...rest } = a;
      await store.agents.put({ ...rest, updated_at: store.clock.now().toISOString() });
      await store.appendEvent(agentId, {
        type: "budget_hold_cleared",
        payload: { scope: hold.scope, reason },
      });
      await this.deadlines.cancelKey(windowKey(agentId));
      if (a.status !== "stopped") await this.ingress.admit(wakeDraft(agentId, note, "operator"));
      return hold;
    });
    if (cleared) await this.onCleared(cleared.scope, { agent_id: agentId });
    return cleared !== undefined;
  }

  async clearWorkItem(
    agentId: string,
    itemId: string,
    reason: string,
    note: string,
  ): Promise<boolean> {
    const store = this.store;
    const cleared = await store.tx(async () => {
      const item = await store.workItems.get(itemId);
      if (!item?.budget_hold) return undefined;
      const { budget_hold: hold, ...rest } = item;
      await store.workItems.put({
        ...rest,
        revision: item.revision + 1,
        updated_at: store.clock.now().toISOString(),
      });
      await store.appendEvent(agentId, {
        type: "budget_hold_cleared",
        provenance: { work_item_id: itemId },
        payload: { scope: hold.scope, work_item_id: itemId, reason },
      });
      const a = await store.agents.get(agentId);
      if (a && a.status !== "stopped")
        await this.ingress.admit(wakeDraft(agentId, note, "system", itemId));
      return hold;
    });
    if (cleared) await this.onCleared(cleared.scope, { agent_id: agentId, work_item_id: itemId });
    return cleared !== undefined;
  }

  /** The deadline handler: a periodic window turned over, the hold lifts and the agent wakes. */
  windowHandler() {
    return async (d: Deadline) => {
      const a = await this.store.agents.get(d.agent_id);
      const hold = a?.budget_hold;
      if (!a || !hold?.until || Date.parse(hold.until) > this.store.clock.now().getTime()) {
        return null;
      }
      const draft = wakeDraft(
        d.agent_id,
        `Budget window turned over: ${hold.scope} starts a new window, so its spend counts from zero again. Continue your work.`,
      );
      return {
        draft,
        admitted: async () => {
          const { budget_hold: _h, ...rest } = (await this.store.agents.get(d.agent_id))!;
          await this.store.agents.put({
            ...rest,
            updated_at: this.store.clock.now().toISOString(),
          });
          await this.store.appendEvent(d.agent_id, {
            type: "budget_hold_cleared",
            payload: { scope: hold.scope, reason: "window_turned_over" },
          });
          // Inside the scheduler's fire: tell the operator side only once the lift committed.
          this.store.afterCommit(
            async () => await this.onCleared(hold.scope, { agent_id: d.agent_id }),
          );
        },
      };
    };
  }
}

/**
 * The work item a call is for: the agent's current item, else the item the message was
 * admitted for (a work-queue tick about a queued item the model has not picked yet).
 */
export function workItemOf(agent: AgentRecord, message: QueuedMessage): string | undefined {
  return agent.current_work_item_id ?? message.work_item_id;
}

export function windowKey(agentId: string): string {
  return `budget-window:${agentId}`;
}

/**
 * The message that wakes a held agent. The operator's own decision (raise, unfreeze)
 * speaks with operator authority, which answers the operator wait the hold left; a
 * window's turn, and a work item released while its agent went on, are runtime ticks
 * (the item's tick is bound to it, so its spend counts against it).
 */
function wakeDraft(
  agentId: string,
  text: string,
  by: "operator" | "system" = "system",
  workItemId?: string,
) {
  if (by === "operator") {
    return {
      agent_id: agentId,
      kind: "operator_prompt" as const,
      origin: { kind: "operator" as const },
      body: { type: "text" as const, text },
      surface: "http_control_prompt" as const,
      admission: "control_authenticated" as const,
    };
  }
  return {
    agent_id: agentId,
    kind: "system_tick" as const,
    origin: { kind: "system" as const, subsystem: "budget" },
    body: { type: "text" as const, text },
    surface: "runtime_system" as const,
    admission: "runtime_owned" as const,
    ...(workItemId ? { work_item_id: workItemId } : {}),
  };
}

function label(d: Dimension): string {
  return d === "tokens"
    ? "tokens"
    : d === "usd"
      ? "USD"
      : d === "rounds"
        ? "model rounds"
        : "of wall time";
}

export function fmt(d: Dimension, n: number): string {
  if (d === "usd") return `$${n.toFixed(4)}`;
  if (d === "time_ms") return `${Math.round(n / 1000)}s`;
  return String(Math.round(n));
}
