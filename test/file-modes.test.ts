// SQLite only, on both test runs: the modes of the database file and its WAL (a Postgres home has none).
// Private files: everything Holon itself keeps under HOLON_HOME is owner-only (files 0600,
// directories 0700), whether the host or the CLI wrote it, and state left with wider modes is
// narrowed at start. Agent and workspace content keeps its modes.
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";

afterAll(cleanupHomes);

const mode = (p: string) => lstatSync(p).mode & 0o777;

/** Every path under `root` that is Holon's own (agent content outside `.holon/` is skipped). */
function holonsOwn(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const rel = relative(root, p).split("/");
      // agents/<id>/… is the agent's; only agents/<id>/.holon/… is the runtime's
      if (rel[0] === "agents" && rel.length >= 3 && rel[2] !== ".holon") continue;
      if (rel[0] === "agents" && rel.length === 2) {
        walk(p);
        continue;
      }
      if (rel[0] === "agents" && rel.length === 1) {
        walk(p);
        continue;
      }
      out.push(p);
      if (lstatSync(p).isDirectory()) walk(p);
    }
  };
  walk(root);
  return out;
}

function expectPrivate(home: string): void {
  expect(mode(home)).toBe(0o700);
  const loose = holonsOwn(home)
    .filter((p) => !lstatSync(p).isSymbolicLink())
    .filter((p) => (lstatSync(p).isDirectory() ? mode(p) !== 0o700 : mode(p) & 0o077))
    .map((p) => `${relative(home, p)} ${mode(p).toString(8)}`);
  expect(loose).toEqual([]);
}

async function stopServe(s: { proc: import("node:child_process").ChildProcess }) {
  const exited = new Promise((r) => s.proc.once("exit", r));
  s.proc.kill("SIGTERM");
  await exited;
}

describe("file modes", () => {
  it("a home created by the CLI and used by the host holds only owner-only files", async () => {
    const parent = tempHome("holon-test-", { sqlite: true });
    const home = join(parent, "state");
    const cfg = await runCli(["config", "set", "runtime.default_tool_output_tokens", "4000"], {
      env: { HOLON_HOME: home },
    });
    expect(cfg.code, cfg.stderr).toBe(0);
    expect(mode(home)).toBe(0o700);
    expect(mode(join(home, "config.json"))).toBe(0o600);

    const workspace = join(parent, "ws");
    mkdirSync(workspace);
    // The workspace is outside the agent's root: a sandboxed command may write it only when
    // the configuration says so.
    const cfgPath = join(home, "config.json");
    const cfgJson = JSON.parse(readFileSync(cfgPath, "utf8"));
    cfgJson.sandbox = { writable_paths: [workspace] };
    writeFileSync(cfgPath, JSON.stringify(cfgJson));
    const s = await spawnServe(home);
    try {
      const post = async (body: unknown) => {
        const res = await fetch(`${s.url}/control/agents/main/tasks`, {
          method: "POST",
          headers: { "content-type": "application/json", ...s.auth },
          body: JSON.stringify(body),
        });
        expect(res.status).toBe(201);
        return ((await res.json()) as any).task.task_id as string;
      };
      // A command that writes into the workspace, one taking input, and a terminal.
      const ids = [
        await post({ cmd: `echo made > ${workspace}/made.txt; echo done` }),
        await post({ cmd: "read line; echo got $line", accepts_input: true }),
        await post({ cmd: "echo on a terminal", tty: true }),
      ];
      await fetch(`${s.url}/control/agents/main/tasks/${ids[1]}/input`, {
        method: "POST",
        headers: { "content-type": "application/json", ...s.auth },
        body: JSON.stringify({ input: "x\n", close_input: true }),
      });
      for (const id of ids) {
        await waitFor(
          async () => {
            const r = await fetch(`${s.url}/agents/main/tasks/${id}`, { headers: s.auth });
            return ((await r.json()) as any).task.status !== "running";
          },
          { what: `task ${id} to finish` },
        );
      }
    } finally {
      await stopServe(s);
    }
    expectPrivate(home);
    // The command itself ran with the user's umask: its file is an ordinary 0644 file.
    expect(mode(join(workspace, "made.txt"))).toBe(0o644);
    for (const f of ["holon.db", "holon.db-wal", "holon.db-shm", "logs/holon.log"]) {
      const p = join(home, f);
      if (statSync(p, { throwIfNoEntry: false })) expect(mode(p), f).toBe(0o600);
    }
  });

  it("state left with wide modes is narrowed at start; agent and workspace content is not", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    const s = await spawnServe(home);
    await stopServe(s);
    const agentHome = join(home, "agents", "main");
    const skill = join(agentHome, "skills", "deploy", "run.sh");
    mkdirSync(join(agentHome, "skills", "deploy"), { recursive: true });
    // The home layout creates skills/ private (0700); an operator may open it up.
    chmodSync(join(agentHome, "skills"), 0o755);
    writeFileSync(skill, "#!/bin/sh\necho deploy\n", { mode: 0o755 });
    chmodSync(skill, 0o755);
    const proc = join(agentHome, ".holon", "processes", "old");
    mkdirSync(proc, { recursive: true });
    writeFileSync(join(proc, "output.log"), "secret output\n");
    for (const [p, m] of [
      [home, 0o755],
      [join(home, "holon.db"), 0o644],
      [join(home, "logs"), 0o755],
      [join(home, "logs", "holon.log"), 0o644],
      [join(home, "run"), 0o777],
      [join(agentHome, ".holon"), 0o755],
      [proc, 0o755],
      [join(proc, "output.log"), 0o644],
    ] as const) {
      chmodSync(p, m);
    }
    const again = await spawnServe(home);
    await stopServe(again);
    expectPrivate(home);
    expect(mode(skill)).toBe(0o755);
    expect(mode(join(agentHome, "skills"))).toBe(0o755);
  });
});

describe("a HOLON_HOME that cannot hold a database", () => {
  it("is refused at start with a clear error, not a stack trace", async () => {
    const parent = tempHome("holon-test-", { sqlite: true });
    const file = join(parent, "not-a-dir");
    writeFileSync(file, "x");
    const asFile = await runCli(["serve", "--port", "0", "--home", file]);
    expect(asFile.code).toBe(1);
    // The CLI names the path and the problem before it starts anything (cli-home.test.ts).
    expect(asFile.stderr).toBe(
      `error: --home ${file} is a file, not a directory; point it at a directory (it is created when missing)\n`,
    );
    expect(asFile.stderr).not.toMatch(/\n\s+at /);

    const home = join(parent, "home");
    mkdirSync(join(home, "holon.db"), { recursive: true });
    const dbDir = await runCli(["run", "--home", home, "hello"]);
    expect(dbDir.code).toBe(1);
    expect(dbDir.stderr).toMatch(/holon\.db is not a regular file/);
    expect(dbDir.stderr).toMatch(/hint:/);
  });
});
