// MCP servers that misbehave never hang a turn or crash the host: a server killed mid-call
// gives a tool error and the next call restarts it, a server that never answers times out
// (at startup and per call), garbage on stdout is skipped or explained, a tool whose schema
// is not JSON Schema is left out, a 20 MB result is capped, a clean shutdown leaves no server
// running, and a server a SIGKILLed host left behind is killed by the next start.
import type { ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RuntimeHost } from "../src/host/host.ts";
import { isSameLiveProcess, readProcStat } from "../src/tasks/process-proc.ts";
import { cleanupHomes, runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { FIXTURE, NODE, callMcp, fixture, writeMcpConfig } from "./helpers/mcp.ts";

const hosts: RuntimeHost[] = [];
const procs: ChildProcess[] = [];
afterAll(async () => {
  for (const h of hosts.splice(0)) await h.shutdown();
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  cleanupHomes();
});

async function openHost(servers: Record<string, unknown>, home = tempHome()): Promise<RuntimeHost> {
  writeMcpConfig(home, { servers });
  const host = await RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
  hosts.push(host);
  return host;
}

const view = async (host: RuntimeHost, name: string) =>
  (await host.services.mcp.status(await host.agents.get("main"))).find((v) => v.name === name)!;

function alive(pid: number): boolean {
  const st = readProcStat(pid);
  return st !== null && st.state !== "Z";
}

describe("MCP server faults", () => {
  it("a server killed mid-call gives a tool error, and the next call restarts it", async () => {
    const host = await openHost({ f: fixture("ok") });
    expect((await callMcp(host, "mcp__f__ping", {})).result.text).toBe("pong from ping");
    const firstPid = (await view(host, "f")).pid!;
    const pending = callMcp(host, "mcp__f__hang", {});
    await waitFor(async () => (await view(host, "f")).calls_in_flight === 1, {
      what: "the call in flight",
    });
    process.kill(-firstPid, "SIGKILL");
    const killed = await pending;
    expect(killed.canonical.status).toBe("error");
    expect(killed.error).toMatchObject({ kind: "mcp_server_crashed", retryable: true });
    expect((await view(host, "f")).state).not.toBe("running");
    const again = await callMcp(host, "mcp__f__ping", {});
    expect(again.canonical.status, again.rendered).toBe("success");
    expect((await view(host, "f")).pid).not.toBe(firstPid);
  });

  it("a sandboxed server whose command line names files under the host's /tmp still starts", async () => {
    // The sandbox's /tmp is private; a server kept in /tmp (a checkout or an unpacked package
    // there) sees that directory read-only.
    const dir = tempHome("holon-mcp-tmp-");
    const script = join(dir, "server.mjs");
    copyFileSync(FIXTURE, script);
    const host = await openHost({ t: { command: NODE, args: [script, "ok"] } });
    expect(host.services.sandbox.summary(await host.agents.get("main")).state).toBe("enforced");
    const r = await callMcp(host, "mcp__t__ping", {});
    expect(r.canonical.status, r.rendered).toBe("success");
    expect(r.result.text).toBe("pong from ping");
  });

  it("a call the server never answers times out; a server that never initializes too", async () => {
    const host = await openHost({
      f: fixture("ok", { tool_timeout_ms: 300 }),
      mute: fixture("silent", { startup_timeout_ms: 300 }),
    });
    const hung = await callMcp(host, "mcp__f__hang", {});
    expect(hung.error).toMatchObject({ kind: "mcp_timeout", retryable: true });
    // The silent server never got listed: it is not in the catalog, and status says why.
    expect(hung.names.some((n) => n.startsWith("mcp__mute__"))).toBe(false);
    expect((await view(host, "mute")).last_error).toMatch(/no answer to initialize within 300 ms/);
    // The timed-out server works again on the next call.
    expect((await callMcp(host, "mcp__f__ping", {})).canonical.status).toBe("success");
  });

  it("garbage on stdout is skipped; a server that prints only garbage fails with what it printed", async () => {
    const host = await openHost({
      noisy: fixture("garbage"),
      junk: fixture("only-garbage", { startup_timeout_ms: 500 }),
    });
    const ok = await callMcp(host, "mcp__noisy__ping", {});
    expect(ok.canonical.status, ok.rendered).toBe("success");
    const junk = await view(host, "junk");
    expect(junk.state).not.toBe("running");
    expect(junk.last_error).toContain("not JSON-RPC");
    expect(junk.last_error).toContain("Starting fixture server");
    const test = await host.services.mcp.test(await host.agents.get("main"), "junk");
    expect(test.ok).toBe(false);
  });

  it("a tool whose schema is not JSON Schema is left out, the others stay", async () => {
    const host = await openHost({ b: fixture("bad-schema") });
    const good = await callMcp(host, "mcp__b__good", { a: "x" });
    expect(good.canonical.status).toBe("success");
    expect(good.names).not.toContain("mcp__b__broken");
    expect(good.names).not.toContain("mcp__b__not-object");
    const rejected = (await view(host, "b")).rejected_tools;
    expect(rejected.map((r) => r.name).sort()).toEqual(["broken", "not-object"]);
    expect(rejected.find((r) => r.name === "broken")!.reason).toMatch(
      /type is not a JSON Schema type/,
    );
  });

  it("a 20 MB result is capped like command output", async () => {
    const host = await openHost({ big: fixture("big") });
    const out = await callMcp(host, "mcp__big__big", {});
    expect(out.canonical.status).toBe("success");
    expect(out.result.truncated).toBe(true);
    expect(out.result.original_chars).toBe(20 * 1024 * 1024);
    expect(out.rendered.length).toBeLessThan(64 * 1024);
    expect(JSON.stringify(out.canonical).length).toBeLessThan(64 * 1024);
  });

  it("an idle server is stopped and starts again on its next call", async () => {
    const host = await openHost({ f: fixture("ok") });
    await callMcp(host, "mcp__f__ping", {});
    const pid = (await view(host, "f")).pid!;
    expect(host.services.mcp.stopIdle(Date.now() + 1_000)).toBe(0); // not idle long enough
    expect(host.services.mcp.stopIdle(Date.now() + 11 * 60_000)).toBe(1);
    expect((await view(host, "f")).state).toBe("stopped");
    await waitFor(() => !alive(pid), { what: "the idle server to exit" });
    expect((await callMcp(host, "mcp__f__ping", {})).canonical.status).toBe("success");
  });

  it("a shared server is one process for every agent; others are one per agent", async () => {
    const host = await openHost({ one: fixture("ok", { shared: true }), each: fixture("ok") });
    await host.agents.create("second", {}, "named");
    for (const agent of ["main", "second"]) {
      await callMcp(host, "mcp__one__ping", {}, agent);
      await callMcp(host, "mcp__each__ping", {}, agent);
    }
    const pid = async (agent: string, name: string) =>
      (await host.services.mcp.status(await host.agents.get(agent))).find((v) => v.name === name)!
        .pid;
    expect(await pid("main", "one")).toBe(await pid("second", "one"));
    expect(await pid("main", "each")).not.toBe(await pid("second", "each"));
    expect(host.services.mcp.pids()).toHaveLength(3);
  });

  it("a clean shutdown leaves no server running (checked by pid)", async () => {
    const home = tempHome();
    const host = await openHost({ a: fixture("ok"), b: fixture("garbage") }, home);
    await callMcp(host, "mcp__a__ping", {});
    await callMcp(host, "mcp__b__ping", {});
    const pids = host.services.mcp.pids();
    expect(pids).toHaveLength(2);
    hosts.splice(hosts.indexOf(host), 1);
    await host.shutdown();
    await waitFor(() => pids.every((p) => !alive(p)), { what: "servers to exit" });
    expect(
      existsSync(join(home, "run", "mcp")) ? readdirNames(join(home, "run", "mcp")) : [],
    ).toEqual([]);
  });

  it("a server left by a SIGKILLed host is killed at the next start", async () => {
    const home = tempHome();
    const pidFile = join(home, "server.pid");
    // Unconfined, so nothing but the host's own records can find it again.
    writeMcpConfig(home, {
      servers: { stubborn: fixture("immortal", { env: { FIXTURE_PID_FILE: pidFile } }) },
    });
    const cfg = JSON.parse(readFileSync(join(home, "config.json"), "utf8"));
    cfg.sandbox = { mode: "off" };
    writeFileSync(join(home, "config.json"), JSON.stringify(cfg));
    const first = await spawnServe(home);
    procs.push(first.proc);
    const test = await runCli(["mcp", "test", "stubborn", "--home", home], {
      env: { HOLON_HOME: home },
    });
    expect(test.code, test.stderr).toBe(0);
    const pid = Number(readFileSync(pidFile, "utf8"));
    const ticks = readProcStat(pid)!.start_ticks;
    const exited = new Promise((r) => first.proc.once("exit", r));
    first.proc.kill("SIGKILL");
    await exited;
    expect(isSameLiveProcess(pid, ticks)).toBe(true); // left behind
    const second = await spawnServe(home);
    procs.push(second.proc);
    await waitFor(() => !isSameLiveProcess(pid, ticks), { what: "the leftover server to die" });
    second.proc.kill("SIGTERM");
  });
});

function readdirNames(dir: string): string[] {
  return readdirSync(dir);
}
