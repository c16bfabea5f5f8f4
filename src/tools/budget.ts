// Output budgets. Holon estimates tokens as characters / 4 for previews.
import { readPreview, type OutputPreview } from "./output-preview.ts";

export const CHARS_PER_TOKEN = 4;

export type OutputBudget = { default_tokens: number; max_tokens: number };

/** The effective preview budget in characters for one call. */
export function previewChars(budget: OutputBudget, requestedTokens?: number): number {
  const tokens = Math.min(requestedTokens ?? budget.default_tokens, budget.max_tokens);
  return Math.max(256, tokens * CHARS_PER_TOKEN);
}

/** How a file's bounded preview reads when it was cut: head, an explicit marker, tail. */
export function previewText(p: OutputPreview, path: string): string {
  if (!p.truncated) return p.head;
  return `${p.head}\n...\n[output truncated: showing the first ${byteLen(p.head)} and last ${byteLen(p.tail)} of ${p.total_bytes} bytes; the full output is in ${path}]\n...\n${p.tail}`;
}

/** Read a bounded head-and-tail preview of an output file within `chars` characters. */
export function filePreview(
  path: string,
  chars: number,
): { text: string; truncated: boolean; total_bytes: number } {
  const half = Math.max(64, Math.floor(chars / 2));
  const p = readPreview(path, { headBytes: half, tailBytes: half });
  return { text: previewText(p, path), truncated: p.truncated, total_bytes: p.total_bytes };
}

function byteLen(s: string): number {
  return Buffer.byteLength(s, "utf8");
}
