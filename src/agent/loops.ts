// The set of running agent loops: one AgentRuntime per live agent, subscribed to its
// signal. Starting is idempotent; closing waits for every loop to finish its run.
import { AgentRuntime, type LoopDeps } from "./runtime.ts";
import type { AgentSignals } from "./signals.ts";

export class AgentLoops {
  private readonly deps: LoopDeps;
  private readonly signals: AgentSignals;
  private readonly runtimes = new Map<string, { rt: AgentRuntime; unsubscribe: () => void }>();
  private accepting = false;
  /** Runs before an agent's loop starts (the host's deferred start-up work for it). */
  private readonly beforeStart: (agentId: string) => Promise<void>;

  constructor(
    deps: LoopDeps,
    signals: AgentSignals,
    beforeStart: (agentId: string) => Promise<void> = async () => {},
  ) {
    this.deps = deps;
    this.signals = signals;
    this.beforeStart = beforeStart;
  }

  /** From now on, agents created at run time start their loop at once. */
  open(): void {
    this.accepting = true;
  }

  get isOpen(): boolean {
    return this.accepting;
  }

  /** Make sure this agent's loop runs (a no-op when it already does). */
  async start(agentId: string): Promise<void> {
    if (this.runtimes.has(agentId)) return;
    // Registered at once (a second start is a no-op); the loop runs once the deferred
    // start-up work is done, and a notice that came meanwhile is not lost (notify counts).
    const rt = new AgentRuntime(this.deps, agentId);
    const unsubscribe = this.signals.subscribe(agentId, () => rt.notify());
    this.runtimes.set(agentId, { rt, unsubscribe });
    await this.beforeStart(agentId);
    if (this.runtimes.get(agentId)?.rt === rt) rt.start();
  }

  get(agentId: string): AgentRuntime | undefined {
    return this.runtimes.get(agentId)?.rt;
  }

  /** End one agent's loop (a retired temporary agent); its records stay. */
  async retire(agentId: string): Promise<void> {
    const entry = this.runtimes.get(agentId);
    this.runtimes.delete(agentId);
    entry?.unsubscribe();
    await entry?.rt.close();
  }

  async close(): Promise<void> {
    this.accepting = false;
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    for (const e of all) e.unsubscribe();
    await Promise.all(all.map((e) => e.rt.close()));
  }
}
