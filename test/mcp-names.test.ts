// Pure rules of the MCP client, table-driven: model-facing tool names (sanitized, stable,
// never colliding), server definitions (transports, names, references), and which tool
// schemas are usable.
import { describe, expect, it } from "vitest";
import { nameTools, plainToolName, TOOL_NAME_RE } from "../src/mcp/names.ts";
import {
  definitionDigest,
  expand,
  parseDefinition,
  parseWorkspaceFile,
  redactDefinition,
  referencesOf,
} from "../src/mcp/config.ts";
import { schemaProblem, toListing } from "../src/mcp/catalog.ts";

describe("tool names", () => {
  it.each([
    ["everything", "get-sum", "mcp__everything__get-sum"],
    ["fs", "read_text_file", "mcp__fs__read_text_file"],
    ["my.server", "do thing/now", "mcp__my_server__do_thing_now"],
    ["ü", "ß", "mcp______"],
  ])("%s / %s → %s", (server, tool, name) => {
    expect(plainToolName(server, tool)).toBe(name);
    expect(name).toMatch(TOOL_NAME_RE);
  });

  it("a name too long keeps a prefix and a stable 6-character hash", () => {
    const tool = "a".repeat(80);
    const a = plainToolName("srv", tool);
    expect(a).toMatch(TOOL_NAME_RE);
    expect(a).toHaveLength(64);
    expect(a).toMatch(/_[0-9a-f]{6}$/);
    expect(plainToolName("srv", tool)).toBe(a);
    expect(plainToolName("srv", tool + "b")).not.toBe(a);
  });

  it("tools that collide after cleaning get distinct names, whatever order they come in", () => {
    const pairs = [
      { server: "s", tool: "a.b" },
      { server: "s", tool: "a_b" },
      { server: "s", tool: "a b" },
    ];
    const one = nameTools(pairs);
    const two = nameTools([...pairs].reverse());
    const names = one.map((n) => n.name);
    expect(new Set(names).size).toBe(3);
    for (const n of names) expect(n).toMatch(TOOL_NAME_RE);
    // The tool whose name needed no change keeps it.
    expect(one.find((n) => n.tool === "a_b")!.name).toBe("mcp__s__a_b");
    expect(Object.fromEntries(two.map((n) => [n.tool, n.name]))).toEqual(
      Object.fromEntries(one.map((n) => [n.tool, n.name])),
    );
  });
});

describe("server definitions", () => {
  it.each([
    [{ command: "x" }, null],
    [{ type: "stdio", command: "x", args: ["a"], env: { K: "${V}" } }, null],
    [{ type: "http", url: "https://e.example/mcp", headers: { A: "b" } }, null],
    [{ type: "sse", url: "http://127.0.0.1:9/sse" }, null],
    [{ type: "ws", url: "ws://x" }, /unknown transport/],
    [{ type: "http" }, /url/],
    [{ type: "http", url: "file:///etc/passwd" }, /http/],
    [{ command: "" }, /command/],
    [{ command: "x", bogus: 1 }, /bogus|unrecognized/i],
    ["not an object", /must be an object/],
  ])("%j", (def, problem) => {
    if (problem === null) expect(() => parseDefinition("s", def)).not.toThrow();
    else expect(() => parseDefinition("s", def)).toThrow(problem);
  });

  it("names are checked", () => {
    expect(() => parseDefinition("bad name", { command: "x" })).toThrow(/not allowed/);
    expect(() => parseDefinition("a".repeat(65), { command: "x" })).toThrow(/not allowed/);
  });

  it("references are found, expanded only when allowed, and never shown resolved", () => {
    const def = parseDefinition("s", {
      command: "srv",
      args: ["--token=${credential:tok}"],
      env: { KEY: "${MY_KEY}", LITERAL: "sk-literal" },
    });
    expect(referencesOf(def)).toEqual([
      { kind: "credential", name: "tok" },
      { kind: "env", name: "MY_KEY" },
    ]);
    expect(expand("a ${MY_KEY} b", () => "v", "w")).toBe("a v b");
    expect(() => expand("${MY_KEY}", () => undefined, "server 's' env KEY")).toThrow(
      /references \$\{MY_KEY\}, which is not available/,
    );
    expect(redactDefinition(def)).toMatchObject({ env: { KEY: "${MY_KEY}", LITERAL: "<hidden>" } });
  });

  it("the digest covers the whole definition, in any key order", () => {
    const a = parseDefinition("s", { command: "x", args: ["1"], env: { A: "1", B: "2" } });
    const b = parseDefinition("s", { env: { B: "2", A: "1" }, args: ["1"], command: "x" });
    const c = parseDefinition("s", { command: "x", args: ["2"], env: { A: "1", B: "2" } });
    expect(definitionDigest(a)).toBe(definitionDigest(b));
    expect(definitionDigest(a)).not.toBe(definitionDigest(c));
  });

  it("a workspace file: one bad entry is that entry's error, garbage is the file's", () => {
    const f = parseWorkspaceFile(
      JSON.stringify({ mcpServers: { ok: { command: "x" }, bad: { type: "carrier-pigeon" } } }),
    );
    expect(Object.keys(f.servers)).toEqual(["ok"]);
    expect(f.errors.bad).toMatch(/unknown transport/);
    expect(parseWorkspaceFile("{nope").error).toMatch(/not JSON/);
  });
});

describe("tool schemas", () => {
  it.each([
    [{ type: "object" }, null],
    [{ type: "object", properties: { a: { type: ["string", "null"] } }, required: ["a"] }, null],
    [{ type: "object", properties: { a: { anyOf: [{ type: "string" }, true] } } }, null],
    [{ type: "array" }, /must be "object"/],
    [{ type: "object", properties: { a: { type: 42 } } }, /not a JSON Schema type/],
    [{ type: "object", required: "a" }, /required/],
    [{ type: "object", properties: [] }, /properties is not an object/],
    [null, /not an object/],
  ])("%j", (schema, problem) => {
    const p = schemaProblem(schema);
    if (problem === null) expect(p).toBeNull();
    else expect(p).toMatch(problem);
  });

  it("a listing keeps the good tools, names the bad, and digests only what it kept", () => {
    const now = new Date(0);
    const good = { name: "g", description: "d", inputSchema: { type: "object" } };
    const a = toListing([good, { name: "b", inputSchema: { type: "string" } }, { name: 3 }], now);
    expect(a.tools.map((t) => t.name)).toEqual(["g"]);
    expect(a.rejected.map((r) => r.name)).toEqual(["b", "3"]);
    expect(toListing([good], now).digest).toBe(a.digest);
  });
});
