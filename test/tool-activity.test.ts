// Tool calls named with what they act on, wherever a tool row is shown: `holon tail` (verbose
// by default) and `holon transcript` show the command on one line, the files a patch touches
// and the work item named; `debug` adds the whole command; `info` hides ordinary tool rows.
// The live activity line (shared by `holon run` and the TUI) names the running call and its
// clock keeps moving: `holon run`'s progress line is watched in a real terminal (tmux).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  IDLE,
  nextActivity,
  renderActivity,
  toolSubject,
  type ActivityState,
} from "../src/client/presentation.ts";
import {
  MAX_ARGUMENTS_PREVIEW_CHARS,
  previewArguments,
  type EventEnvelope,
} from "../src/domain/events.ts";
import { reply } from "./fake-provider/server.ts";
import {
  HOLON_BIN,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { Tmux } from "./helpers/tmux.ts";

const fake = useFakeProvider();
const cleanup: (() => unknown)[] = [];
beforeEach(() => {
  // A reply a failed test left behind must not be played to the next one.
  expect(fake.pending()).toBe(0);
});
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});

const args = (a: unknown) => JSON.stringify(a);
const PATCH = "--- /dev/null\n+++ b/notes/todo.md\n@@ -0,0 +1,2 @@\n+one\n+two\n";

