// Budget control: what the operator's control routes do to budgets (set, raise, freeze,
// unfreeze) and what the read surfaces show (spent / reserved / limit per scope). Every
// change is validated whole before anything is written, and written with its event in one
// transaction; nothing an agent can write is read as a budget.
import type { AgentRecord } from "../domain/agent.ts";
import {
  DIMENSIONS,
  checkLimits,
  checkTimeZone,
  hasLimits,
  spentIn,
  windowOf,
  type BudgetHold,
  type BudgetLimits,
  type BudgetPeriod,
  type Dimension,
  type SpendTotals,
} from "../domain/budget.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import type { WorkItemRecord } from "../domain/work-item.ts";
import { modelMetadata } from "../providers/builtin.ts";
import type { ProviderConfig } from "../providers/config.ts";
import type { ModelCandidate } from "../providers/types.ts";
import type { Store } from "../store/db.ts";
import type { BudgetGate } from "./gate.ts";
import type { SpendLedger } from "./ledger.ts";

export type ScopeView = {
  scope: string;
  period?: BudgetPeriod;
  limits: BudgetLimits;
  spent: SpendView;
  /** What carved children still hold of this scope. */
  reserved: Partial<Record<Dimension, number>>;
  window?: { start: string; end: string };
};

export type SpendView = {
  tokens: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  usd: number;
  unpriced_rounds: number;
  rounds: number;
  time_ms: number;
};

export type AgentBudgetView = {
  agent_id: string;
  time_zone: string;
  hold: BudgetHold | null;
  reservation: AgentRecord["budget_reservation"] | null;
  scopes: ScopeView[];
  /** Everything the agent and its descendants spent, budgeted or not. */
  spent_total: SpendView;
};

function spendView(t: SpendTotals): SpendView {
  return {
    tokens: t.tokens,
    input_tokens: t.input_tokens,
    cached_input_tokens: t.cached_input_tokens,
    cache_write_tokens: t.cache_write_tokens,
    output_tokens: t.output_tokens,
    reasoning_tokens: t.reasoning_tokens,
    usd: Math.round(t.usd * 1e6) / 1e6,
    unpriced_rounds: t.unpriced_rounds,
    rounds: t.rounds,
    time_ms: t.time_ms,
  };
}

export class BudgetControl {
  private readonly store: Store;
  private readonly ledger: SpendLedger;
  private readonly gate: BudgetGate;
  private readonly config: () => ProviderConfig;
  private readonly candidates: (agent: ModelChoice) => ModelCandidate[];

  constructor(opts: {
    store: Store;
    ledger: SpendLedger;
    gate: BudgetGate;
    config: () => ProviderConfig;
    candidates: (agent: ModelChoice) => ModelCandidate[];
  }) {
    this.store = opts.store;
    this.ledger = opts.ledger;
    this.gate = opts.gate;
    this.config = opts.config;
    this.candidates = opts.candidates;
  }

  private async agent(agentId: string): Promise<AgentRecord> {
    const a = await this.store.agents.get(agentId);
    if (!a) throw unknownAgent(agentId);
    return a;
  }

  /** A dollar limit needs a price for every model the agent may call. */
  checkPriced(agent: ModelChoice, limits: BudgetLimits): void {
    if (limits.usd === undefined) return;
    const cfg = this.config();
    const usable = this.candidates(agent).filter((c) => c.unavailable_reason === undefined);
    const refs = usable.length ? usable.map((c) => c.model_ref) : [cfg.model.default ?? ""];
    const unpriced = refs.filter((r) => !r || !modelMetadata(r, cfg).entry.pricing);
    if (unpriced.length > 0) {
      throw new HolonError(
        "unpriced_model",
        `a dollar budget needs prices, and ${unpriced.map((r) => r || "(no model configured)").join(", ")} has none in the model catalog`,
        {
          hint: "add pricing for the model under models.catalog in config.json, or budget tokens instead",
          details: { unpriced_models: unpriced },
        },
      );
    }
  }

