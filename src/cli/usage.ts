// `holon usage`: tokens and dollars per agent, model and day, from GET /usage; by work item
// (`--by work-item`) or as a tree of agents with children rolled up (`--tree`).
import { CliError } from "./output.ts";
import { call, connect, type ClientFlags, agentOrDefault } from "./connect.ts";
import { printJson } from "./output.ts";

type Totals = {
  rounds: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
};
type Report = {
  from: string;
  to: string;
  groups: (Totals & { agent_id: string; model_ref: string; day: string })[];
  by_agent: Record<string, Totals>;
  total: Totals;
  unpriced_models: string[];
};

export function formatCost(c: number | null): string {
  if (c === null) return "unpriced";
  return c < 1 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`;
}

type Round = {
  ts: string;
  run_id: string;
  round: number;
  model_ref: string;
  token_usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens?: number;
  } | null;
  cost_usd: number | null;
};

type CostTotals = Totals & { reasoning_tokens: number };
type WorkItemCost = {
  work_item_id: string | null;
  objective: string | null;
  own: CostTotals;
  with_children: CostTotals;
};
type CostNode = { agent_id: string; own: CostTotals; total: CostTotals; children: CostNode[] };

const tokens = (t: Totals) =>
  `${t.input_tokens} in (${t.cached_input_tokens} cached) / ${t.output_tokens} out`;

/** The tree as indented lines: each agent's subtree total, and its own share when it has children. */
export function treeLines(nodes: CostNode[], depth = 0): string[] {
  const out: string[] = [];
  for (const n of nodes) {
    const own = n.children.length
      ? `  (itself ${formatCost(n.own.cost_usd)}, ${n.own.rounds} rounds)`
      : "";
    out.push(
      `${"  ".repeat(depth)}${n.agent_id}  ${formatCost(n.total.cost_usd)}  ${n.total.rounds} rounds  ${tokens(n.total)}${own}`,
      ...treeLines(n.children, depth + 1),
    );
  }
  return out;
}

export function workItemLines(items: WorkItemCost[]): string[] {
  return items.map((w) => {
    const name = w.work_item_id
      ? `${w.work_item_id}${w.objective ? `  ${w.objective.split("\n")[0]!.slice(0, 60)}` : ""}`
      : "(no work item)";
    const kids =
      w.with_children.rounds !== w.own.rounds
        ? `  with children ${formatCost(w.with_children.cost_usd)} over ${w.with_children.rounds} rounds`
        : "";
    return `${name}\n  ${formatCost(w.own.cost_usd)}  ${w.own.rounds} rounds  ${tokens(w.own)}${kids}`;
  });
}

type UsageFlags = ClientFlags & {
  agent?: string;
  since?: string;
  until?: string;
  json?: boolean;
  rounds?: boolean;
  limit?: string;
  by?: string;
  tree?: boolean;
};

export async function usage(flags: UsageFlags): Promise<void> {
  const client = connect(flags);
  const q = new URLSearchParams();
  if (flags.since) q.set("since", flags.since);
  if (flags.until) q.set("until", flags.until);
  if (flags.rounds) {
    if (flags.limit) q.set("limit", flags.limit);
    const agent = await agentOrDefault(client, flags.agent);
    const r = await call(() =>
      client.call<{ rounds: Round[] }>(
        "GET",
        `/agents/${encodeURIComponent(agent)}/usage/rounds?${q}`,
      ),
    );
    if (flags.json) return printJson(r);
    const out = r.rounds.map((x) => {
      const u = x.token_usage;
      const tokens = u
        ? `${u.input_tokens} in (${u.cache_read_input_tokens ?? 0} cached) / ${u.output_tokens} out`
        : "tokens unknown";
      return `${x.ts}  ${x.run_id} #${x.round}  ${x.model_ref}  ${tokens}  ${formatCost(x.cost_usd)}`;
    });
    process.stdout.write((out.length ? out : ["no model rounds in this window"]).join("\n") + "\n");
    return;
  }
  if (flags.agent) q.set("agent", flags.agent);
  if (flags.by !== undefined && flags.by !== "work-item") {
    throw new CliError(`--by takes work-item, not '${flags.by}'`);
  }
  if (flags.by && flags.tree)
    throw new CliError("--by work-item and --tree are two views: pick one");
  if (flags.by || flags.tree) {
    q.set("view", flags.tree ? "tree" : "work_items");
    const v = await call(() =>
      client.call<Report & { work_items?: WorkItemCost[]; tree?: CostNode[] }>(
        "GET",
        `/usage?${q}`,
      ),
    );
    if (flags.json) return printJson(v);
    const lines = flags.tree ? treeLines(v.tree ?? []) : workItemLines(v.work_items ?? []);
    if (!lines.length) lines.push("no model rounds in this window");
    lines.push(
      `total: ${v.total.input_tokens} in / ${v.total.output_tokens} out over ${v.total.rounds} rounds, ${formatCost(v.total.cost_usd)}`,
    );
    process.stdout.write(lines.join("\n") + "\n");
    return;
  }
  const r = await call(() => client.call<Report>("GET", `/usage?${q}`));
  if (flags.json) return printJson(r);
  const rows = [
    ["day", "agent", "model", "rounds", "input", "cached", "output", "cost"],
    ...r.groups.map((g) => [
      g.day,
      g.agent_id,
      g.model_ref,
      String(g.rounds),
      String(g.input_tokens),
      String(g.cached_input_tokens),
      String(g.output_tokens),
      formatCost(g.cost_usd),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row.map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ");
  const out = r.groups.length ? rows.map(line) : ["no model rounds in this window"];
  out.push("");
  for (const [agent, t] of Object.entries(r.by_agent)) {
    if (t.rounds === 0) continue;
    out.push(
      `${agent}: ${t.input_tokens} in (${t.cached_input_tokens} cached) / ${t.output_tokens} out over ${t.rounds} rounds, ${formatCost(t.cost_usd)}`,
    );
  }
  out.push(
    `total: ${r.total.input_tokens} in / ${r.total.output_tokens} out over ${r.total.rounds} rounds, ${formatCost(r.total.cost_usd)}`,
  );
  // Budgets beside the spend: spent / reserved / limit per scope of each agent that has one.
  const { budgetLines } = await import("./budget.ts");
  for (const agent of Object.keys(r.by_agent)) {
    const b = await client
      .call<{ budget: import("./budget.ts").BudgetView }>(
        "GET",
        `/agents/${encodeURIComponent(agent)}/budget`,
      )
      .catch(() => null);
    if (!b || (!b.budget.scopes.length && !b.budget.hold)) continue;
    out.push(`budget ${agent}:`, ...budgetLines(b.budget).map((l) => `  ${l}`));
  }
  if (r.unpriced_models.length) {
    out.push(
      `no price for ${r.unpriced_models.join(", ")}: set models.catalog.<model>.pricing in config.json (docs/cli.md)`,
    );
  }
  process.stdout.write(out.join("\n") + "\n");
}
