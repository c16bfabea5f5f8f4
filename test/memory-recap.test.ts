// The turn-local recap and budget, as pure functions: round segmentation, the command-family
// rule (old output previews never reach the recap), errors and handles kept, range merging,
// the recap cap for a turn of any length, and the budget derived from model metadata.
import { describe, expect, it } from "vitest";
import type { ConversationItem } from "../src/providers/model.ts";
import { segment } from "../src/memory/compaction.ts";
import { buildRecap, digestRound, type ToolEvidence } from "../src/memory/recap.ts";
import { contextLimits } from "../src/memory/budget.ts";
import { estimateTokens, isCjk, TokenCalibration, tokenCounterFor } from "../src/memory/tokens.ts";

function round(n: number, cmd: string, output: string): ConversationItem[] {
  return [
    { type: "assistant_text", text: `step ${n}` },
    {
      type: "tool_call",
      call_id: `c${n}`,
      name: "ExecCommand",
      arguments: JSON.stringify({ cmd }),
    },
    { type: "tool_result", call_id: `c${n}`, output, is_error: false },
  ];
}

describe("turn-local recap", () => {
  it("segments a conversation into the incoming message and whole rounds", () => {
    const conv: ConversationItem[] = [
      { type: "user_text", text: "do it" },
      ...round(1, "ls", "a"),
      ...round(2, "pwd", "b"),
      { type: "user_text", text: "operator: also check logs" },
      ...round(3, "cat log", "c"),
    ];
    const { prefix, rounds } = segment(conv);
    expect(prefix).toHaveLength(1);
    expect(rounds.map((r) => r.length)).toEqual([3, 4, 3]);
  });

  it("keeps summaries, errors, hints and handles, never old command output", () => {
    const evidence = new Map<string, ToolEvidence>([
      [
        "c1",
        {
          tool_name: "ExecCommand",
          status: "success",
          summary: "command exited with status 0",
          handles: ["task_42"],
        },
      ],
      [
        "c2",
        {
          tool_name: "ExecCommand",
          status: "error",
          summary: "bad root",
          error_kind: "execution_root_violation",
          error_message: "workdir is outside the execution root",
          recovery_hint: "omit workdir",
          handles: [],
        },
      ],
    ]);
    const d1 = digestRound(1, round(1, "npm test", "SECRET-PREVIEW ".repeat(100)), (id) =>
      evidence.get(id),
    );
    const d2 = digestRound(2, round(2, "npm test --workdir /", "x"), (id) => evidence.get(id));
    const text = buildRecap([d1, d2], 2_000);
    expect(text).toContain("[Runtime-generated turn-local recap");
    expect(text).toContain("Round 1");
    expect(text).toContain("command exited with status 0");
    expect(text).toContain("task_42");
    expect(text).toContain("execution_root_violation");
    expect(text).toContain("omit workdir");
    expect(text).not.toContain("SECRET-PREVIEW");
  });

  it("merges older rounds into ranges and stays under its cap for any length", () => {
    const evidence = (): ToolEvidence => ({
      tool_name: "ExecCommand",
      status: "success",
      summary: "command exited with status 0",
      handles: [],
    });
    for (const n of [10, 300, 5_000]) {
      const digests = Array.from({ length: n }, (_, i) =>
        digestRound(i + 1, round(i + 1, i % 3 ? "npm test" : "git diff", "out"), evidence),
      );
      const cap = 2_400;
      const text = buildRecap(digests, cap);
      expect(estimateTokens(text), `${n} rounds`).toBeLessThanOrEqual(cap);
      if (n > 24) {
        expect(text).toMatch(
          /Rounds 1–\d+: ExecCommand \d+×; ran `npm test` \d+×, `git diff` \d+×/,
        );
        expect(text).toContain(`Round ${n}:`);
      }
    }
    // a tiny cap still yields a valid, bounded recap
    const tiny = buildRecap(
      Array.from({ length: 50 }, (_, i) => digestRound(i + 1, round(i + 1, "ls", "x"), evidence)),
      60,
    );
    expect(tiny).toContain("Rounds 1–50");
  });

  it("derives the budget from the catalog and corrects estimates with reported usage", () => {
    const l = contextLimits("fake/m", {
      context_window_tokens: 16_000,
      runtime_max_output_tokens: 2_000,
    });
    expect(l).toMatchObject({
      window: 16_000,
      output_reserve: 2_000,
      prompt: 14_000,
      recap: 2_400,
    });
    expect(l.soft).toBeGreaterThan(l.target);
    const pct = contextLimits(null, {
      context_window_tokens: 100_000,
      effective_context_window_percent: 50,
    });
    expect(pct.window).toBe(50_000);
    expect(pct.output_reserve).toBe(8_192);
    const unknown = contextLimits(null, {});
    expect(unknown.window).toBe(128_000);
    const explicit = contextLimits(null, {
      context_window_tokens: 10_000,
      prompt_budget_estimated_tokens: 5_000,
    });
    expect(explicit.prompt).toBe(5_000);

    expect(estimateTokens("abcd".repeat(100))).toBe(100);
    expect(estimateTokens("部署密钥")).toBe(4);
    // Long texts: all-ASCII ones are counted from their length; any other character (even
    // the last, or a lone surrogate) takes the per-character count.
    const ascii = "The build passed; ".repeat(40);
    expect(estimateTokens(ascii)).toBe(Math.ceil(ascii.length / 4));
    expect(estimateTokens(ascii + "é")).toBe(Math.ceil(ascii.length / 4 + 1 / 2));
    expect(estimateTokens(ascii + "部")).toBe(Math.ceil(ascii.length / 4 + 1));
    expect(estimateTokens(ascii + "\ud800")).toBe(Math.ceil(ascii.length / 4 + 1 / 2));
    expect(estimateTokens("𝄞" + ascii)).toBe(Math.ceil(ascii.length / 4 + 1 / 2));
    // Mixed texts of every kind, lone surrogates at every place: the same figure as a plain
    // count of every character.
    const reference = (text: string) => {
      let a = 0;
      let c = 0;
      let o = 0;
      for (let i = 0; i < text.length; i++) {
        const x = text.charCodeAt(i);
        if (x < 0x80) a++;
        else if (isCjk(x)) c++;
        else if (x >= 0xd800 && x <= 0xdbff) {
          o++;
          i++;
        } else o++;
      }
      return Math.ceil(a / 4 + c + o / 2);
    };
    const pieces = ["a", "word ", "é", "…", "部", "𝄞", "\ud800", "\udc00", "\n", '{"k":1}'];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let t = 0; t < 300; t++) {
      let text = "";
      const len = 250 + Math.floor(rand() * 400);
      while (text.length < len) text += pieces[Math.floor(rand() * (rand() < 0.8 ? 2 : 10))];
      expect(estimateTokens(text), JSON.stringify(text)).toBe(reference(text));
      expect(estimateTokens(text + "\ud800")).toBe(reference(text + "\ud800"));
    }
    const cal = new TokenCalibration();
    expect(cal.factor("m")).toBe(1);
    cal.observe("m", 1_000, 2_000);
    expect(cal.factor("m")).toBe(2);
    cal.observe("x", 1_000, 10); // a provider reporting nonsense cannot loosen the budget much
    expect(cal.factor("x")).toBe(0.9);
  });
});

describe("token counters", () => {
  it("counts exactly for OpenAI model families and estimates for the rest", () => {
    const exact = tokenCounterFor("openai/gpt-5.4");
    expect(exact).toBe(tokenCounterFor("openrouter/openai/gpt-4o-mini"));
    expect(exact).not.toBe(estimateTokens);
    expect(exact("hello world")).toBe(2);
    expect(tokenCounterFor("anthropic/claude-sonnet-4-6")).toBe(estimateTokens);
    expect(tokenCounterFor("fake/test-model")).toBe(estimateTokens);
    expect(tokenCounterFor(null)).toBe(estimateTokens);
  });
});
