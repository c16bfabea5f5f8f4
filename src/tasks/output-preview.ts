// Bounded, UTF-8-safe readers for command output files: a head + tail preview and an
// incremental range read. Only the requested bytes are read (positioned reads), so a
// 100 MB log costs the same as a small one.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

export type OutputPreview = {
  /** Leading text (the whole file when it fits in headBytes + tailBytes). */
  head: string;
  /** Trailing text; empty when the file was not truncated. */
  tail: string;
  total_bytes: number;
  /** True when bytes between head and tail were left out. */
  truncated: boolean;
  omitted_bytes: number;
  /** Bytes actually read from the file (never more than headBytes + tailBytes). */
  bytes_read: number;
};

export type OutputChunk = {
  text: string;
  /** Offset to pass next time; stops before an incomplete UTF-8 sequence at the end. */
  next_offset: number;
  total_bytes: number;
  /** True when next_offset reached the current end of the file. */
  at_end: boolean;
};

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got === length ? buf : buf.subarray(0, got);
}

/** Length of the longest prefix of `buf` that does not end inside a UTF-8 sequence. */
export function utf8SafeEnd(buf: Uint8Array): number {
  const n = buf.length;
  // Look back at most 3 bytes for the lead byte of the last sequence.
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const b = buf[i]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return n - i >= need ? n : i;
  }
  return n;
}

/** Index of the first byte of `buf` that is not a UTF-8 continuation byte (at most 3 skipped). */
export function utf8SafeStart(buf: Uint8Array): number {
  let i = 0;
  while (i < 3 && i < buf.length && (buf[i]! & 0xc0) === 0x80) i++;
  return i;
}

function withFile<T>(path: string, fn: (fd: number, size: number) => T, missing: () => T): T {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return missing();
    throw err;
  }
  try {
    return fn(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}

/** Read at most `headBytes` from the start and `tailBytes` from the end of a file. A missing file reads as empty. */
export function readPreview(
  path: string,
  opts: { headBytes: number; tailBytes: number },
): OutputPreview {
  const headBytes = Math.max(0, Math.floor(opts.headBytes));
  const tailBytes = Math.max(0, Math.floor(opts.tailBytes));
  const empty: OutputPreview = {
    head: "",
    tail: "",
    total_bytes: 0,
    truncated: false,
    omitted_bytes: 0,
    bytes_read: 0,
  };
  return withFile(
    path,
    (fd, size) => {
      if (size <= headBytes + tailBytes) {
        const all = readAt(fd, 0, size);
        return {
          head: all.toString("utf8"),
          tail: "",
          total_bytes: size,
          truncated: false,
          omitted_bytes: 0,
          bytes_read: all.length,
        };
      }
      const headBuf = readAt(fd, 0, headBytes);
      const tailBuf = readAt(fd, size - tailBytes, tailBytes);
      const headEnd = utf8SafeEnd(headBuf);
      const tailStart = utf8SafeStart(tailBuf);
      return {
        head: headBuf.subarray(0, headEnd).toString("utf8"),
        tail: tailBuf.subarray(tailStart).toString("utf8"),
        total_bytes: size,
        truncated: true,
        omitted_bytes: size - headEnd - (tailBuf.length - tailStart),
        bytes_read: headBuf.length + tailBuf.length,
      };
    },
    () => empty,
  );
}

/** Read up to `maxBytes` from `offset` (for incremental output); never splits a UTF-8 sequence. */
export function readChunk(path: string, offset: number, maxBytes: number): OutputChunk {
  return withFile(
    path,
    (fd, size) => {
      const start = Math.min(Math.max(0, offset), size);
      const buf = readAt(fd, start, Math.min(maxBytes, size - start));
      // At the very end a trailing partial sequence may still be being written: hold it back.
      const end = utf8SafeEnd(buf);
      const next = start + (end === 0 && buf.length > 0 && buf.length >= 4 ? buf.length : end);
      return {
        text: buf.subarray(0, next - start).toString("utf8"),
        next_offset: next,
        total_bytes: size,
        at_end: next >= size,
      };
    },
    () => ({ text: "", next_offset: 0, total_bytes: 0, at_end: true }),
  );
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
