// `holon usage`: tokens and dollars per agent, model and day, from GET /usage.
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

type UsageFlags = ClientFlags & {
  agent?: string;
  since?: string;
  until?: string;
  json?: boolean;
  rounds?: boolean;
  limit?: string;
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
