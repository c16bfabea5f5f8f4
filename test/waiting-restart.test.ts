// Timers survive the process: a one-shot timer made with `holon timer` whose time passes
// while the host is SIGKILLed fires once when a new host starts, and the agent's next turn
// gets it as a timer_tick.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import {
  cleanupHomes,
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
} from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
const spawned: ChildProcess[] = [];
afterAll(async () => {
  for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  await fake.close();
  cleanupHomes();
});

describe("timers across a crash", () => {
  it("a timer due while the host is down fires once after start", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const env = { HOLON_HOME: home };
    const s = await spawnServe(home);
    spawned.push(s.proc);
    const made = await runCli(["timer", "main", "--in", "1s", "--json", "check", "the", "deploy"], {
      env,
    });
    expect(made.code, made.stderr).toBe(0);
    const timer = JSON.parse(made.stdout) as { timer_id: string; next_fire_at: string };
    const exited = new Promise((r) => s.proc.once("exit", r));
    s.proc.kill("SIGKILL");
    await exited;
    // The host is down; nothing can fire until the time has passed and a host starts.
    await waitFor(() => Date.now() > Date.parse(timer.next_fire_at) + 50, {
      what: "the timer's time to pass",
    });

    fake.enqueue(reply.text("the deploy finished"));
    const again = await spawnServe(home);
    // A failing assertion must not leave the host running.
    spawned.push(again.proc);
    await waitFor(
      async () => {
        const b = (await (
          await fetch(`${again.url}/agents/main/briefs`, { headers: again.auth })
        ).json()) as {
          briefs: { text: string }[];
        };
        return b.briefs.some((x) => x.text === "the deploy finished");
      },
      { what: "the agent's turn for the timer", timeoutMs: 20_000 },
    );
    const listed = await runCli(["timer", "list", "main", "--json"], { env });
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ timer_id: timer.timer_id, status: "completed", fire_count: 1 }),
    ]);
    const down = new Promise((r) => again.proc.once("exit", r));
    again.proc.kill("SIGTERM");
    await down;

    const rt = await startRuntime({ home });
    const ticks = (await rt.host.store.messages.recent("main", 50)).filter(
      (m) => m.kind === "timer_tick",
    );
    expect(ticks).toHaveLength(1);
    expect(ticks[0]).toMatchObject({
      origin: { kind: "timer", timer_id: timer.timer_id },
      delivery_surface: "timer_scheduler",
      body: { type: "text", text: "check the deploy" },
      metadata: { scheduled_for: timer.next_fire_at },
    });
    expect(Date.parse(ticks[0]!.created_at)).toBeGreaterThanOrEqual(Date.parse(timer.next_fire_at));
    const prompt = fake.requests.at(-1)!.raw;
    expect(prompt).toContain("check the deploy");
    expect(prompt).toContain(`timer_id=${timer.timer_id}`);
    expect(await rt.host.store.deadlines.forAgent("main")).toHaveLength(0);
    await rt.close();
  }, 90_000);
});
