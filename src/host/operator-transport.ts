// Operator transport bindings (remote-operator-transport-and-delivery): a chat bridge such
// as AgentInbox registers, over the control plane, a binding from a remote operator to one
// agent with a delivery callback. Prompts it relays come in through `operator-ingress` as
// operator prompts (admission `operator_transport_authenticated`); the agent's briefs go
// out to every active binding's callback with its bearer token and an Idempotency-Key,
// retried with backoff, each outcome recorded as an `operator_delivery_recorded` event.
// Delivery is a side effect with its own audit trail: a failed delivery never changes the
// turn's outcome. Bindings live in <home>/operator-bindings.json (0600: it holds the
// callback tokens Holon must send, so they cannot be stored hashed); at most
// MAX_BINDINGS_PER_AGENT per agent, revoked ones pruned beyond MAX_REVOKED_KEPT.
// Brief retries are in memory: a delivery still retrying when the host stops is not resumed.
// Asks are different (they wait on a person, maybe for days): each pending ask goes to the
// active bindings of its agent (and of the agents above a private child), with the ask id
// as Idempotency-Key, and which bindings accepted it is kept on the ask; at start every
// pending ask goes again to each binding that has not accepted it (`redeliverAsks`).
import { classifyStorageError } from "../store/health.ts";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Ingress } from "../agent/ingress.ts";
import type { Clock } from "../domain/clock.ts";
import { HolonError } from "../domain/errors.ts";
import type { CatalogEvent } from "../domain/events.ts";
import type { Store } from "../store/db.ts";
import type { AskRecord } from "../domain/ask.ts";
import type { AskService } from "../asks/service.ts";
import { atomicWriteFile } from "../store/files.ts";

export const MAX_BINDINGS_PER_AGENT = 16;
const MAX_REVOKED_KEPT = 32;
const DEFAULT_RETRY_DELAYS_MS = [1_000, 4_000, 15_000];
const ATTEMPT_TIMEOUT_MS = 10_000;

export type OperatorBinding = {
  binding_id: string;
  transport: string;
  operator_actor_id: string;
  target_agent_id: string;
  default_route_id: string | null;
  delivery_callback_url: string;
  delivery_auth: { kind: "bearer" };
  capabilities: { text: boolean; markdown?: boolean };
  provider: string;
  provider_identity_ref: string | null;
  status: "active" | "revoked";
  created_at: string;
  last_seen_at?: string;
};

type StoredBinding = OperatorBinding & { delivery_token: string };

export type CreateBinding = {
  transport: string;
  operator_actor_id: string;
  delivery_callback_url: string;
  delivery_token: string;
  default_route_id?: string | undefined;
  provider?: string | undefined;
  provider_identity_ref?: string | undefined;
  markdown?: boolean | undefined;
};

export type OperatorIngress = {
  text: string;
  actor_id: string;
  binding_id: string;
  reply_route_id?: string | undefined;
  provider?: string | undefined;
  upstream_provider?: string | undefined;
  provider_message_ref?: string | undefined;
  correlation_id?: string | undefined;
  causation_id?: string | undefined;
};

export type OperatorTransportDeps = {
  home: string;
  store: Store;
  ingress: Ingress;
  clock: Clock;
  fetch?: typeof fetch;
  retryDelaysMs?: number[];
  asks?: AskService | undefined;
};

const view = ({ delivery_token: _t, ...b }: StoredBinding): OperatorBinding => b;

export class OperatorTransportService {
  private readonly file: string;
  private readonly store: Store;
  private readonly ingress: Ingress;
  private readonly clock: Clock;
  private readonly fetch: typeof fetch;
  private readonly delays: number[];
  private readonly asks: AskService | undefined;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private readonly unlisten: () => void;
  private closed = false;

  constructor(deps: OperatorTransportDeps) {
    this.file = join(deps.home, "operator-bindings.json");
    this.store = deps.store;
    this.ingress = deps.ingress;
    this.clock = deps.clock;
    this.fetch = deps.fetch ?? fetch;
    this.delays = deps.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.asks = deps.asks;
    // Every commit passes here; only one with an ask or a brief to deliver costs an async call.
    this.unlisten = this.store.onEvents((events) =>
      events.some((e) => e.type === "ask_opened" || e.type === "brief_created")
        ? this.onEvents(events)
        : undefined,
    );
  }

  /**
   * The file's text as last read or written. Only this host writes the file, so it is read
   * once: every brief looks up its bindings, and reading (or failing to find) the file each
   * time was a measurable share of a busy host's CPU. Parsed afresh on each read, so
   * callers get their own objects to change.
   */
  private text: string | null | undefined;

