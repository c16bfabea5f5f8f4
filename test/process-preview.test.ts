// Bounded output previews: only head and tail are read, cuts never split a UTF-8 character.
import { afterAll, describe, expect, it } from "vitest";
import { closeSync, openSync, writeFileSync, writeSync, ftruncateSync } from "node:fs";
import { join } from "node:path";
import { readChunk, readPreview, utf8SafeEnd, utf8SafeStart } from "../src/tasks/output-preview.ts";
import { cleanupDirs, tempDir } from "./fixtures/process/util.ts";

afterAll(cleanupDirs);

describe("readPreview", () => {
  it("reads only head and tail of a 100 MB file", () => {
    const root = tempDir();
    const path = join(root, "big.log");
    const size = 100 * 1024 * 1024;
    const fd = openSync(path, "w");
    ftruncateSync(fd, size); // sparse: cheap to make, same size to the reader
    writeSync(fd, "HEAD-START\n", 0, "utf8");
    writeSync(fd, "\nTAIL-END", size - 9, "utf8");
    closeSync(fd);
    const t0 = performance.now();
    const p = readPreview(path, { headBytes: 4096, tailBytes: 4096 });
    const ms = performance.now() - t0;
    expect(p.total_bytes).toBe(size);
    expect(p.truncated).toBe(true);
    expect(p.bytes_read).toBe(8192);
    expect(p.head.startsWith("HEAD-START\n")).toBe(true);
    expect(p.tail.endsWith("\nTAIL-END")).toBe(true);
    expect(Buffer.byteLength(p.head) + Buffer.byteLength(p.tail) + p.omitted_bytes).toBe(size);
    expect(ms).toBeLessThan(1000); // generous: a whole-file read would still be far slower on 2 cores
  });

  it("returns the whole small file as head, and an empty preview for a missing file", () => {
    const root = tempDir();
    const path = join(root, "small.log");
    writeFileSync(path, "abc\n");
    expect(readPreview(path, { headBytes: 2, tailBytes: 2 })).toEqual({
      head: "abc\n",
      tail: "",
      total_bytes: 4,
      truncated: false,
      omitted_bytes: 0,
      bytes_read: 4,
    });
    expect(readPreview(join(root, "none"), { headBytes: 10, tailBytes: 10 })).toMatchObject({
      head: "",
      total_bytes: 0,
      truncated: false,
    });
  });

  it("never splits a multi-byte character at the cut points", () => {
    const root = tempDir();
    const path = join(root, "utf8.log");
    // "é" is 2 bytes, "€" 3 bytes, "😀" 4 bytes
    const text = "aé€😀".repeat(50) + "MIDDLE" + "😀€éa".repeat(50);
    writeFileSync(path, text);
    for (let head = 0; head < 12; head++) {
      for (let tail = 0; tail < 12; tail++) {
        const p = readPreview(path, { headBytes: head, tailBytes: tail });
        expect(p.head).not.toContain("\uFFFD");
        expect(p.tail).not.toContain("\uFFFD");
        expect(text.startsWith(p.head)).toBe(true);
        expect(text.endsWith(p.tail)).toBe(true);
        expect(Buffer.byteLength(p.head)).toBeLessThanOrEqual(head);
        expect(Buffer.byteLength(p.tail)).toBeLessThanOrEqual(tail);
        expect(Buffer.byteLength(p.head) + Buffer.byteLength(p.tail) + p.omitted_bytes).toBe(
          p.total_bytes,
        );
      }
    }
  });

  it("utf8 boundary helpers", () => {
    const euro = Buffer.from("€"); // e2 82 ac
    expect(utf8SafeEnd(Buffer.concat([Buffer.from("a"), euro.subarray(0, 2)]))).toBe(1);
    expect(utf8SafeEnd(Buffer.concat([Buffer.from("a"), euro]))).toBe(4);
    expect(utf8SafeStart(euro.subarray(1))).toBe(2);
    expect(utf8SafeStart(Buffer.from("ab"))).toBe(0);
  });
});

describe("readChunk", () => {
  it("reads incrementally from an offset and holds back a partial character at the end", () => {
    const root = tempDir();
    const path = join(root, "c.log");
    writeFileSync(path, Buffer.concat([Buffer.from("ab"), Buffer.from("€").subarray(0, 1)]));
    const c1 = readChunk(path, 0, 100);
    expect(c1).toEqual({ text: "ab", next_offset: 2, total_bytes: 3, at_end: false });
    writeFileSync(path, "ab€cd");
    const c2 = readChunk(path, c1.next_offset, 4);
    expect(c2).toMatchObject({ text: "€c", next_offset: 6, at_end: false });
    expect(readChunk(path, c2.next_offset, 100)).toMatchObject({
      text: "d",
      next_offset: 7,
      at_end: true,
    });
  });
});
