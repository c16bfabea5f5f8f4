// Cost attribution from the spend ledger's rows: by work item (its own calls, and with the
// calls of the children spawned for it) and as a tree of agents (each child rolled up under
// its parent). Pure functions of the rows; `GET /usage?view=…` and `holon usage --by
// work-item` / `--tree` show them. A row's lineage (parent agents nearest first, and the work
// items its spawn chain ran under) was written with the row, so a later re-parenting or a
// deleted parent never changes what the past cost.
import type { LedgerRow } from "../domain/budget.ts";

export type CostTotals = {
  rounds: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  /** Null when some call's model has no price. */
  cost_usd: number | null;
};

export type WorkItemCost = {
  work_item_id: string | null;
  objective: string | null;
  /** Calls made while working on this item. */
  own: CostTotals;
  /** The same with the calls of children spawned for it (and theirs). */
  with_children: CostTotals;
};

export type AgentCostNode = {
  agent_id: string;
  /** The agent's own calls. */
  own: CostTotals;
  /** Its calls with every descendant's. */
  total: CostTotals;
  children: AgentCostNode[];
};

export const emptyCost = (): CostTotals => ({
  rounds: 0,
  input_tokens: 0,
  cached_input_tokens: 0,
  cache_write_tokens: 0,
  output_tokens: 0,
  reasoning_tokens: 0,
  cost_usd: 0,
});

/** Add one ledger row to a running total. */
export function addCost(t: CostTotals, r: LedgerRow): void {
  t.rounds += r.calls ?? 1;
  t.input_tokens += r.input_tokens;
  t.cached_input_tokens += r.cached_input_tokens;
  t.cache_write_tokens += r.cache_write_tokens;
  t.output_tokens += r.output_tokens;
  t.reasoning_tokens += r.reasoning_tokens;
  t.cost_usd = t.cost_usd === null || r.cost_usd === null ? null : t.cost_usd + r.cost_usd;
}

/** The sum of the rows. */
export function costTotal(rows: LedgerRow[]): CostTotals {
  const t = emptyCost();
  for (const r of rows) addCost(t, r);
  return t;
}

/** Rows of `agentId` and its descendants (every row when undefined). */
export function subtreeRows(rows: LedgerRow[], agentId: string | undefined): LedgerRow[] {
  if (agentId === undefined) return rows;
  return rows.filter((r) => r.agent_id === agentId || r.parent_agent_ids.includes(agentId));
}

/** Work items by spend, the most expensive first (calls on no item last, as `null`). */
export function costByWorkItem(
  rows: LedgerRow[],
  objective: (workItemId: string) => string | null,
): WorkItemCost[] {
  const items = new Map<string | null, WorkItemCost>();
  const entry = (id: string | null) => {
    let e = items.get(id);
    if (!e) {
      e = {
        work_item_id: id,
        objective: id === null ? null : objective(id),
        own: emptyCost(),
        with_children: emptyCost(),
      };
      items.set(id, e);
    }
    return e;
  };
  for (const r of rows) {
    const own = entry(r.work_item_id);
    addCost(own.own, r);
    addCost(own.with_children, r);
    // The items the row's spawn chain ran under count it too (each once).
    for (const up of new Set(r.parent_work_item_ids)) {
      if (up !== r.work_item_id) addCost(entry(up).with_children, r);
    }
  }
  const key = (e: WorkItemCost) => e.with_children.cost_usd ?? -1;
  return [...items.values()].sort(
    (a, b) =>
      Number(a.work_item_id === null) - Number(b.work_item_id === null) ||
      key(b) - key(a) ||
      b.with_children.input_tokens - a.with_children.input_tokens ||
      String(a.work_item_id).localeCompare(String(b.work_item_id)),
  );
}

/** The agents of the rows as trees: roots are agents with no parent among the rows' lineage. */
export function costTree(rows: LedgerRow[]): AgentCostNode[] {
  const nodes = new Map<string, AgentCostNode>();
  const parentOf = new Map<string, string | null>();
  const node = (id: string) => {
    let n = nodes.get(id);
    if (!n) {
      n = { agent_id: id, own: emptyCost(), total: emptyCost(), children: [] };
      nodes.set(id, n);
    }
    return n;
  };
  for (const r of rows) {
    addCost(node(r.agent_id).own, r);
    const chain = [r.agent_id, ...r.parent_agent_ids];
    for (let i = 0; i < chain.length; i++) {
      addCost(node(chain[i]!).total, r);
      if (!parentOf.has(chain[i]!)) parentOf.set(chain[i]!, chain[i + 1] ?? null);
    }
  }
  const roots: AgentCostNode[] = [];
  for (const [id, n] of nodes) {
    const parent = parentOf.get(id) ?? null;
    if (parent !== null && nodes.has(parent)) nodes.get(parent)!.children.push(n);
    else roots.push(n);
  }
  const order = (list: AgentCostNode[]) => {
    list.sort(
      (a, b) =>
        (b.total.cost_usd ?? -1) - (a.total.cost_usd ?? -1) ||
        b.total.input_tokens - a.total.input_tokens ||
        a.agent_id.localeCompare(b.agent_id),
    );
    for (const n of list) order(n.children);
  };
  order(roots);
  return roots;
}
