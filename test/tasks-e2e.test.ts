// The task plane through the whole product with a scripted model: ExecCommand outlives its
// yield time and is promoted, the model follows the task with TaskStatus and TaskOutput, and
// the task's terminal result later comes back through the queue as its own model turn.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupHomes, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import {
  reply,
  startFakeProvider,
  type FakeProvider,
  type RecordedRequest,
} from "./fake-provider/server.ts";

let fake: FakeProvider;
let rt: TestRuntime | undefined;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  if (rt) {
    const tasks = rt.host.tasks;
    await Promise.all((await rt.host.store.tasks.active()).map((t) => tasks.stop(t.id, 100)));
    await rt.close();
  }
  await fake.close();
  cleanupHomes();
});

/** A model request of a turn (a Responses request with its input list). */
function isTurnRequest(req: RecordedRequest): boolean {
  return req.method === "POST" && Array.isArray((req.body as { input?: unknown })?.input);
}

/** Tool results (function_call_output) in a Responses request, in order. */
function toolOutputs(req: RecordedRequest): string[] {
  return (req.body.input as any[])
    .filter((i) => i.type === "function_call_output")
    .map((i) => String(i.output));
}

describe("task plane end to end", () => {
  it("promotes a long ExecCommand, follows it with TaskStatus/TaskOutput, and rejoins its result", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    rt = await startRuntime({
      env: { ...process.env, HOLON_HOME: home },
      home,
    });
    const gate = join((await rt.host.agents.get("main")).agent_home, "gate");
    let taskId = "";
    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([
        {
          name: "ExecCommand",
          arguments: {
            cmd: `echo started; while [ ! -e ${gate} ]; do sleep 0.02; done; echo finished`,
            yield_time_ms: 100,
          },
          call_id: "c1",
        },
      ]),
      (req) => {
        const promoted = toolOutputs(req).at(-1)!;
        taskId = /Task: (task_\w+)/.exec(promoted)![1]!;
        return reply.tools([
          { name: "TaskStatus", arguments: { task_id: taskId }, call_id: "c2" },
          { name: "TaskOutput", arguments: { task_id: taskId }, call_id: "c3" },
        ]);
      },
      () => {
        writeFileSync(gate, "");
        return reply.tools([
          {
            name: "TaskOutput",
            arguments: { task_id: taskId, block: true, timeout_ms: 20_000 },
            call_id: "c4",
          },
        ]);
      },
      reply.text("The command finished."),
      reply.text("Noted the task result."),
    );
    const prompt = await rt.req("POST", "/control/agents/main/prompt", {
      text: "run the slow command",
    });
    expect(prompt.status).toBe(202);
    await waitFor(() => fake.requests.slice(before).filter(isTurnRequest).length >= 5, {
      what: "the task_result turn to reach the model",
      timeoutMs: 20_000,
    });
    // The turn's model requests. A request without an `input` list was seen once in a CI run
    // (not reproduced in eleven local runs): say what it was, for whoever looks next, and
    // judge the turn by its model requests.
    const sent = fake.requests.slice(before).filter((r) => {
      if (!isTurnRequest(r))
        console.warn(`not a turn request: ${r.method} ${r.path} ${r.raw.slice(0, 300)}`);
      return isTurnRequest(r);
    });

    const promoted = toolOutputs(sent[1]!).at(-1)!;
    expect(promoted).toContain("continues as a background task");
    expect(promoted).toContain(`Task: ${taskId}`);

    const [status, early] = toolOutputs(sent[2]!).slice(-2);
    expect(status).toContain(`Task ${taskId} (command_task): running`);
    expect(status).not.toContain("started\n"); // no output bytes in the lifecycle snapshot
    expect(early).toContain("still running");

    const final = toolOutputs(sent[3]!).at(-1)!;
    expect(final).toContain(`Task ${taskId} completed (exit status 0)`);
    expect(final).toContain("started\nfinished");

    // the terminal result came back as its own runtime-owned message and turn
    const rejoin = JSON.stringify(sent[4]!.body.input);
    expect(rejoin).toContain("kind=task_result");
    expect(rejoin).toContain("authority=runtime_instruction");
    expect(rejoin).toContain(`Task ${taskId} completed`);
    const host = rt.host;
    const results = await waitFor(async () => {
      const done = (await host.store.messages.withStatus("main", "processed")).filter(
        (m) => m.kind === "task_result" && m.task_id === taskId,
      );
      return done.length > 0 ? done : null;
    });
    expect(results).toHaveLength(1);
  }, 40_000);
});
