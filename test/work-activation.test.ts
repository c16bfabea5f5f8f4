// Work-queue activation: an idle agent with queued runnable work is woken to pick it, one
// item after the other; a blocked item never wakes it; and the runaway guard stops a model
// that would continue forever without progress, halting the item with an ask.
import { describe, expect, it } from "vitest";
import { startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

const events = async (rt: TestRuntime, agentId: string, type: string) =>
  (await rt.host.store.events.after(agentId, 0, 10_000)).filter((e) => e.type === type);

async function idle(rt: TestRuntime, agentId: string, processed: number) {
  await waitFor(
    async () =>
      (await events(rt, agentId, "message_processed")).length >= processed &&
      (await rt.host.store.messages.pendingCount(agentId)) === 0 &&
      !(await rt.host.store.agents.get(agentId))!.current_run_id,
    { what: `${processed} processed messages and an idle agent`, timeoutMs: 15_000 },
  );
}

describe("work-queue activation", () => {
  it("wakes an idle agent for queued work, one item after the other; a blocked item never wakes it", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home });
    const agent = rt.host.defaultAgentId;
    const work = rt.host.services.work;

    // A blocked item alone: nothing is admitted, nothing runs.
    const parked = await work.create(
      agent,
      { objective: "parked until legal answers" },
      "operator",
    );
    const blocked = await rt.req("POST", `/control/agents/${agent}/work-items/${parked.id}/block`, {
      reason: "waiting for legal",
    });
    expect(blocked.status).toBe(200);
    expect(blocked.json.work_item).toMatchObject({
      view: "blocked",
      blocked_by: "waiting for legal",
    });
    expect(await rt.host.store.messages.pendingCount(agent)).toBe(0);
    expect(await events(rt, agent, "work_activation")).toHaveLength(0);

    // Each woken turn picks the oldest runnable queued item and completes it with a report.
    const oldestQueued = async () => (await work.runnableQueued(agent))[0]!.id;
    const currentId = async () => (await rt.host.store.agents.get(agent))!.current_work_item_id!;
    for (let i = 0; i < 2; i++) {
      fake.enqueue(
        async () =>
          reply.tools([
            { name: "PickWorkItem", arguments: { work_item_id: await oldestQueued() } },
          ]),
        async () =>
          reply.tools(
            [{ name: "CompleteWorkItem", arguments: { work_item_id: await currentId() } }],
            {
              text: `Report for item ${i + 1}.`,
            },
          ),
        reply.text(`done ${i + 1}`),
      );
    }
    const a = await rt.req("POST", `/control/agents/${agent}/work-items`, {
      objective: "first job",
    });
    const b = await rt.req("POST", `/control/agents/${agent}/work-items`, {
      objective: "second job",
    });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(a.json.work_item).toMatchObject({ state: "open", created_by: "operator" });
    await idle(rt, agent, 2);

    // No transcript message for the enqueue itself: only runtime ticks were processed.
    const kinds = (await rt.host.store.messages.recent(agent, 20)).map((m) => m.kind);
    expect(kinds).toEqual(["system_tick", "system_tick"]);
    const activations = (await events(rt, agent, "work_activation")).map((e) => e.payload);
    expect(activations).toEqual([
      expect.objectContaining({
        mode: "activate_queued",
        work_item_id: a.json.work_item.id,
        disposition: "admitted",
      }),
      expect.objectContaining({
        mode: "activate_queued",
        work_item_id: b.json.work_item.id,
        disposition: "admitted",
      }),
    ]);
    for (const id of [a.json.work_item.id, b.json.work_item.id]) {
      const r = await rt.req("GET", `/agents/${agent}/work-items/${id}`);
      expect(r.json.work_item.state).toBe("completed");
      expect(r.json.work_item.completion_report.text).toMatch(/^Report for item \d\.$/);
    }
    // Only the blocked item is left: the agent rests, the closure says completed.
    const left = await rt.req("GET", `/agents/${agent}/work-items?state=open`);
    expect(left.json.work_items.map((w: { id: string }) => w.id)).toEqual([parked.id]);
    expect((await rt.host.store.agents.get(agent))!.closure).toMatchObject({
      outcome: "completed",
    });
    expect((await work.item(agent, parked.id)).state).toBe("open");

    // The operator closes the parked item with a note; it becomes the result summary.
    const closed = await rt.req(
      "POST",
      `/control/agents/${agent}/work-items/${parked.id}/complete`,
      {
        note: "superseded",
      },
    );
    expect(closed.json.work_item).toMatchObject({
      state: "completed",
      result_summary: "superseded",
      completion_report: { source: "operator_note", text: "superseded" },
    });
    await rt.close();
  });

  it("the runaway guard stops a model that continues forever without progress", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({
      home,
      env: { ...process.env, HOLON_WORK_MAX_CONTINUATIONS: "3" },
    });
    const agent = rt.host.defaultAgentId;
    const work = rt.host.services.work;
    const item = await work.create(
      agent,
      { objective: "an endless task", plan_status: "ready" },
      "agent",
    );
    await work.pick(agent, item.id);
    fake.setFallback(() => reply.text("Still thinking about it."));
    try {
      await rt.req("POST", `/control/agents/${agent}/prompt`, { text: "keep going" });
      const ask = await waitFor(async () => (await rt.host.services.asks.list())[0], {
        what: "the guard's ask",
      });
      await idle(rt, agent, 4);
      const admitted = (await events(rt, agent, "work_activation")).filter(
        (e) => e.payload.disposition === "admitted",
      );
      expect(admitted).toHaveLength(3);
      const halted = (await events(rt, agent, "work_activation")).filter(
        (e) => e.payload.disposition === "halted",
      );
      expect(halted).toHaveLength(1);
      expect(ask.work_item_id).toBe(item.id);
      expect(ask.detail).toContain("3 times in a row without progress");
      const c = (await rt.host.store.agents.get(agent))!.closure!;
      expect(c).toMatchObject({ outcome: "waiting", waiting_reason: "awaiting_operator_input" });
      expect(c.work_signal).toBeUndefined();
      expect((await rt.host.store.workItems.agentState(agent)).halted_at).toBeDefined();
      // An operator message no longer restarts the loop: the halt holds until the ask is
      // answered (test/asks.test.ts answers it).
      await rt.req("POST", `/control/agents/${agent}/prompt`, { text: "try once more" });
      await idle(rt, agent, 5);
      expect(
        (await events(rt, agent, "work_activation")).filter(
          (e) => e.payload.disposition === "admitted",
        ),
      ).toHaveLength(3);
      await work.complete(agent, item.id, { by: "operator", note: "stop" });
      expect((await rt.host.services.asks.get(ask.id)).state).toBe("withdrawn");
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });
});

