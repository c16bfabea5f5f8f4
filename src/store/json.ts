// Rows hold JSON documents; reading one back validates it against its schema.
import type { z } from "zod";

export function readRow<S extends z.ZodType>(schema: S, text: string, what: string): z.infer<S> {
  const parsed = schema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new Error(`stored ${what} does not match its schema: ${parsed.error.message}`);
  }
  return parsed.data;
}
