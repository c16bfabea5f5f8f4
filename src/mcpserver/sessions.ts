// The MCP sessions of the host's `/mcp` route. A session id is a random 192-bit token the
// server hands out at `initialize`; it is kept only as its SHA-256, next to a digest of the
// credential that opened it (the control token over TCP, the Unix socket otherwise), and a
// request naming a session must present the same credential, compared in constant time. An
// unknown id and an id used with another credential get the same answer, so the table is no
// oracle. Sessions are bounded in number and closed after an idle period; the sweep runs on
// each request against the injected clock, so no timer outlives the host.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const MCP_SESSION_LIMITS = {
  /** Open sessions at once; an `initialize` beyond this is refused until one ends. */
  max_sessions: 32,
  /** A session nobody used for this long is closed. */
  idle_ms: 30 * 60_000,
} as const;

export type SessionEntry<T> = {
  value: T;
  credential: Buffer;
  lastUsed: number;
};

const digest = (s: string) => createHash("sha256").update(s).digest();

export class McpSessions<T extends { close(): Promise<void> }> {
  private readonly byHash = new Map<string, SessionEntry<T>>();
  private readonly now: () => number;
  private readonly limits: { max_sessions: number; idle_ms: number };

  constructor(now: () => number, limits: { max_sessions: number; idle_ms: number }) {
    this.now = now;
    this.limits = limits;
  }

  get size(): number {
    return this.byHash.size;
  }

  /** A fresh session id: random, URL-safe, visible ASCII as the header requires. */
  static newId(): string {
    return randomBytes(24).toString("base64url");
  }

  /** The session `id` names, if `credential` is the one that opened it; marks it used. */
  get(id: string, credential: string): T | undefined {
    this.sweep();
    const entry = this.byHash.get(digest(id).toString("hex"));
    if (!entry || !timingSafeEqual(entry.credential, digest(credential))) return undefined;
    entry.lastUsed = this.now();
    return entry.value;
  }

  /** Reserve a place for a new session; false when the table is full. */
  add(id: string, credential: string, value: T): boolean {
    this.sweep();
    if (this.byHash.size >= this.limits.max_sessions) return false;
    this.byHash.set(digest(id).toString("hex"), {
      value,
      credential: digest(credential),
      lastUsed: this.now(),
    });
    return true;
  }

  /** Forget a session (it was closed by its client or never got started). */
  remove(id: string): void {
    this.byHash.delete(digest(id).toString("hex"));
  }

  /** Close every session idle past the limit. */
  sweep(): void {
    const cutoff = this.now() - this.limits.idle_ms;
    for (const [key, entry] of this.byHash) {
      if (entry.lastUsed > cutoff) continue;
      this.byHash.delete(key);
      void entry.value.close().catch(() => {});
    }
  }
}
