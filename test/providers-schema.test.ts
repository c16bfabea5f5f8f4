// Tool schema emission: relaxed (runtime default) and strict, and the strict checker.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  assertOpenAiStrictCompatible,
  checkOpenAiStrictCompatible,
  emitToolSchema,
  emitZodToolSchema,
  sourceSchema,
} from "../src/providers/schema.ts";

const representative = {
  optional_fields: z.object({
    cmd: z.string().describe("command"),
    timeout_ms: z.number().int().optional(),
    shell: z.boolean().optional(),
  }),
  enums: z.object({ mode: z.enum(["fast", "slow"]), level: z.enum(["a", "b"]).optional() }),
  nested: z.object({
    target: z.object({
      path: z.string(),
      range: z.object({ start: z.number(), end: z.number().optional() }).optional(),
    }),
  }),
  arrays: z.object({
    items: z.array(z.object({ id: z.string(), note: z.string().optional() })).min(1),
    tags: z.array(z.string()).optional(),
  }),
  unions: z.object({
    value: z.union([z.string(), z.number()]),
    maybe: z.union([z.string(), z.number()]).optional(),
  }),
  discriminated: z.object({
    action: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("a"), x: z.string() }),
      z.object({ kind: z.literal("b") }),
    ]),
  }),
  nullable_and_defaults: z.object({
    note: z.string().nullable(),
    limit: z.number().default(10),
    email: z.email().optional(),
  }),
  literal_optional: z.object({ op: z.literal("replace").optional() }),
};

describe("relaxed emission", () => {
  it("closes every object and drops $schema, keeping optional fields optional", () => {
    const out = emitZodToolSchema(representative.nested);
    expect(out).toEqual({
      type: "object",
      properties: {
        target: {
          type: "object",
          properties: {
            path: { type: "string" },
            range: {
              type: "object",
              properties: { start: { type: "number" }, end: { type: "number" } },
              required: ["start"],
              additionalProperties: false,
            },
          },
          required: ["path"],
          additionalProperties: false,
        },
      },
      required: ["target"],
      additionalProperties: false,
    });
  });

  it("leaves record value schemas alone", () => {
    const out = emitZodToolSchema(z.object({ env: z.record(z.string(), z.string()) }));
    expect(
      (out["properties"] as Record<string, Record<string, unknown>>)["env"]?.[
        "additionalProperties"
      ],
    ).toEqual({ type: "string" });
  });

  it("does not mutate the source schema", () => {
    const source = sourceSchema(representative.optional_fields);
    const copy = structuredClone(source);
    emitToolSchema(source, "strict");
    expect(source).toEqual(copy);
  });
});

describe("strict emission", () => {
  for (const [name, schema] of Object.entries(representative)) {
    it(`produces an OpenAI strict-compatible schema: ${name}`, () => {
      const out = emitZodToolSchema(schema, "strict");
      expect(checkOpenAiStrictCompatible(out)).toEqual([]);
      expect(() => assertOpenAiStrictCompatible(out, name)).not.toThrow();
    });
  }

  it("makes every property required and optional ones nullable", () => {
    const out = emitZodToolSchema(representative.optional_fields, "strict");
    expect(out).toEqual({
      type: "object",
      properties: {
        cmd: { type: "string", description: "command" },
        timeout_ms: { type: ["integer", "null"] },
        shell: { type: ["boolean", "null"] },
      },
      required: ["cmd", "timeout_ms", "shell"],
      additionalProperties: false,
    });
  });

  it("adds null to the enum of an optional enum field", () => {
    const out = emitZodToolSchema(representative.enums, "strict");
    const props = out["properties"] as Record<string, unknown>;
    expect(props["mode"]).toEqual({ type: "string", enum: ["fast", "slow"] });
    expect(props["level"]).toEqual({ type: ["string", "null"], enum: ["a", "b", null] });
  });

  it("recurses into nested objects and array items, and strips unsupported keywords", () => {
    const out = emitZodToolSchema(representative.arrays, "strict");
    expect(out).toEqual({
      type: "object",
      properties: {
        items: {
          type: "array",
          items: {
            type: "object",
            properties: { id: { type: "string" }, note: { type: ["string", "null"] } },
            required: ["id", "note"],
            additionalProperties: false,
          },
        },
        tags: { type: ["array", "null"], items: { type: "string" } },
      },
      required: ["items", "tags"],
      additionalProperties: false,
    });
    const defaults = JSON.stringify(
      emitZodToolSchema(representative.nullable_and_defaults, "strict"),
    );
    for (const keyword of ['"default"', '"format"', '"pattern"', '"$schema"', '"minimum"'])
      expect(defaults).not.toContain(keyword);
  });

  it("turns oneOf into anyOf", () => {
    const out = JSON.stringify(emitZodToolSchema(representative.discriminated, "strict"));
    expect(out).toContain('"anyOf"');
    expect(out).not.toContain('"oneOf"');
  });
});

describe("strict checker", () => {
  it("reports records, open objects, optional properties, keywords and nullable enums without null", () => {
    expect(
      checkOpenAiStrictCompatible(
        emitZodToolSchema(z.object({ env: z.record(z.string(), z.string()) }), "strict"),
      ),
    ).toContainEqual(expect.stringContaining("records"));
    const problems = checkOpenAiStrictCompatible({
      type: "object",
      properties: {
        a: { type: "string", format: "email" },
        b: { type: "object", properties: { c: { type: "string" } }, required: [] },
        d: { type: ["string", "null"], enum: ["x"] },
        e: { type: "array" },
      },
      required: ["a", "b"],
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        "$: object must set additionalProperties: false",
        '$.a: unsupported keyword "format"',
        "$.b: object must set additionalProperties: false",
        "$.b.c: property must be required (make it nullable instead)",
        "$.d: property must be required (make it nullable instead)",
        "$.d: nullable enum must include null",
        "$.e: array must define items",
      ]),
    );
    expect(() => assertOpenAiStrictCompatible({ type: "string" }, "x")).toThrow(
      /root must be a plain object/,
    );
  });

  it("rejects the relaxed emission of a schema with optional fields", () => {
    expect(
      checkOpenAiStrictCompatible(emitZodToolSchema(representative.optional_fields)),
    ).not.toEqual([]);
  });
});
