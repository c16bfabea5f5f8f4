// Watches the store's health (store/health.ts) while the host runs. Every second it checks
// that the database file is still the one the host opened; while the store is `full` or
// `unavailable` it tries one small write, the `storage_outage` event that records the outage
// (from when to when, what was refused) on the default agent. When that write goes through
// the outage is over: agents waiting on the store go on and clients' writes are accepted
// again, with no restart.
import type { Store } from "../store/db.ts";

export type StorageWatchDeps = {
  store: Store;
  defaultAgentId: string;
  /** How often the file is checked and, during an outage, a write is tried (default 1 s). */
  intervalMs?: number;
};

export class StorageWatch {
  private readonly store: Store;
  private readonly defaultAgentId: string;
  private readonly intervalMs: number;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(deps: StorageWatchDeps) {
    this.store = deps.store;
    this.defaultAgentId = deps.defaultAgentId;
    this.intervalMs = deps.intervalMs ?? 1_000;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.check(), this.intervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look: is the file ours, and (during an outage) does a write go through again? */
  check(): void {
    const health = this.store.health;
    if (!health.checkFile(true)) return;
    if (health.state === "ok") return;
    const outage = health.outage();
    if (!outage) return;
    const store = this.store;
    try {
      health.probe(
        async () =>
          await store.tx(async () => {
            const agent =
              (await store.agents.get(this.defaultAgentId)) ?? (await store.agents.list())[0];
            if (agent)
              await store.appendEvent(agent.agent_id, { type: "storage_outage", payload: outage });
          }),
      );
    } catch {
      return; // still refused; the next look tries again
    }
    health.recovered();
  }
}
