// Commands do not inherit secrets. A host holding provider keys and a control token in its
// environment serves a model that runs `env` three ways (a command, a background task, a
// terminal); no secret may appear in the tool results, the transcript, the events, the task
// output, the database or the next provider request, nor in the spawn helper and its spare
// wrappers, while ordinary and allowlisted variables do reach the commands.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  HOLON_BIN,
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { reply } from "./fake-provider/server.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { isSecretName, scrubEnv } from "../src/tasks/env.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

const fake = useFakeProvider();

const SECRETS = {
  OPENAI_API_KEY: "sk-live-openai-5ecret-AAA",
  ANTHROPIC_API_KEY: "sk-ant-5ecret-BBB",
  MY_SERVICE_TOKEN: "tok-5ecret-CCC",
  DB_PASSWORD: "pw-5ecret-DDD",
  aws_secret: "aws-5ecret-EEE",
  HOLON_CONTROL_TOKEN: "control-5ecret-FFF",
  ODD_CRED: "odd-5ecret-GGG", // named by a provider's credential_env, no secret-looking suffix
};
const VISIBLE = { PLAIN_VAR: "plain-value-HHH", SHOW_ME_TOKEN: "allowed-value-III" };

/** Every file under `dir`, as raw bytes in latin1 (so any byte sequence compares). */
function allBytes(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.push({ path: p, text: readFileSync(p).toString("latin1") });
    }
  };
  walk(dir);
  return out;
}

function childrenOf(pid: number): number[] {
  try {
    return execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
      .split("\n")
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

describe("command environment", () => {
  it("the built-in rules", () => {
    const policy = { secretNames: ["ODD_CRED"], allow: ["SHOW_ME_TOKEN"] };
    for (const name of [
      "OPENAI_API_KEY",
      "github_token",
      "X_SECRET",
      "PGPASSWORD_X_PASSWORD",
      "HOLON_CONTROL_TOKEN",
      "ODD_CRED",
    ])
      expect(isSecretName(name, policy), name).toBe(true);
    for (const name of ["PATH", "HOME", "TOKENIZER", "SHOW_ME_TOKEN", "SECRETARY"])
      expect(isSecretName(name, policy), name).toBe(false);
    expect(scrubEnv({ A: "1", B_TOKEN: "2", C: undefined }, policy)).toEqual({ A: "1" });
    // What the launcher set for its own process goes; the same variable set by the user stays.
    const launched = { A: "1", MALLOC_ARENA_MAX: "2", HOLON_LAUNCHER_ENV: "MALLOC_ARENA_MAX" };
    expect(scrubEnv(launched, policy)).toEqual({ A: "1" });
    const own = { A: "1", MALLOC_ARENA_MAX: "4" };
    expect(scrubEnv(own, policy)).toEqual(own);
  });

  it("the launcher tunes malloc for the host it starts, daemon included, and commands get none of it", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    // Through the real launcher: sh reads bin/holon.js's first lines and execs `node` from PATH.
    const PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;
    const launch = (args: string[], env: Record<string, string> = {}) =>
      runCli([], { exec: ["/bin/sh", HOLON_BIN, ...args, "--home", home], env: { PATH, ...env } });
    const procEnv = (pid: number) => readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");

    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "env" }, call_id: "c1" }]),
      reply.text("ran env"),
    );
    const started = await launch(["daemon", "start", "--port", "0", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    const pid = JSON.parse(started.stdout).pid as number;
    try {
      expect(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")).toContain(
        "--max-semi-space-size=2",
      );
      expect(procEnv(pid)).toContain("MALLOC_ARENA_MAX=1");
      const prompt = await runCli(["prompt", "show me the environment"], {
        env: { HOLON_HOME: home },
      });
      expect(prompt.code, prompt.stderr).toBe(0);
      await waitFor(() => fake.requests.length >= before + 2, { what: "the tool result round" });
      const wire = fake.requests
        .slice(before)
        .map((r) => r.raw)
        .join("\n");
      expect(wire).toContain("PATH="); // the command ran and its output came back
      expect(wire).not.toContain("MALLOC_");
      expect(wire).not.toContain("HOLON_LAUNCHER_ENV");
    } finally {
      const stopped = await launch(["daemon", "stop"]);
      expect(stopped.code, stopped.stderr).toBe(0);
    }

    // A user's own malloc setting is left alone, and nothing is marked as the launcher's.
    const serve = spawn("/bin/sh", [HOLON_BIN, "serve", "--port", "0", "--home", home], {
      env: { ...process.env, PATH, MALLOC_ARENA_MAX: "4" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    serve.stderr!.on("data", (d) => (stderr += d));
    try {
      await waitFor(() => stderr.includes("listening on"), {
        what: "serve to listen",
        timeoutMs: 45_000,
      });
      const environ = procEnv(serve.pid!);
      expect(environ).toContain("MALLOC_ARENA_MAX=4");
      expect(environ.some((v) => v.startsWith("HOLON_LAUNCHER_ENV="))).toBe(false);
    } finally {
      const exited = new Promise((r) => serve.once("exit", r));
      serve.kill("SIGTERM");
      await exited;
    }
  });

  it("a model running env sees no secret anywhere, and the secret reaches no record", async () => {
    const home = tempHome();
    const env = { HOLON_HOME: home };
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const other = await runCli(
      [
        "config",
        "providers",
        "set",
        "other",
        "--transport",
        "openai_chat_completions",
        "--base-url",
        "https://llm.example.invalid/v1",
        "--credential-source",
        "env",
        "--credential-env",
        "ODD_CRED",
      ],
      { env },
    );
    expect(other.code, other.stderr).toBe(0);
    const allow = await runCli(
      ["config", "set", "runtime.command_env_allow", '["SHOW_ME_TOKEN"]'],
      {
        env,
      },
    );
    expect(allow.code, allow.stderr).toBe(0);

    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([
        { name: "ExecCommand", arguments: { cmd: "env" }, call_id: "c1" },
        {
          name: "ExecCommand",
          arguments: { cmd: "env; sleep 0.3; env", yield_time_ms: 0 },
          call_id: "c2",
        },
        { name: "ExecCommand", arguments: { cmd: "env", tty: true }, call_id: "c3" },
      ]),
      reply.text("ran env three ways"),
      reply.text("task result noted"),
    );
    const s = await spawnServe(home, [], { ...SECRETS, ...VISIBLE });
    try {
      const prompt = await runCli(["prompt", "show me the environment"], { env });
      expect(prompt.code, prompt.stderr).toBe(0);
      // Two requests for the prompt's turn, one for the task result's.
      await waitFor(() => fake.requests.length >= before + 3, {
        what: "the task result turn",
        timeoutMs: 20_000,
      });
      await waitFor(
        async () => {
          const st = (await (await fetch(`${s.url}/status`, { headers: s.auth })).json()) as any;
          return st.status !== "awake_running" && st.pending === 0;
        },
        { what: "the agent to settle" },
      );

      const sent = fake.requests.slice(before);
      const wire = sent.map((r) => r.raw).join("\n");
      // The commands did run and saw the ordinary and the allowlisted variables.
      expect(wire).toContain(`PLAIN_VAR=${VISIBLE.PLAIN_VAR}`);
      expect(wire).toContain(`SHOW_ME_TOKEN=${VISIBLE.SHOW_ME_TOKEN}`);

      const events = await (
        await fetch(`${s.url}/agents/main/events?limit=1000`, { headers: s.auth })
      ).text();
      const transcript = await (
        await fetch(`${s.url}/agents/main/transcript?limit=1000`, { headers: s.auth })
      ).text();
      expect(transcript).toContain("PLAIN_VAR");

      // The spawn helper and its spares: their own environments are clean too.
      const helpers = childrenOf(s.proc.pid!).filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("spawner-helper"),
      );
      expect(helpers.length).toBe(1);
      const procs = [helpers[0]!, ...childrenOf(helpers[0]!)];
      const environs = procs
        .filter((pid) => existsSync(`/proc/${pid}/environ`))
        .map((pid) => readFileSync(`/proc/${pid}/environ`, "latin1"));
      expect(environs.length).toBeGreaterThan(1); // the helper and at least one spare
      expect(environs.join("\n")).toContain(VISIBLE.PLAIN_VAR);

      const places: [string, string][] = [
        ["provider requests", wire],
        ["events", events],
        ["transcript", transcript],
        ["helper and spares", environs.join("\n")],
        ...allBytes(home).map((f) => [f.path, f.text] as [string, string]),
      ];
      for (const [where, text] of places) {
        for (const [name, value] of Object.entries(SECRETS)) {
          expect(text.includes(value), `${name} leaked into ${where}`).toBe(false);
        }
      }
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
    // The database stores bodies compressed, so its raw bytes prove little: read every
    // record back through the store, decoded, and look there too.
    const rt = await startRuntime({ home });
    try {
      const store = rt.host.store;
      const decoded = JSON.stringify([
        await store.messages.recent("main", 1000),
        await store.events.query("main", { limit: 100_000, order: "asc" }),
        await store.transcript.recent("main", 100_000),
        await store.tasks.forAgent("main", 1000),
      ]);
      expect(decoded).toContain("PLAIN_VAR"); // the env output is in there, readable
      for (const [name, value] of Object.entries(SECRETS)) {
        expect(decoded.includes(value), `${name} leaked into the database`).toBe(false);
      }
    } finally {
      await rt.close();
    }
  });
});

