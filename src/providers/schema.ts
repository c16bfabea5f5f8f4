// Tool schema emission (spec: "Provider Tool Schema Contract").
//
// A tool's source schema is the honest JSON Schema of its zod argument type (optional
// fields stay optional). Providers get an emitted copy:
// - relaxed (runtime default): `$schema` dropped, every object schema closed with
//   `additionalProperties: false` (records keep their value schema), sent with `strict: false`
// - strict: additionally every property required, optional ones made nullable (enums gain
//   `null`), `oneOf` turned into `anyOf`, and keywords outside the OpenAI strict subset removed
import { z } from "zod";
import type { SchemaMode } from "./model.ts";

export type JsonSchema = Record<string, unknown>;

/** Source JSON Schema of a zod argument type (input side: defaults make fields optional). */
export function sourceSchema(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
}

/** Keywords a strict schema may carry. Everything else is removed by strict emission. */
const STRICT_KEYWORDS: ReadonlySet<string> = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "$ref",
  "$defs",
  "definitions",
  "description",
  "title",
]);

/** Keywords whose value is a map of name → subschema. */
const SCHEMA_MAPS = ["properties", "$defs", "definitions", "patternProperties"] as const;
/** Keywords whose value is one subschema. */
const SCHEMA_SINGLE = [
  "items",
  "additionalProperties",
  "not",
  "if",
  "then",
  "else",
  "propertyNames",
  "contains",
] as const;
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LISTS = ["anyOf", "oneOf", "allOf", "prefixItems"] as const;

function isObj(v: unknown): v is JsonSchema {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function typesOf(s: JsonSchema): string[] {
  const t = s["type"];
  if (typeof t === "string") return [t];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === "string");
  return [];
}

function isObjectSchema(s: JsonSchema): boolean {
  return typesOf(s).includes("object") || isObj(s["properties"]);
}

function isNullable(s: JsonSchema): boolean {
  if (typesOf(s).includes("null")) return true;
  if (s["const"] === null) return true;
  const any = s["anyOf"];
  return Array.isArray(any) && any.some((b) => isObj(b) && isNullable(b));
}

/** Makes a schema accept `null` as well (in place when it can, else by wrapping). */
function makeNullable(s: JsonSchema): JsonSchema {
  if (isNullable(s)) return s;
  const types = typesOf(s);
  if (types.length > 0 && !("anyOf" in s) && !("$ref" in s)) {
    const out: JsonSchema = { ...s, type: [...types, "null"] };
    if (Array.isArray(s["enum"])) out["enum"] = [...(s["enum"] as unknown[]), null];
    if ("const" in s) {
      // `const` plus null cannot share one node
      const { description, ...rest } = out;
      const body: JsonSchema = { ...rest, type: types.length === 1 ? types[0] : types };
      return {
        ...(description === undefined ? {} : { description }),
        anyOf: [body, { type: "null" }],
      };
    }
    return out;
  }
  if (Array.isArray(s["anyOf"]))
    return { ...s, anyOf: [...(s["anyOf"] as unknown[]), { type: "null" }] };
  const { description, ...rest } = s;
  return { ...(description === undefined ? {} : { description }), anyOf: [rest, { type: "null" }] };
}

function emitNode(node: unknown, mode: SchemaMode): unknown {
  if (!isObj(node)) return node;
  let s: JsonSchema = { ...node };
  delete s["$schema"];

  if (mode === "strict" && Array.isArray(s["oneOf"]) && !("anyOf" in s)) {
    s["anyOf"] = s["oneOf"];
    delete s["oneOf"];
  }

  for (const key of SCHEMA_MAPS) {
    const map = s[key];
    if (isObj(map)) {
      s[key] = Object.fromEntries(Object.entries(map).map(([k, v]) => [k, emitNode(v, mode)]));
    }
  }
  for (const key of SCHEMA_SINGLE) {
    if (isObj(s[key])) s[key] = emitNode(s[key], mode);
  }
  for (const key of SCHEMA_LISTS) {
    const list = s[key];
    if (Array.isArray(list)) s[key] = list.map((v) => emitNode(v, mode));
  }

  if (isObjectSchema(s)) {
    const props = isObj(s["properties"]) ? (s["properties"] as JsonSchema) : undefined;
    const isRecord = isObj(s["additionalProperties"]) && props === undefined;
    if (!isRecord) s["additionalProperties"] = false;
    if (mode === "strict") {
      if (props === undefined && !isRecord) s["properties"] = {};
      if (props !== undefined) {
        const required = new Set(Array.isArray(s["required"]) ? (s["required"] as string[]) : []);
        const next: JsonSchema = {};
        for (const [name, sub] of Object.entries(props)) {
          next[name] = required.has(name) || !isObj(sub) ? sub : makeNullable(sub);
        }
        s["properties"] = next;
        s["required"] = Object.keys(next);
      } else if (!isRecord) {
        s["required"] = [];
      }
    }
  }

  if (mode === "strict") {
    s = Object.fromEntries(
      Object.entries(s).filter(([k]) => STRICT_KEYWORDS.has(k) || keepForChecker(k)),
    );
  }
  return s;
}

