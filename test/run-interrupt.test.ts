// Ctrl-C on `holon run`: the first one aborts the turn, stops the command it is running and
// exits non-zero once that is done; a second one exits at once. With a running host, the
// client going away makes the host abort the run and stop its commands.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HOLON_BIN,
  REPO_ROOT,
  cleanupHomes,
  spawnServe,
  tempHome,
  waitFor,
} from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
  fake.setFallback(() => reply.text("(script over)"));
});
afterAll(async () => {
  await fake.close();
  cleanupHomes();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A model turn that starts a long command recording its pid, and waits on it. */
function scriptLongCommand(pidFile: string, ignoreTerm = false) {
  const trap = ignoreTerm ? "trap '' TERM; " : "";
  fake.enqueue(
    reply.tools([
      {
        name: "ExecCommand",
        arguments: {
          cmd: `${trap}echo $$ > ${pidFile}; while true; do sleep 0.05; done`,
          yield_time_ms: 120_000,
        },
        call_id: "long",
      },
    ]),
  );
}

function startRun(home: string, args: string[], cwd: string) {
  const child = spawn(process.execPath, [HOLON_BIN, "run", "--json", ...args], {
    cwd,
    env: { ...process.env, HOLON_HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
  return { child, done, out: () => stdout, err: () => stderr };
}

async function setup() {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  // These tests follow the command by the pid it writes ($$) into a file outside its root:
  // both need it unconfined (the sandbox has its own PID namespace and its own /tmp).
  const cfgPath = join(home, "config.json");
  const cfg = JSON.parse(readFileSync(cfgPath, "utf8"));
  cfg.sandbox = { mode: "off" };
  writeFileSync(cfgPath, JSON.stringify(cfg));
  const ws = join(tempHome("holon-ws-"), "ws"); // outside the state directory
  mkdirSync(ws);
  return { home, ws, pidFile: join(ws, "cmd.pid") };
}

const pidOf = (file: string) =>
  waitFor(
    () => (existsSync(file) ? Number(readFileSync(file, "utf8").trim()) || undefined : undefined),
    {
      what: "the command to start",
    },
  );

describe("Ctrl-C on holon run", () => {
  it("the first aborts the turn, stops its command and exits non-zero", async () => {
    const { home, ws, pidFile } = await setup();
    scriptLongCommand(pidFile);
    const run = startRun(home, ["go"], ws);
    const pid = await pidOf(pidFile).catch((e) => {
      throw new Error(`${e.message}: ${run.err()} ${run.out()}`);
    });
    expect(alive(pid)).toBe(true);
    run.child.kill("SIGINT");
    const code = await run.done;
    expect(code).toBe(130);
    expect(run.err()).toMatch(/aborting the run/);
    expect(alive(pid)).toBe(false); // stopped before the process exited
    expect(JSON.parse(run.out())).toMatchObject({ ok: false, outcome: "aborted" });
  });

  it("a second one exits at once, without waiting for the command to stop", async () => {
    const { home, ws, pidFile } = await setup();
    scriptLongCommand(pidFile, true); // ignores SIGTERM: stopping it takes the grace period
    const run = startRun(home, ["go"], ws);
    const pid = await pidOf(pidFile);
    run.child.kill("SIGINT");
    await waitFor(() => run.err().includes("aborting the run"), { what: "the first Ctrl-C" });
    run.child.kill("SIGINT");
    expect(await run.done).toBe(130);
    expect(run.err()).toMatch(/quitting without waiting/);
    // What the hard exit left behind: the command (not a group leader; its wrapper leads the
    // group, so a kill of -pid found no group and left it looping for good).
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
    await waitFor(() => !alive(pid), { what: "the left-behind command to end" });
  });

  it("against a running host, leaving aborts the run on the host and stops its command", async () => {
    const { home, pidFile } = await setup();
    const s = await spawnServe(home);
    try {
      scriptLongCommand(pidFile);
      const run = startRun(home, ["--agent", "main", "go"], REPO_ROOT);
      const pid = await pidOf(pidFile);
      run.child.kill("SIGINT");
      expect(await run.done).toBe(130);
      await waitFor(() => !alive(pid), { what: "the host to stop the command" });
      await waitFor(
        async () => {
          const st: any = await (
            await fetch(`${s.url}/agents/main/status`, { headers: s.auth })
          ).json();
          return st.status !== "awake_running" && st.status !== "stopped";
        },
        { what: "the agent to be idle again, not stopped" },
      );
      const t: any = await (
        await fetch(`${s.url}/agents/main/transcript?limit=100`, { headers: s.auth })
      ).json();
      expect(JSON.stringify(t.entries)).toContain("aborted");
    } finally {
      const exited = new Promise((r) => (s.proc as ChildProcess).once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });
});
