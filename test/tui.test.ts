// The console against a real host and the scripted model: render, type and submit, an
// overlay opened and closed, the display level switched, and the stream resumed after the
// host restarts.
import { createElement as h } from "react";
import { render } from "ink-testing-library";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HolonClient, discover } from "../src/client/client.ts";
import { App } from "../src/tui/app.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";
import { cleanupHomes, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
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
    } finally {
      ui.unmount();
      await rt.close();
    }
  }, 90_000);
});
