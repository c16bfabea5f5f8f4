// Browser sessions of the web console. A browser gets in by a one-time login link that
// `holon console` asks the host for (a control route, so only the token's holder can mint
// one): the secret rides in the URL fragment, which a browser never sends to a server, and
// the page posts it once to exchange it for a session. What the host keeps is only SHA-256
// digests (of link secrets, session ids and CSRF tokens), compared in constant time, so a
// copy of memory or of the persisted file lets nobody in.
//
// A session is two halves: an HttpOnly, SameSite=Strict cookie (`holon_console`), and a
// synchronizer CSRF token the page got in the exchange's response body and keeps in the
// origin's own storage. Every API request from the console carries both. The cookie alone
// is not enough on purpose: cookies are not separated by port, so a server on another
// localhost port receives ours and could set its own, but it can read neither the page's
// storage nor the response that carried the token.
//
// Sessions live in memory and end with the host, unless the operator turned on
// `console.persist_sessions`: then their digests are kept in <holon_home>/run/console-
// sessions.json (0600) and read back at start.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { HolonError } from "../domain/errors.ts";
import { atomicWriteFile } from "../store/files.ts";

/** How long a login link stands. */
export const LOGIN_LINK_TTL_MS = 60_000;
/** At most this many unused links are kept; minting another drops the oldest. */
const MAX_PENDING_LINKS = 16;
/** At most this many live sessions; a new login ends the oldest beyond it. */
const MAX_SESSIONS = 64;
/** Secrets, ids and tokens are 32 random bytes, base64url (43 characters). */
const SECRET_BYTES = 32;
const SECRET_RE = /^[A-Za-z0-9_-]{43}$/;

export const SESSION_COOKIE = "holon_console";
export const CSRF_HEADER = "x-holon-csrf";

type Link = { digest: Buffer; expires_at: number };
type Session = { id_digest: string; csrf_digest: string; created_at: number; expires_at: number };

export type Minted = { secret: string; expires_at: string };
export type Opened = { session_id: string; csrf_token: string; expires_at: string };

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
function hex(text: string): string {
  return digest(text).toString("hex");
}
function secret(): string {
  return randomBytes(SECRET_BYTES).toString("base64url");
}

export type ConsoleSessionOptions = {
  now: () => number;
  /** Session lifetime from login. */
  sessionMs: number;
  /** Where session digests are kept across restarts when `persist` is on. */
  persistPath: string;
  /** `console.persist_sessions`: off, sessions end with the host (and a file left is removed). */
  persist: boolean;
};

export class ConsoleSessions {
  private links: Link[] = [];
  /** Keyed by the session id's digest (hex): a lookup by digest leaks nothing usable. */
  private readonly sessions = new Map<string, Session>();
  private readonly opts: ConsoleSessionOptions;

  constructor(opts: ConsoleSessionOptions) {
    this.opts = opts;
    if (opts.persist) this.load(opts.persistPath);
    else rmSync(opts.persistPath, { force: true });
  }

  /** A new one-time login secret, valid for LOGIN_LINK_TTL_MS. */
  mintLink(): Minted {
    const now = this.opts.now();
    this.links = this.links.filter((l) => l.expires_at > now);
    if (this.links.length >= MAX_PENDING_LINKS) this.links.shift();
    const s = secret();
    const expires = now + LOGIN_LINK_TTL_MS;
    this.links.push({ digest: digest(s), expires_at: expires });
    return { secret: s, expires_at: new Date(expires).toISOString() };
  }

