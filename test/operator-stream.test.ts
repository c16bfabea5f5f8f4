// The presentation layer and streaming clients that survive: `holon tail -f` across a host
// SIGKILL and restart, and a follower resuming past events retention removed (410).
import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { HolonClient } from "../src/client/client.ts";
import { followEvents, type FollowNotice } from "../src/client/follow.ts";
import { MAX_SUBSCRIBER_BACKLOG } from "../src/http/sse.ts";
import {
  noPaint,
  painter,
  parseDisplayLevel,
  presentEvent,
  renderItem,
  shows,
} from "../src/client/presentation.ts";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import type { EventEnvelope } from "../src/domain/events.ts";
import { RetentionJob } from "../src/host/retention.ts";
import { effectiveRetention } from "../src/host/retention-config.ts";
import {
  HOLON_BIN,
  REPO_ROOT,
  cleanupHomes,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
} from "./helpers/home.ts";

afterAll(cleanupHomes);

function envelope(type: string, payload: Record<string, unknown>, seq = 1): EventEnvelope {
  return {
    id: `evt_${seq}`,
    event_seq: seq,
    ts: "2026-01-01T10:11:12.000Z",
    agent_id: "main",
    provenance: {},
    type,
    payload,
  };
}

describe("presentation", () => {
  const prompt = envelope("message_admitted", {
    message_id: "msg_1",
    queue_seq: 1,
    kind: "operator_prompt",
    priority: "normal",
    trigger_kind: "operator_input",
    admitted_at: "2026-01-01T10:11:12.000Z",
    body_preview: "build the thing",
  });
  const round = envelope("agent_state_changed", {
    from: "asleep",
    to: "awake_running",
    reason: "message queued",
  });

  it.each([
    [prompt, "info", "operator", "You"],
    [round, "debug", "lifecycle", "State"],
    [envelope("some_future_kind", { x: 1 }), "trace", "runtime", "some_future_kind"],
  ] as const)("maps %#: visibility, category, title", (e, visibility, category, title) => {
    const it = presentEvent(e);
    expect(it).toMatchObject({ visibility, category, title, source_event_kind: e.type });
  });

  it("display levels nest: info ⊂ verbose ⊂ debug ⊂ trace", () => {
    const it = presentEvent(round);
    expect(["info", "verbose", "debug", "trace"].map((l) => shows(it, l as never))).toEqual([
      false,
      false,
      true,
      true,
    ]);
    expect(parseDisplayLevel("4")).toBe("verbose");
    expect(parseDisplayLevel("loud")).toBeUndefined();
  });

  it("renders plain text without colour when NO_COLOR is set or the stream is no TTY", () => {
    const text = renderItem(presentEvent(prompt), "debug", painter(process.stdout));
    expect(text).not.toMatch(/\u001b\[/);
    expect(text).toContain("10:11:12 You  build the thing");
    expect(text).toContain("#1 message_admitted");
    expect(renderItem(presentEvent(prompt), "info", noPaint)).not.toContain("#1");
  });
});

function fakeClock(start: number): Clock & { set(ms: number): void } {
  let now = start;
  return { now: () => new Date(now), sleep: systemClock.sleep, set: (ms) => (now = ms) };
}

describe("followEvents", () => {
  it("resumes from the oldest kept event when retention removed the cursor (410)", async () => {
    const T0 = Date.parse("2026-01-01T00:00:00.000Z");
    const clock = fakeClock(T0);
    const rt = await startRuntime({ clock });
    try {
      const store = rt.host.store;
      clock.set(T0 + 40 * 86_400_000);
      await rt.host.ingress.admit({
        agent_id: "main",
        kind: "channel_event",
        origin: { kind: "channel", channel_id: "test" },
        body: { type: "text", text: "young" },
        surface: "http_public_enqueue",
        admission: "public_unauthenticated",
      });
      const none = { max_age_days: 0, max_mb: 0 };
      await new RetentionJob({
        store,
        policy: () =>
          effectiveRetention({
            events: { max_age_days: 30 },
            transcript: none,
            messages: none,
            briefs: none,
            tasks: { max_age_days: 0 },
            task_output: none,
          }),
      }).runOnce();
      const removedThrough = await store.events.removedThrough("main");
      expect(removedThrough).toBeGreaterThan(0);

      const [host, port] = rt.server.httpAddr.split(":");
      const client = new HolonClient({ host: host!, port: Number(port), token: rt.token });
      const notices: FollowNotice[] = [];
      const seen: number[] = [];
      const ctl = new AbortController();
      const done = followEvents({
        connect: () => client,
        agentId: "main",
        afterSeq: 0,
        signal: ctl.signal,
        onEvent: (e) => seen.push(e.event_seq),
        onNotice: (n) => notices.push(n),
      });
      await waitFor(async () => seen.at(-1) === (await store.events.newestSeq("main")), {
        what: "catch-up",
      });
      ctl.abort();
      await done;
      expect(notices[0]).toEqual({
        kind: "replay_unavailable",
        after_seq: 0,
        resumed_after_seq: removedThrough,
      });
      expect(seen[0]).toBe(removedThrough + 1);
    } finally {
      await rt.close();
    }
  });

  it("a burst past the server's backlog ends in stream_overflow; the client resumes with no gap", async () => {
    const rt = await startRuntime();
    try {
      const store = rt.host.store;
      const [host, port] = rt.server.httpAddr.split(":");
      const client = new HolonClient({ host: host!, port: Number(port), token: rt.token });
      const notices: FollowNotice[] = [];
      const seen: number[] = [];
      const ctl = new AbortController();
      const start = await store.events.newestSeq("main");
      const done = followEvents({
        connect: () => client,
        agentId: "main",
        afterSeq: start,
        signal: ctl.signal,
        minDelayMs: 10,
        onEvent: (e) => seen.push(e.event_seq),
        onNotice: (n) => notices.push(n),
      });
      // One event proves the subscription is live; then more at once than a subscriber may
      // have pending.
      const attach = async (root: string) =>
        await store.appendEvent("main", {
          type: "workspace_attached",
          payload: { workspace_root: root },
        });
      await store.tx(async () => await attach("/w/first"));
      await waitFor(() => seen.length === 1, { what: "subscribed" });
      const burst = MAX_SUBSCRIBER_BACKLOG + 2_000;
      await store.tx(async () => {
        for (let i = 0; i < burst; i++) await attach(`/w/${i}`);
      });
      const newest = await store.events.newestSeq("main");
      await waitFor(() => seen.at(-1) === newest, { what: "every event", timeoutMs: 60_000 });
      ctl.abort();
      await done;
      expect(notices.map((n) => n.kind)).toContain("overflow");
      // Every event exactly once, in order.
      expect(seen).toEqual(Array.from({ length: newest - start }, (_, i) => start + 1 + i));
    } finally {
      await rt.close();
    }
  }, 90_000);

  it("holon tail -f keeps printing across a host SIGKILL and restart, without gaps or repeats", async () => {
    const home = tempHome();
    const first = await spawnServe(home);
    const prompt = async (url: string, auth: Record<string, string>, text: string) => {
      const res = await fetch(`${url}/control/agents/main/prompt`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ text }),
      });
      expect(res.status).toBe(202);
    };
    const tail = spawn(
      process.execPath,
      [HOLON_BIN, "tail", "-f", "--display", "debug", "--home", home],
      { cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    tail.stdout.on("data", (d) => (out += d));
    tail.stderr.on("data", (d) => (err += d));
    let second: Awaited<ReturnType<typeof spawnServe>> | undefined;
    try {
      // tail prints its history first; wait for that before the live prompt.
      await waitFor(() => out.includes("agent_created"), {
        what: "tail history",
        timeoutMs: 20_000,
      });
      await prompt(first.url, first.auth, "before the crash");
      await waitFor(() => out.includes("You  before the crash"), { what: "first prompt" });

      first.proc.kill("SIGKILL");
      await new Promise((r) => first.proc.once("exit", r));
      await waitFor(() => err.includes("reconnecting"), { what: "disconnect notice" });
      second = await spawnServe(home);
      await waitFor(() => err.includes("reconnected"), { what: "reconnect", timeoutMs: 20_000 });
      await prompt(second.url, second.auth, "after the restart");
      await waitFor(() => out.includes("You  after the restart"), { what: "second prompt" });

      const seqs = [...out.matchAll(/#(\d+) /g)].map((m) => Number(m[1]));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(new Set(seqs).size).toBe(seqs.length);
    } finally {
      tail.kill("SIGINT");
      first.proc.kill("SIGKILL");
      second?.proc.kill("SIGTERM");
      if (second) await new Promise((r) => second!.proc.once("exit", r));
    }
  }, 90_000);
});
