// Timers on an injected clock: the host runs for real (SQLite, scheduler, ingress), only
// time is ours. The agent is paused, so each fire stays in its queue where we can count it.
// The scheduler is driven with `fireDue()` after each clock step; a restart is a real
// shutdown and reopen of the same home.
import { afterAll, describe, expect, it } from "vitest";
import { RuntimeHost } from "../src/host/host.ts";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { TIMER_FIRE, nextAfterFire, timerFireHandler } from "../src/waiting/timers.ts";
import { DeadlineScheduler } from "../src/waiting/scheduler.ts";
import { cleanupHomes, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { Ajv2020 } from "ajv/dist/2020.js";
import { z } from "zod";
import { AgentStateResponse, AgentSummary } from "../src/http/schemas.ts";

/** The waiting plane's parts of /state and /status, against the schemas /openapi.json shows. */
function expectDocumented(state: Record<string, unknown>, status: Record<string, unknown>) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const parts = AgentStateResponse.pick({
    timers: true,
    waiting_intents: true,
    external_triggers: true,
    pending_wake_hint: true,
    waiting: true,
  });
  for (const [schema, value] of [
    [parts, state],
    [AgentSummary.pick({ waiting: true }), { waiting: status.waiting }],
  ] as const) {
    const validate = ajv.compile(z.toJSONSchema(schema, { io: "output" }));
    const picked = Object.fromEntries(
      Object.keys(schema.shape).map((k) => [k, (value as Record<string, unknown>)[k]]),
    );
    expect(validate(picked), ajv.errorsText(validate.errors)).toBe(true);
  }
}

afterAll(() => cleanupHomes());

type TestClock = Clock & { set(iso: string): void; advance(ms: number): void };
function testClock(start: string): TestClock {
  let t = Date.parse(start);
  return {
    now: () => new Date(t),
    sleep: systemClock.sleep,
    set: (iso) => (t = Date.parse(iso)),
    advance: (ms) => (t += ms),
  };
}

const MIN = 60_000;
const HOUR = 60 * MIN;

async function open(home: string, clock: Clock): Promise<RuntimeHost> {
  return await RuntimeHost.open({ home, clock });
}

/** A paused agent: fires are admitted and stay queued. */
async function pausedHost(start = "2026-01-10T12:00:00.000Z") {
  const clock = testClock(start);
  const home = tempHome();
  const host = await open(home, clock);
  await host.lifecycle.control("main", "pause");
  return { clock, home, host };
}

async function ticks(host: RuntimeHost) {
  return (await host.store.messages.recent("main", 1_000)).filter((m) => m.kind === "timer_tick");
}

