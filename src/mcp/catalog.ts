// The last `tools/list` of each server definition, kept on disk with its digest, so a turn's
// catalog is built without starting any server and the prompt's cached prefix stays put while
// nothing changed. Entries are keyed by the SHA-256 of the definition: an edited definition
// is a different server until it has been listed. A `tools/list_changed` notification
// replaces the entry; the turn that is running keeps the catalog it started with.
//
// A listed tool whose input schema is not a usable JSON Schema object is left out of the
// catalog and reported (holon mcp list), instead of reaching a provider that would refuse
// the whole request.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { atomicWriteFile } from "../store/files.ts";
import { stableJson } from "../providers/model.ts";

export type ListedTool = {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
};

export type ToolListing = {
  /** SHA-256 of the listed tools (canonical JSON). */
  digest: string;
  listed_at: string;
  tools: ListedTool[];
  /** Tools left out, with why. */
  rejected: { name: string; reason: string }[];
};

const MAX_TOOLS = 500;
const MAX_DESCRIPTION = 4_000;
const MAX_SCHEMA_CHARS = 64 * 1024;
const JSON_TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

/** Why a schema is unusable, or null. Linear in its size. */
export function schemaProblem(schema: unknown): string | null {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema))
    return "inputSchema is not an object";
  const s = schema as Record<string, unknown>;
  if (s.type !== "object") return `inputSchema.type must be "object"`;
  if (JSON.stringify(schema).length > MAX_SCHEMA_CHARS)
    return `inputSchema is larger than ${MAX_SCHEMA_CHARS} characters`;
  const stack: { node: unknown; at: string; depth: number }[] = [
    { node: schema, at: "inputSchema", depth: 0 },
  ];
  while (stack.length) {
    const { node, at, depth } = stack.pop()!;
    if (typeof node === "boolean") continue;
    if (node === null || typeof node !== "object" || Array.isArray(node))
      return `${at} is not a schema`;
    if (depth > 32) return `${at} is nested too deeply`;
    const n = node as Record<string, unknown>;
    const t = n.type;
    if (t !== undefined) {
      const list = Array.isArray(t) ? t : [t];
      if (list.length === 0 || !list.every((x) => typeof x === "string" && JSON_TYPES.has(x)))
        return `${at}.type is not a JSON Schema type`;
    }
    if (n.required !== undefined) {
      if (!Array.isArray(n.required) || !n.required.every((x) => typeof x === "string"))
        return `${at}.required is not a list of names`;
    }
    for (const key of ["properties", "$defs", "definitions", "patternProperties"]) {
      const m = n[key];
      if (m === undefined) continue;
      if (m === null || typeof m !== "object" || Array.isArray(m))
        return `${at}.${key} is not an object`;
      for (const [k, v] of Object.entries(m))
        stack.push({ node: v, at: `${at}.${key}.${k}`, depth: depth + 1 });
    }
    for (const key of ["items", "additionalProperties", "not"]) {
      const v = n[key];
      if (v !== undefined && !Array.isArray(v))
        stack.push({ node: v, at: `${at}.${key}`, depth: depth + 1 });
    }
    for (const key of ["anyOf", "oneOf", "allOf"]) {
      const v = n[key];
      if (v === undefined) continue;
      if (!Array.isArray(v)) return `${at}.${key} is not a list`;
      v.forEach((x, i) => stack.push({ node: x, at: `${at}.${key}[${i}]`, depth: depth + 1 }));
    }
  }
  return null;
}

/** A `tools/list` answer made into a listing: usable tools kept, the rest named with why. */
export function toListing(tools: readonly unknown[], now: Date): ToolListing {
  const kept: ListedTool[] = [];
  const rejected: ToolListing["rejected"] = [];
  const seen = new Set<string>();
  for (const raw of tools.slice(0, MAX_TOOLS)) {
    const t = raw as { name?: unknown; description?: unknown; inputSchema?: unknown };
    if (typeof t.name !== "string" || t.name === "" || t.name.length > 256) {
      rejected.push({ name: String(t.name ?? "").slice(0, 256), reason: "no usable name" });
      continue;
    }
    if (seen.has(t.name)) {
      rejected.push({ name: t.name, reason: "listed twice" });
      continue;
    }
    seen.add(t.name);
    const problem = schemaProblem(t.inputSchema);
    if (problem) {
      rejected.push({ name: t.name, reason: problem });
      continue;
    }
    const schema = { ...(t.inputSchema as Record<string, unknown>) };
    delete schema.$schema;
    kept.push({
      name: t.name,
      description: typeof t.description === "string" ? t.description.slice(0, MAX_DESCRIPTION) : "",
      input_schema: schema,
    });
  }
  if (tools.length > MAX_TOOLS)
    rejected.push({ name: "…", reason: `only the first ${MAX_TOOLS} tools are used` });
  const digest = createHash("sha256").update(stableJson(kept)).digest("hex");
  return { digest, listed_at: now.toISOString(), tools: kept, rejected };
}

/** The listings on disk, one file per definition digest, read once and kept in memory. */
export class ToolListingCache {
  readonly #dir: string;
  readonly #memory = new Map<string, ToolListing | null>();

  constructor(dir: string) {
    this.#dir = dir;
  }

  get(definitionDigest: string): ToolListing | undefined {
    if (!this.#memory.has(definitionDigest)) {
      let value: ToolListing | null = null;
      try {
        value = JSON.parse(readFileSync(join(this.#dir, `${definitionDigest}.json`), "utf8"));
      } catch {
        value = null;
      }
      this.#memory.set(definitionDigest, value);
    }
    return this.#memory.get(definitionDigest) ?? undefined;
  }

  /** Keep a new listing; returns false when it is the same as the one kept. */
  put(definitionDigest: string, listing: ToolListing): boolean {
    const old = this.get(definitionDigest);
    if (old?.digest === listing.digest && old.rejected.length === listing.rejected.length)
      return false;
    this.#memory.set(definitionDigest, listing);
    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    atomicWriteFile(join(this.#dir, `${definitionDigest}.json`), JSON.stringify(listing), {
      fsync: false,
    });
    return true;
  }
}