  /** Set an agent's limits for one period (dimensions not named keep their value). */
  async set(
    agentId: string,
    input: { period: BudgetPeriod; limits: unknown; time_zone?: string | undefined },
  ): Promise<AgentBudgetView> {
    const agent = await this.agent(agentId);
    const limits = checkLimits(input.limits, "budget");
    if (!hasLimits(limits)) {
      throw new HolonError(
        "invalid_budget",
        "name at least one limit: tokens, usd, rounds or time",
        {
          hint: "for example: holon budget set main --tokens 2M --per day",
        },
      );
    }
    const tz = input.time_zone !== undefined ? checkTimeZone(input.time_zone) : undefined;
    this.checkPriced(agent, limits);
    await this.store.tx(async () => {
      const a = await this.agent(agentId);
      const budgets = { ...(a.budgets ?? {}) };
      budgets[input.period] = { ...(budgets[input.period] ?? {}), ...limits };
      if (tz) budgets.time_zone = tz;
      await this.store.agents.put({
        ...a,
        budgets,
        updated_at: this.store.clock.now().toISOString(),
      });
      await this.store.appendEvent(agentId, {
        type: "budget_set",
        payload: {
          scope: scopeName(agentId, input.period),
          period: input.period,
          limits,
          budgets,
          ...(tz ? { time_zone: tz } : {}),
        },
      });
    });
    // A hold on this scope is re-judged at the next call against the new limit.
    await this.clearScope(scopeName(agentId, input.period), "limit_changed");
    return await this.view(agentId);
  }

  /**
   * Add to the limits of a scope (default: the one the agent is held on) and lift the holds
   * it caused. `scope` is `total`, `day`, `week`, `month`, `reservation` or `work_item:<id>`.
   */
  async raise(
    agentId: string,
    input: { scope?: string | undefined; added: unknown },
  ): Promise<AgentBudgetView> {
    const agent = await this.agent(agentId);
    const added = checkLimits(input.added, "raise");
    if (!hasLimits(added)) {
      throw new HolonError("invalid_budget", "name what to add: tokens, usd, rounds or time", {
        hint: "for example: holon budget raise main --tokens 1M",
      });
    }
    const target = await this.resolveScope(agent, input.scope);
    // The raise and the holds it lifts commit together: never a raised limit still held.
    await this.store.tx(async () => await this.applyRaise(target, added));
    return await this.view(agentId);
  }

  private async applyRaise(
    target: Awaited<ReturnType<BudgetControl["resolveScope"]>>,
    added: BudgetLimits,
  ) {
    if (target.kind === "work_item") {
      const item = target.item;
      const limits = addLimits(item.budget, added, target.scope);
      await this.store.tx(async () => {
        const fresh = (await this.store.workItems.get(item.id))!;
        await this.store.workItems.put({
          ...fresh,
          budget: limits,
          revision: fresh.revision + 1,
          updated_at: this.store.clock.now().toISOString(),
        });
        await this.store.appendEvent(item.agent_id, {
          type: "budget_raised",
          provenance: { work_item_id: item.id },
          payload: { scope: target.scope, added, limits, work_item_id: item.id },
        });
      });
      await this.gate.clearWorkItem(
        item.agent_id,
        item.id,
        "raised",
        `The operator raised the budget of work item ${item.id}; it is runnable again. Continue it.`,
      );
      await this.clearScope(target.scope, "raised");
      return;
    }
    const owner = await this.agent(target.agent_id);
    if (target.kind === "reservation") {
      const r = owner.budget_reservation!;
      const limits = addLimits(r.limits, added, target.scope);
      this.checkPriced(owner, limits);
      await this.store.tx(async () => {
        const a = await this.agent(owner.agent_id);
        await this.store.agents.put({ ...a, budget_reservation: { ...r, limits } });
        await this.store.appendEvent(owner.agent_id, {
          type: "budget_raised",
          payload: { scope: target.scope, added, limits },
        });
      });
    } else {
      const period = target.period;
      const limits = addLimits(owner.budgets?.[period], added, target.scope);
      this.checkPriced(owner, limits);
      await this.store.tx(async () => {
        const a = await this.agent(owner.agent_id);
        const budgets = { ...(a.budgets ?? {}), [period]: limits };
        await this.store.agents.put({
          ...a,
          budgets,
          updated_at: this.store.clock.now().toISOString(),
        });
        await this.store.appendEvent(owner.agent_id, {
          type: "budget_raised",
          payload: { scope: target.scope, added, limits },
        });
      });
    }
    await this.clearScope(target.scope, "raised");
  }

