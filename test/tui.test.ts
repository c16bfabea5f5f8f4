// The console against a real host and the scripted model: render, type and submit, the
// state line, every overlay of a plane that has landed (with what that plane holds), a local
// action, the display level switched, and the stream resumed after the host restarts; a
// private child spawned by the scripted model in the agents and children overlays, with its
// supervision task waiting for input; the memory overlay on a host with and without memory.
import { createElement as h } from "react";
import { render } from "ink-testing-library";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HolonClient, discover } from "../src/client/client.ts";
import { App } from "../src/tui/app.ts";
import { MemoryOverlay, promptLines } from "../src/tui/views.ts";
import { reply, type FakeAnswer, type RecordedRequest } from "./fake-provider/server.ts";
import { HOLON_BIN, runCli, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

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
      // A fixed-height frame, one row short of the (given) terminal height.
      expect(frame().split("\n")).toHaveLength(39);
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
      const prompts = (await rt.host.store.messages.recent("main", 20)).filter(
        (m) => m.kind === "operator_prompt",
      );
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

  it("shows a spawned private child, its lineage and its supervision task needing input; /memory shows the agent's working memory", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({
      home,
      env: { ...process.env, HOME: tempHome("holon-user-"), HOLON_HOME: home },
    });
    // The scripted model: main spawns a private child; the child opens a work item that
    // needs its operator's input, picks it and asks a question.
    const agentOf = (req: RecordedRequest) => {
      const key = String(req.body.prompt_cache_key ?? "");
      return key.slice("holon-".length, key.lastIndexOf("-"));
    };
    fake.setFallback((req): FakeAnswer => {
      const input = req.body.input as any[];
      const last = JSON.stringify(input[input.length - 1] ?? "");
      const after = (id: string) => last.includes("function_call_output") && last.includes(id);
      if (agentOf(req) === "main") {
        if (last.includes("SPAWN A HELPER"))
          return reply.tools([
            {
              name: "SpawnAgent",
              arguments: { initial_message: "JOB-T: choose the release name" },
              call_id: "s1",
            },
          ]);
        return reply.tools([{ name: "Sleep", arguments: {} }]);
      }
      if (last.includes("JOB-T"))
        return reply.tools([
          {
            name: "CreateWorkItem",
            arguments: { objective: "choose the release name", plan_status: "needs_input" },
            call_id: "c1",
          },
        ]);
      if (after('"c1"')) {
        const item = /(wi_\w+)/.exec(last)![1]!;
        return reply.tools([
          { name: "PickWorkItem", arguments: { work_item_id: item }, call_id: "c2" },
        ]);
      }
      if (after('"c2"')) return reply.text("Which name, Aster or Birch?");
      return reply.text("ok");
    });
    const connect = () => {
      const conn = discover(home);
      return conn ? new HolonClient(conn) : undefined;
    };
    const ui = render(h(App, { connect, agentId: "main", display: "info", rows: 20 }));
    const frame = () => ui.lastFrame() ?? "";
    try {
      await waitFor(() => frame().includes("· live"), { what: "live" });
      expect(
        (await rt.req("POST", "/control/agents/main/prompt", { text: "SPAWN A HELPER" })).status,
      ).toBe(202);
      const task = await waitFor(
        async () => {
          const t = (await rt.req("GET", "/agents/main/tasks")).json.tasks[0];
          return t?.child_supervision?.state === "needs_input" ? t : null;
        },
        { what: "the child's task to need input", timeoutMs: 20_000 },
      );
      const child: string = task.child_supervision.child_agent_id;
      const overlay = async (command: string, ...expected: (string | RegExp)[]) => {
        const name = command.split(" ")[0]!;
        ui.stdin.write(`/${command}`);
        await waitFor(() => frame().includes(`› /${command}`), { what: `typed /${command}` });
        ui.stdin.write("\r");
        await waitFor(
          () =>
            frame().includes(`${name} (Esc closes)`) &&
            expected.every((e) => (typeof e === "string" ? frame().includes(e) : e.test(frame()))),
          { what: `${name} overlay showing ${expected.join(", ")}` },
        );
        const shown = frame();
        ui.stdin.write("\u001b");
        await waitFor(() => !frame().includes(`${name} (Esc closes)`), {
          what: `${name} closed`,
        });
        return shown;
      };
      // The agents overlay lists the private child under its parent.
      await overlay("agents", "› main", `    ${child}`, `(private, child of main)`);
      // The children overlay: main's identity and lineage, the child, its supervision task.
      const shown = await overlay(
        "children",
        "agent main  [default, public, self_owned, public_named]",
        "lineage: parent - · supervisor -",
        "children: 1 live of 1",
        `• ${child}`,
        `task ${task.task_id}  running, needs_input`,
        "needs input: answer with holon task input <task_id> <text>",
        "closure waiting (awaiting_operator_input)",
      );
      expect(shown).toContain("context fresh");
      // The child itself: its identity and lineage, read through the control route.
      await overlay(
        `children ${child}`,
        "[child, private, parent_supervised, private_child]",
        "lineage: parent main · supervisor main",
        "(no children)",
      );
      // An unknown or malformed id is an error line in the overlay, nothing more.
      await overlay("children nobody", "failed: unknown_agent");
      await overlay("children ../etc", "failed: invalid_agent_id");
      // The memory plane has not landed on this host: the overlay says so.
      await overlay("memory", "working memory: revision");
    } catch (err) {
      throw new Error(`${(err as Error).message}; the screen:\n${frame()}`);
    } finally {
      fake.setFallback(null);
      ui.unmount();
      await rt.close();
    }
  }, 60_000);

  it("the memory overlay shows the memory object of a /state answer", () => {
    const state = {
      agent: { status: "asleep" },
      memory: {
        working_memory_revision: 7,
        last_prompted_working_memory_revision: 5,
        pending_working_memory_delta: ["decided: release name Birch", "todo: tag v0.3"],
        working_memory_updated_at: "2026-11-25T13:05:55.000Z",
        active_episode_id: "ep_42",
        archived_episode_count: 3,
        compactions_total: 2,
        compacted_rounds_total: 19,
        future_field: "kept",
      },
    };
    const prompt = {
      totals: {
        estimated_tokens: 5120,
        budget_tokens: 100000,
        compaction_soft_limit_tokens: 80000,
        cache_stable_prefix_tokens: 4000,
        counter: "o200k_base",
      },
    };
    const ui = render(h(MemoryOverlay, { state, prompt }));
    const f = ui.lastFrame() ?? "";
    ui.unmount();
    expect(f).toContain("memory (Esc closes)");
    expect(f).toContain("working memory: revision 7 (last prompted 5)");
    expect(f).toContain("pending delta (2, not yet in a prompt):");
    expect(f).toContain("+ decided: release name Birch");
    expect(f).toContain("episodes: active ep_42 · archived 3");
    expect(f).toContain("compaction: 2 compactions, 19 rounds compacted");
    expect(f).toContain("future_field: kept");
    expect(f).toContain("next prompt: ~5120 of 100000 tokens · compaction at 80000");
    // A /state without it (or a different shape) degrades to one plain line.
    const none = render(h(MemoryOverlay, { state: { agent: {} } }));
    expect(none.lastFrame()).toContain("memory plane not available on this host");
    none.unmount();
    const odd = render(
      h(MemoryOverlay, { state: { memory: { pending_working_memory_delta: "x" } } }),
    );
    expect(odd.lastFrame()).toContain("working memory: revision 0");
    odd.unmount();
  });

  it("the prompt overlay reads both prompt-preview shapes (flat, and with token totals)", () => {
    const flat = promptLines({
      sections: [{ contributor: "policy", placement: "system_prompt", text: "be kind\nbe brief" }],
      incoming: "Operator:\nship it",
      tools: ["Sleep", "TaskList"],
    });
    expect(flat).toContain("── policy (system_prompt, 2 lines)");
    expect(flat).toContain("── incoming: ship it");
    expect(flat).toContain("tools (2): Sleep, TaskList");
    const rich = promptLines({
      sections: [
        { contributor: "memory", placement: "context", estimated_tokens: 40, text: "Birch" },
      ],
      incoming: { source: "placeholder", text: "(an operator prompt)" },
      tools: { count: 1, names: ["Sleep"], estimated_tokens: 30 },
      totals: { estimated_tokens: 900, budget_tokens: 120000 },
    });
    expect(rich).toContain("── memory (context, 1 lines, ~40 tokens)");
    expect(rich).toContain("── incoming: (an operator prompt)");
    expect(rich).toContain("tools (1): Sleep");
    expect(rich).toContain("total ~900 tokens of 120000");
  });

  it("holon tui on a terminal draws the console, and /quit leaves the runtime as it was", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home });
    try {
      const before = await rt.host.store.events.newestSeq("main");
      const r = await onTerminal(["tui", "--home", home], "· live");
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain("holon · main");
      expect(r.stdout).toContain("access local over unix");
      expect((await rt.host.store.agents.get("main"))?.status).not.toBe("stopped");
      // Reading /state provisions the agent's external trigger if it had none (as its first
      // turn would); nothing else is recorded.
      const since = (await rt.host.store.events.after("main", before, 100)).map((e) => e.type);
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
