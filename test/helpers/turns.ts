// Driving an agent turn by turn over the control API: prompt it, then wait until the host has
// processed that prompt (its turn is over), so the next step sees the turn's effects.
import { expect } from "vitest";
import { waitFor, type TestRuntime } from "./home.ts";

/** How many operator prompts the agent has processed so far. */
async function promptsProcessed(rt: TestRuntime, agent: string): Promise<number> {
  return (await rt.host.store.messages.withStatus(agent, "processed")).filter(
    (m) => m.kind === "operator_prompt",
  ).length;
}

/** Prompt `agent` (default `main`) with `text` and wait until that turn has finished. */
export async function promptAndWait(
  rt: TestRuntime,
  text: string,
  opts: { agent?: string; timeoutMs?: number } = {},
): Promise<void> {
  const agent = opts.agent ?? "main";
  const before = await promptsProcessed(rt, agent);
  expect((await rt.req("POST", `/control/agents/${agent}/prompt`, { text })).status).toBe(202);
  await waitFor(async () => (await promptsProcessed(rt, agent)) > before, {
    what: `the turn of "${text}" to finish`,
    timeoutMs: opts.timeoutMs ?? 15_000,
  });
}
