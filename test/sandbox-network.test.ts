// The sandbox's network, tried by commands run through the real tool path against a real host
// and its HTTP server: under `allowlist` a command reaches a server on the allowlist through
// the host's proxy (HTTP, CONNECT and SOCKS5) and is refused, with an event, anywhere else,
// the host's own control port included; under `off` nothing outside the agent's namespace
// answers; an agent's commands and tasks share one loopback; a task that outlives the host
// finds the proxy again after a restart.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { spawnSync } from "node:child_process";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch, type ToolContext } from "../src/tools/registry.ts";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { RuntimeHost } from "../src/host/host.ts";
import { join } from "node:path";
import { readProcStat } from "../src/tasks/process-proc.ts";
import {
  cleanupHomes,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  writeHomeConfig,
  type TestRuntime,
} from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";
import { sandboxAvailable } from "./helpers/sandbox.ts";
import { probeSandbox } from "../src/sandbox/probe.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

const registry = buildRegistry();
const enabled = sandboxAvailable() && netnsAvailable();

function netnsAvailable(): boolean {
  const probe = probeSandbox("bwrap");
  if (probe.netns) return true;
  if (process.env["CI"]) throw new Error(`CI must run the network tests: ${probe.netnsReason}`);
  process.stderr.write(`sandbox network tests skipped: ${probe.netnsReason}\n`);
  return false;
}

function hasCurl(): boolean {
  const found = spawnSync("sh", ["-c", "command -v curl"]).status === 0;
  if (!found && process.env["CI"]) throw new Error("CI must install curl for the network tests");
  return found;
}

let home: string;
let rt: TestRuntime;
let allowed: Server;
let denied: Server;
let allowedPort: number;
let deniedPort: number;
let controlPort: number;

async function serve(body: string): Promise<Server> {
  const s = createServer((_req, res) => res.end(body));
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  return s;
}

async function exec(agentId: string, cmd: string, extra: Record<string, unknown> = {}) {
  const ctx: ToolContext = await toolContext(rt.host, agentId);
  const out = await dispatch(registry, "ExecCommand", JSON.stringify({ cmd, ...extra }), ctx);
  const r = out.canonical.result as any;
  return {
    status: r?.exit_status as number,
    out: `${r?.stdout_preview ?? ""}${r?.stderr_preview ?? ""}`,
    result: r,
  };
}

async function refusals(agentId: string) {
  return (await rt.host.store.events.after(agentId, 0, 100_000)).filter(
    (e) => e.type === "sandbox_network_refused",
  );
}

async function setting(agentId: string, key: string, value: unknown) {
  const res = await rt.req("POST", `/control/agents/${agentId}/settings`, { key, value });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json;
}

beforeAll(async () => {
  if (!enabled) return;
  allowed = await serve("ALLOWED-SERVER");
  denied = await serve("DENIED-SERVER");
  allowedPort = (allowed.address() as AddressInfo).port;
  deniedPort = (denied.address() as AddressInfo).port;
  home = tempHome();
  rt = await startRuntime({ home, env: { ...process.env, HOLON_HOME: home } });
  controlPort = Number(new URL(rt.url).port);
  await setting("main", "sandbox.network", "allowlist");
  // The control port is on the list too: it must be refused all the same.
  await setting("main", "sandbox.network_allow", [
    `127.0.0.1:${allowedPort}`,
    `127.0.0.1:${controlPort}`,
  ]);
  expect((await rt.req("POST", "/control/agents/offline/create", {})).status).toBeLessThan(300);
  await setting("offline", "sandbox.network", "off");
});

afterAll(async () => {
  if (!enabled) return;
  await rt.close();
  allowed.close();
  denied.close();
  cleanupHomes();
});

