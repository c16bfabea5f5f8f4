// The console against a real host and the scripted model: render, type and submit, the
// state line, every overlay of a plane that has landed (with what that plane holds), a local
// action, the display level switched, and the stream resumed after the host restarts.
import { createElement as h } from "react";
import { render } from "ink-testing-library";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HolonClient, discover } from "../src/client/client.ts";
import { App } from "../src/tui/app.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";
import {
  cleanupHomes,
  HOLON_BIN,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
} from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
  cleanupHomes();
});

describe("holon tui", () => {
  it("shows the conversation, sends prompts, opens overlays and survives a host restart", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    let rt = await startRuntime({ home });
    const connect = () => {
      const conn = discover(home);
      return conn ? new HolonClient(conn) : undefined;
    };
    const ui = render(h(App, { connect, agentId: "main", display: "info", rows: 40 }));
    const frame = () => ui.lastFrame() ?? "";
    try {
      await waitFor(() => frame().includes("· live"), { what: "live" });
      // The state line: the active workspace and its projection, the queue, the access mode.
      await waitFor(
        () => /workspace \S+ \(canonical_root\) · queue 0 · access local over unix/.test(frame()),
        {
          what: "state line",
        },
      );

      // The planes that have landed, each in its overlay. The agent is paused so the work
      // item added under it does not start a turn.
      const type = async (text: string) => {
        ui.stdin.write(text);
        await waitFor(() => frame().includes(`› ${text}`), { what: `typed ${text}` });
        ui.stdin.write("\r");
      };
      const overlay = async (command: string, ...expected: (string | RegExp)[]) => {
        const name = command.split(" ")[0]!;
        await type(`/${command}`);
        await waitFor(
          () =>
            frame().includes(`${name} (Esc closes)`) &&
            expected.every((e) => (typeof e === "string" ? frame().includes(e) : e.test(frame()))),
          { what: `${name} overlay showing ${expected.join(", ")}` },
        );
        const shown = frame();
        ui.stdin.write("\u001b");
        await waitFor(() => !frame().includes(`${name} (Esc closes)`), { what: `${name} closed` });
        return shown;
      };
      await type("/pause");
      await waitFor(() => frame().includes("main (paused)"), { what: "paused" });
      const work = await rt.req("POST", "/control/agents/main/work-items", {
        objective: "tidy the release notes",
      });
      expect(work.status, JSON.stringify(work.json)).toBe(201);
      const timer = await rt.req("POST", "/control/agents/main/timers", {
        summary: "check the nightly build",
        duration_ms: 3_600_000,
      });
      expect(timer.status, JSON.stringify(timer.json)).toBe(201);
      const project = join(tempHome("holon-tui-ws-"), "project");
      mkdirSync(project);
      await type(`/attach ${project}`);
      await waitFor(() => frame().includes(`attached ${project}`), { what: "attached" });

      await overlay("work", "tidy the release notes");
      await overlay("timers", "check the", /trigger \S+ +active/);
      await overlay("workspaces", "active: agent_home", project);
      await overlay("agents", "› main");
      await overlay("events", "work_item_created", /#\d+ \d\d:\d\d:\d\d agent_state_changed/);
      await overlay("actions", "/attach <path>", "holon workspace exit");
      await overlay("help", "/display 3|4|5");
      // Agent selection: another agent, then back.
      const created = await rt.req("POST", "/control/agents/helper/create", {});
      expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
      await overlay("agents", "› main", "  helper");
      await type("/agent helper");
      await waitFor(() => frame().includes("holon · helper (asleep)"), {
        what: "switched to helper",
      });
      await type("/agent main");
      await waitFor(() => frame().includes("holon · main (paused)"), { what: "back on main" });
      await overlay("prompt ship it", "(system_prompt", "── incoming: ship it", /tools \(\d+\)/);
      await rt.req("POST", `/control/agents/main/work-items/${work.json.work_item.id}/complete`, {
        note: "done by hand",
      });
      await type("/resume");
      await waitFor(() => !frame().includes("main (paused)"), { what: "resumed" });

      fake.enqueue(reply.text("hello operator"));
      ui.stdin.write("hi there");
      await waitFor(() => frame().includes("› hi there"), { what: "typed" });
      ui.stdin.write("\r");
      await waitFor(() => frame().includes("hello operator"), { what: "the reply" });
      expect(frame()).toContain("You  hi there");
      expect(frame()).toContain("Result  hello operator");
      // info hides provider rounds; debug shows them.
      expect(frame()).not.toContain("Model round");
      ui.stdin.write("/display 5");
      ui.stdin.write("\r");
      await waitFor(() => frame().includes("Model round 1"), { what: "debug items" });

      ui.stdin.write("/tasks");
      ui.stdin.write("\r");
      await waitFor(() => frame().includes("tasks (Esc closes)"), { what: "overlay" });
      ui.stdin.write("\u001b");
      await waitFor(() => !frame().includes("tasks (Esc closes)"), { what: "overlay closed" });

      // The host goes away and comes back: the console reconnects and keeps working.
      await rt.close();
      await waitFor(() => frame().includes("reconnecting"), { what: "disconnect" });
      rt = await startRuntime({ home });
      await waitFor(() => frame().includes("reconnected"), {
        what: "reconnect",
        timeoutMs: 20_000,
      });
      fake.enqueue(reply.text("still here"));
      ui.stdin.write("after restart");
      ui.stdin.write("\r");
      await waitFor(() => frame().includes("still here"), { what: "reply after restart" });

      // Alt+Enter interjects: the prompt goes in at interject priority.
      fake.enqueue(reply.text("noted the interjection"));
      ui.stdin.write("one more thing");
      await waitFor(() => frame().includes("› one more thing"), { what: "typed interjection" });
      ui.stdin.write("\u001b\r");
      await waitFor(() => frame().includes("noted the interjection"), {
        what: "interjected reply",
      });
      const prompts = rt.host.store.messages
        .recent("main", 20)
        .filter((m) => m.kind === "operator_prompt");
      expect(prompts.find((m) => JSON.stringify(m.body).includes("one more thing"))?.priority).toBe(
        "interject",
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; the screen:\n${frame()}`);
    } finally {
      ui.unmount();
      await rt.close();
    }
  }, 90_000);

  it("holon tui on a terminal draws the console, and /quit leaves the runtime as it was", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home });
    try {
      const before = rt.host.store.events.newestSeq("main");
      const r = await onTerminal(["tui", "--home", home], "· live");
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain("holon · main");
      expect(r.stdout).toContain("access local over unix");
      expect(rt.host.store.agents.get("main")?.status).not.toBe("stopped");
      // Reading /state provisions the agent's external trigger if it had none (as its first
      // turn would); nothing else is recorded.
      const since = rt.host.store.events.after("main", before, 100).map((e) => e.type);
      expect(since.filter((t) => t !== "external_trigger_provisioned")).toEqual([]);
    } finally {
      await rt.close();
    }
  }, 60_000);

  it("holon tui --connect dials that host only, with its token, checked before the console starts", async () => {
    const rt = await startRuntime({ serve: { access: "tunnel" } });
    const elsewhere = tempHome(); // no runtime here: a remote console must not look locally
    try {
      const url = rt.url;
      const tokenFile = join(tempHome("holon-tok-"), "remote.token");
      writeFileSync(tokenFile, `${rt.token}\n`, { mode: 0o600 });
      const wrongFile = join(tempHome("holon-tok-"), "wrong.token");
      writeFileSync(wrongFile, "not-the-token-at-all\n", { mode: 0o600 });
      const cli = (...args: string[]) =>
        runCli(["tui", "--home", elsewhere, ...args], { env: { HOLON_CONTROL_TOKEN: "" } });

      const noToken = await cli("--connect", url);
      expect(noToken.code).toBe(1);
      expect(noToken.stderr).toContain("needs the host's control token");
      const wrong = await cli("--connect", url, "--token-file", wrongFile);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain("refused the token");
      const tls = await cli("--connect", "https://127.0.0.1:1", "--token-file", tokenFile);
      expect(tls.code).toBe(1);
      expect(tls.stderr).toContain("http://");
      const withPath = await cli("--connect", `${url}/agents`, "--token-file", tokenFile);
      expect(withPath.code).toBe(1);
      const nobody = await cli("--connect", "http://127.0.0.1:1", "--token-file", tokenFile);
      expect(nobody.code).toBe(1);
      expect(nobody.stderr).toContain("cannot use http://127.0.0.1:1");

      const r = await onTerminal(
        ["tui", "--home", elsewhere, "--connect", url, "--token-file", tokenFile],
        "tunnel over tcp",
      );
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain("holon · main");
      expect(r.stdout).toContain("access tunnel over tcp");
    } finally {
      await rt.close();
    }
  }, 90_000);
});

/**
 * Run `holon <args>` on a pseudo-terminal (`script`), type /quit once the screen shows
 * `ready` (the keys wait on the console, not on a clock), and return what it drew.
 */
async function onTerminal(args: string[], ready: string) {
  const dir = tempHome("holon-pty-");
  const screen = join(dir, "screen");
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  // A wide terminal, so no line of the console wraps.
  const cmd = `stty cols 200 rows 50; ${[process.execPath, HOLON_BIN, ...args].map(quote).join(" ")}`;
  const keys = `until grep -q ${quote(ready)} ${quote(screen)} 2>/dev/null; do sleep 0.05; done; printf '/quit\\r'`;
  const r = await runCli([], {
    exec: ["sh", "-c", `(${keys}) | script -qfec ${quote(cmd)} ${quote(screen)}`],
    env: { HOLON_CONTROL_TOKEN: "" },
    timeoutMs: 30_000,
  });
  return { ...r, stdout: readFileSync(screen, "utf8") };
}
