// Escapes from the sandbox, each tried by a command run through the real tool path
// (ExecCommand dispatched against a real host and its HTTP server): reading credentials, the
// store and another agent's transcript, writing outside the workspace or through a planted
// symlink, undoing the mounts, leaving the namespaces, reaching the host's processes and its
// control socket, and planting files the host or a later git run would trust. Every one must
// be refused, and the host's files must be unchanged afterwards.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch, type ToolContext } from "../src/tools/registry.ts";
import { readProcessRecord } from "../src/tasks/process.ts";
import { cleanupHomes, startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";
import { git, gitRepo } from "./helpers/git-repo.ts";
import { sandboxAvailable } from "./helpers/sandbox.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

const registry = buildRegistry();
const enabled = sandboxAvailable();

let rt: TestRuntime;
let userHome: string;
let outside: string;
let repo: string;
let ctx: ToolContext;

beforeAll(async () => {
  if (!enabled) return;
  // The user's home, with a key the sandbox must hide.
  // Outside /tmp, which the sandbox replaces with its own.
  userHome = mkdtempSync("/var/tmp/holon-user-");
  mkdirSync(join(userHome, ".ssh"), { mode: 0o700 });
  writeFileSync(join(userHome, ".ssh", "id_ed25519"), "FIXTURE-PRIVATE-KEY\n", { mode: 0o600 });
  writeFileSync(join(userHome, ".npmrc"), "//registry/:_authToken=FIXTURE-NPM-TOKEN\n");
  // Outside every root and outside /tmp (the sandbox has its own /tmp).
  outside = mkdtempSync("/var/tmp/holon-outside-");
  const home = tempHome();
  writeFileSync(
    join(home, "credentials.json"),
    JSON.stringify({
      version: 1,
      profiles: { "x:default": { kind: "api_key", material: "FIXTURE-CRED" } },
    }),
    { mode: 0o600 },
  );
  rt = await startRuntime({ home, env: { ...process.env, HOLON_HOME: home, HOME: userHome } });
  // Another agent, with something in its transcript and its home.
  expect((await rt.req("POST", "/control/agents/other/create", {})).status).toBeLessThan(300);
  writeFileSync(join(home, "agents", "other", "notes.txt"), "FIXTURE-OTHER-NOTES\n");
  repo = gitRepo({ "file.txt": "inside\n" });
  symlinkSync(outside, join(repo, "planted-link"));
  ctx = { ...(await toolContext(rt.host)), execution_root: repo, cwd: repo };
});

afterAll(async () => {
  if (!enabled) return;
  await rt.close();
  rmSync(outside, { recursive: true, force: true });
  rmSync(userHome, { recursive: true, force: true });
  cleanupHomes();
});

/** A tool an attempt uses must exist, or the attempt proves nothing (CI installs them). */
function has(tool: string): boolean {
  const found = spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;
  if (!found && process.env["CI"]) throw new Error(`CI must install ${tool} for the escape tests`);
  return found;
}

async function exec(cmd: string) {
  const out = await dispatch(registry, "ExecCommand", JSON.stringify({ cmd }), ctx);
  const r = out.canonical.result as any;
  return { status: r?.exit_status as number, out: `${r?.stdout_preview}${r?.stderr_preview}` };
}

describe.skipIf(!enabled)("escapes from the sandbox", () => {
  it("runs confined: no capabilities, its own PID namespace, host_bwrap in the snapshot", async () => {
    const r = await exec("grep -E '^(CapEff|CapBnd)' /proc/self/status; cat /proc/1/comm");
    expect(r.out).toMatch(/CapEff:\s+0000000000000000/);
    expect(r.out).toMatch(/CapBnd:\s+0000000000000000/);
    expect(r.out).toContain("bwrap"); // pid 1 is the sandbox's init, not the machine's
    const snap = rt.host.services.workspaces.snapshot(await rt.host.agents.get("main"));
    expect(snap.policy).toMatchObject({
      backend: "host_bwrap",
      enforcement: {
        shell_filesystem: "enforced",
        secrets: "enforced",
        child_processes: "enforced",
        network: "not_enforced",
      },
    });
  });

  it("cannot read credentials, the store, HOLON_HOME or another agent's files", async () => {
    const home = rt.home;
    for (const cmd of [
      `cat ${userHome}/.ssh/id_ed25519`,
      `cat ${userHome}/.npmrc`,
      `cat ${home}/credentials.json`,
      `cat ${home}/holon.db`,
      `cat ${home}/config.json`,
      `cat ${home}/agents/other/notes.txt`,
      `ls ${home}/run`,
    ]) {
      const r = await exec(cmd);
      expect(r.status, cmd).not.toBe(0);
      expect(r.out).not.toMatch(/FIXTURE|SQLite format/);
    }
  });

  it("cannot read another agent's transcript over HTTP without the token", async () => {
    await rt.req("POST", "/control/agents/other/prompt", { text: "FIXTURE-TRANSCRIPT-SECRET" });
    const port = new URL(rt.url).port;
    const r = await exec(
      `exec 3<>/dev/tcp/127.0.0.1/${port}; printf 'GET /agents/other/transcript HTTP/1.0\\r\\nHost: 127.0.0.1:${port}\\r\\n\\r\\n' >&3; cat <&3`,
    );
    expect(r.out).toMatch(/HTTP\/1\.[01] 401/);
    expect(r.out).not.toContain("FIXTURE-TRANSCRIPT-SECRET");
  });

  it("cannot write outside the workspace, directly or through a symlink", async () => {
    for (const cmd of [
      `echo x > ${outside}/direct`,
      `echo x > planted-link/through-planted`,
      `ln -s ${outside} own-link && echo x > own-link/through-own`,
      `echo x > ${userHome}/.bashrc`,
      `echo x > /usr/local/pwned`,
    ]) {
      const r = await exec(cmd);
      expect(r.status, cmd).not.toBe(0);
    }
    expect(existsSync(join(outside, "direct"))).toBe(false);
    expect(existsSync(join(outside, "through-planted"))).toBe(false);
    expect(existsSync(join(outside, "through-own"))).toBe(false);
    expect(existsSync(join(userHome, ".bashrc"))).toBe(false);
    // …while the workspace itself is writable
    expect((await exec("echo ok > made-inside && cat made-inside")).out).toContain("ok");
  });

  it("cannot undo a mount, mount anything, or enter or make namespaces and devices", async () => {
    for (const cmd of [
      `umount ${userHome}/.ssh && cat ${userHome}/.ssh/id_ed25519`,
      `umount -l ${rt.home} && cat ${rt.home}/credentials.json`,
      `mount --bind ${repo} ${userHome}/.ssh`,
      `mount -o remount,rw / && touch /usr/local/pwned`,
      `mount -o remount,rw ${rt.home}/agents/main/.holon`,
      `mkdir -p p && mount -t proc proc p`,
      `unshare -m true`,
      `unshare -Urm sh -c 'umount ${userHome}/.ssh && cat ${userHome}/.ssh/id_ed25519'`,
      `nsenter -t 1 -m -p true`,
      `mknod /tmp/mem c 1 1`,
    ]) {
      const r = await exec(cmd);
      expect(r.status, cmd).not.toBe(0);
      expect(r.out).not.toContain("FIXTURE");
    }
    expect(existsSync("/usr/local/pwned")).toBe(false);
  });

  it("cannot see, signal or trace the host's processes", async () => {
    const pid = process.pid;
    for (const cmd of [
      `kill -0 ${pid}`,
      `kill -9 ${pid}`,
      `cat /proc/${pid}/environ`,
      ...(has("strace") ? [`timeout 5 strace -p ${pid} -e trace=none`] : []),
    ]) {
      const r = await exec(cmd);
      expect(r.status, cmd).not.toBe(0);
    }
    // the host lives on, and its environment stayed its own
    expect(() => process.kill(pid, 0)).not.toThrow();
  });

  it.skipIf(!has("curl"))("cannot reach the control socket", async () => {
    const sock = join(rt.home, "run", "holon.sock");
    const r = await exec(
      `[ -S ${sock} ] && echo SOCKET-VISIBLE; curl -s --unix-socket ${sock} http://x/agents/other/transcript`,
    );
    expect(r.out).not.toContain("SOCKET-VISIBLE");
    expect(r.out).not.toContain("FIXTURE");
    expect(r.status).not.toBe(0);
  });

  it("cannot plant a git hook, rewrite git config, a process record or a patch journal", async () => {
    const main = join(rt.home, "agents", "main");
    for (const cmd of [
      `printf '#!/bin/sh\\ntouch ${repo}/hook-ran\\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`,
      `git config core.hooksPath /tmp`,
      `echo '[core]' >> .git/config`,
      `echo x > .git/info/exclude`,
      `for f in ${main}/.holon/processes/*/spec.json; do echo '{"version":1,"pid":1}' > "$f" || exit 1; done`,
      `mkdir -p ${main}/.holon/patch-journal && echo x > ${main}/.holon/patch-journal/planted.json`,
    ]) {
      const r = await exec(cmd);
      expect(r.status, cmd).not.toBe(0);
    }
    expect(existsSync(join(repo, ".git", "hooks", "post-commit"))).toBe(false);
    expect(readFileSync(join(repo, ".git", "config"), "utf8")).not.toContain("hooksPath");
    expect(existsSync(join(main, ".holon", "patch-journal", "planted.json"))).toBe(false);
    // The agent can still commit its work in the repository.
    const r = await exec(
      "echo more >> file.txt && git -c user.name=a -c user.email=a@b commit -qam work && git log --oneline | wc -l",
    );
    expect(r.status).toBe(0);
    expect(git(repo, "log", "--oneline").trim().split("\n")).toHaveLength(2);
    // and a git run outside the sandbox runs no hook of the agent's
    expect(existsSync(join(repo, "hook-ran"))).toBe(false);
  });

  it("records the sandbox in the process record of a task", async () => {
    const out = await dispatch(
      registry,
      "ExecCommand",
      JSON.stringify({ cmd: "sleep 30", yield_time_ms: 0 }),
      ctx,
    );
    const taskId = (out.canonical.result as any).task_handle.task_id as string;
    const task = (await rt.host.store.tasks.get(taskId))!;
    expect(readProcessRecord(task.process_dir)?.sandbox).toMatch(/^[0-9a-f]{16}$/);
    const stopped = await rt.host.tasks.stop(taskId, 200);
    expect(stopped.task.status).toBe("cancelled");
  });
});
