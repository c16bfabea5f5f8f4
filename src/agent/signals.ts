// Agent signals: how a producer tells an agent's loop "look at your queue again" without
// knowing whether, or where, that loop runs. The loops subscribe; the ingress, lifecycle
// control and the scheduler notify. Constructed first, so nothing else needs a cycle.

export class AgentSignals {
  private readonly listeners = new Map<string, () => void>();

  /** Register the one listener for an agent (its loop). Returns the unsubscribe function. */
  subscribe(agentId: string, listener: () => void): () => void {
    this.listeners.set(agentId, listener);
    return () => {
      if (this.listeners.get(agentId) === listener) this.listeners.delete(agentId);
    };
  }

  notify(agentId: string): void {
    this.listeners.get(agentId)?.();
  }
}
