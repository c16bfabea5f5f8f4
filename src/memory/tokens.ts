// Token estimates for budgeting provider requests. No tokenizer ships for every provider
// Holon speaks, so this is a calibrated estimate: about four characters a token for Latin
// text and code, one token per CJK character, two characters a token for other non-ASCII
// text, plus a small overhead per conversation item. A `TokenCalibration` corrects it with
// the input tokens the provider reports for requests it was estimated for.
import type { ConversationItem, ProviderRequest, ToolSpec } from "../providers/model.ts";

/** Overhead per conversation item (role markers, ids, wrapping). */
const ITEM_OVERHEAD = 6;

/** The estimated tokens of one text. */
export function estimateTokens(text: string): number {
  let ascii = 0;
  let cjk = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) ascii++;
    else if (isCjk(c)) cjk++;
    else if (c >= 0xd800 && c <= 0xdbff) {
      other++; // a surrogate pair counts once
      i++;
    } else other++;
  }
  return Math.ceil(ascii / 4 + cjk + other / 2);
}

/** Han, kana, hangul and CJK punctuation / full-width forms. */
export function isCjk(c: number): boolean {
  return (
    (c >= 0x3000 && c <= 0x30ff) ||
    (c >= 0x3400 && c <= 0x4dbf) ||
    (c >= 0x4e00 && c <= 0x9fff) ||
    (c >= 0xac00 && c <= 0xd7af) ||
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0xff00 && c <= 0xffef)
  );
}

export function estimateItem(item: ConversationItem): number {
  switch (item.type) {
    case "user_text":
    case "assistant_text":
      return ITEM_OVERHEAD + estimateTokens(item.text);
    case "tool_call":
      return ITEM_OVERHEAD + estimateTokens(item.name) + estimateTokens(item.arguments);
    case "tool_result":
      return ITEM_OVERHEAD + estimateTokens(item.output);
    case "reasoning":
      return ITEM_OVERHEAD + estimateTokens(JSON.stringify(item.data ?? null));
    case "provider_window":
      return ITEM_OVERHEAD + estimateTokens(JSON.stringify(item.items));
  }
}

const toolCache = new WeakMap<ToolSpec[], number>();

export function estimateTools(tools: ToolSpec[]): number {
  let n = toolCache.get(tools);
  if (n === undefined) {
    n = estimateTokens(JSON.stringify(tools)) + tools.length * ITEM_OVERHEAD;
    toolCache.set(tools, n);
  }
  return n;
}

/** Everything but the conversation: system prompt, blocks and the tool catalog. */
export function estimateFrame(request: ProviderRequest): number {
  const f = request.frame;
  let n = estimateTokens(f.system_prompt);
  for (const b of f.system_blocks) n += estimateTokens(b.text) + 2;
  for (const b of f.context_blocks) n += estimateTokens(b.text) + 2;
  return n + estimateTools(request.tools);
}

export function estimateConversation(items: readonly ConversationItem[]): number {
  let n = 0;
  for (const item of items) n += estimateItem(item);
  return n;
}

/** The raw (uncalibrated) estimate of a whole request. */
export function estimateRequest(request: ProviderRequest): number {
  return estimateFrame(request) + estimateConversation(request.conversation);
}

/**
 * Per-model correction factor from reported usage: the ratio of reported input tokens to
 * the raw estimate of the request, smoothed. Clamped so one odd report (a provider that
 * reports nothing useful, a scripted fake) cannot make the budget unsafe: the factor never
 * goes below 0.9 (estimates only shrink a little) nor above 3.
 */
export class TokenCalibration {
  private readonly factors = new Map<string, number>();

  factor(modelRef: string | undefined): number {
    return (modelRef && this.factors.get(modelRef)) || 1;
  }

  observe(modelRef: string, estimated: number, reported: number): void {
    if (!(estimated > 200) || !(reported > 0)) return;
    const ratio = Math.min(3, Math.max(0.9, reported / estimated));
    const prev = this.factors.get(modelRef);
    this.factors.set(modelRef, prev === undefined ? ratio : prev * 0.7 + ratio * 0.3);
  }
}
