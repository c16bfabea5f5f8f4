// Token counts for budgeting provider requests. For OpenAI's current model families the
// count is exact, with their own BPE encoding (o200k_base, from the gpt-tokenizer library,
// loaded on first use). For every other model no maintained tokenizer fits, so the count is a
// calibrated estimate: about four characters a token for Latin text and code, one token per
// CJK character, two characters a token for other non-ASCII text. Either way a small overhead
// per conversation item is added, and a `TokenCalibration` corrects the result with the input
// tokens the provider reports for requests it was counted for.
//
// The exact tokenizer is never handed caller text whole: its cost per character is high
// (up to ~10 µs for CJK or emoji, and its byte-pair merging grows faster than linearly
// within one run of text without spaces), and it runs on the host's main thread. So a text
// is cut into pieces of at most EXACT_PIECE_CHARS, only its first EXACT_TEXT_CHARS are counted
// exactly, and the rest is estimated, scaled by the ratio the exact part showed. The work per
// text is therefore bounded by a constant, and whatever a caller sends costs linear time.
import { createRequire } from "node:module";
import type { ConversationItem, ProviderRequest, ToolSpec } from "../providers/model.ts";

/** Tokens of one text. */
export type TokenCounter = (text: string) => number;

let o200k: TokenCounter | undefined;

/** Models whose tokenizer is o200k_base: GPT-4o, GPT-4.1, GPT-5, the o-series, codex, gpt-oss. */
const O200K_MODELS = /^(gpt-4o|gpt-4\.1|gpt-5|o[1-9]|codex|gpt-oss|chatgpt-4o)/i;

/** The counter for a model: exact for OpenAI families, the calibrated estimate otherwise. */
export function tokenCounterFor(modelRef: string | null | undefined): TokenCounter {
  const model = (modelRef ?? "").split("/").at(-1) ?? "";
  if (!O200K_MODELS.test(model)) return estimateTokens;
  if (!o200k) {
    try {
      const lib = createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as {
        countTokens(text: string): number;
      };
      o200k = boundedExactCounter((text) => lib.countTokens(text));
    } catch {
      o200k = estimateTokens; // the library is missing: estimate
    }
  }
  return o200k;
}

/** The longest piece of text the exact tokenizer is ever given. */
export const EXACT_PIECE_CHARS = 512;
/** How much of one text is counted exactly; the rest is estimated. */
export const EXACT_TEXT_CHARS = 8192;

/**
 * Cuts `text` into pieces of at most `max` characters, preferring to cut just before
 * whitespace (where the tokenizer's own pre-split would cut too, so a cut costs nothing)
 * and never inside a surrogate pair. A cut elsewhere can split one token in two: the count
 * is high by at most one token a piece.
 */
export function* textPieces(text: string, max = EXACT_PIECE_CHARS): Generator<string> {
  let start = 0;
  while (text.length - start > max) {
    let end = start + max;
    const floor = start + (max >> 1);
    let ws = end;
    while (ws > floor && !isSpace(text.charCodeAt(ws))) ws--;
    if (ws > floor) end = ws;
    else if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
    yield text.slice(start, end);
    start = end;
  }
  if (start < text.length) yield start === 0 ? text : text.slice(start);
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;
}
function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

/**
 * An exact counter made safe for caller text: `exact` only ever sees pieces of at most
 * EXACT_PIECE_CHARS, and at most EXACT_TEXT_CHARS of one text in all (see the header).
 */
export function boundedExactCounter(exact: TokenCounter): TokenCounter {
  return (text) => {
    if (text.length <= EXACT_PIECE_CHARS) return exact(text);
    let head = text;
    if (text.length > EXACT_TEXT_CHARS) {
      let cut = EXACT_TEXT_CHARS;
      if (isHighSurrogate(text.charCodeAt(cut - 1))) cut--;
      head = text.slice(0, cut);
    }
    let n = 0;
    for (const piece of textPieces(head)) n += exact(piece);
    if (head === text) return n;
    const estimatedHead = estimateTokens(head);
    const ratio = estimatedHead > 0 ? Math.min(3, Math.max(0.5, n / estimatedHead)) : 1;
    return n + Math.ceil(estimateTokens(text.slice(head.length)) * ratio);
  };
}

/** Overhead per conversation item (role markers, ids, wrapping). */
const ITEM_OVERHEAD = 6;

