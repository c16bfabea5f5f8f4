// Queue order, lifecycle control and restart behaviour, through the host and HTTP.
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import type { TurnExecutor, TurnRequest } from "../src/agent/runtime.ts";
import { RuntimeHost } from "../src/host/host.ts";

afterAll(cleanupHomes);

/** Records the order messages reach the turn executor and completes them at once. */
function recorder() {
  const seen: string[] = [];
  const executor: TurnExecutor = {
    async run(req: TurnRequest) {
      seen.push(req.message.body.type === "text" ? req.message.body.text : "?");
      return { kind: "settled" };
    },
  };
  return { seen, executor };
}

async function gapFree(host: RuntimeHost, agentId: string) {
  const events = await host.store.events.query(agentId, { limit: 100_000, order: "asc" });
  events.forEach((e, i) => expect(e.event_seq).toBe(i + 1));
  return events;
}

describe("queue", () => {
  it("dequeues by priority band, FIFO within a band", async () => {
    const { seen, executor } = recorder();
    const rt = await startRuntime({ executor: () => executor });
    await rt.host.lifecycle.control("main", "pause");
    const send = (text: string, priority: string, path = "/agents/main/enqueue") =>
      rt.req("POST", path, path.includes("control") ? { text, priority } : { text, priority });
    await send("bg1", "background");
    await send("n1", "normal");
    await send("x1", "next");
    await send("n2", "normal");
    await send("i1", "interject", "/control/agents/main/prompt");
    await send("x2", "next");
    await send("bg2", "background");
    await rt.host.lifecycle.control("main", "resume");
    await waitFor(() => seen.length === 7, { what: "all messages processed" });
    expect(seen).toEqual(["i1", "x1", "x2", "n1", "n2", "bg1", "bg2"]);
    await gapFree(rt.host, "main");
    await rt.close();
  });

  it("queued messages survive a restart and run afterwards; processed ones stay auditable", async () => {
    const home = tempHome();
    const first = await startRuntime({ home, executor: () => recorder().executor });
    await first.host.lifecycle.control("main", "pause");
    const ids: string[] = [];
    for (const t of ["a", "b", "c"])
      ids.push((await first.req("POST", "/enqueue", { text: t })).json.message_id);
    await first.close();

    const { seen, executor } = recorder();
    const second = await startRuntime({ home, executor: () => executor });
    expect((await second.host.agents.get("main")).status).toBe("paused");
    expect(await second.host.store.messages.pendingCount("main")).toBe(3);
    await second.host.lifecycle.control("main", "resume");
    await waitFor(() => seen.length === 3);
    expect(seen).toEqual(["a", "b", "c"]);
    await waitFor(async () => {
      for (const id of ids)
        if ((await second.host.store.messages.get(id))?.status !== "processed") return false;
      return true;
    });
    // queue wait is derivable from message_admitted → message_processing_started
    const events = await gapFree(second.host, "main");
    for (const id of ids) {
      const admitted = events.find(
        (e) => e.type === "message_admitted" && e.payload.message_id === id,
      )!;
      const started = events.find(
        (e) => e.type === "message_processing_started" && e.payload.message_id === id,
      )!;
      expect(Date.parse(started.ts)).toBeGreaterThanOrEqual(Date.parse(admitted.ts));
      expect(typeof started.payload.queue_wait_ms).toBe("number");
    }
    await second.close();
  });
});

