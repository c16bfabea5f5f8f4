// Texts built to be expensive for whatever reads caller text (the exact tokenizer, a regex):
// about `bytes` UTF-8 bytes each, from a seeded generator so every run sends the same ones.
// Used by test/token-bound.test.ts and bench/liveness.bench.ts.
export function adversarialTexts(seed = 7): Record<string, (bytes: number) => string> {
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  return {
    "one repeated character": (n) => "-".repeat(n),
    base64: (n) =>
      Buffer.from(Array.from({ length: n }, () => rnd() % 256))
        .toString("base64")
        .slice(0, n),
    DNA: (n) => Array.from({ length: n }, () => "ACGT"[rnd() % 4]).join(""),
    "CJK without spaces": (n) =>
      Array.from({ length: Math.floor(n / 3) }, () =>
        String.fromCharCode(0x4e00 + (rnd() % 20000)),
      ).join(""),
    emoji: (n) =>
      Array.from({ length: Math.floor(n / 4) }, () =>
        String.fromCodePoint(0x1f300 + (rnd() % 700)),
      ).join(""),
    // Shaped against backtracking patterns like \s+$ or (a+)+b over caller text.
    "ReDoS-shaped": (n) => " ".repeat(Math.floor(n / 2)) + "a".repeat(Math.floor(n / 2) - 1) + "!",
  };
}
