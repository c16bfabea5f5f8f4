// How one HTTP route is described in `/openapi.json`. The route modules declare their own
// descriptions with it and openapi.ts assembles the document; keeping the shape here lets
// both import it without importing each other.
import type { z } from "zod";

/** Who may call a route (support.ts): anyone, the read rule, or the control rule. */
export type Access = "none" | "read" | "control";

export type Param = { name: string; schema: z.ZodType; description: string };

export type RouteDoc = {
  method: "get" | "post" | "delete";
  /** The Hono path, `:param` style. */
  path: string;
  summary: string;
  access: Access;
  body?: { schema: z.ZodType; optional?: boolean };
  query?: Param[];
  headers?: Param[];
  ok: { status: number; schema: z.ZodType; contentType?: string; description?: string };
};
