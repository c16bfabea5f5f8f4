// The console shows what waits on the operator: an ask opened on the agent appears as a
// line under the state line, and goes when it is decided.
import { createElement as h } from "react";
import { render } from "ink-testing-library";
import { afterAll, describe, expect, it } from "vitest";
import { HolonClient, discover } from "../src/client/client.ts";
import { App } from "../src/tui/app.ts";
import { asksIndicator } from "../src/tui/asks.ts";
import { cleanupHomes, startRuntime, waitFor } from "./helpers/home.ts";

afterAll(() => cleanupHomes());

describe("holon tui and asks", () => {
  it("shows pending asks across agents and drops the line once they are decided", async () => {
    const rt = await startRuntime();
    const connect = () => {
      const conn = discover(rt.home);
      return conn ? new HolonClient(conn) : undefined;
    };
    const ui = render(h(App, { connect, agentId: "main", display: "info", rows: 30 }));
    const frame = () => ui.lastFrame() ?? "";
    try {
      await waitFor(() => frame().includes("· live"), { what: "live" });
      expect(frame()).not.toContain("waiting on you");
      const ask = await rt.host.services.asks.open({
        agent_id: "main",
        kind: "budget",
        source: "budget",
        scope: "agent",
        about: "Daily budget spent",
        detail: "2M of 2M tokens",
      });
      await waitFor(() => frame().includes(`asks 1 waiting on you (1 here: ${ask.id}`), {
        what: "the ask indicator",
      });
      const d = await rt.req("POST", `/control/asks/${ask.id}/decision`, { decision: "raise" });
      expect(d.status).toBe(200);
      await waitFor(() => !frame().includes("waiting on you"), { what: "the indicator to go" });
    } finally {
      ui.unmount();
      await rt.close();
    }
  });

  it("names another agent's ask when none is this agent's", () => {
    const asks = [{ id: "ask_1", agent_id: "helper", about: "Which name?" }];
    expect(asksIndicator(asks, "main")).toBe(
      "asks 1 waiting on you (first: helper: ask_1 Which name?; holon asks)",
    );
    expect(asksIndicator([], "main")).toBe("");
  });
});
