// How record bodies (event provenance + payload, transcript entries, message envelopes,
// briefs) are stored: JSON text when small, and a compressed blob when large. Most rows are
// a few hundred bytes of the same key names and enum values, so they are compressed against
// a preset dictionary of typical rows (codec-dictionary.ts), which shrinks them three- to
// four-fold; plain compression gains little on rows this small.
//
// Rows are written with zstd against that dictionary (codec byte 3). One compressor keeps the
// dictionary loaded across rows, so a row costs some 7 µs; deflate (codec byte 1, what rows
// were written with before) applied the 7.5 KB dictionary again for every row and cost 25-30
// µs a row, a turn's largest single cost in the store. Deflate rows still read back; deflate
// is also what a Node.js without zstd dictionaries writes.
//
// An admitted message's two rows (its envelope and its `message_admitted` event) take a
// cheaper codec on the admission path: their known phrases replaced by two-byte codes
// (codec-phrases.ts), a few µs a row, and as small.
//
// A blob's first byte names its codec; decoding never guesses. Text rows stay readable with
// the sqlite3 shell (`json_extract` works on them); blobs need `holon` to read. Code that
// reads a body must go through `decodeBody`, never `JSON.parse` the column.
import * as zlib from "node:zlib";
import {
  constants,
  createDeflateRaw,
  createInflateRaw,
  deflateRawSync,
  inflateRawSync,
} from "node:zlib";
import { DICTIONARY_V1 } from "./codec-dictionary.ts";
import { PHRASES_V1 } from "./codec-phrases.ts";

/**
 * Codec byte 1: raw deflate with an 8 KB window against DICTIONARY_V1. Never reuse or
 * renumber a codec byte. The small window and hash table keep each call's allocations to
 * some 40 KB (the defaults take a quarter of a megabyte, for rows of a few hundred bytes).
 */
const DEFLATE_DICT_V1 = 1;
const dictV1 = Buffer.from(DICTIONARY_V1, "utf8");
const DEFLATE = { level: 6, windowBits: 13, memLevel: 4, chunkSize: 2048, dictionary: dictV1 };
const INFLATE = { windowBits: 13, chunkSize: 4096, dictionary: dictV1 };

/**
 * Bodies shorter than this stay text. Even rows of 60-200 bytes (a state change, a round
 * preview) shrink to a third against the dictionary, and a turn writes several of them.
 */
export const COMPRESS_FROM_BYTES = 64;

export type StoredBody = string | Uint8Array;

/**
 * Bodies encoded since the process started: how many were compressed, and the bytes they
 * stored (text or blob). Plain counters for the SQLite-only cost budgets (test/perf-budget*).
 */
export const codecCounts = { encoded: 0, compressed: 0, phrased: 0, storedBytes: 0 };

/** Encode JSON text for storage: the text itself, or a smaller compressed blob. */
export function encodeText(json: string): StoredBody {
  codecCounts.encoded++;
  if (json.length < COMPRESS_FROM_BYTES) {
    codecCounts.storedBytes += json.length;
    return json;
  }
  codecCounts.compressed++;
  const input = Buffer.from(json, "utf8");
  const zstd = zstdWriter();
  const packed = zstd ? zstdPack(zstd, input) : null;
  const codec = packed ? ZSTD_DICT_V1 : DEFLATE_DICT_V1;
  const body = packed ?? deflateDict(input);
  if (body.length + 1 >= input.length) {
    codecCounts.storedBytes += input.length;
    return json;
  }
  const out = new Uint8Array(body.length + 1);
  out[0] = codec;
  out.set(body, 1);
  codecCounts.storedBytes += out.length;
  return out;
}

/**
 * Codec byte 3: a zstd frame against DICTIONARY_V1 (as raw content), without the frame's
 * four magic bytes (the codec byte says what it is), no checksum and no dictionary id. Never
 * reuse or renumber it. Level 4 and an 8 KB window: on the rows a busy host writes this stores
 * 0.26 of the JSON text where deflate stored 0.24, in a quarter of the time.
 */
const ZSTD_DICT_V1 = 3;
const ZSTD_MAGIC = Uint8Array.of(0x28, 0xb5, 0x2f, 0xfd);
type ZstdEngine = {
  engine: { errored?: unknown; destroyed?: boolean; on(e: "error", f: () => void): unknown };
  handle: ZlibHandle;
  state: Uint32Array;
  out: Buffer;
};
type ZstdFactory = (opts: {
  params?: Record<number, number>;
  dictionary?: Buffer;
}) => ZstdEngine["engine"];