  /** Spend a login secret: a new session, or `login_link_invalid` (unknown, used, expired). */
  redeem(given: string): Opened {
    const now = this.opts.now();
    const d = digest(given);
    let hit = -1;
    // Every pending link is compared, each in constant time, so the answer's timing says
    // nothing about which (or whether any) was close.
    for (let i = 0; i < this.links.length; i++) {
      if (timingSafeEqual(this.links[i]!.digest, d) && hit < 0) hit = i;
    }
    const link = hit >= 0 ? this.links[hit] : undefined;
    if (link) this.links.splice(hit, 1); // used once, whatever happens next
    if (!link || link.expires_at <= now || !SECRET_RE.test(given)) {
      throw new HolonError(
        "login_link_invalid",
        "this login link is unknown, already used or expired",
        {
          status: 401,
          hint: "run `holon console` for a new link (each link works once, within 60 seconds)",
        },
      );
    }
    this.prune(now);
    while (this.sessions.size >= MAX_SESSIONS) {
      const oldest = [...this.sessions.values()].sort((a, b) => a.created_at - b.created_at)[0]!;
      this.sessions.delete(oldest.id_digest);
    }
    const id = secret();
    const csrf = secret();
    const expires = now + this.opts.sessionMs;
    const s: Session = {
      id_digest: hex(id),
      csrf_digest: hex(csrf),
      created_at: now,
      expires_at: expires,
    };
    this.sessions.set(s.id_digest, s);
    this.save();
    return { session_id: id, csrf_token: csrf, expires_at: new Date(expires).toISOString() };
  }

  /**
   * Check a request's two halves. `missing_csrf` when the cookie names a live session but
   * the token is absent or wrong (so the page can tell a stale tab from a logged-out one);
   * `none` when there is no live session.
   */
  check(
    cookies: readonly string[],
    csrf: string | undefined,
  ):
    { ok: true; session_id: string; expires_at: string } | { ok: false; why: "none" | "bad_csrf" } {
    // Another localhost port can plant a cookie of the same name (cookies ignore ports), so
    // every one the browser sent is tried, not just the first.
    const now = this.opts.now();
    let s: Session | undefined;
    let sessionId = "";
    for (const c of cookies.slice(0, 8)) {
      if (!SECRET_RE.test(c)) continue;
      const found = this.sessions.get(hex(c));
      if (found) {
        s = found;
        sessionId = c;
        break;
      }
    }
    if (!s) return { ok: false, why: "none" };
    if (s.expires_at <= now) {
      this.sessions.delete(s.id_digest);
      this.save();
      return { ok: false, why: "none" };
    }
    const expected = Buffer.from(s.csrf_digest, "hex");
    const given = digest(csrf ?? "");
    if (!timingSafeEqual(expected, given) || csrf === undefined)
      return { ok: false, why: "bad_csrf" };
    return { ok: true, session_id: sessionId, expires_at: new Date(s.expires_at).toISOString() };
  }

  /** Logout: the session ends now. */
  end(sessionId: string | undefined): boolean {
    if (sessionId === undefined) return false;
    const removed = this.sessions.delete(hex(sessionId));
    if (removed) this.save();
    return removed;
  }

  get size(): number {
    return this.sessions.size;
  }

  private prune(now: number): void {
    for (const [k, s] of this.sessions) if (s.expires_at <= now) this.sessions.delete(k);
  }

  private save(): void {
    if (!this.opts.persist) return;
    const path = this.opts.persistPath;
    const rows = [...this.sessions.values()];
    atomicWriteFile(path, JSON.stringify({ version: 1, sessions: rows }), { mode: 0o600 });
  }

  private load(path: string): void {
    if (!existsSync(path)) return;
    try {
      const parsed = JSON.parse(readFileSync(path, "utf8")) as { sessions?: unknown };
      const now = this.opts.now();
      for (const raw of Array.isArray(parsed.sessions) ? parsed.sessions : []) {
        const s = raw as Partial<Session>;
        if (
          typeof s.id_digest === "string" &&
          /^[0-9a-f]{64}$/.test(s.id_digest) &&
          typeof s.csrf_digest === "string" &&
          /^[0-9a-f]{64}$/.test(s.csrf_digest) &&
          typeof s.created_at === "number" &&
          typeof s.expires_at === "number" &&
          s.expires_at > now &&
          this.sessions.size < MAX_SESSIONS
        ) {
          this.sessions.set(s.id_digest, s as Session);
        }
      }
    } catch {
      // A damaged file logs nobody in; the next login rewrites it.
    }
  }
}

/** Every `holon_console` cookie value in a Cookie header (capped at 8 KiB of header). */
export function sessionCookiesOf(header: string | null | undefined): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.slice(0, 8192).split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) out.push(part.slice(eq + 1).trim());
  }
  return out;
}