describe("timers on an injected clock", () => {
  it("a one-shot timer fires once, at its time, as a timer_tick with the summary", async () => {
    const { clock, host } = await pausedHost();
    const t = await host.services.timers.create("main", {
      summary: "check the deploy",
      duration_ms: 10 * MIN,
    });
    expect(t).toMatchObject({ kind: "one_shot", status: "active", fire_count: 0 });
    clock.advance(9 * MIN);
    await host.services.scheduler.fireDue();
    expect(await ticks(host)).toHaveLength(0);
    clock.advance(MIN);
    await host.services.scheduler.fireDue();
    await host.services.scheduler.fireDue();
    const [tick, ...rest] = await ticks(host);
    expect(rest).toHaveLength(0);
    expect(tick).toMatchObject({
      kind: "timer_tick",
      origin: { kind: "timer", timer_id: t.timer_id },
      delivery_surface: "timer_scheduler",
      trigger_kind: "timer_fire",
      trust: "trusted_system",
      body: { type: "text", text: "check the deploy" },
      metadata: { timer_id: t.timer_id, scheduled_for: t.next_fire_at, skipped: 0 },
    });
    expect(await host.services.timers.get("main", t.timer_id)).toMatchObject({
      status: "completed",
      fire_count: 1,
      next_fire_at: null,
      last_fired_at: clock.now().toISOString(),
    });
    expect(await host.store.deadlines.forAgent("main")).toHaveLength(0);
    await host.shutdown();
  });

  it("an interval timer fires every period and re-arms in the same transaction", async () => {
    const { clock, host } = await pausedHost();
    const t = await host.services.timers.create("main", { summary: "hourly", interval_ms: HOUR });
    for (let i = 1; i <= 3; i++) {
      clock.advance(HOUR);
      await host.services.scheduler.fireDue();
      expect(await ticks(host)).toHaveLength(i);
      // the next deadline is there as soon as the fire committed
      expect((await host.store.deadlines.forAgent("main")).map((d) => d.due_at)).toEqual([
        new Date(Date.parse("2026-01-10T12:00:00Z") + (i + 1) * HOUR).toISOString(),
      ]);
    }
    expect(await host.services.timers.get("main", t.timer_id)).toMatchObject({
      status: "active",
      fire_count: 3,
      skipped_count: 0,
    });
    await host.shutdown();
  });

  it("a cron timer in a time zone follows the zone across a DST change", async () => {
    // Europe/Berlin moves from CET (UTC+1) to CEST (UTC+2) on 2026-03-29.
    const { clock, host } = await pausedHost("2026-03-27T12:00:00.000Z");
    const t = await host.services.timers.create("main", {
      summary: "standup notes",
      cron: "0 9 * * *",
      tz: "Europe/Berlin",
    });
    expect(t.next_fire_at).toBe("2026-03-28T08:00:00.000Z");
    const fired: string[] = [];
    for (const at of [
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
    ]) {
      clock.set(at);
      await host.services.scheduler.fireDue();
      fired.push(String((await ticks(host))[0]!.metadata!.scheduled_for));
    }
    expect(fired).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
    ]);
    expect(await host.services.timers.get("main", t.timer_id)).toMatchObject({
      fire_count: 3,
      next_fire_at: "2026-03-31T07:00:00.000Z",
    });
    await host.shutdown();
  });

  it("a cancelled timer never fires, and cancelling twice says so", async () => {
    const { clock, host } = await pausedHost();
    const t = await host.services.timers.create("main", { summary: "x", interval_ms: MIN });
    await host.services.timers.cancel("main", t.timer_id);
    expect(await host.store.deadlines.forAgent("main")).toHaveLength(0);
    clock.advance(10 * MIN);
    await host.services.scheduler.fireDue();
    expect(await ticks(host)).toHaveLength(0);
    await expect(host.services.timers.cancel("main", t.timer_id)).rejects.toThrow(
      /already cancelled/,
    );
    await host.shutdown();
  });

  it("periods missed while the host was down fire once, and the skipped ones are counted", async () => {
    const { clock, home, host } = await pausedHost();
    const t = await host.services.timers.create("main", { summary: "poll", interval_ms: HOUR });
    await host.shutdown();
    clock.advance(5.5 * HOUR); // down for the fires at +1h … +5h
    const again = await open(home, clock); // start() fires what fell due
    const tick = await waitFor(async () => (await ticks(again))[0], { what: "the catch-up fire" });
    await again.services.scheduler.fireDue();
    expect(await ticks(again)).toHaveLength(1);
    expect(tick.metadata).toMatchObject({ skipped: 4, scheduled_for: "2026-01-10T13:00:00.000Z" });
    expect(await again.services.timers.get("main", t.timer_id)).toMatchObject({
      fire_count: 1,
      skipped_count: 4,
      next_fire_at: "2026-01-10T18:00:00.000Z",
    });
    await again.shutdown();
  });

  it("a clock set back neither repeats a fire nor loses the next one", async () => {
    const { clock, host } = await pausedHost();
    await host.services.timers.create("main", { summary: "hourly", interval_ms: HOUR });
    const once = await host.services.timers.create("main", {
      summary: "once",
      duration_ms: 30 * MIN,
    });
    clock.advance(HOUR);
    await host.services.scheduler.fireDue();
    expect(await ticks(host)).toHaveLength(2);
    clock.advance(-45 * MIN); // set back to +15 min: before both fires
    await host.services.scheduler.fireDue();
    clock.advance(45 * MIN); // back at +1h
    await host.services.scheduler.fireDue();
    expect(await ticks(host)).toHaveLength(2);
    expect((await host.services.timers.get("main", once.timer_id))?.fire_count).toBe(1);
    clock.advance(HOUR); // +2h: the next period
    await host.services.scheduler.fireDue();
    expect((await ticks(host)).map((m) => m.body.type === "text" && m.body.text)).toEqual([
      "hourly",
      "hourly",
      "once",
    ]);
    await host.shutdown();
  });

  it("a clock set forward fires what it jumped over once, counting the skipped periods", async () => {
    const { clock, host } = await pausedHost();
    const t = await host.services.timers.create("main", { summary: "tick", interval_ms: 10 * MIN });
    clock.advance(3 * HOUR + 5 * MIN);
    await host.services.scheduler.fireDue();
    await host.services.scheduler.fireDue();
    expect(await ticks(host)).toHaveLength(1);
    expect(await host.services.timers.get("main", t.timer_id)).toMatchObject({
      fire_count: 1,
      skipped_count: 17,
      next_fire_at: "2026-01-10T15:10:00.000Z",
    });
    await host.shutdown();
  });

  it("a stopped agent's fire is counted as skipped, not delivered, and the schedule goes on", async () => {
    const { clock, host } = await pausedHost();
    const t = await host.services.timers.create("main", { summary: "x", interval_ms: HOUR });
    await host.lifecycle.control("main", "stop");
    clock.advance(HOUR);
    await host.services.scheduler.fireDue();
    expect(await ticks(host)).toHaveLength(0);
    expect(await host.services.timers.get("main", t.timer_id)).toMatchObject({
      status: "active",
      fire_count: 0,
      skipped_count: 1,
    });
    await host.shutdown();
  });
});