/** A zstd stream of this Node.js with the dictionary loaded, or null where Node lacks one. */
function zstdEngine(kind: "compress" | "decompress"): ZstdEngine | null {
  const z = zlib as unknown as Record<string, unknown>;
  const create = z[kind === "compress" ? "createZstdCompress" : "createZstdDecompress"];
  const c = constants as unknown as Record<string, number | undefined>;
  if (typeof create !== "function" || c.ZSTD_e_end === undefined) return null;
  const params =
    kind === "compress"
      ? {
          [c.ZSTD_c_compressionLevel!]: 4,
          [c.ZSTD_c_windowLog!]: 13,
          [c.ZSTD_c_checksumFlag!]: 0,
          [c.ZSTD_c_dictIDFlag!]: 0,
        }
      : {};
  const engine = (create as ZstdFactory)({ params, dictionary: dictV1 });
  // A damaged row destroys the stream, which then emits 'error': it is thrown by the caller.
  engine.on("error", () => {});
  const e = engine as unknown as { _handle?: Partial<ZlibHandle>; _writeState?: unknown };
  const handle = e._handle;
  const state = e._writeState;
  if (typeof handle?.writeSync !== "function" || !(state instanceof Uint32Array)) return null;
  return { engine, handle: handle as ZlibHandle, state, out: Buffer.allocUnsafe(16 * 1024) };
}

/**
 * Drive a zstd stream over `input` to the end of one frame; the output is a view of the
 * engine's buffer (valid until its next use) when it fits, else a new buffer.
 */
function zstdRun(z: ZstdEngine, input: Uint8Array): Buffer {
  const parts: Buffer[] = [];
  let inOff = 0;
  let inLen = input.length;
  for (;;) {
    z.handle.writeSync(constants.ZSTD_e_end, input, inOff, inLen, z.out, 0, z.out.length);
    if (z.engine.errored || z.engine.destroyed) {
      throw z.engine.errored ?? new Error("stored body could not be decompressed");
    }
    const availOut = z.state[0]!;
    const availIn = z.state[1]!;
    const chunk = z.out.subarray(0, z.out.length - availOut);
    if (availOut !== 0 && parts.length === 0) return chunk;
    parts.push(Buffer.from(chunk));
    if (availOut !== 0) return Buffer.concat(parts);
    inOff += inLen - availIn;
    inLen = availIn;
  }
}

/**
 * One compressor for every row, its dictionary loaded once: a frame ended with ZSTD_e_end
 * leaves the stream ready for the next frame with the same dictionary, so nothing is reset
 * between rows (each frame still decodes on its own). Checked once on a row of the
 * dictionary, which must shrink to almost nothing: a Node.js that ignored the dictionary
 * would write rows that read back only without it.
 */
let zstdOut: ZstdEngine | null | undefined;
function zstdWriter(): ZstdEngine | null {
  if (zstdOut !== undefined) return zstdOut;
  zstdOut = null;
  try {
    const w = zstdEngine("compress");
    if (!w) return null;
    const probe = DICTIONARY_V1.slice(-600);
    const frame = zstdRun(w, Buffer.from(probe, "utf8"));
    if (frame.length > 60 || zstdUnpack(Buffer.from(frame.subarray(4))) !== probe) return null;
    zstdOut = w;
  } catch {
    zstdOut = null;
  }
  return zstdOut;
}

/** The stored form of a zstd row (its frame less the magic), or null: deflate it instead. */
function zstdPack(w: ZstdEngine, input: Uint8Array): Uint8Array | null {
  try {
    return zstdRun(w, input).subarray(ZSTD_MAGIC.length);
  } catch {
    zstdOut = undefined; // this stream is closed; the next row makes another
    return null;
  }
}

