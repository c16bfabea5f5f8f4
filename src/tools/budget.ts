// Output budgets. Holon estimates tokens as characters / 4 for previews.

export const CHARS_PER_TOKEN = 4;
export const DEFAULT_TOOL_OUTPUT_TOKENS = 8_000;
export const MAX_TOOL_OUTPUT_TOKENS = 64_000;

export type OutputBudget = { default_tokens: number; max_tokens: number };

/** The effective preview budget in characters for one call. */
export function previewChars(budget: OutputBudget, requestedTokens?: number): number {
  const tokens = Math.min(requestedTokens ?? budget.default_tokens, budget.max_tokens);
  return Math.max(256, tokens * CHARS_PER_TOKEN);
}

/**
 * Head-and-tail preview of a text that exceeds `limit` characters: the first and last
 * halves with an explicit marker saying what was cut.
 */
export function headTail(text: string, limit: number): { preview: string; truncated: boolean } {
  if (text.length <= limit) return { preview: text, truncated: false };
  const half = Math.floor(limit / 2);
  const head = cutAtLine(text.slice(0, half), "end");
  const tail = cutAtLine(text.slice(text.length - half), "start");
  const omitted = text.length - head.length - tail.length;
  const headLines = countLines(head);
  const tailLines = countLines(tail);
  return {
    preview: `${head}\n...\n[output truncated: showing first ${headLines} and last ${tailLines} lines; ${omitted} characters omitted]\n...\n${tail}`,
    truncated: true,
  };
}

function cutAtLine(s: string, side: "start" | "end"): string {
  if (side === "end") {
    const i = s.lastIndexOf("\n");
    return i > s.length / 2 ? s.slice(0, i) : s;
  }
  const i = s.indexOf("\n");
  return i >= 0 && i < s.length / 2 ? s.slice(i + 1) : s;
}

function countLines(s: string): number {
  if (s === "") return 0;
  let n = 1;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 10) n++;
  return n;
}
