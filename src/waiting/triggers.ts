// External trigger capabilities: each agent's secret wake URL. The default capability is
// provisioned when a public agent is created (and once at start for an agent that never had
// one), never by a read: a client that only looks changes nothing. It holds a random
// 256-bit token and has fixed `wake_hint` delivery: a call to the URL becomes a wake hint
// with the raw body and its provenance, never an operator instruction. The token is kept
// (the database is owner-only) so the URL can be shown again; a presented token is found by
// its SHA-256 and then compared in constant time. Unknown and revoked tokens change nothing
// but one audit event, and an address that keeps missing is refused for a while.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { HolonError, agentStopped } from "../domain/errors.ts";
import type {
  ExternalTriggerDescriptor,
  ExternalTriggerRecord,
  HintBody,
} from "../domain/waiting.ts";
import type { Store } from "../store/db.ts";
import type { WakeHints } from "./wake-hints.ts";

/** Revoked capabilities kept per agent for audit. */
const KEEP_REVOKED = 20;

export type RequestedMode = "wake" | "enqueue";

const hashOf = (token: string) => createHash("sha256").update(token).digest("hex");

/** The callback URL's base, from the runtime file this host's server wrote (null when none). */
export function baseUrlFromRuntimeFile(path: string): () => string | null {
  let cached: string | null = null;
  return () => {
    if (cached) return cached;
    try {
      const f = JSON.parse(readFileSync(path, "utf8")) as {
        pid?: number;
        http_addr?: string | null;
        advertise_url?: string | null;
      };
      if (f.pid !== process.pid) return null;
      if (f.advertise_url) cached = f.advertise_url.replace(/\/+$/, "");
      else if (f.http_addr) {
        // A wildcard bind is reached on loopback from this machine.
        const addr = f.http_addr
          .replace(/^0\.0\.0\.0:/, "127.0.0.1:")
          .replace(/^\[::\]:/, "[::1]:");
        cached = `http://${addr}`;
      }
      return cached;
    } catch {
      return null;
    }
  };
}

/** Content types whose bodies are kept as text when they are valid UTF-8. */
function textual(contentType: string): boolean {
  const t = contentType.split(";")[0]!.trim().toLowerCase();
  return (
    t.startsWith("text/") ||
    t === "application/json" ||
    t.endsWith("+json") ||
    t.endsWith("/xml") ||
    t.endsWith("+xml") ||
    t === "application/x-www-form-urlencoded"
  );
}

/** A delivered body as the hint keeps it; undefined for an empty body. */
export function hintBodyOf(
  bytes: Uint8Array,
  contentType: string | undefined,
): HintBody | undefined {
  if (bytes.byteLength === 0) return undefined;
  const type = (contentType ?? "application/octet-stream").slice(0, 200);
  if (textual(type)) {
    try {
      const data = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      return { content_type: type, encoding: "utf8", data, bytes: bytes.byteLength };
    } catch {
      // not UTF-8 after all: keep the bytes
    }
  }
  return {
    content_type: type,
    encoding: "base64",
    data: Buffer.from(bytes).toString("base64"),
    bytes: bytes.byteLength,
  };
}

/**
 * Misses per address: up to `limit` in a window are answered (404) and audited; past that
 * the address gets 429 for the rest of the window, for every token, so guessing stays slow.
 */
export class MissLimiter {
  private readonly windows = new Map<
    string,
    { start: number; misses: number; suppressed: number }
  >();
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(opts: { limit?: number; windowMs?: number; now: () => number }) {
    this.limit = opts.limit ?? 10;
    this.windowMs = opts.windowMs ?? 60_000;
    this.now = opts.now;
  }

  private entry(address: string) {
    const t = this.now();
    let w = this.windows.get(address);
    if (!w || t - w.start >= this.windowMs || t < w.start) {
      if (this.windows.size >= 10_000) this.sweep(t);
      w = { start: t, misses: 0, suppressed: w?.suppressed ?? 0 };
      this.windows.set(address, w);
    }
    return w;
  }

  /** True when the address has used up its misses for this window (counted as suppressed). */
  blocked(address: string): boolean {
    const w = this.entry(address);
    if (w.misses < this.limit) return false;
    w.suppressed++;
    return true;
  }

