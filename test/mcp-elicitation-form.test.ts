// The form rules of an MCP elicitation, table-driven: which requests become an ask (the caps
// beyond the SDK's shape check) and which answers fit the requested schema.
import { describe, expect, it } from "vitest";
import { checkAnswer, refuseRequest, type RequestedSchema } from "../src/mcp/elicitation.ts";

const form: RequestedSchema = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 2, maxLength: 10 },
    mail: { type: "string", format: "email" },
    site: { type: "string", format: "uri" },
    born: { type: "string", format: "date" },
    age: { type: "integer", minimum: 0, maximum: 150 },
    score: { type: "number" },
    ok: { type: "boolean" },
    color: { type: "string", enum: ["red", "blue"] },
    hero: { type: "string", oneOf: [{ const: "h1", title: "Superman" }] },
    tools: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, maxItems: 2 },
    fish: { type: "array", items: { anyOf: [{ const: "f1", title: "Tuna" }] }, minItems: 1 },
  },
  required: ["name"],
};

describe("answers checked against the requested form", () => {
  const cases: [string, unknown, string[]][] = [
    ["a minimal answer", { name: "Ada" }, []],
    [
      "every field well filled",
      {
        name: "Ada",
        mail: "ada@example.org",
        site: "https://ada.example",
        born: "1815-12-10",
        age: 36,
        score: 9.5,
        ok: false,
        color: "blue",
        hero: "h1",
        tools: ["a", "c"],
        fish: ["f1"],
      },
      [],
    ],
    ["not an object", ["Ada"], ["the answer is not a JSON object"]],
    ["null", null, ["the answer is not a JSON object"]],
    ["required missing", { ok: true }, ["name: required"]],
    ["unknown field", { name: "Ada", shoe: 1 }, ["shoe: not a field of the form"]],
    ["too short", { name: "A" }, ["name: at least 2 characters"]],
    ["too long", { name: "Ada Lovelace!" }, ["name: at most 10 characters"]],
    ["bad email", { name: "Ada", mail: "ada" }, ["mail: not a valid email"]],
    ["bad uri", { name: "Ada", site: "not a uri" }, ["site: not a valid uri"]],
    ["bad date", { name: "Ada", born: "10/12/1815" }, ["born: not a valid date"]],
    ["fraction for an integer", { name: "Ada", age: 3.5 }, ["age: expected a whole number"]],
    ["over the maximum", { name: "Ada", age: 200 }, ["age: at most 150"]],
    ["string for a number", { name: "Ada", score: "9" }, ["score: expected a number"]],
    ["string for a boolean", { name: "Ada", ok: "yes" }, ["ok: expected true or false"]],
    ["not a choice", { name: "Ada", color: "green" }, ["color: one of red, blue"]],
    ["not a titled choice", { name: "Ada", hero: "Superman" }, ["hero: one of h1"]],
    ["a choice twice", { name: "Ada", tools: ["a", "a"] }, ["tools: a choice is listed twice"]],
    ["too many choices", { name: "Ada", tools: ["a", "b", "c"] }, ["tools: choose at most 2"]],
    ["too few choices", { name: "Ada", fish: [] }, ["fish: choose at least 1"]],
    ["a list of numbers", { name: "Ada", tools: [1] }, ["tools: expected a list of strings"]],
  ];
  it.each(cases)("%s", (_what, answer, problems) => {
    expect(checkAnswer(form, answer)).toEqual(problems);
  });
});

describe("requests refused before they become an ask", () => {
  const one = { type: "object" as const, properties: { a: { type: "string" } } };
  const many = (n: number) => ({
    type: "object" as const,
    properties: Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`f${i}`, { type: "string" }]),
    ),
  });
  const cases: [string, string, RequestedSchema, RegExp | null][] = [
    ["a plain form", "Your name?", one, null],
    ["a long message", "x".repeat(4_001), one, /message is longer/],
    ["no fields", "?", { type: "object", properties: {} }, /asks for nothing/],
    ["too many fields", "?", many(33), /more than 32 fields/],
    ["an odd field name", "?", { type: "object", properties: { "a b": {} } }, /not allowed/],
    ["required but absent", "?", { ...one, required: ["b"] }, /not in the schema/],
    [
      "too many choices",
      "?",
      {
        type: "object",
        properties: { c: { type: "string", enum: Array.from({ length: 101 }, (_, i) => `${i}`) } },
      },
      /more than 100 choices/,
    ],
    [
      "a huge schema",
      "?",
      { type: "object", properties: { a: { type: "string", description: "d".repeat(20_000) } } },
      /larger than 16000/,
    ],
  ];
  it.each(cases)("%s", (_what, message, schema, refused) => {
    const why = refuseRequest(message, schema);
    if (refused === null) expect(why).toBeNull();
    else expect(why).toMatch(refused);
  });
});