describe("what a tool call is about", () => {
  it.each([
    [
      "ExecCommand",
      args({ cmd: "npm test \\\n  -- --run\n" }),
      null,
      "npm test \\ -- --run",
      "command:\nnpm test \\\n  -- --run\n",
    ],
    ["ExecCommand", args({ cmd: "ls" }), null, "ls", "command:\nls"],
    [
      "ExecCommandBatch",
      args({ items: [{ cmd: "npm ci" }, { cmd: "npm test" }] }),
      null,
      "2 commands: npm ci; npm test",
      "1. npm ci\n2. npm test",
    ],
    ["ApplyPatch", args({ patch: PATCH }), null, "notes/todo.md", PATCH],
    [
      "ApplyPatch",
      args({ patch: "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n" }),
      null,
      "old.txt",
      "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
    ],
    [
      "ApplyPatch",
      args({ patch: "--- a/a.ts\n+++ b/a.ts\n@@\n-x\n+y\n--- a/b.ts\n+++ b/b.ts\n@@\n-x\n+y\n" }),
      { files: [{ path: "src/a.ts" }, { path: "src/b.ts" }] },
      "src/a.ts, src/b.ts",
      "--- a/a.ts\n+++ b/a.ts\n@@\n-x\n+y\n--- a/b.ts\n+++ b/b.ts\n@@\n-x\n+y\n",
    ],
    [
      "CreateWorkItem",
      args({ objective: "Ship the\nrelease notes" }),
      null,
      "Ship the release notes",
      null,
    ],
    ["UpdateWorkItem", args({ work_item_id: "wi_1", objective: "tidy" }), null, "wi_1: tidy", null],
    ["CompleteWorkItem", args({}), null, "the current work item", null],
    [
      "SpawnAgent",
      args({ initial_message: "choose the release name" }),
      { agent_id: "main.child-1" },
      'main.child-1 "choose the release name"',
      "choose the release name",
    ],
    ["TaskStop", args({ task_id: "task_9" }), null, "task_9", null],
    [
      "SomeNewTool",
      args({ target: "the moon", n: 3 }),
      null,
      "the moon",
      args({ target: "the moon", n: 3 }),
    ],
    ["ExecCommand", '{"cmd": "npm te', null, '{"cmd": "npm te', null],
  ])("%s %s", (tool, raw, result, short, full) => {
    const s = toolSubject(tool, raw, result as Record<string, unknown> | null);
    expect(s.short).toBe(short);
    expect(s.full?.replace(/\n$/, "") ?? null).toBe(full?.replace(/\n$/, "") ?? null);
  });

  it("events carry a bounded preview of the arguments that still names the command and files", () => {
    const cmd = `echo ${"x".repeat(10_000)}`;
    const p = previewArguments(args({ cmd, workdir: "sub" }));
    expect(p.length).toBeLessThanOrEqual(MAX_ARGUMENTS_PREVIEW_CHARS + 1);
    expect(JSON.parse(p).workdir).toBe("sub");
    expect(toolSubject("ExecCommand", p).short).toMatch(/^echo x+…$/);
    const patch = PATCH + "+filler\n".repeat(2_000);
    const pp = previewArguments(args({ patch }));
    expect(pp.length).toBeLessThanOrEqual(MAX_ARGUMENTS_PREVIEW_CHARS + 1);
    expect(toolSubject("ApplyPatch", pp).short).toBe("notes/todo.md");
    // Not JSON at all (a freeform tool's input): cut, never thrown away.
    expect(previewArguments("y".repeat(9_000))).toHaveLength(MAX_ARGUMENTS_PREVIEW_CHARS + 1);
  });

  it("the activity follows the calls of a round, one after the other, and its clock moves", () => {
    let seq = 0;
    const ev = (type: string, payload: Record<string, unknown>, second: number): EventEnvelope => ({
      id: `evt_${++seq}`,
      event_seq: seq,
      ts: new Date(Date.UTC(2026, 0, 1, 10, 0, second)).toISOString(),
      agent_id: "main",
      provenance: {},
      type,
      payload,
    });
    const at = (second: number, tenths = 0) => Date.UTC(2026, 0, 1, 10, 0, second) + tenths * 100;
    const call = (call_id: string, tool_name: string, a: unknown) => ({
      call_id,
      tool_name,
      arguments_preview: args(a),
    });
    const done = (call_id: string, tool_name: string, second: number) =>
      ev(
        "tool_executed",
        {
          run_id: "run_1",
          call_id,
          tool_name,
          status: "success",
          summary_text: "ok",
          duration_ms: 1,
          envelope: { tool_name, status: "success", summary_text: "ok", result: {}, error: null },
        },
        second,
      );
    let s: ActivityState = IDLE;
    expect(renderActivity(s, at(0))).toBeNull();
    s = nextActivity(
      s,
      ev(
        "turn_context_built",
        {
          run_id: "run_1",
          context_build_ms: 1,
          turn_index: 1,
          tool_count: 3,
          prompt_cache_key: null,
          context_fingerprint: null,
          loaded_agents_md: [],
          execution_root: "/",
          cwd: "/",
        },
        1,
      ),
    );
    expect(renderActivity(s, at(2))).toBe("asking the model · 1.0 s");
    s = nextActivity(
      s,
      ev(
        "assistant_round_recorded",
        {
          run_id: "run_1",
          round: 1,
          text_preview: "",
          tool_requests: ["ExecCommand", "ApplyPatch"],
          tool_calls: [
            call("c1", "ExecCommand", { cmd: "npm test" }),
            call("c2", "ApplyPatch", { patch: PATCH }),
          ],
        },
        3,
      ),
    );
    expect(renderActivity(s, at(7, 2))).toBe("running ExecCommand: npm test · 4.2 s");
    expect(renderActivity(s, at(8, 2))).toBe("running ExecCommand: npm test · 5.2 s");
    // Cut to a width, the clock stays.
    expect(renderActivity(s, at(8, 2), 24)).toBe("running ExecCom… · 5.2 s");
    s = nextActivity(s, done("c1", "ExecCommand", 9));
    expect(renderActivity(s, at(9, 5))).toBe("running ApplyPatch: notes/todo.md · 0.5 s");
    s = nextActivity(s, done("c2", "ApplyPatch", 10));
    expect(renderActivity(s, at(11))).toBe("asking the model · 1.0 s");
    s = nextActivity(
      s,
      ev(
        "message_processed",
        {
          message_id: "m",
          run_id: "run_1",
          outcome: "completed",
          turn_outcome: "settled",
          duration_ms: 1,
        },
        12,
      ),
    );
    expect(renderActivity(s, at(13))).toBeNull();
    expect(
      renderActivity(
        { current: { label: "working", since: new Date(at(0)).toISOString() }, pending: [] },
        at(0) + 125_000,
      ),
    ).toBe("working · 2 min 05 s");
  });
});

