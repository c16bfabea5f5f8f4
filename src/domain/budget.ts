// Budgets and the spend ledger's shapes. A budget is a set of limits in four dimensions
// (tokens, US dollars, model rounds, wall time) on a scope: an agent (its total, or a
// calendar window), a work item, a child's reservation carved from its parent, or one
// `holon run`. Budgets live in the agent and work item records and change only through
// control routes; a budget hold is the durable record that a scope ran out (or was frozen)
// and that the turn loop honours until the window turns over or the operator raises it.
import { z } from "zod";
import { MAX_LIMIT } from "./amounts.ts";
import { HolonError } from "./errors.ts";

// The largest limit, and parsing what people type (`2M`, `500k`, `$5`, `2h`), live in
// amounts.ts, which the CLI's flags use without loading the schemas here.
export { MAX_LIMIT, parseCount, parseDuration, parseUsd } from "./amounts.ts";

const Limit = z.number().finite().nonnegative().max(MAX_LIMIT);

export const BudgetLimits = z.strictObject({
  /** Input + output tokens; cached input counts at full weight. */
  tokens: Limit.int().optional(),
  usd: Limit.optional(),
  rounds: Limit.int().optional(),
  /** Wall time of the turns that ran in the scope, in milliseconds. */
  time_ms: Limit.int().optional(),
});
export type BudgetLimits = z.infer<typeof BudgetLimits>;
export const DIMENSIONS = ["tokens", "usd", "rounds", "time_ms"] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export const BudgetPeriod = z.enum(["total", "day", "week", "month"]);
export type BudgetPeriod = z.infer<typeof BudgetPeriod>;

/** An agent's budgets: at most one limit set per period. */
export const AgentBudgets = z.strictObject({
  total: BudgetLimits.optional(),
  day: BudgetLimits.optional(),
  week: BudgetLimits.optional(),
  month: BudgetLimits.optional(),
  /** The IANA time zone the calendar windows follow (default UTC). */
  time_zone: z.string().max(64).optional(),
});
export type AgentBudgets = z.infer<typeof AgentBudgets>;

/** A child's budget carved from its parent: shown as reserved beside the parent's spend. */
export const BudgetReservation = z.strictObject({
  from_agent_id: z.string(),
  limits: BudgetLimits,
  reserved_at: z.string(),
  /** Set when the child settled: its unspent rest went back to the parent. */
  returned_at: z.string().optional(),
});
export type BudgetReservation = z.infer<typeof BudgetReservation>;

/** Why a scope stops before its next provider call. */
export const BudgetHold = z.strictObject({
  /** `agent:main`, `agent:main:day`, `work_item:wi_…`, `reservation:child`, `freeze`. */
  scope: z.string(),
  reason: z.enum(["exhausted", "unpriced_model", "frozen"]),
  dimension: z.enum([...DIMENSIONS]).optional(),
  limit: z.number().optional(),
  spent: z.number().optional(),
  /** What the refused request would have needed (estimate of input + max output). */
  needed: z.number().optional(),
  summary: z.string(),
  since: z.string(),
  /** A periodic window's end: the hold lifts by itself then. */
  until: z.string().optional(),
});
export type BudgetHold = z.infer<typeof BudgetHold>;

/** Spend in one scope, as the ledger's running totals hold it. */
export type SpendTotals = {
  rounds: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  /** Tokens as budgets count them: input + output. */
  tokens: number;
  usd: number;
  /** Rounds whose model had no price (their dollars are unknown). */
  unpriced_rounds: number;
  time_ms: number;
};

export function emptyTotals(): SpendTotals {
  return {
    rounds: 0,
    input_tokens: 0,
    cached_input_tokens: 0,
    cache_write_tokens: 0,
    output_tokens: 0,
    reasoning_tokens: 0,
    tokens: 0,
    usd: 0,
    unpriced_rounds: 0,
    time_ms: 0,
  };
}

/** The spent amount in one budget dimension. */
export function spentIn(t: SpendTotals, d: Dimension): number {
  return d === "tokens" ? t.tokens : d === "usd" ? t.usd : d === "rounds" ? t.rounds : t.time_ms;
}

/** One ledger row: one provider call (a model round or a remote compaction). */
export type LedgerRow = {
  ts: string;
  agent_id: string;
  run_id: string | null;
  round: number | null;
  kind: "round" | "compaction";
  work_item_id: string | null;
  /** Ancestors, nearest first (the parent, its parent, …). */
  parent_agent_ids: string[];
  /** The work items of the ancestors' runs that spawned this agent, nearest first. */
  parent_work_item_ids: string[];
  model_ref: string;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  /** Priced when written; null when the model has no price. */
  cost_usd: number | null;
  /** Wall time of the turn since the previous call (or the turn's start). */
  elapsed_ms: number;
  /** True when the provider reported no usage and the tokens are the request estimate. */
  estimated: boolean;
  /**
   * A day rolled up by ledger retention: how many provider calls this row stands for (absent
   * on a row of one call). Its time is the start of its UTC day; it has no run or round.
   */
  calls?: number;
  rolled_up?: boolean;
};