/** The estimated tokens of one text. */
export function estimateTokens(text: string): number {
  if (text.length >= 256) {
    // Most texts are ASCII (prompts, tool schemas, JSON): then the UTF-8 length, which
    // Node counts natively, equals the length. A mostly-ASCII text (a clipped line's "…")
    // visits only its runs of other characters, which a regular expression finds faster.
    if (Buffer.byteLength(text, "utf8") === text.length) return Math.ceil(text.length / 4);
    let consumed = 0;
    let cjk = 0;
    let other = 0;
    NON_ASCII_RUN.lastIndex = 0;
    for (let m = NON_ASCII_RUN.exec(text); m !== null; m = NON_ASCII_RUN.exec(text)) {
      const end = m.index + m[0].length;
      let i = m.index;
      for (; i < end; i++) {
        const c = text.charCodeAt(i);
        if (isCjk(c)) cjk++;
        else if (c >= 0xd800 && c <= 0xdbff) {
          other++; // a surrogate pair counts once
          i++; // (at a run's end this passes the ASCII character after it, as below)
        } else other++;
      }
      consumed += Math.min(i, text.length) - m.index;
      NON_ASCII_RUN.lastIndex = i;
    }
    return Math.ceil((text.length - consumed) / 4 + cjk + other / 2);
  }
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

const NON_ASCII_RUN = /[^\x00-\x7f]+/g;

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

/** Per counter, the tokens of items and tool catalogs already counted (both immutable). */
const caches = new Map<TokenCounter, WeakMap<object, number>>();
function cached(count: TokenCounter, key: object, compute: () => number): number {
  let m = caches.get(count);
  if (!m) caches.set(count, (m = new WeakMap()));
  let n = m.get(key);
  if (n === undefined) m.set(key, (n = compute()));
  return n;
}

export function estimateItem(item: ConversationItem, count: TokenCounter = estimateTokens): number {
  return cached(count, item, () => {
    switch (item.type) {
      case "user_text":
      case "assistant_text":
        return ITEM_OVERHEAD + count(item.text);
      case "tool_call":
        return ITEM_OVERHEAD + count(item.name) + count(item.arguments);
      case "tool_result":
        return ITEM_OVERHEAD + count(item.output);
      case "reasoning":
        return ITEM_OVERHEAD + count(JSON.stringify(item.data ?? null));
      case "provider_window":
        return ITEM_OVERHEAD + count(JSON.stringify(item.items));
    }
  });
}

export function estimateTools(tools: ToolSpec[], count: TokenCounter = estimateTokens): number {
  return cached(count, tools, () => count(JSON.stringify(tools)) + tools.length * ITEM_OVERHEAD);
}

/** Everything but the conversation: system prompt, blocks and the tool catalog. */
export function estimateFrame(
  request: ProviderRequest,
  count: TokenCounter = estimateTokens,
): number {
  const f = request.frame;
  return (
    cached(count, f, () => {
      let n = count(f.system_prompt);
      for (const b of f.system_blocks) n += count(b.text) + 2;
      for (const b of f.context_blocks) n += count(b.text) + 2;
      return n;
    }) + estimateTools(request.tools, count)
  );
}

export function estimateConversation(
  items: readonly ConversationItem[],
  count: TokenCounter = estimateTokens,
): number {
  let n = 0;
  for (const item of items) n += estimateItem(item, count);
  return n;
}

/** The raw (uncalibrated) count of a whole request. */
export function estimateRequest(
  request: ProviderRequest,
  count: TokenCounter = estimateTokens,
): number {
  return estimateFrame(request, count) + estimateConversation(request.conversation, count);
}

/**
 * Per-model correction factor from reported usage: the ratio of reported input tokens to
 * the raw estimate of the request, smoothed. Clamped so one odd report (a provider that
 * reports nothing useful, a scripted fake) cannot make the budget unsafe: the factor never
 * goes below 0.9 (estimates only shrink a little) nor above 3.
 */
export class TokenCalibration {
  private readonly factors = new Map<string, number>();
  /** Raised when the provider refused a request the count said fit; reports never go below it. */
  private readonly floors = new Map<string, number>();

  factor(modelRef: string | undefined): number {
    return (modelRef && this.factors.get(modelRef)) || 1;
  }

  /** The provider refused a request our count said fits: count more conservatively from now on. */
  tighten(modelRef: string, by = 1.3): void {
    const next = Math.min(3, this.factor(modelRef) * by);
    this.floors.set(modelRef, next);
    this.factors.set(modelRef, next);
  }

  observe(modelRef: string, estimated: number, reported: number): void {
    if (!(estimated > 200) || !(reported > 0)) return;
    const floor = this.floors.get(modelRef) ?? 0.9;
    const ratio = Math.min(3, Math.max(0.9, reported / estimated));
    const prev = this.factors.get(modelRef);
    const next = prev === undefined ? ratio : prev * 0.7 + ratio * 0.3;
    this.factors.set(modelRef, Math.max(floor, next));
  }
}
