// The spend ledger's service: writes one row per provider call in the caller's (the
// round's) transaction, priced at that moment from the model catalog, and keeps running
// totals per scope in memory. A scope's total is read from the ledger once, the first time
// it is asked for after start, and bumped by every row after; so a budget check never
// scans the table. The bump happens only for totals loaded before the row's insert, so a
// total loaded later (its query sees the row) never counts it twice.
import type { AgentRecord } from "../domain/agent.ts";
import {
  emptyTotals,
  windowOf,
  type BudgetPeriod,
  type LedgerRow,
  type SpendTotals,
} from "../domain/budget.ts";
import type { TokenUsage } from "../domain/provider.ts";
import type { ProviderConfig as EffectiveConfig } from "../providers/config.ts";
import type { ModelPricing } from "../providers/config.ts";
import { modelMetadata } from "../providers/builtin.ts";
import type { Store } from "../store/db.ts";
import type { LedgerRepo, LedgerScope } from "../store/ledger.ts";
import type { Async } from "../store/async.ts";
import { UsageRepo } from "../store/usage.ts";

/** The cost of one call's usage in dollars, or null without a price. */
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

export type Lineage = { agents: string[]; items: string[] };

export type CallRecord = {
  agent_id: string;
  run_id: string | null;
  round: number | null;
  kind: "round" | "compaction";
  model_ref: string;
  usage: TokenUsage | null;
  elapsed_ms: number;
  estimated?: boolean;
  /** The work item the call is for (default: the agent's current item). */
  work_item_id?: string | null | undefined;
};

type Window = Exclude<BudgetPeriod, "total">;

export class SpendLedger {
  readonly repo: Async<LedgerRepo>;
  private readonly store: Store;
  private readonly config: () => EffectiveConfig;
  /** Loaded running totals by scope key. */
  private readonly totals = new Map<string, SpendTotals>();
  /** Loaded window totals: agent → its time zone and window key → totals. */
  private readonly windows = new Map<string, { tz: string; byKey: Map<string, SpendTotals> }>();
  private readonly lineages = new Map<string, Lineage>();

  constructor(opts: { store: Store; config: () => EffectiveConfig }) {
    this.store = opts.store;
    this.repo = opts.store.ledger;
    this.config = opts.config;
  }

  pricing(modelRef: string): ModelPricing | undefined {
    return modelMetadata(modelRef, this.config()).entry.pricing;
  }

  /** The agent's ancestors (nearest first) and the work items its spawn chain ran under. */
  async lineage(agentId: string): Promise<Lineage> {
    let l = this.lineages.get(agentId);
    if (l) return l;
    const agents: string[] = [];
    const items: string[] = [];
    let cur = await this.store.agents.get(agentId);
    const seen = new Set([agentId]);
    while (cur?.lineage_parent_agent_id && !seen.has(cur.lineage_parent_agent_id)) {
      if (cur.spawn_work_item_id) items.push(cur.spawn_work_item_id);
      seen.add(cur.lineage_parent_agent_id);
      agents.push(cur.lineage_parent_agent_id);
      cur = await this.store.agents.get(cur.lineage_parent_agent_id);
    }
    l = { agents, items };
    this.lineages.set(agentId, l);
    return l;
  }

  /** Write one call's row (inside the caller's transaction) and bump the loaded totals. */
  async record(call: CallRecord): Promise<LedgerRow> {
    const agent = await this.store.agents.get(call.agent_id);
    const row = await this.row(
      call,
      call.work_item_id !== undefined ? call.work_item_id : (agent?.current_work_item_id ?? null),
      this.store.clock.now().toISOString(),
    );
    await this.repo.insert(row);
    this.bump(row);
    return row;
  }

  /** One call's row: its lineage, its token columns and its price now. */
  private async row(call: CallRecord, workItemId: string | null, ts: string): Promise<LedgerRow> {
    const lin = await this.lineage(call.agent_id);
    const u = call.usage;
    return {
      ts,
      agent_id: call.agent_id,
      run_id: call.run_id,
      round: call.round,
      kind: call.kind,
      work_item_id: workItemId,
      parent_agent_ids: lin.agents,
      parent_work_item_ids: lin.items,
      model_ref: call.model_ref,
      input_tokens: u?.input_tokens ?? 0,
      cached_input_tokens: u?.cache_read_input_tokens ?? 0,
      cache_write_tokens: u?.cache_creation_input_tokens ?? 0,
      output_tokens: u?.output_tokens ?? 0,
      reasoning_tokens: u?.reasoning_tokens ?? 0,
      cost_usd: roundCost(u, this.pricing(call.model_ref)),
      elapsed_ms: call.elapsed_ms,
      estimated: call.estimated ?? false,
    };
  }

