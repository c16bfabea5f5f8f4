// `holon budget …`: an agent's budgets (show, set, raise) and the kill switch (freeze,
// unfreeze). Amounts are typed the way people say them (2M, 500k, 0.50, 2h) and parsed
// here into the limits the control routes take; the host checks them again, whole.
import type { Command } from "commander";
import { requester } from "./request.ts";
import type { BudgetLimits, BudgetPeriod } from "../domain/budget.ts";
import { HolonError } from "../domain/errors.ts";
import { CliError, action, printJson, clientOptions } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

export type LimitFlags = {
  tokens?: string | undefined;
  usd?: string | undefined;
  rounds?: string | undefined;
  time?: string | undefined;
};
type Flags = ClientFlags & LimitFlags & { json?: boolean };

/**
 * The limits named on a command line, or a CLI error saying which flag is wrong. The parsers
 * load here, not with the module: their module holds the budget schemas (zod), which
 * `holon --help` (it registers this command group) would otherwise load.
 */
export async function limitsFromFlags(
  f: LimitFlags,
  names: Record<keyof LimitFlags, string> = {
    tokens: "--tokens",
    usd: "--usd",
    rounds: "--rounds",
    time: "--time",
  },
): Promise<BudgetLimits> {
  const { parseCount, parseDuration, parseUsd } = await import("../domain/budget.ts");
  const out: BudgetLimits = {};
  try {
    if (f.tokens !== undefined) out.tokens = parseCount(f.tokens, names.tokens);
    if (f.usd !== undefined) out.usd = parseUsd(f.usd, names.usd);
    if (f.rounds !== undefined) out.rounds = parseCount(f.rounds, names.rounds);
    if (f.time !== undefined) out.time_ms = parseDuration(f.time, names.time);
  } catch (err) {
    if (err instanceof HolonError) throw new CliError(err.message);
    throw err;
  }
  return out;
}

type Spend = {
  tokens: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  usd: number;
  unpriced_rounds: number;
  rounds: number;
  time_ms: number;
};
type Limits = Partial<Record<"tokens" | "usd" | "rounds" | "time_ms", number>>;
export type BudgetView = {
  agent_id: string;
  time_zone: string;
  hold: { scope: string; summary: string; until?: string } | null;
  scopes: {
    scope: string;
    limits: Limits;
    spent: Spend;
    reserved: Limits;
    window?: { start: string; end: string };
  }[];
  spent_total: Spend;
};

const show = (d: string, n: number): string =>
  d === "usd"
    ? `$${n.toFixed(n < 1 ? 4 : 2)}`
    : d === "time_ms"
      ? `${Math.round(n / 1000)}s`
      : String(Math.round(n));

function spentOf(s: Spend, d: string): number {
  return d === "tokens" ? s.tokens : d === "usd" ? s.usd : d === "rounds" ? s.rounds : s.time_ms;
}

/** `agent:main:day  tokens 120000 spent / 0 reserved / 2000000 limit` lines. */
export function budgetLines(v: BudgetView): string[] {
  const lines: string[] = [];
  for (const s of v.scopes) {
    for (const [d, limit] of Object.entries(s.limits)) {
      if (limit === undefined) continue;
      const reserved = s.reserved[d as keyof Limits] ?? 0;
      lines.push(
        `${s.scope}  ${d === "time_ms" ? "time" : d}: ${show(d, spentOf(s.spent, d))} spent / ${show(d, reserved)} reserved / ${show(d, limit)} limit${s.window ? `  (window ends ${s.window.end})` : ""}`,
      );
    }
  }
  const t = v.spent_total;
  lines.push(
    `spent in all: ${t.tokens} tokens (${t.input_tokens} in, ${t.cached_input_tokens} of them cached, ${t.cache_write_tokens} cache writes, ${t.output_tokens} out), $${t.usd.toFixed(4)}${t.unpriced_rounds ? ` + ${t.unpriced_rounds} unpriced rounds` : ""}, ${t.rounds} rounds`,
  );
  if (v.hold) {
    lines.push(`held: ${v.hold.summary}${v.hold.until ? ` (lifts at ${v.hold.until})` : ""}`);
  }
  return lines;
}

const PERIODS = ["total", "day", "week", "month"];