  private read(): StoredBinding[] {
    if (this.text === undefined) {
      try {
        this.text = readFileSync(this.file, "utf8");
      } catch {
        this.text = null;
      }
    }
    if (this.text === null) return [];
    try {
      const parsed = JSON.parse(this.text) as { bindings?: StoredBinding[] };
      return Array.isArray(parsed.bindings) ? parsed.bindings : [];
    } catch {
      return [];
    }
  }

  private write(bindings: StoredBinding[]): void {
    const revoked = bindings.filter((b) => b.status === "revoked");
    const drop = new Set(revoked.slice(0, Math.max(0, revoked.length - MAX_REVOKED_KEPT)));
    const text = JSON.stringify({ bindings: bindings.filter((b) => !drop.has(b)) }, null, 2);
    atomicWriteFile(this.file, text, { mode: 0o600 });
    this.text = text;
  }

  async create(agentId: string, input: CreateBinding): Promise<OperatorBinding> {
    let url: URL;
    try {
      url = new URL(input.delivery_callback_url);
    } catch {
      throw new HolonError("invalid_request", "delivery_callback_url is not a URL");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new HolonError("invalid_request", "delivery_callback_url must be http(s)");
    }
    if (url.username || url.password) {
      throw new HolonError("invalid_request", "delivery_callback_url must not carry credentials", {
        hint: "send the bearer token as delivery_token",
      });
    }
    const all = this.read();
    const active = all.filter((b) => b.target_agent_id === agentId && b.status === "active");
    if (active.length >= MAX_BINDINGS_PER_AGENT) {
      throw new HolonError(
        "too_many_bindings",
        `agent '${agentId}' already has ${MAX_BINDINGS_PER_AGENT} active operator bindings`,
        { status: 409, hint: "revoke one first" },
      );
    }
    const binding: StoredBinding = {
      binding_id: `opbind_${randomBytes(12).toString("hex")}`,
      transport: input.transport,
      operator_actor_id: input.operator_actor_id,
      target_agent_id: agentId,
      default_route_id: input.default_route_id ?? null,
      delivery_callback_url: url.toString(),
      delivery_auth: { kind: "bearer" },
      capabilities: { text: true, ...(input.markdown ? { markdown: true } : {}) },
      provider: input.provider ?? input.transport,
      provider_identity_ref: input.provider_identity_ref ?? null,
      status: "active",
      created_at: this.clock.now().toISOString(),
      delivery_token: input.delivery_token,
    };
    this.write([...all, binding]);
    // What already waits on this operator goes to the new binding too.
    for (const ask of (await this.asks?.pendingFor(agentId)) ?? []) {
      if (ask.state === "pending") void this.attemptAsk(binding, ask, 1);
    }
    return view(binding);
  }

  list(agentId: string): OperatorBinding[] {
    return this.read()
      .filter((b) => b.target_agent_id === agentId)
      .map(view);
  }

  revoke(agentId: string, bindingId: string): OperatorBinding {
    const all = this.read();
    const b = all.find((x) => x.binding_id === bindingId && x.target_agent_id === agentId);
    if (!b) throw unknownBinding(bindingId);
    b.status = "revoked";
    this.write(all);
    return view(b);
  }

  /** A prompt the bridge relays from its authenticated remote operator. */
  async admit(
    agentId: string,
    req: OperatorIngress,
  ): Promise<{ message_id: string; binding_id: string }> {
    const all = this.read();
    const b = all.find((x) => x.binding_id === req.binding_id && x.target_agent_id === agentId);
    if (!b) throw unknownBinding(req.binding_id);
    if (b.status !== "active") {
      throw new HolonError("binding_revoked", `operator binding '${b.binding_id}' is revoked`, {
        status: 403,
      });
    }
    if (req.actor_id !== b.operator_actor_id) {
      throw new HolonError(
        "actor_mismatch",
        `actor '${req.actor_id}' is not the operator of binding '${b.binding_id}'`,
        { status: 403 },
      );
    }
    const transport: Record<string, string> = {
      provider: req.provider ?? b.provider,
      binding_id: b.binding_id,
    };
    if (req.reply_route_id) transport.reply_route_id = req.reply_route_id;
    if (req.upstream_provider) transport.upstream_provider = req.upstream_provider;
    if (req.provider_message_ref) transport.provider_message_ref = req.provider_message_ref;
    const envelope = await this.ingress.admit({
      agent_id: agentId,
      kind: "operator_prompt",
      origin: { kind: "operator", actor_id: req.actor_id },
      body: { type: "text", text: req.text },
      surface: "remote_operator_transport",
      admission: "operator_transport_authenticated",
      metadata: { operator_transport: transport },
      correlation_id: req.correlation_id,
      causation_id: req.causation_id,
    });
    b.last_seen_at = this.clock.now().toISOString();
    this.write(all);
    return { message_id: envelope.id, binding_id: b.binding_id };
  }

