// Output budgets. Holon estimates tokens as characters / 4 for previews.

export const CHARS_PER_TOKEN = 4;

export type OutputBudget = { default_tokens: number; max_tokens: number };

/** The effective preview budget in characters for one call. */
export function previewChars(budget: OutputBudget, requestedTokens?: number): number {
  const tokens = Math.min(requestedTokens ?? budget.default_tokens, budget.max_tokens);
  return Math.max(256, tokens * CHARS_PER_TOKEN);
}

export { filePreview } from "../tasks/output-preview.ts";