  private async resolveScope(
    agent: AgentRecord,
    scope: string | undefined,
  ): Promise<
    | { kind: "work_item"; scope: string; item: WorkItemRecord }
    | { kind: "reservation"; scope: string; agent_id: string }
    | { kind: "period"; scope: string; agent_id: string; period: BudgetPeriod }
  > {
    let s = scope ?? agent.budget_hold?.scope;
    if (!s) {
      throw new HolonError(
        "no_budget_hold",
        `agent '${agent.agent_id}' is not held by a budget; say which one to raise with --scope`,
        { status: 409, hint: "--scope total|day|week|month|reservation|work_item:<id>" },
      );
    }
    if (s === "freeze") {
      throw new HolonError("frozen", `agent '${agent.agent_id}' is frozen, not out of budget`, {
        status: 409,
        hint: `holon budget unfreeze ${agent.agent_id}`,
      });
    }
    if (["total", "day", "week", "month"].includes(s))
      s = scopeName(agent.agent_id, s as BudgetPeriod);
    if (s === "reservation") s = `reservation:${agent.agent_id}`;
    const m = /^(agent|reservation|work_item):([^:]+)(?::(day|week|month))?$/.exec(s);
    if (!m) {
      throw new HolonError("invalid_budget", `unknown budget scope '${s}'`, {
        hint: "--scope total|day|week|month|reservation|work_item:<id>",
      });
    }
    const [, kind, id, period] = m;
    if (kind === "work_item") {
      const item = await this.store.workItems.get(id!);
      if (
        !item ||
        (item.agent_id !== agent.agent_id && !(await this.isAncestor(item.agent_id, agent)))
      ) {
        throw new HolonError("unknown_work_item", `no work item '${id}' of '${agent.agent_id}'`, {
          status: 404,
        });
      }
      if (!hasLimits(item.budget)) {
        throw new HolonError("no_budget", `work item '${id}' has no budget to raise`, {
          status: 409,
        });
      }
      return { kind: "work_item", scope: `work_item:${id}`, item };
    }
    const owner = await this.agent(id!);
    if (owner.agent_id !== agent.agent_id && !(await this.isAncestor(owner.agent_id, agent))) {
      throw new HolonError("invalid_budget", `scope '${s}' does not bound '${agent.agent_id}'`);
    }
    if (kind === "reservation") {
      if (!owner.budget_reservation || owner.budget_reservation.returned_at) {
        throw new HolonError("no_budget", `agent '${owner.agent_id}' has no reservation`, {
          status: 409,
        });
      }
      return {
        kind: "reservation",
        scope: `reservation:${owner.agent_id}`,
        agent_id: owner.agent_id,
      };
    }
    const p = (period ?? "total") as BudgetPeriod;
    if (!hasLimits(owner.budgets?.[p])) {
      throw new HolonError("no_budget", `agent '${owner.agent_id}' has no ${p} budget to raise`, {
        status: 409,
        hint: `set one with: holon budget set ${owner.agent_id} --tokens … ${p === "total" ? "" : `--per ${p}`}`,
      });
    }
    return {
      kind: "period",
      scope: scopeName(owner.agent_id, p),
      agent_id: owner.agent_id,
      period: p,
    };
  }

  private async isAncestor(candidate: string, agent: AgentRecord): Promise<boolean> {
    return (await this.ledger.lineage(agent.agent_id)).agents.includes(candidate);
  }

  /** Lift every agent hold on `scope` (a raised parent frees all its held descendants). */
  private async clearScope(scope: string, reason: string): Promise<void> {
    for (const a of await this.store.agents.list()) {
      if (a.budget_hold?.scope !== scope) continue;
      await this.gate.clearAgent(
        a.agent_id,
        reason,
        `The operator changed the budget that stopped you (${scope}). Continue your work.`,
      );
    }
  }

  /** The kill switch: every named agent stops before its next provider call. */
  async freeze(agentIds: string[]): Promise<string[]> {
    const frozen: string[] = [];
    for (const id of agentIds) {
      const a = await this.agent(id);
      if (a.budget_hold) continue;
      await this.gate.holdAgent(id, {
        scope: "freeze",
        reason: "frozen",
        summary: "the operator froze all model calls (holon budget freeze)",
        since: this.store.clock.now().toISOString(),
      });
      frozen.push(id);
    }
    return frozen;
  }

  async unfreeze(agentIds: string[]): Promise<string[]> {
    const lifted: string[] = [];
    for (const id of agentIds) {
      const cleared = await this.gate.clearAgent(
        id,
        "unfrozen",
        "The operator lifted the freeze on model calls. Continue your work.",
        (h) => h.reason === "frozen",
      );
      if (cleared) lifted.push(id);
    }
    return lifted;
  }

