// Driving an agent turn by turn over the control API: prompt it, then wait until the host has
// processed that prompt (its turn is over), so the next step sees the turn's effects.
import { expect } from "vitest";
import { waitFor, type runCli, type TestRuntime } from "./home.ts";
import { reply, type FakeProvider } from "../fake-provider/server.ts";

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

/**
 * `n` one-round text turns of `main` (numbered from `from`), each a short question and a
 * short scripted answer, then the agent asleep: the turn the footprint tests measure.
 */
export async function textTurns(
  rt: TestRuntime,
  fake: FakeProvider,
  n: number,
  from: number,
): Promise<void> {
  for (let i = from; i < from + n; i++) {
    fake.enqueue(
      reply.text(`Answer ${i}: the build passed and nothing else needs attention today.`, {
        input_tokens: 1200,
        output_tokens: 20,
      }),
    );
    const r = await rt.req("POST", "/control/agents/main/prompt", {
      text: `Question ${i}: did the nightly build pass?`,
    });
    expect(r.status).toBe(202);
    const id = r.json.message_id as string;
    await waitFor(async () => (await rt.host.store.messages.get(id))?.status === "processed", {
      what: `turn ${i}`,
    });
  }
  // The turn's last records (closure, the state change to asleep) land after its message.
  await waitFor(async () => (await rt.host.store.agents.get("main"))?.status === "asleep", {
    what: "asleep",
  });
}

/** An event as `holon tail --json` prints it. */
export type TailEvent = { event_seq: number; id: string; type: string; payload: any };

/**
 * Turns of `main` through the CLI, as a user drives a `holon serve`: `events()` reads the
 * log with `holon tail --json`, `turn(text)` prompts and waits until that message is processed.
 */
export function cliTurns(cli: (...args: string[]) => ReturnType<typeof runCli>) {
  const events = async (): Promise<TailEvent[]> => {
    const t = await cli("tail", "--json", "-n", "1000");
    expect(t.code, t.stderr).toBe(0);
    return JSON.parse(t.stdout) as TailEvent[];
  };
  const turn = async (text: string): Promise<void> => {
    const r = await cli("prompt", "--json", text);
    expect(r.code, r.stderr).toBe(0);
    const { message_id } = JSON.parse(r.stdout) as { message_id: string };
    await waitFor(
      async () =>
        (await events()).some(
          (e) => e.type === "message_processed" && e.payload.message_id === message_id,
        ),
      { what: `the turn for "${text}"`, timeoutMs: 30_000 },
    );
  };
  return { events, turn };
}
