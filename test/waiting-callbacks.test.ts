// External trigger capabilities and wake hints through the whole product: a real host on
// loopback, the scripted fake provider configured as a user would, and an outside system
// that only has the trigger URL. A delivery wakes the agent with its body and provenance;
// a plain wake costs no model request; refused deliveries change nothing but the audit log;
// a burst of hints to a busy agent becomes one SystemTick.
import { describe, expect, it } from "vitest";
import { request } from "node:http";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

async function runtime(): Promise<TestRuntime> {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const rt = await startRuntime({ home });
  await waitFor(async () => (await rt.host.agents.get("main")).status === "asleep", {
    what: "main asleep",
  });
  return rt;
}

async function triggerUrl(rt: TestRuntime): Promise<string> {
  const r = await rt.req("GET", "/control/agents/main/external-trigger");
  expect(r.status).toBe(200);
  return r.json.external_trigger.trigger_url as string;
}

/** An outside system: no token, whatever content type it likes. */
function deliver(url: string, body?: string, headers: Record<string, string> = {}) {
  return fetch(url, { method: "POST", headers, ...(body !== undefined ? { body } : {}) });
}

async function messages(rt: TestRuntime) {
  return await rt.host.store.messages.recent("main", 1_000);
}
async function events(rt: TestRuntime, type: string) {
  return (await rt.host.store.events.query("main", { limit: 100_000, order: "asc" })).filter(
    (e) => e.type === type,
  );
}
function settled(rt: TestRuntime, id: string) {
  return waitFor(
    async () => {
      const s = (await rt.host.store.messages.get(id))?.status;
      return s && s !== "queued" && s !== "processing" ? s : undefined;
    },
    { what: `message ${id} to settle` },
  );
}
async function tickOf(rt: TestRuntime, n = 1) {
  const ticks = await waitFor(async () => {
    const t = (await messages(rt)).filter((m) => m.kind === "system_tick");
    return t.length >= n ? t : undefined;
  });
  return ticks[0]!;
}

