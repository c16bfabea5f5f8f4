// Amounts as people type them (`2M`, `500k`, `$5`, `0.50`, `2h`, `90m`), parsed into the
// numbers budgets hold. Free of schemas on purpose: the CLI's budget flags parse with these
// while `holon --help` and every command group load no validation library (start-up cost).
import { HolonError } from "./errors.ts";

/** The largest limit accepted in any dimension (keeps sums exact in a double). */
export const MAX_LIMIT = 1e15;

const SUFFIX: Record<string, number> = { "": 1, k: 1e3, m: 1e6, g: 1e9, b: 1e9 };

/** A token or round count: `2M`, `500k`, `1.5m`, `20000`. */
export function parseCount(text: string, what: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgb]?)\s*$/i.exec(text);
  const n = m ? Number(m[1]) * SUFFIX[m[2]!.toLowerCase()]! : NaN;
  if (!m || !Number.isFinite(n) || n > MAX_LIMIT || !Number.isInteger(Math.round(n))) {
    throw new HolonError(
      "invalid_budget",
      `${what} must be a non-negative count like 500k, 2M or 20000, got '${text}'`,
    );
  }
  return Math.round(n);
}

/** Dollars: `5`, `0.50`, `$5`. */
export function parseUsd(text: string, what: string): number {
  const m = /^\s*\$?\s*(\d+(?:\.\d+)?)\s*$/.exec(text);
  const n = m ? Number(m[1]) : NaN;
  if (!m || !Number.isFinite(n) || n > MAX_LIMIT) {
    throw new HolonError(
      "invalid_budget",
      `${what} must be a non-negative dollar amount like 5 or 0.50, got '${text}'`,
    );
  }
  return n;
}

const UNIT_MS: Record<string, number> = { s: 1e3, m: 6e4, h: 36e5, d: 864e5 };

/** A duration: `2h`, `90m`, `1d`, `30s` (combinations like `1h30m` too). */
export function parseDuration(text: string, what: string): number {
  const t = text.trim().toLowerCase();
  let ms = 0;
  let rest = t;
  const part = /^(\d+(?:\.\d+)?)([smhd])/;
  while (rest.length > 0) {
    const m = part.exec(rest);
    if (!m) {
      ms = NaN;
      break;
    }
    ms += Number(m[1]) * UNIT_MS[m[2]!]!;
    rest = rest.slice(m[0].length);
  }
  if (t.length === 0 || !Number.isFinite(ms) || ms > MAX_LIMIT) {
    throw new HolonError(
      "invalid_budget",
      `${what} must be a duration like 2h, 90m or 1h30m, got '${text}'`,
    );
  }
  return Math.round(ms);
}
