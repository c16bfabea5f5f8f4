// Shared HTTP plumbing: JSON error bodies, bounded body reading, validation, auth.
import { timingSafeEqual, createHash } from "node:crypto";
import type { Context } from "hono";
import type { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { classifyStorageError, type StorageHealth } from "../store/health.ts";

/** Public, webhook and control bodies are capped at 256 KiB. */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * `local`: loopback access; over TCP only `/control/*` needs the token. `bearer`: a
 * token-required access mode (tunnel, lan, tailnet); every TCP route needs it.
 */
export type AuthMode = "local" | "bearer";

export type AuthState = {
  mode: AuthMode;
  /** The `serve --access` mode the runtime was started with. */
  access: "local" | "tunnel" | "lan" | "tailnet";
  /** The listener the request came in on. */
  transport: "tcp" | "unix";
  /** The request came over the Unix socket or from a loopback address. */
  local: boolean;
  /** A valid bearer token, or a web console session (cookie and CSRF token), was presented. */
  token_ok: boolean;
  /** The credential was a web console session, not the bearer token. */
  console_session?: boolean;
};

export type AppEnv = {
  Variables: { auth: AuthState };
};

/**
 * The auth state of a request as the pre-routing guard computed it (server.ts passes it in
 * the adapter's env). A request that did not pass the guard (an in-process `app.request`
 * without one) is treated as an unauthenticated TCP request from an unknown peer.
 */
export function requestAuth(
  env: unknown,
  authorization: string | undefined,
  token: string | undefined,
): AuthState {
  const given = (env as { holon_auth?: AuthState } | undefined)?.holon_auth;
  if (given) return given;
  const e = env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return {
    mode: "local",
    access: "local",
    transport: "tcp",
    local: isLoopback(e?.incoming?.socket?.remoteAddress),
    token_ok: token ? tokenMatches(bearerOf(authorization), token) : false,
  };
}

/** The handshake's `auth` block: what a client on this transport must send. */
export function handshakeAuth(auth: AuthState) {
  return {
    mode: auth.mode,
    required: auth.transport === "tcp",
    access: auth.access,
    transport: auth.transport,
  };
}

export function errorResponse(c: Context, err: HolonError): Response {
  return c.json({ ok: false, error: err.toBody() }, err.status as 400);
}

/**
 * A request that failed because the store cannot be written: 503 with a stable kind
 * (`storage_full`, `storage_unavailable`, `storage_lost`) and, while the runtime expects to
 * recover, `Retry-After`. Counted per route for the outage's record. Undefined for any
 * other error.
 */
export function storageRefusal(
  c: Context,
  health: StorageHealth,
  err: unknown,
): Response | undefined {
  const fault = classifyStorageError(err);
  if (!fault) return undefined;
  const refused =
    err instanceof HolonError
      ? err
      : health.fault(fault, err instanceof Error ? err.message : String(err));
  health.noteRefusedRequest(`${c.req.method} ${c.req.routePath}`);
  const retryAfter = refused.details?.retry_after_s;
  if (typeof retryAfter === "number") c.header("Retry-After", String(retryAfter));
  return errorResponse(c, refused);
}

/** Read the request body (at most MAX_BODY_BYTES) and parse it as JSON. */
export async function readJson(c: Context, opts: { optional?: boolean } = {}): Promise<unknown> {
  const text = await readBodyText(c);
  if (text === undefined) {
    if (opts.optional) return {};
    throw new HolonError("invalid_json", "request body is empty; a JSON object is required");
  }
  return parseBody(text, opts);
}

/**
 * Read the request body as text, at most MAX_BODY_BYTES (413 `payload_too_large` past it);
 * undefined when the request has no body at all.
 */
export async function readBodyText(c: Context): Promise<string | undefined> {
  const lengthHeader = c.req.header("content-length");
  const declared = Number(lengthHeader ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  if (lengthHeader !== undefined) {
    // Known, bounded length: read it in one go (the cheap path on the node adapter).
    const text = await c.req.text();
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw tooLarge();
    return text;
  }
  const body = c.req.raw.body;
  if (!body) return undefined;
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
  return Buffer.concat(chunks).toString("utf8");
}

/** Bodies nest at most this deep; deeper input is refused before it is parsed. */
export const MAX_JSON_DEPTH = 64;

function parseBody(text: string, opts: { optional?: boolean }): unknown {
  if (text.trim() === "") {
    if (opts.optional) return {};
    throw new HolonError("invalid_json", "request body is empty; a JSON object is required");
  }
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new HolonError(
      "json_too_deep",
      `request body nests deeper than ${MAX_JSON_DEPTH} levels`,
      { hint: "flatten the structure" },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HolonError(
      "invalid_json",
      `request body is not valid JSON: ${(err as Error).message}`,
      {
        hint: "send a JSON object with Content-Type: application/json",
      },
    );
  }
  const nul = nulPath(value, "");
  if (nul !== null) {
    throw new HolonError("nul_byte", `${nul || "(body)"} contains a NUL byte`, {
      hint: "NUL bytes are not accepted in any string (commands, prompts, ids name files and processes)",
    });
  }
  return value;
}

/** The deepest nesting of arrays and objects in a JSON text, without parsing it. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** Where the first string (or key) holding a NUL byte is, as a dotted path; null if none. */
function nulPath(value: unknown, at: string): string | null {
  if (typeof value === "string") return value.includes("\0") ? at : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = nulPath(value[i], `${at}[${i}]`);
      if (p !== null) return p;
    }
    return null;
  }
  if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const here = at ? `${at}.${k}` : k;
      if (k.includes("\0")) return here;
      const p = nulPath(v, here);
      if (p !== null) return p;
    }
  }
  return null;
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

/** A TCP peer address on loopback. Unknown addresses are not. */
export function isLoopback(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  return addr === "::1" || addr.startsWith("127.") || addr.startsWith("::ffff:127.");
}

export function unauthorized(required: string): HolonError {
  return new HolonError("unauthorized", `a valid control token is required for ${required}`, {
    status: 401,
    hint: "send Authorization: Bearer <token> (the CLI reads it from --token, HOLON_CONTROL_TOKEN, control_token or <holon_home>/run/control-token)",
  });
}

/**
 * Control routes: over TCP the token, always (local mode trusts the user, not the machine);
 * over the Unix socket nothing, its file modes already keep other users out.
 */
export function requireControl(c: Context<AppEnv>): void {
  const auth = c.get("auth");
  if (auth.transport === "tcp" && !auth.token_ok) throw unauthorized("control routes");
}

/**
 * Read routes: over TCP the token, in every access mode, since what they return (prompts,
 * command output, briefs) is as private as what control routes change; over the Unix socket
 * nothing. (The guard enforces the same before routing; this keeps a route safe when it is
 * reached without the guard, as `app.request` in process does.)
 */
export function requireRead(c: Context<AppEnv>): void {
  const auth = c.get("auth");
  if (auth.transport === "tcp" && !auth.token_ok) throw unauthorized("this route");
}

/**
 * Public ingress (public enqueue, webhooks): open over loopback TCP in local mode, where what
 * it admits is untrusted external evidence; the token in the token-required access modes
 * (tunnel, lan, tailnet) and from a non-loopback peer.
 */
export function requireIngress(c: Context<AppEnv>): void {
  const auth = c.get("auth");
  if (auth.transport === "tcp" && (auth.mode === "bearer" || !auth.local) && !auth.token_ok)
    throw unauthorized("this route");
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