describe("the scheduler under a failing handler", () => {
  it("a handler that throws drops only its own deadline, recorded; the rest of the batch fires", async () => {
    const { clock, host } = await pausedHost();
    // A smaller graph built the same way as the composition root, with one broken handler.
    const scheduler = new DeadlineScheduler({
      store: host.store,
      ingress: host.ingress,
      handlers: new Map([
        [TIMER_FIRE, timerFireHandler(host.store)],
        [
          "broken",
          () => {
            throw new Error("handler bug");
          },
        ],
      ]),
    });
    await host.services.timers.create("main", { summary: "still fires", duration_ms: MIN });
    await scheduler.add({
      agent_id: "main",
      kind: "broken",
      due_at: new Date(clock.now().getTime() + MIN).toISOString(),
    });
    clock.advance(MIN);
    expect(await scheduler.fireDue()).toBe(2);
    expect(await ticks(host)).toHaveLength(1);
    expect(await host.store.deadlines.forAgent("main")).toHaveLength(0);
    const dropped = (await host.store.events.query("main", { limit: 1_000, order: "asc" })).filter(
      (e) => e.type === "deadline_dropped",
    );
    expect(dropped.map((e) => e.payload)).toEqual([
      expect.objectContaining({ kind: "broken", reason: "handler_failed" }),
    ]);
    await host.shutdown();
  });
});

