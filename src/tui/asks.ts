// The console's ask indicator: how many asks wait on the operator, across agents, and how
// many of them are this agent's. One line part, read with the state line (GET /control/asks);
// answering stays with `holon asks answer`.
import type { HolonClient } from "../client/client.ts";

export type PendingAsk = { id: string; agent_id: string; about: string };

export async function pendingAsks(c: HolonClient): Promise<PendingAsk[] | undefined> {
  const res = await c
    .call<{ asks: PendingAsk[] }>("GET", "/control/asks?state=pending&limit=100")
    .catch(() => undefined);
  return res?.asks;
}

/** `asks 2 waiting on you (1 here: ask_… about …)`, or nothing when none wait. */
export function asksIndicator(asks: PendingAsk[] | undefined, agentId: string | undefined): string {
  if (!asks?.length) return "";
  const here = asks.filter((a) => a.agent_id === agentId);
  const first = here[0] ?? asks[0]!;
  const scope = here.length ? `${here.length} here` : `first: ${first.agent_id}`;
  return `asks ${asks.length} waiting on you (${scope}: ${first.id} ${first.about.slice(0, 50)}; holon asks)`;
}
