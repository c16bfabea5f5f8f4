// Usage and cost: tokens and dollars per agent, model and day, derived from the recorded
// model rounds (store/usage.ts) and priced with the model catalog's `pricing` (a
// `models.catalog` entry in config.json overrides the built-in one). A round of a model
// without a price counts its tokens and leaves the cost unknown (null), never zero.
import { HolonError } from "../domain/errors.ts";
import type { TokenUsage } from "../domain/provider.ts";
import { modelMetadata } from "../providers/builtin.ts";
import type { ModelPricing } from "../providers/config.ts";
import type { Store } from "../store/db.ts";
import { UsageRepo, type ModelRoundUsage } from "../store/usage.ts";
import type { ConfigSource } from "./config.ts";

export type UsageTotals = {
  rounds: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  /** Null when some round's model has no price. */
  cost_usd: number | null;
};

export type UsageGroup = UsageTotals & { agent_id: string; model_ref: string; day: string };

/** One model round with its cost, as `GET /agents/:id/usage/rounds` lists it. */
export type PricedRound = ModelRoundUsage & { cost_usd: number | null };

export type UsageReport = {
  from: string;
  to: string;
  currency: "USD";
  groups: UsageGroup[];
  by_agent: Record<string, UsageTotals>;
  total: UsageTotals;
  unpriced_models: string[];
};

const empty = (): UsageTotals => ({
  rounds: 0,
  input_tokens: 0,
  cached_input_tokens: 0,
  cache_write_tokens: 0,
  output_tokens: 0,
  cost_usd: 0,
});

/** The cost of one round's usage in dollars, or null without a price. */
export function roundCost(
  usage: TokenUsage | null,
  pricing: ModelPricing | undefined,
): number | null {
  if (!pricing) return null;
  if (!usage) return 0;
  const cached = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  const uncached = Math.max(0, usage.input_tokens - cached - written);
  return (
    (uncached * pricing.input_per_mtok +
      cached * (pricing.cached_input_per_mtok ?? pricing.input_per_mtok) +
      written * (pricing.cache_write_per_mtok ?? pricing.input_per_mtok) +
      usage.output_tokens * pricing.output_per_mtok) /
    1_000_000
  );
}

function add(t: UsageTotals, r: ModelRoundUsage, cost: number | null): void {
  t.rounds += 1;
  const u = r.token_usage;
  if (u) {
    t.input_tokens += u.input_tokens;
    t.cached_input_tokens += u.cache_read_input_tokens ?? 0;
    t.cache_write_tokens += u.cache_creation_input_tokens ?? 0;
    t.output_tokens += u.output_tokens;
  }
  t.cost_usd = t.cost_usd === null || cost === null ? null : t.cost_usd + cost;
}

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
  private readonly repo: UsageRepo;
  private readonly config: ConfigSource;
  constructor(store: Store, config: ConfigSource) {
    this.repo = new UsageRepo(store.db);
    this.config = config;
  }

  /** Each price looked up once per report, with the configuration in effect now. */
  private priceList(): (ref: string) => ModelPricing | undefined {
    const cfg = this.config.current().values;
    const prices = new Map<string, ModelPricing | undefined>();
    return (ref) => {
      if (!prices.has(ref)) prices.set(ref, modelMetadata(ref, cfg).entry.pricing);
      return prices.get(ref);
    };
  }

  /** The agent's newest `limit` model rounds in [from, to), oldest first, each priced. */
  rounds(agentId: string, from: Date, to: Date, limit: number): PricedRound[] {
    const priceOf = this.priceList();
    return this.repo
      .rounds(agentId, from, to)
      .slice(-limit)
      .map((r) => ({ ...r, cost_usd: roundCost(r.token_usage, priceOf(r.model_ref)) }));
  }

  report(agentIds: string[], from: Date, to: Date): UsageReport {
    const priceOf = this.priceList();
    const groups = new Map<string, UsageGroup>();
    const byAgent: Record<string, UsageTotals> = {};
    const total = empty();
    const unpriced = new Set<string>();
    for (const agentId of agentIds) {
      const agentTotals = (byAgent[agentId] = empty());
      for (const r of this.repo.rounds(agentId, from, to)) {
        const pricing = priceOf(r.model_ref);
        if (!pricing) unpriced.add(r.model_ref);
        const cost = roundCost(r.token_usage, pricing);
        const day = r.ts.slice(0, 10);
        const key = `${agentId}\u0000${r.model_ref}\u0000${day}`;
        let g = groups.get(key);
        if (!g) {
          g = { agent_id: agentId, model_ref: r.model_ref, day, ...empty() };
          groups.set(key, g);
        }
        add(g, r, cost);
        add(agentTotals, r, cost);
        add(total, r, cost);
      }
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
