// The shape of one configuration key (what `holon config get/set/unset` accepts). Its own
// module so the sections that contribute keys (retention-config.ts) and the full key schema
// (config-schema.ts) both build on it without importing each other.
import type { z } from "zod";

export type KeyType =
  | "model_ref"
  | "model_ref_list"
  | "boolean"
  | "integer"
  | "string"
  | "enum"
  | "url"
  | "json_object"
  | "string_list";

export type KeyDef = {
  /** Dotted key; `<id>` matches one provider id, `<model_ref>` the rest of the key. */
  key: string;
  type: KeyType;
  default?: unknown;
  description: string;
  env?: string;
  values?: readonly string[];
  /** Never printed in full. */
  secret?: boolean;
  /** Validates the value alone (the whole file is validated again before writing). */
  schema: z.ZodType;
};