  /** Count a miss; returns how many were suppressed since the last recorded one. */
  miss(address: string): number {
    const w = this.entry(address);
    w.misses++;
    const s = w.suppressed;
    w.suppressed = 0;
    return s;
  }

  private sweep(t: number): void {
    for (const [k, w] of this.windows) if (t - w.start >= this.windowMs) this.windows.delete(k);
    if (this.windows.size >= 10_000) this.windows.clear();
  }
}

export type Delivery = {
  token: string;
  mode: RequestedMode;
  /** Read lazily: only a valid capability gets its body read (and size-checked). */
  readBody: () => Promise<HintBody | undefined>;
  correlation_id?: string | undefined;
  peer: string | null;
};

export class TriggerService {
  private readonly store: Store;
  private readonly hints: WakeHints;
  private readonly baseUrl: () => string | null;
  private readonly defaultAgentId: string;
  private readonly limiter: MissLimiter;

  constructor(opts: {
    store: Store;
    hints: WakeHints;
    baseUrl: () => string | null;
    defaultAgentId: string;
  }) {
    this.store = opts.store;
    this.hints = opts.hints;
    this.baseUrl = opts.baseUrl;
    this.defaultAgentId = opts.defaultAgentId;
    this.limiter = new MissLimiter({ now: () => opts.store.clock.now().getTime() });
  }

  /**
   * Provision the default capability of an agent that never had one (joins the caller's
   * transaction). An agent whose capability was revoked keeps none until the operator
   * rotates it: revocation is not undone behind the operator's back.
   */
  provisionDefault(agentId: string): Promise<ExternalTriggerRecord | undefined> {
    return this.store.tx(async () => {
      if (
        (await this.store.triggers.active(agentId)) ||
        (await this.store.triggers.revoked(agentId, 1)).length
      )
        return undefined;
      return await this.mint(agentId);
    });
  }

  /** The active capability without provisioning one. */
  current(agentId: string): Promise<ExternalTriggerRecord | undefined> {
    return this.store.triggers.active(agentId);
  }

  /** The descriptor surfaces show; the token stays hidden unless `reveal`. */
  describe(t: ExternalTriggerRecord, reveal: boolean): ExternalTriggerDescriptor {
    const base = this.baseUrl();
    return {
      external_trigger_id: t.external_trigger_id,
      trigger_url: base ? `${base}/callbacks/wake/${reveal ? t.token : "<redacted>"}` : null,
      target_agent_id: t.agent_id,
      delivery_mode: t.delivery_mode,
      status: t.status,
      redacted: !reveal,
      created_at: t.created_at,
      delivery_count: t.delivery_count,
      last_delivery_at: t.last_delivery_at ?? null,
    };
  }

  /** The agent's active descriptor, or null when it has none (nothing is provisioned). */
  async descriptor(agentId: string, reveal: boolean): Promise<ExternalTriggerDescriptor | null> {
    const t = await this.current(agentId);
    return t ? this.describe(t, reveal) : null;
  }

  /** Revoke the active capability and mint a new one (one transaction). */
  rotate(agentId: string): Promise<ExternalTriggerRecord> {
    return this.store.tx(async () => {
      const old = await this.store.triggers.active(agentId);
      if (old) await this.revokeRecord(old, "rotated");
      return await this.mint(agentId, old?.external_trigger_id);
    });
  }

  /**
   * CancelExternalTrigger: revoke the agent's capability (or the named one). The URL stops
   * working at once; a new capability exists only once the operator rotates it.
   */
  revoke(
    agentId: string,
    triggerId?: string,
    reason = "operator_revoked",
  ): Promise<ExternalTriggerRecord> {
    return this.store.tx(async () => {
      const active = await this.store.triggers.active(agentId);
      if (!active || (triggerId !== undefined && active.external_trigger_id !== triggerId)) {
        throw new HolonError(
          "unknown_external_trigger",
          triggerId
            ? `agent '${agentId}' has no active external trigger '${triggerId}'`
            : `agent '${agentId}' has no active external trigger`,
          { status: 404 },
        );
      }
      return await this.revokeRecord(active, reason);
    });
  }

