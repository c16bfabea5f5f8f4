// Working memory's tool evidence comes from the calls the turn ran, handed over by the runtime
// at the turn boundary (never read back from the transcript): the commands, the failures and
// the per-message tool summary the recent history shows, including a call whose arguments
// are valid JSON but not an object (which once broke the working-memory update).
import { describe, expect, it } from "vitest";
import { startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

describe("tool evidence at the turn boundary", () => {
  it("records the turn's commands and failures from its calls, whatever their arguments", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home });
    try {
      const agent = rt.host.defaultAgentId;
      fake.enqueue(
        reply.tools([{ name: "ExecCommand", arguments: "null", call_id: "bad" }]),
        reply.tools([
          { name: "ExecCommand", arguments: { cmd: "echo evidence-marker" }, call_id: "good" },
        ]),
        reply.text("Both done."),
      );
      const r = await rt.req("POST", `/control/agents/${agent}/prompt`, { text: "run things" });
      expect(r.status).toBe(202);
      const id = r.json.message_id as string;
      await waitFor(
        async () =>
          (await rt.host.store.messages.get(id))?.status === "processed" &&
          !(await rt.host.store.agents.get(agent))!.current_run_id,
        { what: "the turn to settle" },
      );

      const failures = (await rt.host.store.events.after(agent, 0, 10_000)).filter(
        (e) => e.type === "runtime_error",
      );
      expect(failures).toEqual([]);
      const wm = (await rt.host.store.memory.workingMemory(agent))!;
      expect(wm.current.commands).toContain("echo evidence-marker");
      expect(wm.current.recent_errors.some((e) => e.startsWith("ExecCommand:"))).toBe(true);
      expect(wm.turn_tools.at(-1)).toEqual({
        message_id: id,
        tools: "ExecCommand 2× (1 failed)",
      });
      expect(wm.active_episode?.commands).toContain("echo evidence-marker");
    } finally {
      await rt.close();
    }
  }, 60_000);
});
