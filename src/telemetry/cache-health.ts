// Prompt-cache health: a broken cached prefix (a system prompt that changes every round, a
// tool list reordered per request) multiplies what every call costs and shows in nothing but
// the usage numbers. This watcher reads each committed provider round's usage and, when an
// agent's cached share of input drops below half of what it was for two rounds in a row on
// the same model, records a `prompt_cache_degraded` event naming the first of those rounds;
// `holon status` shows it until the share recovers (`prompt_cache_recovered`).
//
// It keeps its baseline in memory: after a restart it learns the agent's share again.
import type { CatalogEvent } from "../domain/events.ts";
import type { Store } from "../store/db.ts";

/** Rounds smaller than this carry too little prefix to judge the cache by. */
const MIN_INPUT_TOKENS = 1024;
/** Rounds of history the baseline share is the mean of. */
const BASELINE_ROUNDS = 10;
/** The baseline needs this many rounds, and at least this share, before a drop counts. */
const MIN_BASELINE_ROUNDS = 3;
const MIN_BASELINE_SHARE = 0.3;
/** Consecutive low rounds that make a drop (the event comes on the second). */
const LOW_ROUNDS = 2;

type Round = { run_id: string; round: number; at: string; share: number };

export type CacheHealthView = {
  state: "degraded";
  model_ref: string;
  since: string;
  baseline_share: number;
  current_share: number;
  /** The first provider request whose cached prefix no longer matched. */
  first_changed: { run_id: string; round: number; at: string };
};

type Track = { history: number[]; low: Round[]; degraded: CacheHealthView | null };

export class CacheHealth {
  private readonly tracks = new Map<string, Track>();
  private readonly store: Store;

  constructor(store: Store) {
    this.store = store;
  }

  /** What `holon status` shows for an agent: the open degradation, if any. */
  statusOf(agentId: string): CacheHealthView | null {
    for (const [key, t] of this.tracks) {
      if (t.degraded && key.startsWith(`${agentId}\n`)) return t.degraded;
    }
    return null;
  }

  /** The store's listener (events arrive after their commit). */
  readonly onEvents = (events: CatalogEvent[]): Promise<void> | undefined =>
    // Every commit passes here; only one that ended a provider round costs an async call.
    events.some((e) => e.type === "provider_round_completed") ? this.rounds(events) : undefined;

  private async rounds(events: CatalogEvent[]): Promise<void> {
    for (const e of events) {
      if (e.type !== "provider_round_completed") continue;
      const u = e.payload.token_usage;
      if (!u || u.input_tokens < MIN_INPUT_TOKENS) continue;
      await this.observe(e.agent_id, e.payload.model_ref, {
        run_id: e.payload.run_id,
        round: e.payload.round,
        at: e.payload.provider_started_at,
        share: (u.cache_read_input_tokens ?? 0) / u.input_tokens,
      });
    }
  }

  private async observe(agentId: string, modelRef: string, r: Round): Promise<void> {
    const key = `${agentId}\n${modelRef}`;
    let t = this.tracks.get(key);
    if (!t) this.tracks.set(key, (t = { history: [], low: [], degraded: null }));
    const baseline = t.history.length ? t.history.reduce((a, b) => a + b, 0) / t.history.length : 0;

    if (t.degraded) {
      // Recovered once a round is back near the old level.
      if (r.share >= t.degraded.baseline_share / 2) {
        const was = t.degraded;
        t.degraded = null;
        t.history = [r.share];
        await this.record(agentId, {
          type: "prompt_cache_recovered",
          payload: {
            model_ref: modelRef,
            run_id: r.run_id,
            round: r.round,
            share: r.share,
            since: was.since,
          },
        });
      }
      return;
    }
    const ready = t.history.length >= MIN_BASELINE_ROUNDS && baseline >= MIN_BASELINE_SHARE;
    if (ready && r.share < baseline / 2) {
      t.low.push(r);
      if (t.low.length < LOW_ROUNDS) return;
      const first = t.low[0]!;
      t.degraded = {
        state: "degraded",
        model_ref: modelRef,
        since: r.at,
        baseline_share: baseline,
        current_share: r.share,
        first_changed: { run_id: first.run_id, round: first.round, at: first.at },
      };
      t.low = [];
      await this.record(agentId, {
        type: "prompt_cache_degraded",
        payload: {
          model_ref: modelRef,
          baseline_share: baseline,
          current_share: r.share,
          rounds_low: LOW_ROUNDS,
          first_changed: t.degraded.first_changed,
        },
      });
      return;
    }
    // A single low round (a cache that expired while idle) is forgotten by the next good one.
    for (const low of t.low) t.history.push(low.share);
    t.low = [];
    t.history.push(r.share);
    if (t.history.length > BASELINE_ROUNDS) t.history.splice(0, t.history.length - BASELINE_ROUNDS);
  }

  private async record(agentId: string, event: Parameters<Store["appendEvent"]>[1]): Promise<void> {
    try {
      await this.store.tx(async () => {
        if (await this.store.agents.get(agentId)) await this.store.appendEvent(agentId, event);
      });
    } catch {
      // a diagnostic must never break the runtime (a full disk, a deleted agent)
    }
  }
}
