// Shared HTTP plumbing: JSON error bodies, bounded body reading, validation, auth.
import { timingSafeEqual, createHash } from "node:crypto";
import type { Context } from "hono";
import type { z } from "zod";
import { HolonError } from "../domain/errors.ts";

/** Public, webhook and control bodies are capped at 256 KiB. */
export const MAX_BODY_BYTES = 256 * 1024;

export type AuthMode = "local" | "bearer";

export type AuthState = {
  mode: AuthMode;
  /** The request came from loopback or the Unix socket. */
  local: boolean;
  /** A valid bearer token was presented. */
  token_ok: boolean;
};

export type AppEnv = {
  Variables: { auth: AuthState };
};

export function errorResponse(c: Context, err: HolonError): Response {
  return c.json({ ok: false, error: err.toBody() }, err.status as 400);
}

/** Read the request body (at most MAX_BODY_BYTES) and parse it as JSON. */
export async function readJson(c: Context, opts: { optional?: boolean } = {}): Promise<unknown> {
  const lengthHeader = c.req.header("content-length");
  const declared = Number(lengthHeader ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  if (lengthHeader !== undefined) {
    // Known, bounded length: read it in one go (the cheap path on the node adapter).
    const text = await c.req.text();
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw tooLarge();
    return parseBody(text, opts);
  }
  const body = c.req.raw.body;
  if (!body) {
    if (opts.optional) return {};
    throw new HolonError("invalid_json", "request body is empty; a JSON object is required");
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return parseBody(Buffer.concat(chunks).toString("utf8"), opts);
}

function parseBody(text: string, opts: { optional?: boolean }): unknown {
  if (text.trim() === "") {
    if (opts.optional) return {};
    throw new HolonError("invalid_json", "request body is empty; a JSON object is required");
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HolonError(
      "invalid_json",
      `request body is not valid JSON: ${(err as Error).message}`,
      {
        hint: "send a JSON object with Content-Type: application/json",
      },
    );
  }
}

function tooLarge(): HolonError {
  return new HolonError("payload_too_large", `request body exceeds ${MAX_BODY_BYTES} bytes`, {
    status: 413,
  });
}

/** Validate against a schema, mapping zod issues to stable error kinds. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.join(".") || "(body)";
  if (issue?.code === "unrecognized_keys") {
    const keys = (issue as { keys?: string[] }).keys ?? [];
    throw new HolonError("unknown_field", `unknown field(s): ${keys.join(", ")}`, {
      hint: "remove the fields the endpoint does not accept (see docs/http-api.md)",
    });
  }
  throw new HolonError("invalid_request", `${path}: ${issue?.message ?? "invalid"}`, {
    hint: "see docs/http-api.md for the request shape",
  });
}

export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  // Compare digests so length differences do not leak through timing either.
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

export function bearerOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  return m?.[1]?.trim();
}

export function isLoopback(addr: string | undefined): boolean {
  if (addr === undefined) return true; // Unix socket or in-process request
  return addr === "::1" || addr.startsWith("127.") || addr.startsWith("::ffff:127.");
}

export function unauthorized(required: string): HolonError {
  return new HolonError("unauthorized", `a valid control token is required for ${required}`, {
    status: 401,
    hint: "send Authorization: Bearer <token> (holon reads it from --token, HOLON_CONTROL_TOKEN or control_token)",
  });
}

/** Control routes: in bearer mode a token, always; in local mode, only local callers. */
export function requireControl(c: Context<AppEnv>): void {
  const auth = c.get("auth");
  if (auth.mode === "bearer" ? !auth.token_ok : !auth.local) throw unauthorized("control routes");
}

/** Read routes and public ingress: remote callers in bearer mode need the token. */
export function requireRead(c: Context<AppEnv>): void {
  const auth = c.get("auth");
  if (auth.mode === "bearer" && !auth.local && !auth.token_ok) throw unauthorized("remote access");
}

export function intParam(c: Context, name: string, opts: { min?: number; max?: number } = {}) {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return undefined;
  if (!/^-?\d+$/.test(raw)) {
    throw new HolonError("invalid_request", `query parameter ${name} must be an integer`);
  }
  const n = Number.parseInt(raw, 10);
  if ((opts.min !== undefined && n < opts.min) || (opts.max !== undefined && n > opts.max)) {
    throw new HolonError(
      "invalid_request",
      `query parameter ${name} must be between ${opts.min ?? "-inf"} and ${opts.max ?? "inf"}`,
    );
  }
  return n;
}
