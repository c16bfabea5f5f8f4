// The store's body codec: rows compressed with the one reused deflate handle are exactly the
// bytes a fresh `deflateRawSync` makes with the same dictionary (so rows written before and
// after the change read the same way), and every body reads back as written.
import { deflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { bodyText, encodeText, COMPRESS_FROM_BYTES } from "../src/store/codec.ts";
import { DICTIONARY_V1 } from "../src/store/codec-dictionary.ts";

const dict = Buffer.from(DICTIONARY_V1, "utf8");
const V1 = { level: 6, windowBits: 13, memLevel: 4, chunkSize: 2048, dictionary: dict };

function sample(i: number): string {
  const text = "the build passed; ".repeat(1 + (i % 7)) + "é✓".repeat(i % 3);
  return JSON.stringify({
    kind: "assistant_round",
    message_id: `msg_${i}`,
    data: { round: i, text, tool_calls: [], stop_reason: "end_turn" },
  });
}

describe("store body codec", () => {
  it("a reused handle writes exactly what deflateRawSync writes, and every row reads back", () => {
    const rows = [
      ...Array.from({ length: 50 }, (_, i) => sample(i)),
      DICTIONARY_V1.slice(0, 3000), // mostly dictionary: compresses to almost nothing
      JSON.stringify({ big: "x".repeat(40_000) + DICTIONARY_V1 }), // output over one buffer
      JSON.stringify({ noise: Array.from({ length: 3000 }, (_, i) => (i * 7919) % 997) }),
    ];
    for (const json of rows) {
      const stored = encodeText(json);
      expect(stored).toBeInstanceOf(Uint8Array);
      const blob = stored as Uint8Array;
      expect(blob[0]).toBe(1);
      expect(Buffer.from(blob.subarray(1)).equals(deflateRawSync(json, V1))).toBe(true);
      expect(bodyText(stored)).toBe(json);
    }
  });

  it("short or incompressible bodies stay text", () => {
    const short = '{"a":1}';
    expect(short.length).toBeLessThan(COMPRESS_FROM_BYTES);
    expect(encodeText(short)).toBe(short);
    const random = JSON.stringify({
      r: Buffer.from(crypto.getRandomValues(new Uint8Array(60))).toString("base64"),
    });
    const stored = encodeText(random);
    expect(bodyText(stored)).toBe(random);
  });
});
