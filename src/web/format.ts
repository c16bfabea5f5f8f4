// Small display helpers for the console (times, money, the cut of long text).
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "—";
  const ms = Date.parse(iso) - now;
  const s = Math.round(Math.abs(ms) / 1000);
  const text =
    s < 60
      ? `${s}s`
      : s < 3600
        ? `${Math.round(s / 60)}m`
        : s < 86400
          ? `${Math.round(s / 3600)}h`
          : `${Math.round(s / 86400)}d`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

export function money(usd: number | null | undefined): string {
  if (usd === null || usd === undefined) return "unpriced";
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** At most `max` characters: a 2 MB line must never reach the DOM whole. */
export function cut(text: string | null | undefined, max = 400): string {
  if (!text) return "";
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/** Move to a console page (fragment routing). */
export function go(path: string): void {
  location.hash = `#/${path}`;
}
