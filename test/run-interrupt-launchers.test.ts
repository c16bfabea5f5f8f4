// Ctrl-C of `holon run` against a running host exits 130 whichever launcher is in between:
// node on the CLI, the `bin/holon.js` launcher run as a program (its sh preamble execs node),
// and `npx holon` (npm exec, then sh, then the launcher). A terminal's Ctrl-C reaches every
// process of the foreground process group, so the test signals the group, as the terminal does.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOLON_BIN, REPO_ROOT, runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();
let home: string;
let serve: Awaited<ReturnType<typeof spawnServe>>;
let ws: string;

beforeAll(async () => {
  // A prompt naming a pid file starts a long command that records its pid there; anything
  // else (the turn after an abort) is answered with text.
  fake.setFallback((req) => {
    const input = req.body.input as { role?: string; content?: unknown }[];
    const last = input[input.length - 1];
    const m = last?.role === "user" ? /LONG (\S+\.pid)/.exec(JSON.stringify(last)) : null;
    if (!m) return reply.text("(script over)");
    return reply.tools([
      {
        name: "ExecCommand",
        arguments: {
          cmd: `echo $$ > ${m[1]}; while true; do sleep 0.05; done`,
          yield_time_ms: 120_000,
        },
        call_id: "long",
      },
    ]);
  });
  home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  // The command's pid ($$), written to a file outside its root, is how the test follows it:
  // unconfined (a sandboxed command has its own PID namespace and its own /tmp).
  const off = await runCli(["config", "set", "sandbox.mode", "off"], { env: { HOLON_HOME: home } });
  expect(off.code, off.stderr).toBe(0);
  serve = await spawnServe(home);
  ws = join(tempHome("holon-ws-"), "ws");
  mkdirSync(ws);
});
afterAll(async () => {
  const exited = new Promise((r) => serve.proc.once("exit", r));
  serve.proc.kill("SIGTERM");
  await exited;
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const LAUNCHERS: [string, string[], Record<string, string>][] = [
  ["node on the CLI", [process.execPath, HOLON_BIN], {}],
  ["the bin/holon.js launcher", [HOLON_BIN], {}],
  // npm runs a bin through its script shell: dash here, bash on many systems. They differ:
  // dash dies of the SIGINT too (npm then re-raises it on itself), bash waits and exits with
  // the child's 130 (which npm passes on).
  ["npx holon", ["npx", "--no-install", "holon"], {}],
  [
    "npx holon with bash as npm's script shell",
    ["npx", "--no-install", "holon"],
    { npm_config_script_shell: "/bin/bash" },
  ],
];

/** The status a shell reports: the exit code, or 128 + the signal that ended the process. */
function shellStatus(code: number | null, signal: NodeJS.Signals | null): number | null {
  return code ?? (signal ? 128 + constants.signals[signal] : null);
}

const hasPython = spawnSync("python3", ["--version"]).status === 0;

/**
 * A user at a terminal: an interactive bash in a pseudo-terminal runs `command`, Ctrl-C is
 * typed once the command's pid file exists, and `echo $?` reports what the shell saw.
 */
const TERMINAL = String.raw`
import os, pty, sys, time
command, pid_file = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
out = b""
def pump(until, timeout=60):
    global out
    end = time.time() + timeout
    while time.time() < end:
        if until():
            return True
        try:
            import select
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                out += os.read(fd, 65536)
        except OSError:
            break
    return until()
os.write(fd, (command + "\n").encode())
pump(lambda: os.path.exists(pid_file) and os.path.getsize(pid_file) > 0)
os.write(fd, b"\x03")
os.write(fd, b'echo "STATUS=$?"\n')
import re
pump(lambda: re.search(rb"STATUS=\d+", out) is not None)
os.write(fd, b"exit\n")
sys.stdout.write(out.decode("utf8", "replace"))
`;

describe("Ctrl-C of holon run with a host running", () => {
  it.skipIf(!hasPython)(
    "typed at a terminal while `npx holon run` works: the shell sees 130",
    async () => {
      const pidFile = join(ws, `cmd-${Math.random().toString(36).slice(2)}.pid`);
      const r = await runCli([], {
        exec: ["python3", "-c", TERMINAL, `npx --no-install holon run 'LONG ${pidFile}'`, pidFile],
        env: { HOLON_HOME: home },
        timeoutMs: 90_000,
      });
      const status = /STATUS=(\d+)/.exec(r.stdout)?.[1];
      expect(status, r.stdout + r.stderr).toBe("130");
    },
    120_000,
  );

  it.each(LAUNCHERS)(
    "through %s exits 130 and the host stops the command",
    async (_, argv, extraEnv) => {
      const pidFile = join(ws, `cmd-${Math.random().toString(36).slice(2)}.pid`);
      const [file, ...pre] = argv;
      // Its own process group, like a shell's foreground job; in the checkout, where npx finds holon.
      const child = spawn(file!, [...pre, "run", `LONG ${pidFile}`], {
        cwd: REPO_ROOT,
        env: { ...process.env, ...extraEnv, HOLON_HOME: home },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      let stderr = "";
      child.stderr!.on("data", (d) => (stderr += d));
      child.stdout!.resume();
      const done = new Promise<number | null>((r) =>
        child.on("close", (code, signal) => r(shellStatus(code, signal))),
      );
      const pid = await waitFor(
        () =>
          existsSync(pidFile)
            ? Number(readFileSync(pidFile, "utf8").trim()) || undefined
            : undefined,
        { what: `the command to start (${stderr})`, timeoutMs: 30_000 },
      );
      process.kill(-child.pid!, "SIGINT");
      expect(await done, stderr).toBe(130);
      await waitFor(() => !alive(pid), { what: "the host to stop the command" });
    },
    60_000,
  );
});