describe("next fire after a fire (table)", () => {
  const at = (s: string) => new Date(s);
  it.each([
    [
      "one-shot: no next",
      { kind: "one_shot" },
      "2026-01-01T00:00:00Z",
      "2026-01-01T00:00:01Z",
      null,
      0,
    ],
    [
      "interval on time",
      { kind: "interval", interval_ms: HOUR },
      "2026-01-01T00:00:00Z",
      "2026-01-01T00:00:00.020Z",
      "2026-01-01T01:00:00.000Z",
      0,
    ],
    [
      "interval 2.5 periods late",
      { kind: "interval", interval_ms: HOUR },
      "2026-01-01T00:00:00Z",
      "2026-01-01T02:30:00Z",
      "2026-01-01T03:00:00.000Z",
      2,
    ],
    [
      "cron late by three days",
      { kind: "cron", cron: "0 9 * * *", tz: "UTC" },
      "2026-01-01T09:00:00Z",
      "2026-01-04T10:00:00Z",
      "2026-01-05T09:00:00.000Z",
      3,
    ],
  ] as const)("%s", (_n, timer, scheduled, now, next, skipped) => {
    const r = nextAfterFire(timer as never, at(scheduled), at(now));
    expect(r.next?.toISOString() ?? null).toBe(next);
    expect(r.skipped).toBe(skipped);
  });
});

describe("timers over HTTP", () => {
  it("create, list and cancel through the control plane, with closed bodies and precise errors", async () => {
    const rt = await startRuntime();
    const created = await rt.req("POST", "/control/agents/main/timers", {
      duration_ms: 60_000,
      interval_ms: null,
      summary: "reminder",
      trust: "trusted_operator",
    });
    expect(created.status).toBe(201);
    const id = created.json.timer.timer_id;
    const cron = await rt.req("POST", "/control/agents/main/timers", {
      cron: "0 9 * * 1-5",
      tz: "Europe/Berlin",
      summary: "standup",
    });
    expect(cron.status).toBe(201);
    expect(cron.json.timer).toMatchObject({ kind: "cron", tz: "Europe/Berlin" });
    for (const [body, kind] of [
      [{ summary: "x" }, "invalid_timer"],
      [{ summary: "x", cron: "not a cron" }, "invalid_timer"],
      [{ summary: "x", cron: "0 9 * * *", tz: "Mars/Olympus" }, "invalid_timer"],
      [{ summary: "x", duration_ms: 5, at: "2026-01-01T00:00:00Z" }, "invalid_timer"],
      [{ summary: "x", interval_ms: 10 }, "invalid_timer"],
      [{ summary: "x", duration_ms: 5, extra: 1 }, "unknown_field"],
    ] as const) {
      const r = await rt.req("POST", "/control/agents/main/timers", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.kind).toBe(kind);
    }
    // control routes need the token over TCP
    const anon = await rt.req(
      "POST",
      "/control/agents/main/timers",
      { summary: "x", duration_ms: 1 },
      { authorization: "" },
    );
    expect(anon.status).toBe(401);
    const list = await rt.req("GET", "/agents/main/timers");
    expect(list.json.active_count).toBe(2);
    expect(list.json.timers.map((t: { timer_id: string }) => t.timer_id)).toContain(id);
    const cancelled = await rt.req("POST", `/control/agents/main/timers/${id}/cancel`, {});
    expect(cancelled.json.timer.status).toBe("cancelled");
    expect((await rt.req("POST", `/control/agents/main/timers/${id}/cancel`, {})).status).toBe(409);
    expect((await rt.req("POST", `/control/agents/main/timers/tmr_nope/cancel`, {})).status).toBe(
      404,
    );
    const state = (await rt.req("GET", "/agents/main/state")).json;
    expect(state.timers.map((t: { status: string }) => t.status).sort()).toEqual([
      "active",
      "cancelled",
    ]);
    expect(state.waiting_intents).toContainEqual(
      expect.objectContaining({ kind: "timer", summary: "standup" }),
    );
    expect(state.agent.waiting.timers.active).toBe(1);
    expectDocumented(state, state.agent);
    await rt.close();
  });

  it("the trigger URL's base is --advertise when the host has one", async () => {
    const rt = await startRuntime({ serve: { advertise: "https://lab.example.ts.net:7878/" } });
    const r = await rt.req("GET", "/control/agents/main/external-trigger");
    expect(r.json.external_trigger.trigger_url).toMatch(
      /^https:\/\/lab\.example\.ts\.net:7878\/callbacks\/wake\/[A-Za-z0-9_-]{43}$/,
    );
    await rt.close();
  });
});