describe("tool rows", () => {
  it("tail and transcript name the command, the patched file and the work item; debug has the whole command; info hides them", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt: TestRuntime = await startRuntime({ home });
    cleanup.push(() => rt.close());
    const cmd = "printf 'alpha\\n'\n  echo   beta";
    fake.enqueue(
      reply.tools([
        { name: "ExecCommand", arguments: { cmd } },
        { name: "ApplyPatch", arguments: { patch: PATCH } },
        { name: "CreateWorkItem", arguments: { objective: "Write the release notes" } },
      ]),
    );
    fake.enqueue(reply.text("all three done"));
    const sent = await runCli(["prompt", "do the three things", "--home", home]);
    expect(sent.code, sent.stderr).toBe(0);
    await waitFor(
      async () =>
        (await rt.host.store.events.after("main", 0, 1000)).some(
          (e) => e.type === "brief_created" && JSON.stringify(e.payload).includes("all three done"),
        ),
      { what: "the answer" },
    );

    const tail = async (...extra: string[]) => {
      const r = await runCli(["tail", "main", "-n", "100", "--home", home, ...extra], {
        env: { NO_COLOR: "1" },
      });
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    };
    const verbose = await tail();
    expect(verbose).toMatch(
      /ExecCommand {2}printf 'alpha\\n' echo beta · command exited with status 0/,
    );
    expect(verbose).toContain("ApplyPatch  notes/todo.md · ");
    expect(verbose).toContain("CreateWorkItem  Write the release notes · ");
    // verbose shows the command on one line, not the whole of it
    expect(verbose).not.toContain("  echo   beta");

    const debug = await tail("--display", "debug");
    expect(debug).toContain("  command:\n  printf 'alpha\\n'\n    echo   beta");
    expect(debug).toMatch(
      /Tool calls {2}ExecCommand \(printf 'alpha\\n' echo beta\), ApplyPatch \(notes\/todo\.md\), CreateWorkItem/,
    );

    const info = await tail("--display", "info");
    expect(info).toContain("all three done");
    expect(info).not.toMatch(/ExecCommand|ApplyPatch|CreateWorkItem/);

    const transcript = await runCli(["transcript", "main", "--home", home], {
      env: { NO_COLOR: "1" },
    });
    expect(transcript.code, transcript.stderr).toBe(0);
    expect(transcript.stdout).toMatch(
      /ExecCommand {2}printf 'alpha\\n' echo beta · command exited with status 0\n {2}Process exited with code 0/,
    );
    expect(transcript.stdout).toContain("ApplyPatch  notes/todo.md · applied patch to 1 file");
    const tdebug = await runCli(["transcript", "main", "--home", home, "--display", "debug"], {
      env: { NO_COLOR: "1" },
    });
    expect(tdebug.stdout).toContain("  command:\n  printf 'alpha\\n'\n    echo   beta");
  }, 60_000);

  it.each([
    ["in process", false],
    ["through a running host", true],
  ])(
    "holon run's progress line (%s) names the running command and its clock keeps moving",
    async (_how, withHost) => {
      const home = tempHome();
      await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
      // The command waits on a file in the host's /tmp, which a sandboxed command cannot see
      // (it gets a private /tmp): this test is about the progress line, not confinement.
      const off = await runCli(["config", "set", "sandbox.mode", "off", "--home", home]);
      expect(off.code, off.stderr).toBe(0);
      if (withHost) {
        const rt = await startRuntime({ home });
        cleanup.push(() => rt.close());
      }
      const go = join(tempHome("holon-go-"), "go");
      const cmd = `while [ ! -e ${go} ]; do sleep 0.05; done; echo released`;
      fake.enqueue(reply.tools([{ name: "ExecCommand", arguments: { cmd } }]));
      fake.enqueue(reply.text("the wait is over"));
      const tmux = Tmux.start(
        [process.execPath, HOLON_BIN, "run", "wait for the file", "--home", home],
        { cols: 160, rows: 10, env: { HOLON_CONTROL_TOKEN: "" } },
      );
      cleanup.push(() => tmux.close());
      const line = (s: string) =>
        /\[(\d+\.\d)s\] running ExecCommand: while \[ ! -e .* · (\d+\.\d) s/.exec(s);
      const first = line(await tmux.waitScreen((s) => Boolean(line(s)), "the progress line"))!;
      const later = line(
        await tmux.waitScreen((s) => {
          const now = line(s);
          return Boolean(now && now[1] !== first[1] && now[2] !== first[2]);
        }, "both clocks moving"),
      )!;
      expect(Number(later[2])).toBeGreaterThan(Number(first[2]));
      writeFileSync(go, "");
      await tmux.waitScreen(() => tmux.exitStatus() !== undefined, "the run to end");
      expect(tmux.exitStatus(), tmux.scrollback()).toBe(0);
      expect(tmux.scrollback(), tmux.scrollback()).toContain("the wait is over");
    },
    60_000,
  );
});