describe.skipIf(!enabled || !hasCurl())("the sandbox's network", () => {
  it("allowlist: the proxy connects to a listed host and refuses, with an event, the rest", async () => {
    // HTTP_PROXY and ALL_PROXY are set; NO_PROXY keeps the namespace's own loopback direct,
    // so the host's loopback is named through the proxy explicitly.
    const via = `curl -s -m 10 --noproxy ''`;
    const ok = await exec(
      "main",
      `${via} -x "$HTTP_PROXY" http://127.0.0.1:${allowedPort}/ && echo &&` +
        ` ${via} -p -x "$HTTP_PROXY" http://127.0.0.1:${allowedPort}/ && echo &&` +
        ` ${via} -x "$ALL_PROXY" http://127.0.0.1:${allowedPort}/`,
    );
    expect(ok.status, ok.out).toBe(0);
    expect(ok.out.match(/ALLOWED-SERVER/g)).toHaveLength(3);

    const before = (await refusals("main")).length;
    const no = await exec(
      "main",
      `${via} -x "$HTTP_PROXY" http://127.0.0.1:${deniedPort}/; echo "[http]";` +
        ` ${via} -p -x "$HTTP_PROXY" http://127.0.0.1:${deniedPort}/; echo "[connect $?]";` +
        ` ${via} -x "$ALL_PROXY" http://127.0.0.1:${deniedPort}/; echo "[socks $?]";` +
        ` curl -s -m 5 http://127.0.0.1:${deniedPort}/; echo "[direct $?]"`,
    );
    expect(no.out).not.toContain("DENIED-SERVER");
    expect(no.out).toContain("not on the agent's network allowlist");
    expect(no.out).toMatch(/\[direct 7\]/); // its own loopback: nothing listens there
    const events = (await refusals("main")).slice(before);
    expect(events.map((e) => (e.payload as any).protocol).sort()).toEqual([
      "http",
      "http_connect",
      "socks5",
    ]);
    for (const e of events) {
      expect(e.payload).toMatchObject({ host: "127.0.0.1", port: deniedPort });
    }
  });

  it("allowlist: the host's control port is unreachable, listed or not", async () => {
    const r = await exec(
      "main",
      `curl -s -m 10 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${controlPort}/status; echo "[proxy]";` +
        ` curl -s -m 5 http://127.0.0.1:${controlPort}/status; echo "[direct $?]"`,
    );
    expect(r.out).toContain("the host's own control port");
    expect(r.out).toMatch(/\[direct 7\]/);
    expect(r.out).not.toMatch(/"agent_id"|Unauthorized|"ok"/);
  });

  it("off: nothing outside the agent's namespace answers, not even the proxy", async () => {
    const r = await exec(
      "offline",
      `curl -s -m 5 http://127.0.0.1:${allowedPort}/; echo "[direct $?]";` +
        ` curl -s -m 5 -x http://127.0.0.1:3128 http://127.0.0.1:${allowedPort}/; echo "[proxy $?]";` +
        ` curl -s -m 5 http://127.0.0.1:${controlPort}/status; echo "[control $?]";` +
        ` env | grep -ciE '^(http|https|all)_proxy=' ; grep -c ':' /proc/net/dev`,
    );
    expect(r.out).not.toContain("ALLOWED-SERVER");
    expect(r.out).toMatch(/\[direct 7\]/);
    expect(r.out).toMatch(/\[proxy 7\]/);
    expect(r.out).toMatch(/\[control 7\]/);
    // no proxy variables, and one interface: lo
    expect(r.out.trim().split("\n").slice(-2)).toEqual(["0", "1"]);
    // What the operator sees: `holon status` and /state say the network is enforced.
    const env = { HOLON_HOME: home };
    const st = await runCli(["status", "offline"], { env });
    expect(st.stdout).toMatch(/sandbox: +enforced \(host_bwrap.*network off: enforced\)/);
    const state = await rt.req("GET", "/agents/main/state");
    expect(state.json.agent.sandbox).toMatchObject({
      network: "allowlist",
      enforcement: { network: "enforced" },
    });
    // and with the host's network, not enforced, through `holon agent set`
    const set = await runCli(["agent", "set", "offline", "sandbox.network", "on"], { env });
    expect(set.code, set.stderr).toBe(0);
    const on = await rt.req("GET", "/agents/offline/state");
    expect(on.json.agent.sandbox).toMatchObject({
      network: "on",
      enforcement: { network: "not_enforced" },
    });
    await setting("offline", "sandbox.network", "off");
  });

  it("an agent's commands and tasks share one loopback; each keeps its own PID namespace", async () => {
    // `node` from the command's PATH: the test's own Node may live in a checkout under /tmp,
    // which the sandbox's private /tmp hides (CI clones there).
    const server = `node -e "require('http').createServer((q,s)=>s.end('MEET-'+process.pid)).listen(3000,'127.0.0.1')"`;
    const task = await exec("offline", server, { yield_time_ms: 0 });
    const taskId = task.result.task_handle.task_id as string;
    try {
      const r = await exec(
        "offline",
        "for i in $(seq 200); do curl -s -m 2 http://localhost:3000/ && break; sleep 0.05; done; echo; ls /proc | grep -c '^[0-9]'",
      );
      expect(r.out).toMatch(/MEET-\d+/);
      // the server is not among this command's processes (a few: bwrap's init, sh, ls…)
      expect(Number(r.out.trim().split("\n").at(-1))).toBeLessThan(6);
      // another agent's namespace is another loopback
      const other = await exec("main", 'curl -s -m 2 http://localhost:3000/; echo "[$?]"');
      expect(other.out).not.toContain("MEET");
    } finally {
      await rt.host.tasks.stop(taskId, 200);
    }
  });

  it("a task that outlives the host finds the proxy again after a restart", async () => {
    const start = await rt.host.tasks.start({
      agent_id: "main",
      cmd: `while read x; do curl -s -m 10 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${allowedPort}/; echo " [$x]"; done`,
      workdir: (await rt.host.agents.get("main")).agent_home,
      shell: "/bin/sh",
      login: false,
      tty: false,
      accepts_input: true,
      terminal_reentry: false,
    });
    await rt.close();
    rt = await startRuntime({ home, env: { ...process.env, HOLON_HOME: home } });
    controlPort = Number(new URL(rt.url).port);
    try {
      expect((await rt.host.store.tasks.get(start.id))?.status).toBe("running");
      const wrote = await rt.host.tasks.input(start.id, "after-restart\n", false);
      expect(wrote.accepted).toBe(true);
      const out = await waitForOutput(start.id, /\[after-restart\]/);
      expect(out).toContain("ALLOWED-SERVER [after-restart]");
    } finally {
      await rt.host.tasks.stop(start.id, 200);
    }
  });

  it("a stopped host leaves no namespace holder that no task needs", async () => {
    const dir = join(home, "run", "sandbox-net");
    const holders = readdirSync(dir).flatMap((n) => {
      const f = join(dir, n, "holder.json");
      return existsSync(f) ? [JSON.parse(readFileSync(f, "utf8")).pid as number] : [];
    });
    expect(holders.length).toBeGreaterThanOrEqual(1); // main's, which outlived the last restart
    await rt.close();
    for (const pid of holders) {
      await waitFor(() => (readProcStat(pid)?.state ?? "Z") === "Z", {
        what: `holder ${pid} to end`,
      });
    }
    rt = await startRuntime({ home, env: { ...process.env, HOLON_HOME: home } });
  });

  it("rejects a malformed allowlist entry with a clear error", async () => {
    for (const bad of [["http://x.com"], ["a b"], ["x.com:99999"], "x.com"]) {
      const res = await rt.req("POST", "/control/agents/main/settings", {
        key: "sandbox.network_allow",
        value: bad,
      });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.json.error.kind).toBe("invalid_setting");
    }
    const res = await rt.req("POST", "/control/agents/main/settings", {
      key: "sandbox.network",
      value: "sometimes",
    });
    expect(res.status).toBe(400);
  });
});