/** One decompressor for every read, as for inflate; a damaged row closes it (see there). */
let zstdIn: (ZstdEngine & { input: Buffer }) | null | undefined;
function zstdUnpack(stored: Uint8Array): string {
  if (zstdIn === undefined) {
    const r = zstdEngine("decompress");
    zstdIn = r && { ...r, input: Buffer.allocUnsafe(4096) };
  }
  if (zstdIn === null) {
    throw new Error(
      "stored body is zstd-compressed (codec 3) and this Node.js has no zstd with dictionaries; run Node.js 24",
    );
  }
  const r = zstdIn;
  const need = stored.length + ZSTD_MAGIC.length;
  if (r.input.length < need) r.input = Buffer.allocUnsafe(Math.max(need, 2 * r.input.length));
  r.input.set(ZSTD_MAGIC, 0);
  r.input.set(stored, ZSTD_MAGIC.length);
  try {
    return zstdRun(r, r.input.subarray(0, need)).toString("utf8");
  } catch (err) {
    zstdIn = undefined;
    throw err;
  }
}

/**
 * One deflate handle for every row. `deflateRawSync` builds a new zlib stream per call (a
 * JavaScript Transform, a native handle, 40 KB of zlib state), which cost about as much as
 * compressing the row; here one handle is reset after each row instead (zlib's own reset,
 * which applies the dictionary again). The output is byte for byte what `deflateRawSync`
 * makes with the same options (test/store-codec.test.ts). The handle is driven through
 * the internals `deflateRawSync` itself uses (`_handle.writeSync`, `_writeState`); where
 * they are missing this falls back to `deflateRawSync`.
 */
type ZlibHandle = {
  writeSync(
    flush: number,
    input: Uint8Array,
    inOff: number,
    inLen: number,
    out: Uint8Array,
    outOff: number,
    outLen: number,
  ): void;
  reset(): void;
};
let reused: { handle: ZlibHandle; state: Uint32Array; out: Buffer } | null | undefined;

function reusedDeflate(): typeof reused {
  if (reused !== undefined) return reused;
  const engine = createDeflateRaw(DEFLATE) as unknown as {
    _handle?: Partial<ZlibHandle>;
    _writeState?: unknown;
  };
  const handle = engine._handle;
  const state = engine._writeState;
  reused =
    typeof handle?.writeSync === "function" &&
    typeof handle.reset === "function" &&
    state instanceof Uint32Array
      ? { handle: handle as ZlibHandle, state, out: Buffer.allocUnsafe(16 * 1024) }
      : null;
  return reused;
}

/**
 * One inflate handle for every read, for the same reason: `inflateRawSync` builds a zlib
 * stream per row, and its native state is freed only when V8 collects it, which leaves the
 * C heap fragmented. Under a busy host reading thousands of rows a minute that heap rose in
 * steps (20 to 30 MB and more in a one-hour soak); one reset handle keeps it flat. A row that
 * does not inflate (a damaged blob) closes the handle: the error is thrown as
 * `inflateRawSync` throws it, and the next read builds a new handle.
 */
let inflater: { engine: ReturnType<typeof createInflateRaw>; out: Buffer } | null | undefined;

function reusedInflate(): { handle: ZlibHandle; state: Uint32Array; out: Buffer } | null {
  if (inflater === undefined) {
    const engine = createInflateRaw(INFLATE);
    // A damaged row destroys the stream, which then emits 'error': it is thrown below.
    engine.on("error", () => {});
    inflater = { engine, out: Buffer.allocUnsafe(16 * 1024) };
  }
  if (inflater === null) return null;
  const e = inflater.engine as unknown as { _handle?: Partial<ZlibHandle>; _writeState?: unknown };
  const handle = e._handle;
  const state = e._writeState;
  if (
    typeof handle?.writeSync !== "function" ||
    typeof handle.reset !== "function" ||
    !(state instanceof Uint32Array)
  ) {
    inflater = null; // internals missing: inflateRawSync from now on
    return null;
  }
  return { handle: handle as ZlibHandle, state, out: inflater.out };
}