describe("external trigger capability", () => {
  it("a delivery wakes a sleeping agent; the next turn sees the body and its provenance", async () => {
    const rt = await runtime();
    const url = await triggerUrl(rt);
    expect(url).toMatch(new RegExp(`^${rt.url}/callbacks/wake/[A-Za-z0-9_-]{43}$`));
    // the same URL comes back, not a new one
    expect(await triggerUrl(rt)).toBe(url);

    fake.enqueue(reply.text("CI run 42 passed; nothing else to do"));
    const before = fake.requests.length;
    const res = await deliver(url, JSON.stringify({ event: "ci_finished", run: 42 }), {
      "content-type": "application/json",
      "x-correlation-id": "ci-42",
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({
      ok: true,
      delivery_mode: "wake_hint",
      disposition: "woken",
    });

    const tick = await tickOf(rt);
    expect(tick).toMatchObject({
      kind: "system_tick",
      origin: { kind: "callback" },
      trust: "trusted_integration",
      authority_class: "integration_signal",
      delivery_surface: "http_callback_wake",
      admission_context: "external_trigger_capability",
      correlation_id: "ci-42",
      metadata: {
        wake_hint: {
          source: "external_trigger",
          delivery_mode: "wake_hint",
          body: { content_type: "application/json", encoding: "utf8", bytes: 32 },
          correlation_ids: ["ci-42"],
        },
      },
    });
    await settled(rt, tick.id);
    const sent = fake.requests[before]!.raw;
    expect(sent).toContain("ci_finished");
    expect(sent).toContain("origin=callback");
    expect(sent).toContain("authority=integration_signal");
    expect(sent).toContain("via=http_callback_wake");
    // the capability itself is in the prompt, marked as a secret
    expect(sent).toContain(url);
    expect(sent).toContain("secret capability");
    const [continuation] = (await events(rt, "continuation_resolved")).filter(
      (e) => e.provenance.message_id === tick.id,
    );
    expect(continuation!.payload).toMatchObject({
      trigger_kind: "system_tick",
      model_visible: true,
    });

    const state = (await rt.req("GET", "/agents/main/state")).json;
    expect(state.external_triggers).toEqual([
      expect.objectContaining({
        target_agent_id: "main",
        delivery_mode: "wake_hint",
        status: "active",
        redacted: true,
        delivery_count: 1,
        trigger_url: `${rt.url}/callbacks/wake/<redacted>`,
      }),
    ]);
    expect(JSON.stringify(state)).not.toContain(url);
    await rt.close();
  });

  it("a body-less hint to an idle agent with no work makes no model request", async () => {
    const rt = await runtime();
    const url = await triggerUrl(rt);
    const before = fake.requests.length;
    const res = await deliver(url);
    expect(res.status).toBe(202);
    const tick = await tickOf(rt);
    await settled(rt, tick.id);
    const [continuation] = (await events(rt, "continuation_resolved")).filter(
      (e) => e.provenance.message_id === tick.id,
    );
    expect(continuation!.payload).toMatchObject({ class: "liveness_only", model_visible: false });
    expect(continuation!.payload.evidence).toContain("wake_hint_without_body");

    // operator wake: the same liveness wake, with the operator's origin
    await waitFor(async () => (await rt.host.agents.get("main")).status === "asleep");
    const cli = await runCli(["agent", "wake", "main"], { env: { HOLON_HOME: rt.home } });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain("woken");
    const ticks = await waitFor(async () => {
      const t = (await messages(rt)).filter((m) => m.kind === "system_tick");
      return t.length === 2 ? t : undefined;
    });
    const operatorTick = ticks.find((m) => m.origin.kind === "operator")!;
    expect(operatorTick.trust).toBe("trusted_operator");
    await settled(rt, operatorTick.id);
    expect(fake.requests.length).toBe(before);
    expect((await events(rt, "wake_requested")).at(-1)!.payload).toMatchObject({
      disposition: "woken",
    });
    await rt.close();
  });

  it("a body-less hint to an idle agent with runnable work makes one model turn", async () => {
    const rt = await runtime();
    const url = await triggerUrl(rt);
    // Work that is runnable but was never activated (no turn has run since it was picked).
    const work = rt.host.services.work;
    const item = await work.create("main", { objective: "tidy the changelog" }, "agent");
    await work.pick("main", item.id);
    expect(await rt.host.store.messages.pendingCount("main")).toBe(0);
    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "CompleteWorkItem", arguments: { work_item_id: item.id } }], {
        text: "The changelog is tidy.",
      }),
      reply.text("done"),
    );
    expect((await deliver(url)).status).toBe(202);
    const tick = await tickOf(rt);
    await settled(rt, tick.id);
    const [continuation] = (await events(rt, "continuation_resolved")).filter(
      (e) => e.provenance.message_id === tick.id,
    );
    expect(continuation!.payload).toMatchObject({ model_visible: true });
    expect(continuation!.payload.evidence).toContain("runnable_work");
    expect(fake.requests.length).toBe(before + 2);
    expect(fake.requests[before]!.raw).toContain("tidy the changelog");
    expect((await work.item("main", item.id)).state).toBe("completed");
    await rt.close();
  });

  it("unknown, revoked and oversized deliveries are refused and change nothing", async () => {
    const rt = await runtime();
    const url = await triggerUrl(rt);
    const countOf = async () => (await messages(rt)).length;
    const deliveries = async () =>
      (await rt.host.services.triggers.current("main"))!.delivery_count;
    const start = await countOf();

    const unknown = await deliver(`${rt.url}/callbacks/wake/${"A".repeat(43)}`, "{}", {
      "content-type": "application/json",
    });
    expect(unknown.status).toBe(404);
    expect(await events(rt, "external_trigger_refused")).toHaveLength(1);
    expect((await events(rt, "external_trigger_refused"))[0]!.payload).toMatchObject({
      reason: "unknown_token",
      requested_mode: "wake",
    });

    const big = await deliver(url, "x".repeat(300 * 1024), { "content-type": "text/plain" });
    expect(big.status).toBe(413);
    const justOver = await deliver(url, "x".repeat(256 * 1024 + 1), {
      "content-type": "text/plain",
    });
    expect(justOver.status).toBe(413);
    expect(await deliveries()).toBe(0);

    const revoked = await rt.req("POST", "/control/agents/main/external-trigger/revoke", {});
    expect(revoked.status).toBe(200);
    const afterRevoke = await deliver(url, "ping", { "content-type": "text/plain" });
    expect(afterRevoke.status).toBe(404);
    expect((await events(rt, "external_trigger_refused")).at(-1)!.payload).toMatchObject({
      reason: "revoked",
    });
    expect(await countOf()).toBe(start);
    expect((await rt.host.agents.get("main")).pending_wake_hint).toBeUndefined();

    // reading does not bring a revoked capability back; rotating makes a new one, and the
    // old URL stays dead
    const none = await rt.req("GET", "/control/agents/main/external-trigger");
    expect(none.status).toBe(404);
    expect(none.json.error.kind).toBe("no_external_trigger");
    const rotated = (await rt.req("POST", "/control/agents/main/external-trigger/rotate", {})).json
      .external_trigger.trigger_url;
    expect(rotated).not.toBe(url);
    expect(await triggerUrl(rt)).toBe(rotated);
    expect((await deliver(url, "{}")).status).toBe(404);

    // a stopped agent takes nothing: 409 with resume guidance, no delivery recorded
    await rt.req("POST", "/control/agents/main/control", { action: "stop" });
    const stopped = await deliver(rotated, "{}", { "content-type": "application/json" });
    expect(stopped.status).toBe(409);
    expect(((await stopped.json()) as { error: unknown }).error).toMatchObject({
      kind: "agent_stopped",
    });
    const wake = await rt.req("POST", "/control/agents/main/wake", {});
    expect(wake.status).toBe(409);
    expect(wake.json.error.hint).toContain("holon agent start main");
    expect(await countOf()).toBe(start);

    // repeated misses from one address are rate-limited, for every token
    let limited = 0;
    for (let i = 0; i < 12; i++) {
      const r = await deliver(`${rt.url}/callbacks/enqueue/guess${i}`, "{}");
      if (r.status === 429) limited++;
      else expect(r.status).toBe(404);
    }
    expect(limited).toBeGreaterThan(0);
    expect((await deliver(rotated, "{}")).status).toBe(429);
    expect(await countOf()).toBe(start);
    await rt.close();
  });

  it("a delivery of exactly 256 KB is taken whole, with its content type", async () => {
    const rt = await runtime();
    const url = await triggerUrl(rt);
    fake.enqueue(reply.text("read the big delivery"));
    const full = await deliver(url, "y".repeat(256 * 1024), { "content-type": "text/csv" });
    expect(full.status).toBe(202);
    const tick = await tickOf(rt);
    expect(tick.metadata).toMatchObject({
      wake_hint: { body: { content_type: "text/csv", bytes: 256 * 1024 } },
    });
    await settled(rt, tick.id);
    expect((await rt.host.services.triggers.current("main"))!.delivery_count).toBe(1);
    await rt.close();
  });

  it("callback URLs take any content type and no token, and ignore a browser origin", async () => {
    const rt = await runtime();
    const url = await triggerUrl(rt);
    fake.enqueue(reply.text("saw the form post"));
    const res = await deliver(url, "status=done&run=7", {
      "content-type": "application/x-www-form-urlencoded",
      origin: "https://ci.example",
    });
    expect(res.status).toBe(202);
    const tick = await tickOf(rt);
    expect(tick.metadata).toMatchObject({
      wake_hint: { body: { encoding: "utf8", data: "status=done&run=7" } },
    });
    await settled(rt, tick.id);
    // the enqueue URL is the deprecated path: mapped onto the same wake-hint behaviour
    fake.enqueue(reply.text("binary noted"));
    const enq = await deliver(
      url.replace("/callbacks/wake/", "/callbacks/enqueue/"),
      "\u0000\u00ff",
      {
        "content-type": "application/octet-stream",
      },
    );
    expect(enq.status).toBe(202);
    expect(await enq.json()).toMatchObject({ delivery_mode: "wake_hint" });
    const ticks = await waitFor(async () => {
      const t = (await messages(rt)).filter((m) => m.kind === "system_tick");
      return t.length === 2 ? t : undefined;
    });
    expect(ticks[0]).toMatchObject({
      delivery_surface: "http_callback_enqueue",
      metadata: { wake_hint: { requested_mode: "enqueue", body: { encoding: "base64" } } },
    });
    await settled(rt, ticks[0]!.id);
    await rt.close();
  });

  it("100 hints to a running agent become one SystemTick", async () => {
    const rt = await runtime();
    const url = await triggerUrl(rt);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    fake.enqueue(async () => {
      await gate;
      return reply.text("done with the long task");
    });
    const p = await rt.req("POST", "/control/agents/main/prompt", { text: "do the long task" });
    expect(p.status).toBe(202);
    await waitFor(async () => (await rt.host.agents.get("main")).status === "awake_running");
    for (let i = 0; i < 100; i++) {
      const r = await deliver(url, JSON.stringify({ n: i }), {
        "content-type": "application/json",
        "x-correlation-id": `c-${i}`,
      });
      expect(r.status).toBe(202);
      expect(((await r.json()) as { disposition: string }).disposition).toBe("pending");
    }
    const pending = (await rt.req("GET", "/agents/main/state")).json.pending_wake_hint;
    expect(pending).toMatchObject({ count: 100, source: "external_trigger" });
    const status = await runCli(["status", "main"], { env: { HOLON_HOME: rt.home } });
    expect(status.stdout).toContain("wake hint: pending from external_trigger (×100");

    const before = fake.requests.length;
    fake.enqueue(reply.text("looked at the latest delivery"));
    release();
    const tick = await tickOf(rt);
    await settled(rt, tick.id);
    expect((await messages(rt)).filter((m) => m.kind === "system_tick")).toHaveLength(1);
    const hint = tick.metadata!.wake_hint as {
      count: number;
      correlation_ids: string[];
      body: { data: string };
    };
    expect(hint.count).toBe(100);
    expect(hint.correlation_ids).toHaveLength(20);
    expect(hint.correlation_ids.at(-1)).toBe("c-99");
    expect(hint.body.data).toBe('{"n":99}');
    expect(await events(rt, "wake_hint_converted")).toHaveLength(1);
    expect((await rt.host.agents.get("main")).pending_wake_hint).toBeUndefined();
    expect(fake.requests.length).toBe(before + 1); // the tick's turn only
    expect(fake.requests.at(-1)!.raw).toContain("100 deliveries were coalesced");
    await rt.close();
  });

  it("a refused request to a callback URL leaves no token in the audit log", async () => {
    const rt = await runtime();
    const url = new URL(await triggerUrl(rt));
    // A DNS-rebinding page: right address, foreign Host. The guard refuses before routing.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { host: "rebind.example", "content-type": "text/plain" },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end("ping");
    });
    expect(status).toBe(403);
    const refused = await events(rt, "http_request_refused");
    expect(refused).toHaveLength(1);
    expect(refused[0]!.payload.path).toBe("/callbacks/wake/<redacted>");
    const token = url.pathname.split("/").at(-1)!;
    const log = JSON.stringify(
      await rt.host.store.events.query("main", { limit: 100_000, order: "asc" }),
    );
    expect(log).not.toContain(token);
    await rt.close();
  });
});