/** The task's output once it matches (the output file grows as the command writes). */
async function waitForOutput(taskId: string, re: RegExp): Promise<string> {
  const path = (await rt.host.store.tasks.get(taskId))!.output_path;
  return waitFor(
    () => {
      const text = readFileSync(path, "utf8");
      return re.test(text) ? text : null;
    },
    { what: `task output matching ${re}` },
  );
}

describe.skipIf(!enabled)("where the agent's namespace cannot be joined", () => {
  // No nsenter on this host's PATH (bubblewrap named by its full path): the probe says why.
  async function hostWith(mode: "auto" | "required") {
    const h = tempHome();
    writeHomeConfig(h, {
      sandbox: { mode, network: "off", bwrap_path: probeSandbox("bwrap").bwrap },
    });
    return await RuntimeHost.open({
      home: h,
      env: { ...process.env, HOLON_HOME: h, PATH: "/nonexistent" },
    });
  }

  it("required refuses the command, naming what is missing", async () => {
    const host = await hostWith("required");
    try {
      const out = await dispatch(
        registry,
        "ExecCommand",
        '{"cmd":"true"}',
        await toolContext(host),
      );
      expect(out.canonical.error).toMatchObject({ kind: "sandbox_unavailable" });
      expect(out.canonical.error!.message).toMatch(/sandbox\.network off.*nsenter/);
    } finally {
      await host.shutdown();
    }
  });

  it("auto runs it on the host's network and says the network is not enforced, and why", async () => {
    const host = await hostWith("auto");
    try {
      const out = await dispatch(
        registry,
        "ExecCommand",
        '{"cmd":"true"}',
        await toolContext(host),
      );
      expect((out.canonical.result as any).exit_status).toBe(0);
      const s = host.services.sandbox.summary(await host.agents.get("main"));
      expect(s).toMatchObject({
        backend: "host_bwrap",
        network: "off",
        enforcement: { shell_filesystem: "enforced", network: "not_enforced" },
      });
      expect(s.why.network).toMatch(/nsenter.*commands use the host's network/);
    } finally {
      await host.shutdown();
    }
  });
});