function inflateDict(blob: Uint8Array): string {
  const r = reusedInflate();
  if (!r) return inflateRawSync(blob, INFLATE).toString("utf8");
  const engine = inflater!.engine;
  const parts: Buffer[] = [];
  let inOff = 0;
  let inLen = blob.length;
  for (;;) {
    r.handle.writeSync(constants.Z_FINISH, blob, inOff, inLen, r.out, 0, r.out.length);
    if (engine.errored || engine.destroyed) {
      inflater = undefined; // this handle is closed; the next read makes another
      throw engine.errored ?? new Error("stored body could not be inflated");
    }
    const availOut = r.state[0]!;
    const availIn = r.state[1]!;
    parts.push(Buffer.from(r.out.subarray(0, r.out.length - availOut)));
    if (availOut !== 0) break;
    inOff += inLen - availIn;
    inLen = availIn;
  }
  r.handle.reset();
  return (parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString("utf8");
}

function deflateDict(input: Buffer): Buffer {
  const r = reusedDeflate();
  if (!r) return deflateRawSync(input, DEFLATE);
  const parts: Buffer[] = [];
  let inOff = 0;
  let inLen = input.length;
  try {
    for (;;) {
      r.handle.writeSync(constants.Z_FINISH, input, inOff, inLen, r.out, 0, r.out.length);
      const availOut = r.state[0]!;
      const availIn = r.state[1]!;
      parts.push(Buffer.from(r.out.subarray(0, r.out.length - availOut)));
      if (availOut !== 0) break; // the stream finished within the output buffer
      inOff += inLen - availIn;
      inLen = availIn;
    }
  } finally {
    r.handle.reset();
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

export function encodeBody(value: unknown): StoredBody {
  return encodeText(JSON.stringify(value));
}

/**
 * Codec byte 2: UTF-8 JSON text with the phrases of PHRASES_V1 replaced by 0x01 and the
 * phrase's index + 0x20. JSON text never holds a raw control byte (JSON.stringify escapes
 * them), so the marker cannot be confused with content. Never reuse or renumber it.
 */
const PHRASES_V1_CODEC = 2;
const PHRASE_MARK = "\x01";
/** Longer rows carry free text, which deflate shrinks and phrases do not: they go to encodeText. */
export const PHRASE_UP_TO_CHARS = 1024;
let phraseFind: RegExp | undefined;
let phraseCode: Map<string, string> | undefined;

/**
 * Encode a row of an admitted message (its envelope, its `message_admitted` event body):
 * phrase codes when the row is of the usual size, encodeText for a long one.
 */
export function encodeMessageBody(value: unknown): StoredBody {
  const json = JSON.stringify(value);
  if (json.length < COMPRESS_FROM_BYTES || json.length > PHRASE_UP_TO_CHARS) {
    return encodeText(json);
  }
  if (json.includes(PHRASE_MARK)) return encodeText(json); // never for JSON.stringify's text
  if (!phraseFind) {
    // Longest first: at each position the alternation takes the first phrase that matches.
    const byLength = PHRASES_V1.map((p, i) => [p, i] as const).sort(
      (a, b) => b[0].length - a[0].length,
    );
    phraseFind = new RegExp(
      byLength.map(([p]) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"),
      "g",
    );
    phraseCode = new Map(
      byLength.map(([p, i]) => [p, PHRASE_MARK + String.fromCharCode(0x20 + i)]),
    );
  }
  const codes = phraseCode!;
  const coded = json.replace(phraseFind, (m) => codes.get(m)!);
  codecCounts.encoded++;
  codecCounts.phrased++;
  const out = Buffer.allocUnsafe(Buffer.byteLength(coded) + 1);
  out[0] = PHRASES_V1_CODEC;
  out.write(coded, 1, "utf8");
  codecCounts.storedBytes += out.length;
  return out;
}

function unphrase(coded: string): string {
  return coded.replace(/\x01([\x20-\x7e])/g, (_, c: string) => {
    const phrase = PHRASES_V1[c.charCodeAt(0) - 0x20];
    if (phrase === undefined) throw new Error("stored body has an unknown phrase code");
    return phrase;
  });
}

/** The JSON text of a stored body. */
export function bodyText(stored: unknown): string {
  if (typeof stored === "string") return stored;
  if (stored instanceof Uint8Array) {
    if (stored[0] === DEFLATE_DICT_V1) {
      return inflateDict(stored.subarray(1));
    }
    if (stored[0] === ZSTD_DICT_V1) return zstdUnpack(stored.subarray(1));
    if (stored[0] === PHRASES_V1_CODEC) {
      return unphrase(
        Buffer.from(stored.buffer, stored.byteOffset + 1, stored.length - 1).toString("utf8"),
      );
    }
    throw new Error(`stored body has unknown codec ${stored[0]}`);
  }
  throw new Error(`stored body is neither text nor blob (${typeof stored})`);
}

export function decodeBody(stored: unknown): unknown {
  return JSON.parse(bodyText(stored));
}