  /** Spent / reserved / limit per scope of the agent. */
  async view(agentId: string): Promise<AgentBudgetView> {
    const a = await this.agent(agentId);
    const now = this.store.clock.now();
    const tz = a.budgets?.time_zone ?? "UTC";
    const reserved = (await this.gate.outstandingReservations(agentId)) ?? {};
    const scopes: ScopeView[] = [];
    const r = a.budget_reservation;
    if (r && !r.returned_at) {
      scopes.push({
        scope: `reservation:${agentId}`,
        limits: r.limits,
        spent: spendView(await this.ledger.agentTree(agentId)),
        reserved,
      });
    }
    for (const p of ["total", "day", "week", "month"] as const) {
      const limits = a.budgets?.[p];
      if (!hasLimits(limits)) continue;
      if (p === "total") {
        scopes.push({
          scope: scopeName(agentId, p),
          period: p,
          limits,
          spent: spendView(await this.ledger.agentTree(agentId)),
          reserved,
        });
      } else {
        const w = windowOf(p, now, tz);
        scopes.push({
          scope: scopeName(agentId, p),
          period: p,
          limits,
          spent: spendView(await this.ledger.agentWindow(agentId, p, now, tz)),
          reserved,
          window: { start: w.start.toISOString(), end: w.end.toISOString() },
        });
      }
    }
    return {
      agent_id: agentId,
      time_zone: tz,
      hold: a.budget_hold ?? null,
      reservation: a.budget_reservation ?? null,
      scopes,
      spent_total: spendView(await this.ledger.agentTree(agentId)),
    };
  }

  /** A work item's budget: spent / limit, and its hold. */
  async workItemView(item: Pick<WorkItemRecord, "id" | "budget" | "budget_hold">): Promise<{
    limits: BudgetLimits | null;
    spent: SpendView;
    hold: BudgetHold | null;
  }> {
    return {
      limits: item.budget ?? null,
      spent: spendView(await this.ledger.workItem(item.id)),
      hold: item.budget_hold ?? null,
    };
  }

  /** Check a reservation a parent wants to carve for a child (SpawnAgent `budget`). */
  async checkCarve(parent: AgentRecord, input: unknown): Promise<BudgetLimits> {
    const limits = checkLimits(input, "budget");
    if (!hasLimits(limits)) {
      throw new HolonError("invalid_budget", "a child budget names at least one limit");
    }
    this.checkPriced(parent, limits);
    const remaining = await this.remaining(parent);
    for (const d of DIMENSIONS) {
      const want = limits[d];
      const left = remaining[d];
      if (want !== undefined && left !== undefined && want > left) {
        throw new HolonError(
          "budget_exceeded",
          `the child's ${d} budget (${want}) is more than this agent has left (${left})`,
          { status: 409, hint: "ask for less, or spawn without a budget to share what is left" },
        );
      }
    }
    return limits;
  }

  /** What the agent may still spend, per dimension, across its scopes (tightest wins). */
  async remaining(agent: AgentRecord): Promise<Partial<Record<Dimension, number>>> {
    const v = await this.view(agent.agent_id);
    const out: Partial<Record<Dimension, number>> = {};
    for (const s of v.scopes) {
      for (const d of DIMENSIONS) {
        const l = s.limits[d];
        if (l === undefined) continue;
        const spent = spentIn(s.spent as SpendTotals, d) + (s.reserved[d] ?? 0);
        const left = Math.max(0, l - spent);
        out[d] = out[d] === undefined ? left : Math.min(out[d]!, left);
      }
    }
    return out;
  }
}

/** What decides an agent's models: its override (none: the configured default chain). */
export type ModelChoice = { model_override?: string | null | undefined };

export function scopeName(agentId: string, period: BudgetPeriod): string {
  return period === "total" ? `agent:${agentId}` : `agent:${agentId}:${period}`;
}

function addLimits(
  base: BudgetLimits | undefined,
  added: BudgetLimits,
  scope: string,
): BudgetLimits {
  const out: BudgetLimits = { ...(base ?? {}) };
  for (const d of DIMENSIONS) {
    const a = added[d];
    if (a === undefined) continue;
    const b = out[d];
    if (b === undefined) {
      throw new HolonError("no_budget", `${scope} has no ${d} limit to raise`, {
        status: 409,
        hint: "raise a dimension the budget has, or set a new limit with holon budget set",
      });
    }
    out[d] = b + a;
  }
  return checkLimits(out, "raised budget");
}
