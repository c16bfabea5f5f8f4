// The work a host does on a turn's path, driven as a client would, for the tests that look
// at every statement it sends (query-plans.test.ts on SQLite, query-plans-pg.test.ts on
// Postgres): operator prompts with and without a tool round, a public enqueue, a command
// task, the inspection reads, an SSE replay, and a run's transcript.
import { expect } from "vitest";
import { reply, type FakeProvider } from "../fake-provider/server.ts";
import { waitFor, type TestRuntime } from "./home.ts";
import { openSse } from "./sse.ts";

export async function turnPathWorkload(rt: TestRuntime, fake: FakeProvider): Promise<void> {
  const prompt = async (text: string) => {
    const res = await rt.req("POST", "/control/agents/main/prompt", { text });
    expect(res.status).toBe(202);
    return res.json.message_id as string;
  };
  const settled = (id: string) =>
    waitFor(async () => (await rt.host.store.messages.get(id))?.status === "processed", {
      what: `message ${id} processed`,
    });
  fake.enqueue(reply.text("first answer"));
  await settled(await prompt("hello"));
  fake.enqueue(
    reply.tools([{ name: "ExecCommand", arguments: { cmd: "true" }, call_id: "c1" }]),
    reply.text("ran it"),
  );
  await settled(await prompt("run true"));
  fake.enqueue(reply.text("noted"));
  const enq = await rt.req("POST", "/agents/main/enqueue", { text: "a channel event" });
  expect(enq.status).toBe(202);
  await settled(enq.json.message_id);

  fake.setFallback(() => reply.text("task seen"));
  const task = await rt.req("POST", "/control/agents/main/tasks", { cmd: "true" });
  expect(task.status).toBeLessThan(300);
  const taskId = (task.json.task?.task_id ?? task.json.task_id) as string;
  await waitFor(
    async () =>
      ["completed", "failed"].includes((await rt.host.store.tasks.get(taskId))?.status ?? ""),
    { what: "task to finish" },
  );
  await waitFor(async () => (await rt.host.store.messages.pendingCount("main")) === 0, {
    what: "queue to drain",
  });

  for (const path of ["status", "state", "briefs", "transcript", "tasks", "events?limit=5"]) {
    expect((await rt.req("GET", `/agents/main/${path}`)).status).toBe(200);
  }
  await rt.req("GET", "/agents/main/events?after_seq=3&order=asc&limit=5");
  await rt.req("GET", `/agents/main/tasks/${taskId}/output`);
  const sse = await openSse(`${rt.url}/agents/main/events/stream?after_seq=1`, {
    authorization: `Bearer ${rt.token}`,
  });
  for await (const _ of sse.frames) break;
  sse.close();
  const runId = (await rt.host.store.transcript.recent("main", 1))[0]!.run_id!;
  await rt.host.store.transcript.forRun("main", runId);
}