  /**
   * A call to a callback URL. Returns what happened, or throws the refusal the caller
   * answers with (404 unknown or revoked, 429 too many misses, 409 stopped agent, 413).
   */
  async deliver(d: Delivery): Promise<{
    external_trigger_id: string;
    agent_id: string;
    disposition: "woken" | "pending";
  }> {
    const peer = d.peer ?? "unknown";
    if (this.limiter.blocked(peer)) {
      throw new HolonError("rate_limited", "too many unknown trigger URLs from this address", {
        status: 429,
        hint: "wait a minute before trying again",
      });
    }
    const found = await this.store.triggers.byTokenHash(hashOf(d.token));
    const matches =
      found !== undefined &&
      found.token.length === d.token.length &&
      timingSafeEqual(Buffer.from(found.token), Buffer.from(d.token));
    if (!found || !matches || found.status !== "active") {
      await this.refused(d, found && matches ? "revoked" : "unknown_token", found);
      throw new HolonError("not_found", "no such trigger", { status: 404 });
    }
    const agent = await this.store.agents.get(found.agent_id);
    if (!agent || agent.status === "stopped") throw agentStopped(found.agent_id);
    const body = await d.readBody();
    return await this.store.tx(async () => {
      // Re-read inside the transaction: the capability may have been revoked meanwhile.
      const t = await this.store.triggers.byTokenHash(found.token_hash);
      if (!t || t.status !== "active")
        throw new HolonError("not_found", "no such trigger", { status: 404 });
      const r = await this.hints.submit(t.agent_id, {
        source: "external_trigger",
        origin: { kind: "callback", descriptor_id: t.external_trigger_id },
        surface: d.mode === "wake" ? "http_callback_wake" : "http_callback_enqueue",
        admission: "external_trigger_capability",
        external_trigger_id: t.external_trigger_id,
        requested_mode: d.mode,
        body,
        correlation_id: d.correlation_id,
      });
      await this.store.triggers.put({
        ...t,
        delivery_count: t.delivery_count + 1,
        last_delivery_at: this.store.clock.now().toISOString(),
      });
      return {
        external_trigger_id: t.external_trigger_id,
        agent_id: t.agent_id,
        disposition: r.disposition,
      };
    });
  }

  private async refused(
    d: Delivery,
    reason: "unknown_token" | "revoked",
    found: ExternalTriggerRecord | undefined,
  ): Promise<void> {
    const suppressed = this.limiter.miss(d.peer ?? "unknown");
    const agentId = reason === "revoked" && found ? found.agent_id : this.defaultAgentId;
    if (!(await this.store.agents.get(agentId))) return;
    await this.store.tx(
      async () =>
        await this.store.appendEvent(agentId, {
          type: "external_trigger_refused",
          payload: {
            reason,
            requested_mode: d.mode,
            peer: d.peer,
            ...(reason === "revoked" && found
              ? { external_trigger_id: found.external_trigger_id }
              : {}),
            suppressed_before: suppressed,
          },
        }),
    );
  }

  private async mint(agentId: string, rotatedFrom?: string): Promise<ExternalTriggerRecord> {
    const token = randomBytes(32).toString("base64url");
    const t: ExternalTriggerRecord = {
      external_trigger_id: this.store.ids.next("xtr"),
      agent_id: agentId,
      delivery_mode: "wake_hint",
      status: "active",
      token,
      token_hash: hashOf(token),
      created_at: this.store.clock.now().toISOString(),
      delivery_count: 0,
    };
    if (rotatedFrom) t.rotated_from = rotatedFrom;
    await this.store.triggers.put(t);
    await this.store.appendEvent(agentId, {
      type: "external_trigger_provisioned",
      payload: {
        external_trigger_id: t.external_trigger_id,
        ...(rotatedFrom ? { rotated_from: rotatedFrom } : {}),
      },
    });
    return t;
  }

  private async revokeRecord(
    t: ExternalTriggerRecord,
    reason: string,
  ): Promise<ExternalTriggerRecord> {
    const revoked: ExternalTriggerRecord = {
      ...t,
      status: "revoked",
      revoked_at: this.store.clock.now().toISOString(),
      revoke_reason: reason,
    };
    await this.store.triggers.put(revoked);
    await this.store.appendEvent(t.agent_id, {
      type: "external_trigger_revoked",
      payload: { external_trigger_id: t.external_trigger_id, reason },
    });
    await this.store.triggers.pruneRevoked(t.agent_id, KEEP_REVOKED);
    return revoked;
  }
}
