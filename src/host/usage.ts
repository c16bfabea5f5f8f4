// Usage and cost: tokens and dollars per agent, model and day, read from the spend ledger
// (budget/ledger.ts: one row per provider call, priced with the model catalog when it was
// written, kept 400 days by default). A row of a model without a price counts its tokens
// and leaves the cost unknown (null), never zero; a later price edit never rewrites it.
import { addCost, emptyCost, type CostTotals } from "../telemetry/cost.ts";
import { HolonError } from "../domain/errors.ts";
import type { LedgerRow } from "../domain/budget.ts";
import type { TokenUsage } from "../domain/provider.ts";
import type { Store } from "../store/db.ts";

export { roundCost } from "../budget/ledger.ts";

/** Tokens and dollars of a set of rounds (the ledger's running-total shape). */
export type UsageTotals = CostTotals;

export type UsageGroup = UsageTotals & { agent_id: string; model_ref: string; day: string };

/** One provider call with its cost, as `GET /agents/:id/usage/rounds` lists it. */
export type PricedRound = LedgerRow & { token_usage: TokenUsage; run_id: string; round: number };

export type UsageReport = {
  from: string;
  to: string;
  currency: "USD";
  groups: UsageGroup[];
  by_agent: Record<string, UsageTotals>;
  total: UsageTotals;
  unpriced_models: string[];
};

/** `7d`, `24h`, `30m` or an ISO date/time: the start of a report window. */
export function parseSince(text: string, now: Date): Date {
  const m = /^(\d+)([dhm])$/.exec(text.trim());
  if (m) {
    const n = Number(m[1]);
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[m[2] as "d" | "h" | "m"];
    return new Date(now.getTime() - n * unit);
  }
  const t = Date.parse(text);
  if (Number.isNaN(t)) {
    throw new HolonError(
      "invalid_request",
      `since must be like 7d, 24h, 30m or an ISO time, got '${text}'`,
    );
  }
  return new Date(t);
}

export class UsageService {
  private readonly store: Store;
  constructor(store: Store) {
    this.store = store;
  }

  /** The agent's newest `limit` provider calls in [from, to), oldest first, each priced. */
  async rounds(agentId: string, from: Date, to: Date, limit: number): Promise<PricedRound[]> {
    return (await this.store.ledger.newest(agentId, from, to, limit)).map((r) => {
      const usage: TokenUsage = {
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        total_tokens: r.input_tokens + r.output_tokens,
      };
      if (r.cached_input_tokens) usage.cache_read_input_tokens = r.cached_input_tokens;
      if (r.cache_write_tokens) usage.cache_creation_input_tokens = r.cache_write_tokens;
      if (r.reasoning_tokens) usage.reasoning_tokens = r.reasoning_tokens;
      return { ...r, run_id: r.run_id ?? "", round: r.round ?? 0, token_usage: usage };
    });
  }

  async report(agentIds: string[], from: Date, to: Date): Promise<UsageReport> {
    const groups = new Map<string, UsageGroup>();
    const byAgent: Record<string, UsageTotals> = {};
    const total = emptyCost();
    const unpriced = new Set<string>();
    for (const agentId of agentIds) byAgent[agentId] = emptyCost();
    for (const r of await this.store.ledger.rows(agentIds, from, to)) {
      if (r.cost_usd === null) unpriced.add(r.model_ref);
      const day = r.ts.slice(0, 10);
      const key = `${r.agent_id}\u0000${r.model_ref}\u0000${day}`;
      let g = groups.get(key);
      if (!g) {
        g = { agent_id: r.agent_id, model_ref: r.model_ref, day, ...emptyCost() };
        groups.set(key, g);
      }
      addCost(g, r);
      addCost(byAgent[r.agent_id]!, r);
      addCost(total, r);
    }
    return {
      from: from.toISOString(),
      to: to.toISOString(),
      currency: "USD",
      groups: [...groups.values()].sort(
        (a, b) =>
          a.day.localeCompare(b.day) ||
          a.agent_id.localeCompare(b.agent_id) ||
          a.model_ref.localeCompare(b.model_ref),
      ),
      by_agent: byAgent,
      total,
      unpriced_models: [...unpriced].sort(),
    };
  }
}
