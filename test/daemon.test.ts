// `holon daemon` with real processes: one host per home however often it is started, a
// restart that changes the access mode, a stale pid after SIGKILL, and the log surface.
import { afterAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { cleanupHomes, HOLON_BIN, runCli, tempHome, waitFor } from "./helpers/home.ts";

const pidsToKill: number[] = [];
afterAll(() => {
  for (const pid of pidsToKill) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  cleanupHomes();
});

async function daemon(home: string, ...args: string[]) {
  const r = await runCli(["daemon", ...args, "--home", home], { timeoutMs: 60_000 });
  return { ...r, json: r.stdout.trim().startsWith("{") ? JSON.parse(r.stdout) : undefined };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("holon daemon", () => {
  it("starts one host per home, refuses other options, restarts with them, recovers from SIGKILL and stops", async () => {
    const home = tempHome();
    const first = await daemon(home, "start", "--port", "0", "--json");
    expect(first.code, first.stderr).toBe(0);
    expect(first.json.already_running).toBe(false);
    const pid = first.json.pid as number;
    pidsToKill.push(pid);
    expect(alive(pid)).toBe(true);

    // Starting again with the same options is a no-op on the same process.
    const second = await daemon(home, "start", "--port", "0", "--json");
    expect(second.code, second.stderr).toBe(0);
    expect(second.json).toMatchObject({ already_running: true, pid });

    // Different options fail closed and point at restart.
    const other = await daemon(home, "start", "--port", "0", "--access", "tunnel");
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("daemon restart");

    const st = await daemon(home, "status", "--json");
    expect(st.json).toMatchObject({
      running: true,
      managed_by_daemon: true,
      pid,
      health: "ok",
      access: "local",
      home_dir: home,
    });
    expect(st.json.activity.state).toBe("idle");
    expect(typeof st.json.uptime_s).toBe("number");
    // The plain form shows every field docs/cli.md lists for it.
    const plain = (await daemon(home, "status")).stdout;
    for (const field of [
      `home:      ${home}`,
      `state:     running, pid ${pid} (daemon), up `,
      "health:    ok",
      `endpoint:  http://${st.json.http_addr}  socket ${st.json.socket_path}`,
      "access:    local",
      `version:   ${st.json.version}`,
      `--access local  token: generated  fingerprint ${st.json.config_fingerprint}`,
      "activity:  idle:",
      "last turn failure: none",
      "last daemon failure: none",
    ])
      expect(plain, field).toContain(field);

    // Restart with a changed access mode replaces the process.
    const re = await daemon(home, "restart", "--port", "0", "--access", "tunnel", "--json");
    expect(re.code, re.stderr).toBe(0);
    expect(re.json.stopped).toMatchObject({ was_running: true, pid, how: "graceful" });
    const pid2 = re.json.started.pid as number;
    pidsToKill.push(pid2);
    expect(pid2).not.toBe(pid);
    expect(alive(pid)).toBe(false);
    const st2 = await daemon(home, "status", "--json");
    expect(st2.json).toMatchObject({ pid: pid2, access: "tunnel", health: "ok" });

    // The log shows both starts; -n bounds it.
    const logs = await daemon(home, "logs", "-n", "200");
    expect(logs.code).toBe(0);
    expect(logs.stdout.match(/runtime started/g)?.length).toBe(2);
    expect(logs.stderr).toContain(join(home, "logs", "holon.log"));
    const logsJson = await daemon(home, "logs", "-n", "1", "--json");
    expect(logsJson.json.lines).toHaveLength(1);

    // SIGKILL leaves a stale pid; status says so, and start recovers without complaint.
    process.kill(pid2, "SIGKILL");
    await new Promise<void>((r) => {
      const t = setInterval(() => {
        if (!alive(pid2)) {
          clearInterval(t);
          r();
        }
      }, 20);
    });
    const st3 = await daemon(home, "status", "--json");
    expect(st3.json).toMatchObject({ running: false, stale_pid: pid2 });
    const again = await daemon(home, "start", "--port", "0", "--json");
    expect(again.code, again.stderr).toBe(0);
    expect(again.json.already_running).toBe(false);
    const pid3 = again.json.pid as number;
    pidsToKill.push(pid3);

    const stopped = await daemon(home, "stop", "--json");
    expect(stopped.json).toMatchObject({ was_running: true, pid: pid3, how: "graceful" });
    expect(alive(pid3)).toBe(false);
    expect(existsSync(join(home, "run", "daemon.json"))).toBe(false);
    expect(existsSync(join(home, "run", "runtime.json"))).toBe(false);

    const idle = await daemon(home, "stop");
    expect(idle.code).toBe(0);
    expect(idle.stdout).toContain("no runtime is running");
  }, 180_000);

  it("logs -f follows the log as the host writes it; stop forces a host that does not answer", async () => {
    const home = tempHome();
    const started = await daemon(home, "start", "--port", "0", "--json");
    expect(started.code, started.stderr).toBe(0);
    const pid = started.json.pid as number;
    pidsToKill.push(pid);

    const follower = spawn(process.execPath, [HOLON_BIN, "daemon", "logs", "-f", "-n", "5"], {
      env: { ...process.env, HOLON_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let followed = "";
    follower.stdout.on("data", (d) => (followed += d));
    try {
      await waitFor(() => followed.includes("runtime started"), { what: "the log so far" });
      const before = followed.length;
      const paused = await runCli(["agent", "pause", "main"], { env: { HOLON_HOME: home } });
      expect(paused.code, paused.stderr).toBe(0);
      await waitFor(() => /pause/.test(followed.slice(before)), {
        what: "the new log line, followed",
        timeoutMs: 15_000,
      });
    } finally {
      follower.kill("SIGTERM");
    }

    // A host that cannot answer (stopped with SIGSTOP): the shutdown request times out,
    // SIGTERM stays pending, and SIGKILL ends it after the second timeout.
    process.kill(pid, "SIGSTOP");
    const t0 = Date.now();
    const stopped = await daemon(home, "stop", "--timeout", "1", "--json");
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.json).toMatchObject({ was_running: true, pid, how: "killed" });
    expect(Date.now() - t0).toBeLessThan(20_000);
    await waitFor(() => !alive(pid), { what: "the host gone" });
    expect(existsSync(join(home, "run", "daemon.json"))).toBe(false);
  }, 90_000);

  it("refuses an unsafe bind before launching anything, and records no process", async () => {
    const home = tempHome();
    const r = await daemon(home, "start", "--host", "0.0.0.0", "--port", "0");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("without a control token");
    expect(existsSync(join(home, "run", "daemon.json"))).toBe(false);
  });

  it("a runtime that fails at startup is reported with a pointer to the logs", async () => {
    const home = tempHome("holon-test-", { sqlite: true }); // fails on the SQLite file's path
    // A database path that is a directory makes the host refuse to open.
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(home, "holon.db"), { recursive: true });
    const r = await daemon(home, "start", "--port", "0", "--json");
    if (r.json?.pid) pidsToKill.push(r.json.pid);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("holon daemon logs");
    const failure = JSON.parse(readFileSync(join(home, "run", "daemon-failure.json"), "utf8"));
    expect(failure.phase).toBe("startup");
    const st = await daemon(home, "status", "--json");
    expect(st.json.last_daemon_failure.phase).toBe("startup");
  }, 60_000);

  it("a daemon started from a checkout hands its host a warm compile cache: the host never loads the TypeScript stripper", async () => {
    // Each process loaded with this probe writes, a moment after it starts, whether Node's
    // type stripper is in it. An empty compile cache means every module needs stripping.
    const dir = mkdtempSync(join(tmpdir(), "holon-strip-"));
    const probe = join(dir, "probe.mjs");
    writeFileSync(
      probe,
      // Written aside and renamed into place, so the test never reads a half-written file.
      `import { writeFileSync, renameSync } from "node:fs";
setTimeout(() => {
  const f = ${JSON.stringify(dir)} + "/" + process.pid + ".json";
  writeFileSync(f + ".tmp", JSON.stringify(process.moduleLoadList.some((m) => m.includes("amaro"))));
  renameSync(f + ".tmp", f);
}, 1500).unref();
`,
    );
    const stripped = (pid: number) =>
      waitFor(
        () => {
          const f = join(dir, `${pid}.json`);
          return existsSync(f) ? { loaded: JSON.parse(readFileSync(f, "utf8")) as boolean } : null;
        },
        { what: `the probe of process ${pid}`, timeoutMs: 20_000 },
      ).then((r) => r.loaded);
    const launch = (cache: string, ...args: string[]) =>
      runCli([], {
        exec: [process.execPath, "--import", probe, HOLON_BIN, ...args],
        env: { NODE_COMPILE_CACHE: cache },
        timeoutMs: 60_000,
      });

    // The embedded path's start-up, on both test runs.
    const home = tempHome("holon-test-", { sqlite: true });
    const started = await launch(
      join(dir, "cache-a"),
      "daemon",
      "start",
      "--port",
      "0",
      "--home",
      home,
      "--json",
    );
    expect(started.code, started.stderr).toBe(0);
    const pid = JSON.parse(started.stdout).pid as number;
    pidsToKill.push(pid);
    try {
      expect(await stripped(pid)).toBe(false);
    } finally {
      expect((await daemon(home, "stop")).code).toBe(0);
    }

    // The probe can tell: a host started in the foreground on an empty cache strips itself.
    const fg = spawn(
      process.execPath,
      [
        "--import",
        probe,
        HOLON_BIN,
        "serve",
        "--port",
        "0",
        "--home",
        tempHome("holon-test-", { sqlite: true }),
      ],
      { env: { ...process.env, NODE_COMPILE_CACHE: join(dir, "cache-b") }, stdio: "ignore" },
    );
    try {
      expect(await stripped(fg.pid!)).toBe(true);
    } finally {
      fg.kill("SIGKILL");
    }
  }, 90_000);
});