/**
 * Keywords strict emission cannot rewrite away (they change meaning). They are kept so
 * that `assertOpenAiStrictCompatible` reports them instead of silently widening the schema.
 */
function keepForChecker(key: string): boolean {
  return (
    key === "allOf" ||
    key === "not" ||
    key === "if" ||
    key === "then" ||
    key === "else" ||
    key === "patternProperties"
  );
}

const emitted = {
  relaxed: new WeakMap<object, JsonSchema>(),
  strict: new WeakMap<object, JsonSchema>(),
};

/**
 * Emits the provider JSON Schema of a tool's source schema. Memoized per source object, since
 * every provider round of a turn sends the same tools: treat the result as read-only.
 */
export function emitToolSchema(source: JsonSchema, mode: SchemaMode = "relaxed"): JsonSchema {
  const cache = emitted[mode];
  let schema = cache.get(source);
  if (schema === undefined) {
    const out = emitNode(source, mode);
    schema = isObj(out) ? out : { type: "object", properties: {}, additionalProperties: false };
    cache.set(source, schema);
  }
  return schema;
}

/** Emits straight from a zod argument type. */
export function emitZodToolSchema(schema: z.ZodType, mode: SchemaMode = "relaxed"): JsonSchema {
  return emitToolSchema(sourceSchema(schema), mode);
}

// ---------------------------------------------------------------------------
// Strict compatibility checker

const MAX_DEPTH = 10;

/** Lists every way `schema` breaks the OpenAI strict-mode subset; empty when compatible. */
export function checkOpenAiStrictCompatible(schema: JsonSchema): string[] {
  const problems: string[] = [];
  if (!isObj(schema) || !typesOf(schema).includes("object") || "anyOf" in schema) {
    problems.push("$: root must be a plain object schema (type: object, no anyOf)");
  }
  const visit = (node: unknown, path: string, depth: number): void => {
    if (!isObj(node)) {
      if (typeof node !== "boolean") problems.push(`${path}: schema must be an object`);
      else problems.push(`${path}: boolean schemas are not supported`);
      return;
    }
    if (depth > MAX_DEPTH) problems.push(`${path}: nesting deeper than ${MAX_DEPTH}`);
    for (const key of Object.keys(node)) {
      if (!STRICT_KEYWORDS.has(key)) problems.push(`${path}: unsupported keyword "${key}"`);
    }
    const types = typesOf(node);
    const hasShape =
      types.length > 0 || "anyOf" in node || "$ref" in node || "enum" in node || "const" in node;
    if (!hasShape) problems.push(`${path}: schema has no type`);

    if (isObjectSchema(node)) {
      if (node["additionalProperties"] !== false) {
        problems.push(
          isObj(node["additionalProperties"])
            ? `${path}: records (additionalProperties with a schema) are not supported`
            : `${path}: object must set additionalProperties: false`,
        );
      }
      const props = isObj(node["properties"]) ? node["properties"] : undefined;
      if (props === undefined) problems.push(`${path}: object must list properties`);
      const required = Array.isArray(node["required"]) ? (node["required"] as unknown[]) : [];
      for (const name of Object.keys(props ?? {})) {
        if (!required.includes(name))
          problems.push(`${path}.${name}: property must be required (make it nullable instead)`);
      }
      for (const [name, sub] of Object.entries(props ?? {}))
        visit(sub, `${path}.${name}`, depth + 1);
    }
    if (types.includes("array")) {
      if (node["items"] === undefined) problems.push(`${path}: array must define items`);
      else visit(node["items"], `${path}[]`, depth + 1);
    }
    if (
      Array.isArray(node["enum"]) &&
      types.includes("null") &&
      !(node["enum"] as unknown[]).includes(null)
    ) {
      problems.push(`${path}: nullable enum must include null`);
    }
    if (Array.isArray(node["anyOf"])) {
      (node["anyOf"] as unknown[]).forEach((b, i) => visit(b, `${path}.anyOf[${i}]`, depth + 1));
    }
    for (const defs of ["$defs", "definitions"] as const) {
      const map = node[defs];
      if (isObj(map))
        for (const [name, sub] of Object.entries(map))
          visit(sub, `${path}.${defs}.${name}`, depth + 1);
    }
  };
  visit(schema, "$", 0);
  return problems;
}

/** Throws with every problem listed when `schema` is not OpenAI strict-compatible. */
export function assertOpenAiStrictCompatible(schema: JsonSchema, label = "schema"): void {
  const problems = checkOpenAiStrictCompatible(schema);
  if (problems.length > 0) {
    throw new Error(`${label} is not OpenAI strict-compatible:\n  ${problems.join("\n  ")}`);
  }
}
