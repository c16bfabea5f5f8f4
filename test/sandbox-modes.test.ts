// The sandbox as an operator meets it, through the real product: `holon serve` processes, the
// CLI and the HTTP API. A confined task outlives a SIGKILLed host with its real exit status,
// takes PTY input and stops; `holon status` says what is enforced, and after an upgrade what
// changed; `holon agent set` changes an agent's mode as an event; `required` without a usable
// bubblewrap refuses commands with the reason, `auto` runs them and says they are unconfined.
import { openRecords } from "./helpers/raw-store.ts";
import { afterAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RuntimeHost } from "../src/host/host.ts";
import { readProcessRecord } from "../src/tasks/process.ts";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch } from "../src/tools/registry.ts";
import {
  cleanupHomes,
  REPO_ROOT,
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
  writeHomeConfig,
} from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";
import { sandboxAvailable } from "./helpers/sandbox.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

const enabled = sandboxAvailable();
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  cleanupHomes();
});

async function serve(home: string) {
  const s = await spawnServe(home);
  procs.push(s.proc);
  const req = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(s.url + path, {
      method,
      headers: { "content-type": "application/json", ...s.auth },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  const kill = async (signal: NodeJS.Signals) => {
    const exited = new Promise((r) => s.proc.once("exit", r));
    s.proc.kill(signal);
    await exited;
  };
  return { ...s, req, kill };
}

function processDirOf(home: string, taskId: string): string {
  const db = openRecords(home);
  const row = db.prepare("SELECT data FROM tasks WHERE id = ?").get(taskId) as { data: string };
  db.close();
  return JSON.parse(row.data).process_dir as string;
}

function eventsOf(home: string, type: string): number {
  const db = openRecords(home);
  const n = (
    db
      .prepare(
        "SELECT count(*) AS n FROM events e JOIN event_types t ON t.id = e.type_id WHERE t.name = ?",
      )
      .get(type) as { n: number }
  ).n;
  db.close();
  return n;
}

describe.skipIf(!enabled)("the sandbox through the product", () => {
  it("after an upgrade: one sandbox_enabled event, and status says what changed", async () => {
    const home = tempHome();
    // A home whose agent predates the sandbox: its record has no sandbox_enabled_at.
    const old = await RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
    await old.shutdown();
    const db = openRecords(home, { write: true });
    const row = db.prepare("SELECT data FROM agents WHERE agent_id = 'main'").get() as {
      data: string;
    };
    const rec = JSON.parse(row.data);
    delete rec.sandbox_enabled_at;
    db.prepare("UPDATE agents SET data = ? WHERE agent_id = 'main'").run(JSON.stringify(rec));
    db.close();

    const first = await serve(home);
    const st = await runCli(["status"], { env: { HOLON_HOME: home } });
    expect(st.code, st.stderr).toBe(0);
    expect(st.stdout).toMatch(/sandbox:\s+enforced \(host_bwrap, mode auto from default/);
    expect(st.stdout).toMatch(/changed:\s+since .* run inside bubblewrap/);
    await first.kill("SIGTERM");
    const second = await serve(home);
    await second.kill("SIGTERM");
    expect(eventsOf(home, "sandbox_enabled")).toBe(1);
  }, 60_000);

  it("a confined task survives a SIGKILLed host with its real exit status; PTY input and stop work", async () => {
    const home = tempHome();
    const first = await serve(home);
    const gate = join(home, "agents", "main", "gate");
    const created = await first.req("POST", "/control/agents/main/tasks", {
      cmd: `while [ ! -e ${gate} ]; do sleep 0.05; done; exit 7`,
    });
    expect(created.status).toBe(201);
    const taskId = created.json.task.task_id as string;
    expect(readProcessRecord(processDirOf(home, taskId))?.sandbox).toBeTruthy();
    await first.kill("SIGKILL");

    const second = await serve(home);
    await waitFor(
      async () =>
        (await second.req("GET", "/agents/main/events?limit=200")).json.events.some(
          (e: any) => e.type === "task_reattached_after_restart",
        ),
      { what: "the reattach", timeoutMs: 20_000 },
    );
    writeFileSync(gate, "");
    const done = await waitFor(
      async () => {
        const r = await second.req("GET", `/agents/main/tasks/${taskId}`);
        return r.json.task.status !== "running" ? r.json.task : null;
      },
      { what: "the task to end", timeoutMs: 20_000 },
    );
    expect(done.exit_status).toMatchObject({ exit_code: 7 });

    // A terminal in the sandbox: input reaches it, and a stop ends it.
    const pty = await second.req("POST", "/control/agents/main/tasks", {
      cmd: "read line; echo got:$line; grep -c . /proc/1/comm; sleep 60",
      tty: true,
    });
    const ptyId = pty.json.task.task_id as string;
    expect(readProcessRecord(processDirOf(home, ptyId))?.sandbox).toBeTruthy();
    const input = await second.req("POST", `/control/agents/main/tasks/${ptyId}/input`, {
      input: "hello\n",
    });
    expect(input.status).toBe(200);
    await waitFor(
      async () =>
        (
          await second.req("GET", `/agents/main/tasks/${ptyId}/output`)
        ).json.task.output_preview?.includes("got:hello"),
      { what: "the PTY to answer" },
    );
    const stop = await second.req("POST", `/control/agents/main/tasks/${ptyId}/stop`, {});
    expect(stop.status).toBe(200);
    expect(stop.json.task.status).toBe("cancelled");
    await second.kill("SIGTERM");
  }, 90_000);

  it("holon agent set changes the agent's mode as an event, and status follows", async () => {
    const home = tempHome();
    const s = await serve(home);
    const env = { HOLON_HOME: home };
    const set = await runCli(["agent", "set", "main", "sandbox.mode", "off"], { env });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain("not_enforced");
    const st = JSON.parse((await runCli(["status", "--json"], { env })).stdout);
    expect(st.sandbox).toMatchObject({ mode: "off", mode_source: "agent", state: "not_enforced" });
    const bad = await runCli(["agent", "set", "main", "sandbox.mode", "sometimes"], { env });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("sandbox.mode");
    const unknown = await s.req("POST", "/control/agents/main/settings", {
      key: "sandbox.anything",
      value: 1,
    });
    expect(unknown.status, JSON.stringify(unknown.json)).toBe(400);
    expect(JSON.stringify(unknown.json)).toContain("unknown_setting");
    const paths = await s.req("POST", "/control/agents/main/settings", {
      key: "sandbox.writable_paths",
      value: ["relative/path"],
    });
    expect(paths.status).toBe(400);
    expect(JSON.stringify(paths.json)).toContain("invalid_setting");
    expect((await runCli(["agent", "unset", "main", "sandbox.mode"], { env })).code).toBe(0);
    const after = JSON.parse((await runCli(["status", "--json"], { env })).stdout);
    expect(after.sandbox).toMatchObject({
      mode: "auto",
      mode_source: "default",
      state: "enforced",
    });
    const events = (await s.req("GET", "/agents/main/events?limit=200")).json.events.filter(
      (e: any) => e.type === "agent_setting_changed",
    );
    events.sort((a: any, b: any) => a.event_seq - b.event_seq);
    expect(events.map((e: any) => e.payload)).toEqual([
      { key: "sandbox.mode", previous: null, value: "off" },
      { key: "sandbox.mode", previous: "off", value: null },
    ]);
    await s.kill("SIGTERM");
  }, 60_000);
});

describe.skipIf(!enabled)("normal work inside the sandbox", () => {
  it("npm ci and npm test of a package run confined, with the user's npm cache", async () => {
    const rt = await startRuntime({ env: { ...process.env, HOLON_HOME: tempHome() } });
    try {
      const pkg = tempHome("holon-pkg-");
      cpSync(join(REPO_ROOT, "test", "fixtures", "sandbox-pkg"), pkg, { recursive: true });
      const ctx = { ...(await toolContext(rt.host)), execution_root: pkg, cwd: pkg };
      const out = await dispatch(
        buildRegistry(),
        "ExecCommand",
        JSON.stringify({
          cmd: "npm ci --no-audit --no-fund --offline && npm test && cat /proc/1/comm",
          yield_time_ms: 120_000,
        }),
        ctx,
      );
      const r = out.canonical.result as any;
      expect(r.exit_status, `${r.stdout_preview}${r.stderr_preview}`).toBe(0);
      expect(r.stdout_preview).toContain("fixture tests passed");
      expect(r.stdout_preview).toContain("bwrap"); // it ran confined
      expect(readFileSync(join(pkg, "built.txt"), "utf8")).toBe("built\n");
      expect(existsSync("/tmp/sandbox-fixture.txt")).toBe(false); // its /tmp was its own
    } finally {
      await rt.close();
    }
  }, 150_000);
});

describe("without a usable bubblewrap", () => {
  const registry = buildRegistry();

  async function hostWith(mode: "auto" | "required") {
    const home = tempHome();
    writeHomeConfig(home, { sandbox: { mode, bwrap_path: "/nonexistent/bwrap" } });
    writeFileSync(join(home, "visible-only-unconfined.txt"), "UNCONFINED\n");
    return await startRuntime({ home, env: { ...process.env, HOLON_HOME: home } });
  }

  it("required refuses every command with the reason; doctor fails", async () => {
    const rt = await hostWith("required");
    try {
      const out = await dispatch(
        registry,
        "ExecCommand",
        JSON.stringify({ cmd: "true" }),
        await toolContext(rt.host),
      );
      expect(out.canonical.error).toMatchObject({ kind: "sandbox_unavailable" });
      expect(out.canonical.error!.message).toMatch(/refused.*required.*not installed/);
      const task = await rt.req("POST", "/control/agents/main/tasks", { cmd: "true" });
      expect(task).toMatchObject({ status: 409, json: { error: { kind: "sandbox_unavailable" } } });
      const status = await rt.req("GET", "/agents/main/status");
      expect(status.json.sandbox).toMatchObject({ mode: "required", state: "not_enforced" });
      expect(status.json.sandbox.reason).toMatch(/commands are refused/);
      const doctor = await runCli(["config", "doctor", "--json"], { env: { HOLON_HOME: rt.home } });
      const check = JSON.parse(doctor.stdout).checks.find((c: any) => c.check === "sandbox");
      expect(check).toMatchObject({ status: "fail" });
    } finally {
      await rt.close();
    }
  });

  it("auto runs commands unconfined and says so everywhere", async () => {
    const rt = await hostWith("auto");
    try {
      const out = await dispatch(
        registry,
        "ExecCommand",
        JSON.stringify({ cmd: `cat ${rt.home}/visible-only-unconfined.txt` }),
        await toolContext(rt.host),
      );
      expect((out.canonical.result as any).stdout_preview).toContain("UNCONFINED");
      const status = await rt.req("GET", "/agents/main/status");
      expect(status.json.sandbox).toMatchObject({
        backend: "host_local",
        mode: "auto",
        state: "not_enforced",
        enforcement: { shell_filesystem: "not_enforced", child_processes: "not_enforced" },
      });
      expect(status.json.sandbox.reason).toMatch(/not installed.*run unconfined/);
      const state = await rt.req("GET", "/agents/main/state");
      expect(state.json.agent.sandbox.state).toBe("not_enforced");
      const snap = rt.host.services.workspaces.snapshot(await rt.host.agents.get("main"));
      expect(snap.policy.backend).toBe("host_local");
      expect(snap.policy.sandbox?.reason).toMatch(/not installed/);
    } finally {
      await rt.close();
    }
  });
});
