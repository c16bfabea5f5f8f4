// The waiting plane through the commands a user types: `holon timer` (--in, --at, --every,
// --cron with --tz, list, cancel), `holon agent trigger` (show, rotate, revoke) and the
// waiting, closure and work lines of `holon status`, against a real host over loopback.
import { describe, expect, it } from "vitest";
import { runCli, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

describe("holon timer and holon agent trigger", () => {
  it("create every kind of timer, list and cancel them; show, rotate and revoke the trigger URL", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home });
    const env = { HOLON_HOME: rt.home };
    try {
      const cli = (...args: string[]) => runCli(args, { env });
      const at = new Date(Date.now() + 3 * 86_400_000).toISOString();
      const [once, every, cron, atOnce, noWhen, badDuration, badZone] = await Promise.all([
        cli("timer", "main", "--in", "10m", "check", "whether", "the", "deploy", "finished"),
        cli("timer", "main", "--every", "1h", "summarize new issues", "--json"),
        cli("timer", "main", "--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin", "standup notes"),
        cli("timer", "main", "--at", at, "quarterly review"),
        cli("timer", "main", "no schedule"),
        cli("timer", "main", "--in", "10 minutes", "x"),
        cli("timer", "main", "--cron", "0 9 * * *", "--tz", "Mars/Olympus", "x"),
      ]);
      expect(once.code, once.stderr).toBe(0);
      expect(once.stdout).toMatch(/^timer (\S+) for main: once, next at \S+Z\n$/);
      const onceId = /^timer (\S+)/.exec(once.stdout)![1]!;
      expect(every.code, every.stderr).toBe(0);
      expect(JSON.parse(every.stdout)).toMatchObject({
        kind: "interval",
        interval_ms: 3_600_000,
        summary: "summarize new issues",
      });
      expect(cron.code, cron.stderr).toBe(0);
      expect(cron.stdout).toContain('cron "0 9 * * 1-5" Europe/Berlin');
      expect(atOnce.stdout).toContain(`next at ${at}`);
      for (const bad of [noWhen, badDuration, badZone]) expect(bad.code).toBe(1);
      expect(noWhen.stderr).toContain("--in, --at, --every or --cron");
      expect(badDuration.stderr).toContain("is not a duration");
      expect(badZone.stderr).toMatch(/Mars\/Olympus|time zone/i);
      // Nothing was stored for the refused ones.
      const listed = (await rt.req("GET", "/agents/main/timers")).json;
      expect(listed.active_count).toBe(4);

      // The one-shot timer was armed for ten minutes from now.
      const next = listed.timers.find((t: { timer_id: string }) => t.timer_id === onceId);
      expect(Date.parse(next.next_fire_at) - Date.now()).toBeGreaterThan(9 * 60_000);
      expect(Date.parse(next.next_fire_at) - Date.now()).toBeLessThanOrEqual(10 * 60_000);

      const list = await cli("timer", "list", "main");
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/^4 active\n/);
      expect(list.stdout).toContain("check whether the deploy finished");
      expect(list.stdout).toContain("every 3600000 ms");

      // holon status shows the timers, and the closure and current item once a turn ran.
      const item = await rt.host.services.work.create(
        "main",
        { objective: "ship the release" },
        "agent",
      );
      await rt.host.services.work.pick("main", item.id);
      await rt.host.services.work.update("main", item.id, { blocked_by: "waiting for QA" });
      fake.enqueue(reply.text("Noted."));
      await rt.req("POST", "/control/agents/main/prompt", { text: "hello" });
      await waitFor(
        async () =>
          (await rt.host.agents.get("main")).closure &&
          !(await rt.host.agents.get("main")).current_run_id,
        { what: "the turn's closure" },
      );
      const url = (await cli("agent", "trigger", "main")).stdout.trim();
      const status = await cli("status", "main");
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/timers: +4 active, next \S+ \(\S+\)/);
      expect(status.stdout).toMatch(/closure: +completed, sleeping/);
      expect(status.stdout).toContain(`work:     ${item.id} [blocked`);
      expect(status.stdout).toContain("(blocked: waiting for QA)");
      expect(status.stdout).toMatch(/trigger: +\S+ active, 0 deliveries/);
      expect(status.stdout).not.toContain(url);

      // A timed sleep: the deadline and the closure's waiting reason.
      fake.enqueue(
        reply.tools([{ name: "Sleep", arguments: { duration_ms: 3_600_000 } }]),
        reply.text("Sleeping for an hour."),
      );
      await rt.req("POST", "/control/agents/main/prompt", { text: "rest an hour" });
      await waitFor(async () => (await rt.host.agents.get("main")).closure?.outcome === "waiting", {
        what: "the sleep's closure",
      });
      const asleep = await cli("status", "main");
      expect(asleep.stdout).toMatch(/wakes at: \S+Z/);
      expect(asleep.stdout).toMatch(/closure: +waiting \(awaiting_timer\), sleeping/);

      const cancelled = await cli("timer", "cancel", "main", onceId);
      expect(cancelled.code, cancelled.stderr).toBe(0);
      expect(cancelled.stdout).toBe(`cancelled ${onceId} (check whether the deploy finished)\n`);
      const twice = await cli("timer", "cancel", "main", onceId);
      expect(twice.code).toBe(1);
      const unknown = await cli("timer", "cancel", "main", "tmr_nope");
      expect(unknown.code).toBe(1);
      expect((await rt.req("GET", "/agents/main/timers")).json.active_count).toBe(3);

      // The trigger URL alone on stdout (for TRIGGER_URL=$(...)), the same each time.
      expect(url).toMatch(new RegExp(`^${rt.url}/callbacks/wake/[A-Za-z0-9_-]{43}$`));
      const shown = await cli("agent", "trigger", "main");
      expect(shown.stdout.trim()).toBe(url);
      expect(shown.stderr).toContain("secret");
      const rotated = await cli("agent", "trigger", "main", "--rotate");
      expect(rotated.code, rotated.stderr).toBe(0);
      const fresh = rotated.stdout.trim();
      expect(fresh).not.toBe(url);
      expect((await fetch(url, { method: "POST", body: "{}" })).status).toBe(404);
      const revoked = await cli("agent", "trigger", "main", "--revoke");
      expect(revoked.stdout).toContain("revoked");
      expect((await fetch(fresh, { method: "POST", body: "{}" })).status).toBe(404);
      const both = await cli("agent", "trigger", "main", "--rotate", "--revoke");
      expect(both.code).toBe(1);
    } finally {
      await rt.close();
    }
  }, 60_000);
});
