// Rows hold JSON documents; reading one back validates it against its schema.
import type { z } from "zod";
import { bodyText } from "./codec.ts";

export function readRow<S extends z.ZodType>(schema: S, text: string, what: string): z.infer<S> {
  return parseRow(schema, JSON.parse(text), what);
}

/** A body column as the codec stored it (JSON text or a compressed blob), validated. */
export function readBody<S extends z.ZodType>(
  schema: S,
  stored: unknown,
  what: string,
): z.infer<S> {
  return parseRow(schema, JSON.parse(bodyText(stored)), what);
}

function parseRow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new Error(`stored ${what} does not match its schema: ${parsed.error.message}`);
  }
  return parsed.data;
}