/** Check limits from an HTTP body: a clear error, never a partial write. */
export function checkLimits(input: unknown, what: string): BudgetLimits {
  const parsed = BudgetLimits.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new HolonError(
      "invalid_budget",
      `${what}: ${issue?.path.join(".") || "budget"} ${issue?.message ?? "is invalid"}`,
      { hint: "limits are non-negative numbers: tokens, usd, rounds, time_ms" },
    );
  }
  return parsed.data;
}

export function hasLimits(l: BudgetLimits | undefined): l is BudgetLimits {
  return l !== undefined && DIMENSIONS.some((d) => l[d] !== undefined);
}

// ---- Calendar windows in a time zone ----

type Parts = { y: number; mo: number; d: number; wd: number };

const formatters = new Map<string, Intl.DateTimeFormat>();
function partsIn(date: Date, timeZone: string): Parts & { h: number; mi: number; s: number } {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      weekday: "short",
    });
    formatters.set(timeZone, f);
  }
  const out: Record<string, string> = {};
  for (const p of f.formatToParts(date)) out[p.type] = p.value;
  const wd = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"].indexOf(out.weekday ?? "Sun");
  return {
    y: Number(out.year),
    mo: Number(out.month),
    d: Number(out.day),
    wd,
    h: Number(out.hour),
    mi: Number(out.minute),
    s: Number(out.second),
  };
}

/** The UTC instant of a wall-clock midnight in `timeZone` (DST-safe to the minute). */
function midnightIn(y: number, mo: number, d: number, timeZone: string): Date {
  // Start from UTC midnight of that date and correct by the zone's offset, twice (DST edges).
  let guess = Date.UTC(y, mo - 1, d);
  for (let i = 0; i < 2; i++) {
    const p = partsIn(new Date(guess), timeZone);
    const asUtc = Date.UTC(p.y, p.mo - 1, p.d, p.h, p.mi, p.s);
    guess += Date.UTC(y, mo - 1, d) - asUtc;
  }
  return new Date(guess);
}

type Win = { key: string; start: Date; end: Date };
/** The last window computed per period and zone: most calls fall inside it (no Intl work). */
const lastWindow = new Map<string, Win>();

/** The window that holds `now`: its key and its [start, end) instants. Weeks start Monday. */
export function windowOf(period: Exclude<BudgetPeriod, "total">, now: Date, timeZone: string): Win {
  const cacheKey = `${period}\u0000${timeZone}`;
  const hit = lastWindow.get(cacheKey);
  const t = now.getTime();
  if (hit && t >= hit.start.getTime() && t < hit.end.getTime()) return hit;
  const w = computeWindow(period, now, timeZone);
  lastWindow.set(cacheKey, w);
  return w;
}

function computeWindow(period: Exclude<BudgetPeriod, "total">, now: Date, timeZone: string): Win {
  const p = partsIn(now, timeZone);
  let sy = p.y;
  let smo = p.mo;
  let sd = p.d;
  let ey: number;
  let emo: number;
  let ed: number;
  if (period === "day") {
    const next = new Date(Date.UTC(p.y, p.mo - 1, p.d + 1));
    [ey, emo, ed] = [next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate()];
  } else if (period === "week") {
    const back = (p.wd + 6) % 7; // days since Monday
    const s = new Date(Date.UTC(p.y, p.mo - 1, p.d - back));
    [sy, smo, sd] = [s.getUTCFullYear(), s.getUTCMonth() + 1, s.getUTCDate()];
    const e = new Date(Date.UTC(sy, smo - 1, sd + 7));
    [ey, emo, ed] = [e.getUTCFullYear(), e.getUTCMonth() + 1, e.getUTCDate()];
  } else {
    sd = 1;
    const e = new Date(Date.UTC(p.y, p.mo, 1));
    [ey, emo, ed] = [e.getUTCFullYear(), e.getUTCMonth() + 1, e.getUTCDate()];
  }
  const pad = (n: number) => String(n).padStart(2, "0");
  return {
    key: `${period}:${sy}-${pad(smo)}-${pad(sd)}`,
    start: midnightIn(sy, smo, sd, timeZone),
    end: midnightIn(ey, emo, ed, timeZone),
  };
}

/** A time zone name Intl accepts, or a clear error. */
export function checkTimeZone(tz: string): string {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return tz;
  } catch {
    throw new HolonError("invalid_budget", `unknown time zone '${tz}'`, {
      hint: "use an IANA name such as UTC, Europe/Berlin or America/New_York",
    });
  }
}
