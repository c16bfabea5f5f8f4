// The store's body codec: rows are written as zstd frames against the dictionary through one
// reused stream, each frame readable on its own (a fresh `zstdDecompressSync` reads it);
// rows earlier versions wrote with deflate (codec byte 1) read as before; every body reads
// back as written.
import { createHash } from "node:crypto";
import { deflateRawSync, zstdDecompressSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { buildEnvelope, provenanceOf } from "../src/agent/admission.ts";
import {
  bodyText,
  encodeMessageBody,
  encodeText,
  COMPRESS_FROM_BYTES,
  PHRASE_UP_TO_CHARS,
} from "../src/store/codec.ts";
import { DICTIONARY_V1 } from "../src/store/codec-dictionary.ts";
import { PHRASES_V1 } from "../src/store/codec-phrases.ts";

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

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
/** A stored zstd row (codec byte 3) read by a fresh decompressor: its frame stands alone. */
function freshZstd(blob: Uint8Array): string {
  const frame = Buffer.concat([ZSTD_MAGIC, blob.subarray(1)]);
  return zstdDecompressSync(frame, { dictionary: dict }).toString("utf8");
}

describe("store body codec", () => {
  const rows = [
    ...Array.from({ length: 50 }, (_, i) => sample(i)),
    DICTIONARY_V1.slice(0, 3000), // mostly dictionary: compresses to almost nothing
    JSON.stringify({ big: "x".repeat(40_000) + DICTIONARY_V1 }), // output over one buffer
    JSON.stringify({ noise: Array.from({ length: 3000 }, (_, i) => (i * 7919) % 997) }),
  ];

  it("rows are zstd frames against the dictionary, each readable alone, and read back", () => {
    let stored = 0;
    let text = 0;
    for (const json of rows) {
      const body = encodeText(json);
      expect(body).toBeInstanceOf(Uint8Array);
      const blob = body as Uint8Array;
      expect(blob[0]).toBe(3);
      expect(freshZstd(blob)).toBe(json);
      expect(bodyText(body)).toBe(json);
      if (json.length < 1000) {
        stored += blob.length;
        text += Buffer.byteLength(json);
      }
    }
    // The dictionary is in use: rows of a few hundred bytes shrink to a fraction.
    expect(stored / text).toBeLessThan(0.4);
  });

  it("rows written with deflate (codec byte 1, earlier versions) read as before", () => {
    for (const json of rows) {
      const blob = Buffer.concat([Buffer.of(1), deflateRawSync(json, V1)]);
      expect(bodyText(blob)).toBe(json);
    }
  });

  it("a damaged zstd row is refused, and reads after it work", () => {
    const blob = encodeText(rows[7]!) as Uint8Array;
    expect(blob[0]).toBe(3);
    expect(() => bodyText(blob.subarray(0, blob.length - 3))).toThrow(/unexpected end of file/);
    expect(bodyText(blob)).toBe(rows[7]);
    const garbled = Uint8Array.from(blob);
    garbled[2] = garbled[2]! ^ 0xff;
    expect(() => bodyText(garbled)).toThrow();
    expect(bodyText(encodeText(rows[3]!))).toBe(rows[3]);
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

describe("the phrase codec of admitted messages", () => {
  const door = (i: number) =>
    [
      {
        agent_id: "main",
        kind: "channel_event",
        origin: { kind: "channel", channel_id: "http" },
        surface: "http_public_enqueue",
        admission: "public_unauthenticated",
      },
      {
        agent_id: "worker-7",
        kind: "webhook_event",
        origin: { kind: "webhook", source: "github", event_type: "push" },
        surface: "http_webhook",
        admission: "external_trigger_capability",
        metadata: { delivery: `d-${i}`, nested: { a: [1, 2, "three"] } },
      },
      {
        agent_id: "main",
        kind: "operator_prompt",
        origin: { kind: "operator" },
        surface: "http_control_prompt",
        admission: "control_authenticated",
        priority: "interject",
      },
      {
        agent_id: "main",
        kind: "task_result",
        origin: { kind: "task", task_id: `task_${i}` },
        surface: "task_rejoin",
        admission: "runtime_owned",
      },
    ][i % 4]!;
  const texts = [
    "hello",
    'quotes " and \\ backslashes, a \u0001 control byte and the marker "\\u0001"',
    "unicode: é ✓ 𝄞 and the phrase channel_event inside a text",
    '","kind":"channel_event" pretending to be a phrase',
  ];

  it("every envelope and its admitted event read back exactly, and are smaller than text", () => {
    for (let i = 0; i < 40; i++) {
      const d = door(i);
      const id = `msg_${(1_000_000 + i).toString(16)}abcdef012345`;
      const envelope = buildEnvelope(
        {
          ...d,
          body:
            i % 5 === 4
              ? { type: "json", value: { text: texts[i % 4], n: i } }
              : { type: "text", text: texts[i % 4]! },
        } as Parameters<typeof buildEnvelope>[0],
        id,
        new Date(Date.UTC(2026, 10, 27, 12, 0, i)).toISOString(),
      );
      const event = [provenanceOf(envelope), { message_id: id, queue_seq: i, kind: d.kind }];
      for (const value of [envelope, event]) {
        const json = JSON.stringify(value);
        const stored = encodeMessageBody(value);
        expect(stored).toBeInstanceOf(Uint8Array);
        expect((stored as Uint8Array)[0]).toBe(2);
        expect((stored as Uint8Array).length).toBeLessThan(json.length / 2);
        expect(bodyText(stored)).toBe(json);
      }
    }
  });

  it("a long row is compressed, a short one stays text", () => {
    const long = { id: "msg_1", body: { type: "text", text: "the build passed; ".repeat(100) } };
    expect(JSON.stringify(long).length).toBeGreaterThan(PHRASE_UP_TO_CHARS);
    const stored = encodeMessageBody(long) as Uint8Array;
    expect(stored[0]).toBe(3);
    expect(bodyText(stored)).toBe(JSON.stringify(long));
    expect(encodeMessageBody({ a: 1 })).toBe('{"a":1}');
  });

  it("the phrase table is frozen: rows written with it must read the same forever", () => {
    // Changing PHRASES_V1 would silently corrupt every stored row that used codec byte 2.
    // A new table is a new codec byte beside this one.
    expect(PHRASES_V1.length).toBe(95);
    expect(createHash("sha256").update(JSON.stringify(PHRASES_V1)).digest("hex")).toBe(
      "0f31e53fd07d63b120812613193a2a01bc82298cdf3aef5969f13400085fbf22",
    );
  });

  it("an unknown codec byte is refused, never guessed", () => {
    expect(() => bodyText(new Uint8Array([9, 1, 2]))).toThrow(/unknown codec 9/);
  });

  it("reads through one reused inflate handle: rows of every size, then a damaged one, then more", () => {
    const rows = Array.from({ length: 300 }, (_, i) =>
      JSON.stringify({ type: "brief_created", n: i, text: "word ".repeat((i * 37) % 9000) }),
    );
    const deflated = (r: string) => Buffer.concat([Buffer.of(1), deflateRawSync(r, V1)]);
    for (const r of rows) expect(bodyText(deflated(r))).toBe(r);
    // A blob cut short fails as inflateRawSync fails; the next read works on a new handle.
    const blob = deflated(rows[250]!);
    expect(() => bodyText(blob.subarray(0, 6))).toThrow(/unexpected end of file/);
    expect(bodyText(blob)).toBe(rows[250]);
    expect(bodyText(deflated(rows[3]!))).toBe(rows[3]);
  });
});
