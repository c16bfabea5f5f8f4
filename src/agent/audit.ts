// Runtime-level audit records that belong to no run: refused HTTP requests and operator
// shutdown requests. The edges (http/) report them here instead of writing events.
import type { EventPayload } from "../domain/events.ts";
import type { Store } from "../store/db.ts";

export class RuntimeAudit {
  private readonly store: Store;
  private readonly defaultAgentId: string;

  constructor(store: Store, defaultAgentId: string) {
    this.store = store;
    this.defaultAgentId = defaultAgentId;
  }

  /** A refused request, recorded on the public agent its path names, else the default agent. */
  async requestRefused(
    agentHint: string | null,
    payload: EventPayload<"http_request_refused">,
  ): Promise<void> {
    const hinted = agentHint ? await this.store.agents.get(agentHint) : undefined;
    const agentId =
      hinted && hinted.visibility === "public" ? hinted.agent_id : this.defaultAgentId;
    await this.store.tx(
      async () => await this.store.appendEvent(agentId, { type: "http_request_refused", payload }),
    );
  }

  /** The operator asked the runtime to shut down: recorded on every public agent. */
  async shutdownRequested(source: "control"): Promise<void> {
    await this.store.tx(async () => {
      for (const a of await this.store.agents.list()) {
        if (a.visibility !== "public") continue;
        await this.store.appendEvent(a.agent_id, {
          type: "runtime_service_shutdown_requested",
          payload: { source },
        });
      }
    });
  }
}