  private async onEvents(events: CatalogEvent[]): Promise<void> {
    if (this.closed) return;
    for (const e of events) {
      if (e.type === "ask_opened") {
        await this.deliverAsk(e.payload.ask);
        continue;
      }
      if (e.type !== "brief_created" || e.payload.brief.kind === "ack") continue;
      const targets = this.read().filter(
        (b) => b.target_agent_id === e.agent_id && b.status === "active",
      );
      for (const b of targets) {
        const brief = e.payload.brief;
        const intent = {
          delivery_intent_id: `odi_${randomBytes(12).toString("hex")}`,
          binding_id: b.binding_id,
          route_id: b.default_route_id,
          target_agent_id: e.agent_id,
          kind: "operator_output",
          brief_kind: brief.kind,
          text: brief.text,
          created_at: brief.created_at,
          correlation_id: e.provenance.correlation_id ?? null,
          causation_id: brief.related_message_id ?? null,
        };
        void this.attempt(b, intent, brief.id, 1);
      }
    }
  }

  /** At start: every pending ask to each binding that has not accepted it yet. */
  async redeliverAsks(): Promise<number> {
    if (!this.asks) return 0;
    let n = 0;
    for (const ask of await this.asks.list({ state: "pending", limit: 500 }))
      n += await this.deliverAsk(ask);
    return n;
  }

  /** The bindings an agent's asks go to: its own, and for a private child its supervisors'. */
  private async bindingsFor(agentId: string): Promise<StoredBinding[]> {
    const chain = new Set<string>();
    let id: string | undefined = agentId;
    while (id && !chain.has(id) && chain.size < 16) {
      chain.add(id);
      id = (await this.store.agents.get(id))?.supervisor_agent_id;
    }
    return this.read().filter((b) => b.status === "active" && chain.has(b.target_agent_id));
  }

  private async deliverAsk(ask: AskRecord): Promise<number> {
    if (this.closed || ask.state !== "pending") return 0;
    const targets = (await this.bindingsFor(ask.agent_id)).filter(
      (b) => ask.deliveries[b.binding_id]?.status !== "accepted_by_transport",
    );
    for (const b of targets) void this.attemptAsk(b, ask, 1);
    return targets.length;
  }

  private async attemptAsk(b: StoredBinding, ask: AskRecord, n: number): Promise<void> {
    const options = ask.options.length ? `\nOptions: ${ask.options.join(" | ")}` : "";
    const intent = {
      delivery_intent_id: ask.id,
      binding_id: b.binding_id,
      route_id: b.default_route_id,
      target_agent_id: ask.agent_id,
      kind: "operator_ask",
      text: `${ask.about}\n\n${ask.detail}${options}\nAnswer: holon asks answer ${ask.id} "<answer>"`,
      ask: {
        ask_id: ask.id,
        kind: ask.kind,
        scope: ask.scope,
        work_item_id: ask.work_item_id ?? null,
        about: ask.about,
        detail: ask.detail,
        options: ask.options,
        free_text: ask.free_text,
        expires_at: ask.expires_at,
        decision_path: `/control/asks/${ask.id}/decision`,
      },
      created_at: ask.created_at,
      correlation_id: null,
      causation_id: null,
    };
    let failure: string;
    try {
      const res = await this.fetch(b.delivery_callback_url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${b.delivery_token}`,
          "idempotency-key": ask.id,
          "content-type": "application/json",
        },
        body: JSON.stringify(intent),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
        redirect: "error",
      });
      await res.text().catch(() => "");
      if (res.ok) return await this.noteAsk(ask.id, b, "accepted_by_transport", n, null);
      failure = `HTTP ${res.status}`;
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (this.closed) return;
    const delay = this.delays[n - 1];
    if (delay === undefined) return await this.noteAsk(ask.id, b, "failed_to_submit", n, failure);
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.closed) return;
      // Decided or withdrawn meanwhile: nothing left to ask. A read that fails (the database
      // unreachable for a moment) does not stop the delivery: the bridge takes the ask id as
      // its idempotency key, so one attempt too many costs nothing.
      void this.store.asks
        .get(ask.id)
        .then(
          (current) => current?.state === "pending",
          () => true,
        )
        .then((pending) => {
          if (pending) void this.attemptAsk(b, ask, n + 1);
        });
    }, delay);
    t.unref?.();
    this.timers.add(t);
  }

  private async noteAsk(
    askId: string,
    b: StoredBinding,
    status: "accepted_by_transport" | "failed_to_submit",
    attempts: number,
    failure: string | null,
  ): Promise<void> {
    if (this.closed) return;
    try {
      await this.asks?.noteDelivery(
        askId,
        b.binding_id,
        status,
        attempts,
        failure?.slice(0, 500) ?? null,
      );
    } catch {
      // the store closed meanwhile: the host is stopping (the next start delivers again)
    }
  }

  /**
   * A binding that decides an ask: it must be active, its operator the actor, and bound to
   * the ask's agent or an agent above it. Returns the credential the ask service takes.
   */
  async bindingCredential(
    askAgentId: string,
    bindingId: string,
    actorId: string,
  ): Promise<{ kind: "operator"; via: "operator_binding"; binding_id: string; actor_id: string }> {
    const b = this.read().find((x) => x.binding_id === bindingId);
    if (!b || !(await this.bindingsFor(askAgentId)).some((x) => x.binding_id === bindingId)) {
      if (b?.status === "revoked") {
        throw new HolonError("binding_revoked", `operator binding '${bindingId}' is revoked`, {
          status: 403,
        });
      }
      throw new HolonError(
        "unknown_binding",
        `no active operator binding '${bindingId}' for this ask's agent`,
        { status: 403 },
      );
    }
    if (actorId !== b.operator_actor_id) {
      throw new HolonError(
        "actor_mismatch",
        `actor '${actorId}' is not the operator of binding '${b.binding_id}'`,
        { status: 403 },
      );
    }
    return {
      kind: "operator",
      via: "operator_binding",
      binding_id: b.binding_id,
      actor_id: actorId,
    };
  }

