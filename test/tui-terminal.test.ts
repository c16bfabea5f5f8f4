// `holon tui` in a real terminal emulator (tmux): the frame has a fixed height, so after 50
// events the pane's scrollback holds exactly one header, on the primary screen
// (tui.alternate_screen never) as on the alternate screen (auto, the default), which is left
// on /quit with the shell's screen restored. The activity line names the running command and
// its clock moves while the command runs; PgUp and PgDn scroll the conversation. Without a
// terminal, `holon tui` says so in one line.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
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
const open: { tmux?: Tmux; rt?: TestRuntime }[] = [];
beforeEach(() => {
  // A reply a failed test left behind must not be played to the next one.
  expect(fake.pending()).toBe(0);
});
afterEach(async () => {
  for (const o of open.splice(0)) {
    o.tmux?.close();
    await o.rt?.close();
  }
});

const ROWS = 20;
const headers = (text: string) => text.split("\n").filter((l) => l.startsWith("holon · main"));

function openConsole(home: string, ...extra: string[]): Tmux {
  return Tmux.start([process.execPath, HOLON_BIN, "tui", "--home", home, ...extra], {
    cols: 100,
    rows: ROWS,
    env: { HOLON_CONTROL_TOKEN: "", TERM: "xterm-256color" },
  });
}

/**
 * Pause the agent, show verbose items, then add 50 work items: 50 events on screen, each
 * wrapping onto two rows, so that the conversation is taller than the terminal.
 */
async function fiftyEvents(tmux: Tmux, rt: TestRuntime): Promise<void> {
  tmux.type("/pause");
  await tmux.waitScreen((s) => s.includes("holon · main (paused)"), "paused");
  tmux.type("/display 4");
  await tmux.waitScreen((s) => s.includes("· verbose ·"), "verbose");
  for (let i = 1; i <= 50; i++) {
    const r = await rt.req("POST", "/control/agents/main/work-items", {
      objective: `tidy corner ${i} of the garden, ${"then sweep the path and water the roses, ".repeat(3)}`,
    });
    expect(r.status, JSON.stringify(r.json)).toBe(201);
  }
  await tmux.waitScreen((s) => s.includes("tidy corner 50 of the garden"), "the 50th event");
}

/**
 * The pane's scrollback once a frame is complete (a capture can fall between the erase and
 * the redraw of a frame, which shows no header at all). Copies of the header that a flooding
 * console pushed into the scrollback stay there, so waiting never hides one.
 */
async function settled(tmux: Tmux): Promise<string> {
  let last = "";
  try {
    return await waitFor(
      () => {
        last = tmux.scrollback();
        return headers(last).length > 0 && /tidy corner 50 of/.test(last) ? last : undefined;
      },
      { what: "a complete frame", timeoutMs: 5_000 },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; the scrollback:\n${last}`);
  }
}

describe("holon tui in a terminal", () => {
  it("on the primary screen (tui.alternate_screen never): one header after 50 events", async () => {
    const home = tempHome();
    const set = await runCli(["config", "set", "tui.alternate_screen", "never"], {
      env: { HOLON_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    const rt = await startRuntime({ home });
    const tmux = openConsole(home);
    open.push({ tmux, rt });

    await tmux.waitScreen((s) => s.includes("· live"), "live");
    expect(tmux.alternateOn()).toBe(false);
    await fiftyEvents(tmux, rt);
    const held = await settled(tmux);
    expect(headers(held), held).toHaveLength(1);
    // The frame is one row short of the terminal: nothing was pushed into the scrollback.
    expect(held.trimEnd().split("\n").length, held).toBeLessThanOrEqual(ROWS);

    tmux.type("/quit");
    await tmux.waitScreen(() => tmux.exitStatus() !== undefined, "the console to exit");
    expect(tmux.exitStatus()).toBe(0);
    // Inline, the last frame stays where it was drawn.
    expect(headers(tmux.scrollback())).toHaveLength(1);
  }, 60_000);

  it("the activity line names the running command at info, and its clock moves while it runs", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home });
    const go = join(tempHome("holon-go-"), "go");
    const cmd = `while [ ! -e ${go} ]; do sleep 0.05; done; echo released`;
    fake.enqueue(reply.tools([{ name: "ExecCommand", arguments: { cmd } }]));
    fake.enqueue(reply.text("the check passed"));
    const tmux = openConsole(home);
    open.push({ tmux, rt });

    await tmux.waitScreen((s) => s.includes("· live"), "live");
    tmux.type("run the check");
    // Tool rows are hidden at info; the activity line still names the command.
    const clock = (s: string) => /● running ExecCommand: while \[ ! -e .* · (\d+\.\d) s/.exec(s);
    const first = clock(await tmux.waitScreen((s) => Boolean(clock(s)), "running ExecCommand"))!;
    await tmux.waitScreen((s) => {
      const now = clock(s);
      return Boolean(now && now[1] !== first[1]);
    }, "the activity clock moving");
    writeFileSync(go, "");
    await tmux.waitScreen((s) => s.includes("Result  the check passed"), "the result");
    await tmux.waitScreen((s) => s.includes("○ idle"), "idle again");
  }, 60_000);

  it("on the alternate screen by default (auto on a terminal): one header, and /quit restores the screen", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home });
    const tmux = openConsole(home);
    open.push({ tmux, rt });

    await tmux.waitScreen((s) => s.includes("· live"), "live");
    expect(tmux.alternateOn()).toBe(true);
    await fiftyEvents(tmux, rt);
    const held = await settled(tmux);
    expect(headers(held), held).toHaveLength(1);
    // The history is in the console, not in the terminal: PgUp scrolls it back, PgDn returns.
    tmux.key("PPage");
    const back = await tmux.waitScreen((s) => s.includes("scrolled back"), "scrolled back");
    expect(back).not.toContain("tidy corner 50 of");
    expect(back).toMatch(/tidy corner 4\d of/);
    expect(headers(back)).toHaveLength(1);
    tmux.key("NPage");
    await tmux.waitScreen(
      (s) => s.includes("tidy corner 50 of") && !s.includes("scrolled back"),
      "back at the newest",
    );

    tmux.type("/quit");
    await tmux.waitScreen(() => tmux.exitStatus() !== undefined, "the console to exit");
    expect(tmux.exitStatus()).toBe(0);
    expect(tmux.alternateOn()).toBe(false);
    expect(headers(tmux.scrollback())).toHaveLength(0);
  }, 60_000);

  it("--alternate-screen never overrides the default; a bad value is refused", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home });
    const tmux = openConsole(home, "--alternate-screen", "never");
    open.push({ tmux, rt });
    await tmux.waitScreen((s) => s.includes("· live"), "live");
    expect(tmux.alternateOn()).toBe(false);
    tmux.type("/quit");
    await tmux.waitScreen(() => tmux.exitStatus() !== undefined, "the console to exit");

    const bad = await runCli(["tui", "--home", home, "--alternate-screen", "sometimes"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--alternate-screen must be auto, always or never");
  }, 60_000);

  it("without a terminal, holon tui says it needs one in one line and exits non-zero", async () => {
    const home = tempHome();
    const rt = await startRuntime({ home });
    open.push({ rt });
    const r = await runCli(["tui", "--home", home], { env: { HOLON_CONTROL_TOKEN: "" } });
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/holon tui needs a terminal/);
    expect(r.stderr).not.toMatch(/Raw mode|at .*\.js:\d+/);
    expect(r.stdout).toBe("");
  }, 30_000);
});
