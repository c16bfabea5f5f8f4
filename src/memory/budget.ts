// The token budget of one provider request, from the model's catalog metadata
// (`context_window_tokens`, `effective_context_window_percent`, `runtime_max_output_tokens`,
// `prompt_budget_estimated_tokens`) and the context settings (`context.*` config).
//
// window        usable context window (the catalog's, times its effective percent)
// output        tokens reserved for the answer (the model's output limit, at most a quarter
//               of the window)
// prompt        what a request may hold: the catalog's prompt budget, else window - output
// soft / target compaction starts above `soft` and brings the request under `target`
// recap         the most the turn-local recap may take (a share of the window)

/** Assumed for models the catalog knows nothing about. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;
const DEFAULT_OUTPUT_RESERVE = 8_192;
const SOFT_SHARE = 0.85;
const TARGET_SHARE = 0.55;

export type ModelContextMeta = {
  context_window_tokens?: number | undefined;
  effective_context_window_percent?: number | undefined;
  prompt_budget_estimated_tokens?: number | undefined;
  runtime_max_output_tokens?: number | undefined;
};

export type ContextSettings = {
  /** Completed rounds kept exactly at the end of a compacted turn (at least 1). */
  keep_recent_rounds: number;
  /** Share of the window the turn-local recap may use, in percent. */
  recap_share_percent: number;
  /** OpenAI Responses remote compaction when the local projection still does not fit. */
  remote_compaction: boolean;
};

export const DEFAULT_CONTEXT_SETTINGS: ContextSettings = {
  keep_recent_rounds: 2,
  recap_share_percent: 15,
  remote_compaction: false,
};

export type ContextLimits = {
  model_ref: string | null;
  window: number;
  output_reserve: number;
  prompt: number;
  soft: number;
  target: number;
  recap: number;
};

export function contextLimits(
  modelRef: string | null,
  meta: ModelContextMeta,
  settings: ContextSettings = DEFAULT_CONTEXT_SETTINGS,
): ContextLimits {
  const raw = meta.context_window_tokens ?? DEFAULT_CONTEXT_WINDOW;
  const window = Math.floor((raw * (meta.effective_context_window_percent ?? 100)) / 100);
  const output = Math.min(
    meta.runtime_max_output_tokens ?? DEFAULT_OUTPUT_RESERVE,
    Math.floor(window / 4),
  );
  const prompt = Math.min(meta.prompt_budget_estimated_tokens ?? window - output, window - output);
  return {
    model_ref: modelRef,
    window,
    output_reserve: output,
    prompt,
    soft: Math.floor(prompt * SOFT_SHARE),
    target: Math.floor(prompt * TARGET_SHARE),
    recap: Math.floor((window * settings.recap_share_percent) / 100),
  };
}