  private bump(row: LedgerRow): void {
    const add = (key: string) => {
      const t = this.totals.get(key);
      if (t) addRow(t, row);
    };
    const agents = [row.agent_id, ...row.parent_agent_ids];
    for (const a of agents) {
      add(`tree:${a}`);
      const w = this.windows.get(a);
      if (w) {
        const at = new Date(row.ts);
        for (const p of ["day", "week", "month"] as const) {
          const t = w.byKey.get(windowOf(p, at, w.tz).key);
          if (t) addRow(t, row);
        }
      }
    }
    const items = row.work_item_id
      ? [row.work_item_id, ...row.parent_work_item_ids]
      : row.parent_work_item_ids;
    for (const i of items) add(`item:${i}`);
    if (row.run_id) add(`run:${row.run_id}`);
  }

  private async load(key: string, scope: LedgerScope): Promise<SpendTotals> {
    let t = this.totals.get(key);
    if (!t) {
      t = await this.repo.sum(scope);
      this.totals.set(key, t);
    }
    return t;
  }

  /** The agent's spend with everything its descendants spent. */
  agentTree(agentId: string): Promise<SpendTotals> {
    return this.load(`tree:${agentId}`, { kind: "agent_tree", agent_id: agentId });
  }

  /** The same within the calendar window that holds `now`. */
  async agentWindow(agentId: string, period: Window, now: Date, tz: string): Promise<SpendTotals> {
    const w = windowOf(period, now, tz);
    let entry = this.windows.get(agentId);
    if (!entry || entry.tz !== tz) {
      entry = { tz, byKey: new Map() };
      this.windows.set(agentId, entry);
    }
    const m = entry.byKey;
    let t = m.get(w.key);
    if (!t) {
      // A new window: drop this period's older windows, load this one once.
      for (const k of m.keys()) if (k.startsWith(`${period}:`)) m.delete(k);
      t = await this.repo.sum({ kind: "agent_tree", agent_id: agentId }, w.start, w.end);
      m.set(w.key, t);
    }
    return t;
  }

  workItem(workItemId: string): Promise<SpendTotals> {
    return this.load(`item:${workItemId}`, {
      kind: "work_item_tree",
      work_item_id: workItemId,
    });
  }

  run(runId: string): Promise<SpendTotals> {
    return this.load(`run:${runId}`, { kind: "run", run_id: runId });
  }

  /** A new agent (or a changed lineage) is looked up afresh. */
  forget(agentId: string): void {
    this.lineages.delete(agentId);
  }

  /**
   * Fill the ledger from the model-round events retention still keeps (once, after the
   * migration that made the table), priced with the catalog in effect now. Rounds already
   * in the ledger are skipped by their (run, round) key.
   */
  async backfill(): Promise<number> {
    if (!(await this.store.ledger.backfillPending())) return 0;
    const usage = new UsageRepo(this.store.db);
    const agents: AgentRecord[] = await this.store.agents.list();
    let n = 0;
    await this.store.tx(async () => {
      for (const a of agents) {
        for (const r of usage.rounds(a.agent_id, new Date(0), new Date(8.64e15))) {
          const call: CallRecord = {
            agent_id: a.agent_id,
            run_id: r.run_id || null,
            round: r.round,
            kind: "round",
            model_ref: r.model_ref,
            usage: r.token_usage,
            elapsed_ms: 0,
          };
          const inserted = await this.repo.insert(await this.row(call, null, r.ts), true);
          if (inserted) n++;
        }
      }
      await this.store.ledger.markBackfilled(this.store.clock.now().toISOString());
    });
    this.totals.clear();
    this.windows.clear();
    return n;
  }
}

function addRow(t: SpendTotals, r: LedgerRow): void {
  t.rounds += 1;
  t.input_tokens += r.input_tokens;
  t.cached_input_tokens += r.cached_input_tokens;
  t.cache_write_tokens += r.cache_write_tokens;
  t.output_tokens += r.output_tokens;
  t.reasoning_tokens += r.reasoning_tokens;
  t.tokens += r.input_tokens + r.output_tokens;
  if (r.cost_usd === null) t.unpriced_rounds += 1;
  else t.usd += r.cost_usd;
  t.time_ms += r.elapsed_ms;
}

export { emptyTotals };

/**
 * A settled child gives its reservation back: what it did not spend is the parent's again
 * (its spend stays counted in the parent's tree). Inside the caller's transaction; once.
 */
export async function returnReservation(
  store: Store,
  ledger: SpendLedger,
  childId: string,
): Promise<void> {
  const child = await store.agents.get(childId);
  const r = child?.budget_reservation;
  if (!child || !r || r.returned_at) return;
  const now = store.clock.now().toISOString();
  await store.agents.put({ ...child, budget_reservation: { ...r, returned_at: now } });
  const t = await ledger.agentTree(childId);
  if (!(await store.agents.get(r.from_agent_id))) return;
  await store.appendEvent(r.from_agent_id, {
    type: "budget_reservation_returned",
    payload: {
      child_agent_id: childId,
      limits: r.limits,
      spent: { tokens: t.tokens, usd: t.usd, rounds: t.rounds, time_ms: t.time_ms },
    },
  });
}