describe("the pre-provider-call hook", () => {
  it("puts the stale-progress reminder into the provider request, not into the transcript", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const env = {
      ...process.env,
      HOLON_WORK_ITEM_STALE_REMINDER_ROUNDS: "2",
      HOLON_WORK_ITEM_STALE_REMINDER_COOLDOWN_ROUNDS: "100",
    };
    const rt = await startRuntime({ home, env });
    try {
      const agent = rt.host.defaultAgentId;
      const before = fake.requests.length;
      const current = async () => (await rt.host.store.agents.get(agent))!.current_work_item_id!;
      const exec = (id: string) =>
        reply.tools([{ name: "ExecCommand", arguments: { cmd: "true" }, call_id: id }]);
      fake.enqueue(
        reply.tools([
          { name: "CreateWorkItem", arguments: { objective: "Polish the README" }, call_id: "c" },
        ]),
        (req) =>
          reply.tools([
            {
              name: "PickWorkItem",
              arguments: { work_item_id: /wi_[0-9a-f]+/.exec(req.raw)![0] },
              call_id: "p",
            },
          ]),
        exec("e1"),
        exec("e2"),
        exec("e3"),
        async () =>
          reply.tools(
            [{ name: "CompleteWorkItem", arguments: { work_item_id: await current() } }],
            {
              text: "README polished.",
            },
          ),
        reply.text("Done."),
      );
      const res = await rt.req("POST", `/control/agents/${agent}/prompt`, { text: "polish it" });
      expect(res.status).toBe(202);
      await idle(rt, agent, 1);
      const sent = fake.requests.slice(before).map((r) => r.raw);
      expect(sent).toHaveLength(7);
      const marker =
        "[Runtime reminder, not from the user: 2 model rounds without a work-item update.]";
      // After the pick (a work-item update), two more rounds pass before the reminder is due.
      expect(sent.map((raw) => raw.includes(marker))).toEqual([
        false,
        false,
        false,
        false,
        true,
        false,
        false,
      ]);
      expect(sent[4]).toContain("Polish the README");
      const transcript = JSON.stringify(await rt.host.store.transcript.recent(agent, 1000));
      expect(transcript).not.toContain("Runtime reminder");
    } finally {
      await rt.close();
    }
  });
});