async function set(agent: string, flags: Flags & { per?: string; tz?: string }): Promise<void> {
  const period = flags.per ?? "total";
  if (!PERIODS.includes(period)) throw new CliError(`--per must be one of ${PERIODS.join(", ")}`);
  const limits = await limitsFromFlags(flags);
  if (Object.keys(limits).length === 0) {
    throw new CliError("name a limit", "for example: holon budget set main --tokens 2M --per day");
  }
  const req = await requester(flags);
  const body: Record<string, unknown> = { period: period as BudgetPeriod, limits };
  if (flags.tz) body.time_zone = flags.tz;
  const r = await req<{ budget: BudgetView }>(
    "POST",
    `/control/agents/${encodeURIComponent(agent)}/budget`,
    body,
  );
  if (flags.json) return printJson(r.budget);
  process.stdout.write(budgetLines(r.budget).join("\n") + "\n");
}

async function raise(agent: string, flags: Flags & { scope?: string }): Promise<void> {
  const added = await limitsFromFlags(flags);
  if (Object.keys(added).length === 0) {
    throw new CliError("name what to add", "for example: holon budget raise main --tokens 1M");
  }
  const req = await requester(flags);
  const r = await req<{ budget: BudgetView }>(
    "POST",
    `/control/agents/${encodeURIComponent(agent)}/budget/raise`,
    { added, ...(flags.scope ? { scope: flags.scope } : {}) },
  );
  if (flags.json) return printJson(r.budget);
  process.stdout.write(budgetLines(r.budget).join("\n") + "\n");
}

async function view(agent: string, flags: Flags): Promise<void> {
  const req = await requester(flags);
  const r = await req<{ budget: BudgetView }>("GET", `/agents/${encodeURIComponent(agent)}/budget`);
  if (flags.json) return printJson(r.budget);
  process.stdout.write(budgetLines(r.budget).join("\n") + "\n");
}

function freezeAction(which: "freeze" | "unfreeze") {
  return async (agents: string[], flags: Flags & { all?: boolean }) => {
    if (flags.all && agents.length) throw new CliError("give agents or --all, not both");
    if (!flags.all && !agents.length) throw new CliError("name the agents, or pass --all");
    const req = await requester(flags);
    const r = await req<{ agent_ids: string[] }>(
      "POST",
      `/control/budget/${which}`,
      flags.all ? { all: true } : { agent_ids: agents },
    );
    if (flags.json) return printJson(r);
    process.stdout.write(
      r.agent_ids.length
        ? `${which === "freeze" ? "froze" : "unfroze"} ${r.agent_ids.join(", ")}\n`
        : `nothing to ${which}\n`,
    );
  };
}

function withGlobals<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return action(async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const merged = [...args.slice(0, -2), cmd.optsWithGlobals()] as unknown as A;
    await fn(...merged);
  });
}

export function registerBudgetCommands(program: Command): void {
  const budget = program
    .command("budget")
    .description(
      "Budgets: show, set and raise an agent's limits; freeze every agent's model calls",
    );
  const common = clientOptions;
  const limits = (c: Command) =>
    c
      .option("--tokens <n>", "tokens (input + output), like 500k or 2M")
      .option("--usd <amount>", "US dollars, like 5 or 0.50 (needs model prices)")
      .option("--rounds <n>", "model rounds")
      .option("--time <duration>", "wall time of the turns, like 2h or 90m");
  common(limits(budget.command("show").description("Spent / reserved / limit per scope")))
    .argument("<agent>", "agent id")
    .action(withGlobals(view));
  common(limits(budget.command("set").description("Set an agent's limits for a period")))
    .argument("<agent>", "agent id")
    .option("--per <period>", "total (default), day, week or month")
    .option("--tz <zone>", "time zone of the calendar windows (default UTC)")
    .action(withGlobals(set));
  common(
    limits(
      budget
        .command("raise")
        .description("Add to the budget holding the agent (or --scope) and let it continue"),
    ),
  )
    .argument("<agent>", "agent id")
    .option("--scope <scope>", "total, day, week, month, reservation or work_item:<id>")
    .action(withGlobals(raise));
  common(
    budget
      .command("freeze")
      .description("Kill switch: the agents stop before their next provider call"),
  )
    .argument("[agents...]", "agent ids")
    .option("--all", "every agent")
    .action(withGlobals(freezeAction("freeze")));
  common(budget.command("unfreeze").description("Lift a freeze"))
    .argument("[agents...]", "agent ids")
    .option("--all", "every agent")
    .action(withGlobals(freezeAction("unfreeze")));
}