describe("lifecycle", () => {
  it("stop is durable, rejects new input with resume guidance, and wake does not cross it", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home, executor: () => recorder().executor });
    const stop = await rt.req("POST", "/control/agents/main/control", { action: "stop" });
    expect(stop.json).toMatchObject({ ok: true, status: "stopped", disposition: "stopped" });

    const prompt = await rt.req("POST", "/control/agents/main/prompt", { text: "hi" });
    expect(prompt.status).toBe(409);
    expect(prompt.json.error.kind).toBe("agent_stopped");
    expect(prompt.json.error.hint).toContain("holon agent start");
    const pub = await rt.req("POST", "/enqueue", { text: "hi" });
    expect(pub.json.error.kind).toBe("agent_stopped");
    const hook = await rt.req("POST", "/webhooks/generic/main", { a: 1 });
    expect(hook.json.error.kind).toBe("agent_stopped");

    const wake = await rt.req("POST", "/control/agents/main/wake", { reason: "test" });
    expect(wake.status).toBe(409);
    expect(wake.json.error).toMatchObject({ kind: "agent_stopped", resume_required: true });

    const status = await rt.req("GET", "/status");
    expect(status.json.status).toBe("stopped");
    expect(status.json.lifecycle_hint).toMatchObject({ resume_required: true });
    await rt.close();

    // stopped survives restart; resume restores a live loop that processes new work
    const { seen, executor } = recorder();
    const again = await startRuntime({ home, executor: () => executor });
    expect((await again.host.agents.get("main")).status).toBe("stopped");
    const resume = await again.req("POST", "/control/agents/main/control", { action: "resume" });
    expect(resume.json.disposition).toBe("resumed");
    await again.req("POST", "/control/agents/main/prompt", { text: "after resume" });
    await waitFor(() => seen.includes("after resume"));
    await again.close();
  });

  it("an interjection that arrives while the run is aborting is queued next, not lost", async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    // A run that takes its time to wind down after the abort, like a provider call does.
    const slow: TurnExecutor = {
      run: (req) =>
        new Promise((resolve) =>
          req.signal.addEventListener("abort", () => {
            void released.then(() => resolve({ kind: "aborted", reason: "operator_aborted" }));
          }),
        ),
    };
    const rt = await startRuntime({ executor: () => slow });
    const first = await rt.req("POST", "/control/agents/main/prompt", { text: "long job" });
    await waitFor(async () => (await rt.host.agents.get("main")).status === "awake_running");
    expect((await rt.req("POST", "/control/agents/main/current-run/abort", {})).status).toBe(202);
    const late = await rt.req("POST", "/control/agents/main/prompt", {
      text: "wait, one more thing",
      priority: "interject",
    });
    expect(late.status).toBe(202);
    expect(late.json).toMatchObject({ priority: "next", delivery: "queued" });
    release();
    await waitFor(
      async () => (await rt.host.store.messages.get(first.json.message_id))?.status === "aborted",
    );
    const kept = (await rt.host.store.messages.get(late.json.message_id))!;
    expect(kept).toMatchObject({ status: "queued", priority: "next" });
    await rt.close();
  });

  it("stop cancels the agent's live tasks and its sleep deadline", async () => {
    const rt = await startRuntime({ executor: () => recorder().executor });
    const task = await rt.host.tasks.start({
      agent_id: "main",
      cmd: "sleep 30",
      workdir: (await rt.host.agents.get("main")).agent_home,
      shell: "/bin/sh",
      login: false,
      tty: false,
      accepts_input: false,
      terminal_reentry: false,
    });
    await rt.host.services.sleep.arm("main", new Date(Date.now() + 600_000).toISOString(), 600_000);
    expect(await rt.host.store.deadlines.forAgent("main")).toHaveLength(1);
    const res = await rt.req("POST", "/control/agents/main/control", { action: "stop" });
    expect(res.json.status).toBe("stopped");
    await waitFor(async () => (await rt.host.store.tasks.get(task.id))?.status === "cancelled", {
      what: "the task to be cancelled",
    });
    expect(await rt.host.store.deadlines.forAgent("main")).toHaveLength(0);
    await rt.close();
  });

  it("graceful shutdown does not persist agents as stopped", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home });
    await rt.req("POST", "/control/agents/builder/create", {});
    await rt.close();
    const again = await RuntimeHost.open({ home });
    for (const a of await again.store.agents.list()) expect(a.status).not.toBe("stopped");
    await again.shutdown();
  });

  it("pause holds the queue, wake reports dispositions, resume drains it", async () => {
    const { seen, executor } = recorder();
    const rt = await startRuntime({ executor: () => executor });
    await waitFor(async () => (await rt.host.agents.get("main")).status === "asleep");
    const wake = await rt.req("POST", "/control/agents/main/wake", {});
    expect(wake.json.disposition).toBe("woken");
    await rt.req("POST", "/control/agents/main/control", { action: "pause" });
    await rt.req("POST", "/control/agents/main/prompt", { text: "held" });
    expect((await rt.req("POST", "/control/agents/main/wake", {})).json.disposition).toBe("paused");
    expect(await rt.host.store.messages.pendingCount("main")).toBe(1);
    expect(seen).toEqual([]);
    await rt.req("POST", "/control/agents/main/control", { action: "resume" });
    await waitFor(() => seen.length === 1);
    await waitFor(async () => (await rt.host.agents.get("main")).status === "asleep");
    const types = (await rt.host.store.events.query("main", { limit: 200, order: "asc" })).map(
      (e) => e.type,
    );
    expect(types).toContain("control_applied");
    expect(types).toContain("wake_requested");
    await rt.close();
  });

  it("named agents exist only by explicit creation", async () => {
    const rt = await startRuntime();
    expect(
      (await rt.req("POST", "/control/agents/builder/prompt", { text: "x" })).json.error.kind,
    ).toBe("unknown_agent");
    expect((await rt.req("GET", "/agents/builder/status")).status).toBe(404);
    const created = await rt.req("POST", "/control/agents/builder/create", {});
    expect(created.status).toBe(201);
    expect(created.json.agent).toMatchObject({
      agent_id: "builder",
      kind: "named",
      visibility: "public",
    });
    expect((await rt.req("POST", "/control/agents/builder/create", {})).json.error.kind).toBe(
      "agent_exists",
    );
    expect((await rt.req("POST", "/control/agents/bad%20id/create", {})).json.error.kind).toBe(
      "invalid_agent_id",
    );
    const list = await rt.req("GET", "/agents/list");
    expect(list.json.agents.map((a: any) => a.agent_id).sort()).toEqual(["builder", "main"]);
    await rt.close();
  });

  it("HOLON_AGENT_ID picks the default agent", async () => {
    const rt = await startRuntime({ defaultAgentId: "alpha" });
    expect((await rt.req("GET", "/")).json.default_agent).toBe("alpha");
    expect((await rt.req("GET", "/status")).json.agent_id).toBe("alpha");
    await rt.close();
  });

  it("a failing turn leaves a failure brief, a runtime_failure entry and a runtime_error event", async () => {
    const rt = await startRuntime(); // no provider configured: the unconfigured executor fails honestly
    const sent = await rt.req("POST", "/control/agents/main/prompt", { text: "hello" });
    await waitFor(
      async () => (await rt.host.store.messages.get(sent.json.message_id))?.status === "processed",
    );
    const briefs = (await rt.req("GET", "/briefs")).json.briefs;
    expect(briefs.at(-1)).toMatchObject({
      kind: "failure",
      related_message_id: sent.json.message_id,
    });
    const transcript = (await rt.req("GET", "/transcript")).json.entries;
    expect(transcript.some((e: any) => e.kind === "runtime_failure")).toBe(true);
    const events = (await rt.req("GET", "/agents/main/events?order=asc&limit=500")).json.events;
    expect(events.some((e: any) => e.type === "runtime_error")).toBe(true);
    expect((await rt.req("GET", "/status")).json.last_failure.summary).toMatch(/model provider/);
    await rt.close();
  });

  it("the home is locked to one runtime", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home });
    await expect(RuntimeHost.open({ home })).rejects.toThrowError(/another Holon runtime/);
    await rt.close();
  });
});
