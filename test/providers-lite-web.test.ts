// Headers and Response without undici (src/providers/lite-web.ts): the same operations on
// LiteHeaders and on Node's own Headers give the same result, and a LiteResponse's body
// reads the way a fetch Response's does (once, as text, JSON, bytes, a stream, or a clone).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { LiteHeaders } from "../src/providers/lite-web.ts";
import { providerFetch } from "../src/providers/http-fetch.ts";

type Op = [op: "append" | "set" | "delete", name: string, value?: string];

const cases: { name: string; init?: unknown; ops: Op[] }[] = [
  { name: "names are case-insensitive and lower-cased", ops: [["append", "X-Test", "1"]] },
  {
    name: "append combines values with a comma, set replaces them",
    ops: [
      ["append", "accept", "a"],
      ["append", "Accept", "b"],
      ["append", "x-one", "1"],
      ["set", "X-One", "2"],
    ],
  },
  {
    name: "set-cookie values stay apart when iterated",
    ops: [
      ["append", "set-cookie", "a=1"],
      ["append", "Set-Cookie", "b=2"],
      ["append", "b-header", "x"],
    ],
  },
  {
    name: "delete removes every value",
    ops: [
      ["append", "x-a", "1"],
      ["append", "x-a", "2"],
      ["delete", "X-A"],
    ],
  },
  { name: "values lose surrounding whitespace", ops: [["append", "x-pad", " \t padded \t "]] },
  { name: "a record", init: { "Content-Type": "text/plain", "X-B": "b" }, ops: [] },
  {
    name: "pairs, iteration sorted by name",
    init: [
      ["zeta", "1"],
      ["alpha", "2"],
      ["Alpha", "3"],
    ],
    ops: [],
  },
];

function apply(h: { append: Function; set: Function; delete: Function }, ops: Op[]) {
  for (const [op, name, value] of ops) {
    if (op === "delete") h.delete(name);
    else h[op](name, value);
  }
}

describe("LiteHeaders", () => {
  it.each(cases)("behaves as Node's Headers: $name", ({ init, ops }) => {
    const lite = new LiteHeaders(init as never);
    const node = new Headers(init as never);
    apply(lite, ops);
    apply(node, ops);
    expect([...lite]).toEqual([...node]);
    expect(lite.getSetCookie()).toEqual(node.getSetCookie());
    for (const [name] of node) {
      expect(lite.get(name.toUpperCase())).toBe(node.get(name));
      expect(lite.has(name)).toBe(true);
    }
    expect(lite.get("absent")).toBeNull();
  });

  it("refuses what Node's Headers refuses: a bad name, a value with a line break", () => {
    for (const [name, value] of [
      ["bad name", "x"],
      ["x-ok", "a\r\nInjected: 1"],
      ["x-ok", "a\0"],
    ] as const) {
      expect(() => new Headers([[name, value]])).toThrow(TypeError);
      expect(() => new LiteHeaders([[name, value]])).toThrow(TypeError);
    }
  });

  it("is interchangeable with Node's Headers: each takes the other as its init, and instanceof accepts both", () => {
    const lite = new LiteHeaders({ "x-a": "1" });
    expect([...new Headers(lite as never)]).toEqual([["x-a", "1"]]);
    expect([...new LiteHeaders(new Headers({ "x-b": "2" }))]).toEqual([["x-b", "2"]]);
    expect(new Headers() instanceof LiteHeaders).toBe(true);
    expect({} instanceof LiteHeaders).toBe(false);
    expect(Object.prototype.toString.call(lite)).toBe("[object Headers]");
  });
});

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    if (req.url === "/slow") {
      res.write('{"part":');
      setTimeout(() => res.end('"two"}'), 20);
      return;
    }
    res.end(JSON.stringify({ ok: "\ufeffé" }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

describe("LiteResponse (what providerFetch answers)", () => {
  it("reads its body once, as JSON, and refuses a second read", async () => {
    const res = await providerFetch(`${base}/slow`);
    expect(res.ok).toBe(true);
    expect(res.url).toBe(`${base}/slow`);
    expect(res.bodyUsed).toBe(false);
    expect(await res.json()).toEqual({ part: "two" });
    expect(res.bodyUsed).toBe(true);
    await expect(res.text()).rejects.toThrow(TypeError);
  });

  it("gives the same bytes as a web stream, and to each of two clones", async () => {
    const res = await providerFetch(`${base}/x`);
    const copy = res.clone();
    const chunks: Uint8Array[] = [];
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) chunks.push(c);
    const streamed = Buffer.concat(chunks).toString("utf8");
    expect(JSON.parse(streamed)).toEqual({ ok: "\ufeffé" });
    expect(await copy.text()).toBe(streamed);
    expect(copy.headers.get("content-type")).toBe("application/json");
  });

  it("reads bytes and a blob", async () => {
    const a = await providerFetch(`${base}/x`);
    expect(Buffer.from(await a.arrayBuffer()).toString()).toBe(JSON.stringify({ ok: "\ufeffé" }));
    const b = await providerFetch(`${base}/x`);
    const blob = await b.blob();
    expect(blob.type).toBe("application/json");
    expect(await blob.text()).toBe(JSON.stringify({ ok: "\ufeffé" }));
  });
});
