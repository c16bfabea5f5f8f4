// The CLI as a user runs it: real `holon` processes against a real `holon serve`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupHomes, REPO_ROOT, runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";

let home: string;
let serve: { proc: ChildProcess; url: string };
const env = () => ({ HOLON_HOME: home });

beforeAll(async () => {
  home = tempHome();
  serve = await spawnServe(home);
});
afterAll(async () => {
  serve.proc.kill("SIGTERM");
  await new Promise((r) => serve.proc.once("exit", r));
  cleanupHomes();
});

describe("holon CLI", () => {
  it("--help lists the command groups", async () => {
    const r = await runCli(["--help"]);
    expect(r.code).toBe(0);
    for (const cmd of ["serve", "status", "prompt", "tail", "transcript", "agent", "config"]) {
      expect(r.stdout).toContain(cmd);
    }
  });

  it("--version and -V print the package's version", async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    for (const args of [["--version"], ["-V"]]) {
      const r = await runCli(args);
      expect(r.code, args.join(" ")).toBe(0);
      expect(r.stdout.trim()).toBe(version);
    }
    // The CLI itself (bin/holon.js answers a lone --version before loading it).
    const direct = execFileSync(
      process.execPath,
      [join(REPO_ROOT, "src/cli/main.ts"), "--version"],
      { encoding: "utf8" },
    );
    expect(direct.trim()).toBe(version);
  });

  it("status shows the default agent, with --json", async () => {
    const human = await runCli(["status"], { env: env() });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/agent:\s+main \(default\)/);
    const json = await runCli(["status", "--json"], { env: env() });
    const s = JSON.parse(json.stdout);
    expect(s).toMatchObject({ agent_id: "main", is_default: true });
    expect(s.token_usage).toMatchObject({ total_input_tokens: 0, total_output_tokens: 0 });
    expect(typeof s.pending).toBe("number");
    expect(s.lifecycle_hint).toBeDefined();
  });

  it("prompt queues an operator prompt marked as coming from the CLI; tail and transcript show it", async () => {
    const r = await runCli(["prompt", "--json", "hello", "there"], { env: env() });
    expect(r.code).toBe(0);
    const { message_id } = JSON.parse(r.stdout);
    const events = await waitFor(async () => {
      const t = await runCli(["tail", "--json", "-n", "200"], { env: env() });
      const list = JSON.parse(t.stdout) as any[];
      const done = list.some(
        (e) => e.type === "message_processed" && e.payload.message_id === message_id,
      );
      return done ? list : undefined;
    });
    const admitted = events.find(
      (e: any) => e.type === "message_admitted" && e.payload.message_id === message_id,
    );
    expect(admitted.provenance).toMatchObject({
      delivery_surface: "cli_prompt",
      trust: "trusted_operator",
    });
    const tailHuman = await runCli(["tail", "-n", "5"], { env: env() });
    expect(tailHuman.stdout).toMatch(/\d+\s+\S+\s+\w+/);
    const tr = await runCli(["transcript", "--json"], { env: env() });
    expect(JSON.parse(tr.stdout).some((e: any) => e.message_id === message_id)).toBe(true);
  });

  it("agent create/list/status/stop/start", async () => {
    expect((await runCli(["agent", "create", "reviewer"], { env: env() })).code).toBe(0);
    const dup = await runCli(["agent", "create", "reviewer"], { env: env() });
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("agent_exists");
    const list = JSON.parse((await runCli(["agent", "list", "--json"], { env: env() })).stdout);
    expect(list.map((a: any) => a.agent_id)).toContain("reviewer");
    const stop = await runCli(["agent", "stop", "reviewer", "--json"], { env: env() });
    expect(JSON.parse(stop.stdout).status).toBe("stopped");
    const refused = await runCli(["prompt", "--agent", "reviewer", "hi"], { env: env() });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("agent_stopped");
    expect(refused.stderr).toContain("holon agent start reviewer");
    const st = JSON.parse(
      (await runCli(["agent", "status", "reviewer", "--json"], { env: env() })).stdout,
    );
    expect(st.lifecycle_hint.resume_required).toBe(true);
    const start = await runCli(["agent", "start", "reviewer", "--json"], { env: env() });
    expect(JSON.parse(start.stdout).disposition).toBe("resumed");
  });

  it("unknown agents give a clear error", async () => {
    const r = await runCli(["status", "nobody"], { env: env() });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("unknown_agent");
  });

  it("says clearly when no runtime is running (exit code 1)", async () => {
    const empty = tempHome();
    for (const args of [["status"], ["prompt", "x"], ["tail"], ["agent", "list"]]) {
      const r = await runCli(args, { env: { HOLON_HOME: empty } });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/no Holon runtime is running/);
      expect(r.stderr).toMatch(/holon serve/);
    }
  });

  it("serve refuses a home that another runtime owns", async () => {
    const r = await runCli(["serve", "--port", "0"], { env: env() });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/another Holon runtime/);
  });

  it("the runtime listens on a Unix socket under run/ and shuts down on request", async () => {
    const other = tempHome();
    const s = await spawnServe(other, ["--token", "t0k"]);
    const st = await runCli(["status", "--json"], { env: { HOLON_HOME: other } });
    expect(st.code).toBe(0); // over the Unix socket, which counts as local
    const { existsSync, readFileSync } = await import("node:fs");
    expect(existsSync(`${other}/run/holon.sock`)).toBe(true);
    const exited = new Promise((r) => s.proc.once("exit", r));
    const res = await fetch(`${s.url}/control/runtime/shutdown`, {
      method: "POST",
      headers: { authorization: "Bearer t0k" },
    });
    expect(res.status).toBe(202);
    await exited;
    expect(existsSync(`${other}/run/holon.sock`)).toBe(false);
    expect(existsSync(`${other}/run/runtime.json`)).toBe(false);
    // the runtime keeps its own JSON-lines log, without the token
    const logText = readFileSync(`${other}/logs/holon.log`, "utf8");
    const lines = logText
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toEqual(
      expect.arrayContaining(["runtime started", "runtime stopped"]),
    );
    expect(logText).not.toContain("t0k");
  });
});