  private async attempt(
    b: StoredBinding,
    intent: { delivery_intent_id: string; target_agent_id: string; brief_kind: string },
    briefId: string,
    n: number,
  ): Promise<void> {
    let failure: string;
    let transportId: string | null = null;
    try {
      const res = await this.fetch(b.delivery_callback_url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${b.delivery_token}`,
          "idempotency-key": intent.delivery_intent_id,
          "content-type": "application/json",
        },
        body: JSON.stringify(intent),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
        redirect: "error",
      });
      const text = await res.text().catch(() => "");
      if (res.ok) {
        try {
          const id = (JSON.parse(text) as { transport_delivery_id?: unknown })
            .transport_delivery_id;
          if (typeof id === "string") transportId = id.slice(0, 200);
        } catch {
          // a body is optional
        }
        return await this.record(b, intent, briefId, "accepted_by_transport", n, transportId, null);
      }
      failure = `HTTP ${res.status}`;
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    if (this.closed) return;
    const delay = this.delays[n - 1];
    if (delay === undefined) {
      return await this.record(b, intent, briefId, "failed_to_submit", n, null, failure);
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closed) void this.attempt(b, intent, briefId, n + 1);
    }, delay);
    t.unref?.();
    this.timers.add(t);
  }

  private async record(
    b: StoredBinding,
    intent: { delivery_intent_id: string; target_agent_id: string; brief_kind: string },
    briefId: string,
    status: "accepted_by_transport" | "failed_to_submit",
    attempts: number,
    transportId: string | null,
    failure: string | null,
  ): Promise<void> {
    if (this.closed) return;
    try {
      await this.store.tx(
        async () =>
          await this.store.appendEvent(intent.target_agent_id, {
            type: "operator_delivery_recorded",
            payload: {
              delivery_intent_id: intent.delivery_intent_id,
              binding_id: b.binding_id,
              brief_id: briefId,
              brief_kind: intent.brief_kind,
              status,
              attempts,
              transport_delivery_id: transportId,
              failure: failure ? failure.slice(0, 500) : null,
            },
          }),
      );
    } catch (err) {
      // A full disk: the record waits in memory and is written once the store can take it.
      const fault = classifyStorageError(err);
      if (fault && fault !== "lost") {
        void this.store.health
          .whenWritableAfter(err)
          .then(
            async () =>
              await this.record(b, intent, briefId, status, attempts, transportId, failure),
          );
      }
      // otherwise the store closed meanwhile: the host is stopping
    }
  }

  close(): void {
    this.closed = true;
    this.unlisten();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}

function unknownBinding(id: string): HolonError {
  return new HolonError("unknown_binding", `no operator binding '${id}' for this agent`, {
    status: 404,
  });
}
