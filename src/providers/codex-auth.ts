// Reuse of an existing `codex login`: the Codex CLI keeps its ChatGPT session in
// $CODEX_HOME/auth.json (default ~/.codex/auth.json) as
//   { "OPENAI_API_KEY": string|null, "tokens": { id_token, access_token, refresh_token,
//     account_id }, "last_refresh": "<RFC 3339>" }
// Holon only reads it. It never refreshes or rewrites the file: when the session has
// expired the operator runs codex again.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { ResolvedCredential } from "./types.ts";

export type CodexAuthStatus = "configured" | "missing" | "expired" | "invalid" | "api_key_only";

export type CodexAuth = {
  path: string;
  status: CodexAuthStatus;
  /** Present only when status is `configured`. */
  credential: ResolvedCredential | null;
  /** Why it cannot be used, with what to do about it. */
  reason: string | null;
  expires_at: string | null;
};

export function codexAuthPath(env: Record<string, string | undefined> = process.env): string {
  const home = env.CODEX_HOME ? resolve(env.CODEX_HOME) : join(homedir(), ".codex");
  return join(home, "auth.json");
}

/** The payload of a JWT, or null. No signature check: this only reads our own login. */
function jwtPayload(token: string): Record<string, unknown> | null {
  const part = token.split(".")[1];
  if (!part) return null;
  try {
    const json = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as unknown;
    return typeof json === "object" && json !== null ? (json as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function accountIdFromJwt(token: string | undefined): string | null {
  if (!token) return null;
  const claims = jwtPayload(token)?.["https://api.openai.com/auth"];
  if (typeof claims !== "object" || claims === null) return null;
  const id = (claims as Record<string, unknown>).chatgpt_account_id;
  return typeof id === "string" && id ? id : null;
}

export function readCodexAuth(
  env: Record<string, string | undefined> = process.env,
  now: Date = new Date(),
): CodexAuth {
  const path = codexAuthPath(env);
  const result = (
    status: CodexAuthStatus,
    reason: string | null,
    credential: ResolvedCredential | null = null,
    expiresAt: string | null = null,
  ): CodexAuth => ({ path, status, credential, reason, expires_at: expiresAt });

  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      return result(
        "missing",
        `no Codex login at ${path}; run \`codex login\` (or set CODEX_HOME)`,
      );
    }
    return result("invalid", `cannot read ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return result("invalid", `${path} is not valid JSON; run \`codex login\` again`);
  }
  const obj = (typeof data === "object" && data !== null ? data : {}) as Record<string, unknown>;
  const tokens = (
    typeof obj.tokens === "object" && obj.tokens !== null ? obj.tokens : {}
  ) as Record<string, unknown>;
  const access = typeof tokens.access_token === "string" ? tokens.access_token : "";
  if (!access) {
    if (typeof obj.OPENAI_API_KEY === "string" && obj.OPENAI_API_KEY) {
      return result(
        "api_key_only",
        `${path} holds an API key, not a ChatGPT login; the openai-codex provider needs \`codex login\` with ChatGPT (use the openai provider for API keys)`,
      );
    }
    return result("invalid", `${path} has no tokens.access_token; run \`codex login\` again`);
  }
  const exp = jwtPayload(access)?.exp;
  const expiresAt = typeof exp === "number" ? new Date(exp * 1000).toISOString() : null;
  if (typeof exp === "number" && exp * 1000 <= now.getTime()) {
    return result(
      "expired",
      `the Codex session in ${path} expired at ${expiresAt}; run \`codex login\` (or any codex command) to refresh it`,
      null,
      expiresAt,
    );
  }
  const accountId =
    (typeof tokens.account_id === "string" && tokens.account_id) ||
    accountIdFromJwt(typeof tokens.id_token === "string" ? tokens.id_token : undefined) ||
    accountIdFromJwt(access);
  const credential: ResolvedCredential = {
    kind: "session_token",
    value: access,
    source_label: "external_cli:codex",
  };
  if (accountId) credential.headers = { "chatgpt-account-id": accountId };
  return result("configured", null, credential, expiresAt);
}