describe("the command policy belongs to a host", () => {
  it("two hosts in one process each scrub by their own configuration", async () => {
    const saved = process.env["SHOW_ME_TOKEN"];
    process.env["SHOW_ME_TOKEN"] = VISIBLE.SHOW_ME_TOKEN;
    const allowing = tempHome();
    const set = await runCli(["config", "set", "runtime.command_env_allow", '["SHOW_ME_TOKEN"]'], {
      env: { HOLON_HOME: allowing },
    });
    expect(set.code, set.stderr).toBe(0);
    const a = await startRuntime({ home: allowing });
    const b = await startRuntime({ home: tempHome() }); // built second, with no allowlist
    try {
      const envOf = async (rt: TestRuntime) => {
        const task = await rt.host.tasks.start({
          agent_id: "main",
          cmd: "env",
          workdir: (await rt.host.agents.get("main")).agent_home,
          shell: "/bin/sh",
          login: false,
          tty: false,
          accepts_input: false,
          terminal_reentry: false,
        });
        await rt.host.tasks.waitTerminal(task.id, 10_000);
        return readFileSync((await rt.host.store.tasks.get(task.id))!.output_path, "utf8");
      };
      expect(await envOf(a)).toContain(`SHOW_ME_TOKEN=${VISIBLE.SHOW_ME_TOKEN}`);
      expect(await envOf(b)).not.toContain("SHOW_ME_TOKEN");
      expect(await envOf(a)).toContain(`SHOW_ME_TOKEN=${VISIBLE.SHOW_ME_TOKEN}`);
    } finally {
      await a.close();
      await b.close();
      if (saved === undefined) delete process.env["SHOW_ME_TOKEN"];
      else process.env["SHOW_ME_TOKEN"] = saved;
    }
  });
});
