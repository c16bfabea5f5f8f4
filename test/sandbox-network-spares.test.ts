// Spare confined wrappers per sandbox profile, through the real tool path: a command that
// takes its profile's spare runs exactly as confined as a cold start (its own files only, its
// record naming the sandbox's init, its real status and output), in split and merged output;
// a command of another profile (another execution root, another network) never takes it; an
// agent under sandbox.network off gets a spare inside its namespace; a stopped host leaves no
// spare behind.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch, type ToolContext } from "../src/tools/registry.ts";
import { readProcessRecord } from "../src/tasks/process.ts";
import { sandboxSpareCount } from "../src/tasks/sandbox-spares.ts";
import { readProcStat } from "../src/tasks/process-proc.ts";
import { probeSandbox } from "../src/sandbox/probe.ts";
import { cleanupHomes, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";
import { sandboxAvailable } from "./helpers/sandbox.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

const registry = buildRegistry();
const enabled = sandboxAvailable();

let rt: TestRuntime;
let outside: string;

beforeAll(async () => {
  if (!enabled) return;
  outside = mkdtempSync("/var/tmp/holon-spare-outside-");
  const home = tempHome();
  rt = await startRuntime({ home, env: { ...process.env, HOLON_HOME: home } });
});

afterAll(async () => {
  if (!enabled) return;
  if (rt !== undefined) await rt.close();
  rmSync(outside, { recursive: true, force: true });
  cleanupHomes();
});

async function exec(ctx: ToolContext, cmd: string, extra: Record<string, unknown> = {}) {
  const out = await dispatch(registry, "ExecCommand", JSON.stringify({ cmd, ...extra }), ctx);
  return out.canonical.result as any;
}

/**
 * Until a spare of the profile `ctx` runs under is ready, for commands of that output layout
 * (split: ExecCommand; merged: a task). The profile's first command of a layout starts them.
 */
function spareReady(ctx: ToolContext, layout: "split" | "merged" = "split") {
  const digest = rt.host.tasks.sandboxFor(ctx.agent, ctx.execution_root)!.digest;
  return waitFor(() => sandboxSpareCount(digest, layout).ready > 0, { what: "a ready spare" });
}

/** A merged-output task of `cmd` on the main agent, as `holon task start` makes one. */
async function startTask(cmd: string) {
  return await rt.host.tasks.start({
    agent_id: "main",
    cmd,
    workdir: (await rt.host.agents.get("main")).agent_home,
    shell: "/bin/sh",
    login: false,
    tty: false,
    accepts_input: false,
    terminal_reentry: false,
  });
}

describe.skipIf(!enabled)("spare confined wrappers", () => {
  it("a command on its profile's spare is confined like a cold start", async () => {
    const ctx = await toolContext(rt.host);
    expect((await exec(ctx, "true")).exit_status).toBe(0); // the profile's first start: a miss
    await spareReady(ctx);
    const hits = sandboxSpareCount().hits;
    const r = await exec(
      ctx,
      `echo out; echo err >&2; cat /proc/1/comm; ` +
        `echo x > ${outside}/escaped; echo "[outside $?]"; ` +
        `for f in ../*/spec.json; do echo '{"pid":1}' > "$f"; done; echo "[record $?]"; exit 3`,
    );
    expect(sandboxSpareCount().hits).toBe(hits + 1);
    expect(r.exit_status).toBe(3);
    expect(r.stdout_preview).toMatch(/^out\nbwrap\n\[outside [1-9]\d*\]\n\[record [1-9]\d*\]\n$/);
    expect(r.stderr_preview).toContain("err");
    expect(existsSync(join(outside, "escaped"))).toBe(false);
  });

  it("a task on a spare records the sandbox's init, writes merged output and stops", async () => {
    const ctx = await toolContext(rt.host);
    // The layout's first task starts cold and brings the merged spares.
    const first = await startTask("true");
    await rt.host.tasks.waitTerminal(first.id, 10_000);
    await spareReady(ctx, "merged");
    const hits = sandboxSpareCount().hits;
    const task = await startTask("echo one; echo two >&2; exec sleep 600");
    expect(sandboxSpareCount().hits).toBe(hits + 1);
    const rec = readProcessRecord(task.process_dir)!;
    expect(rec.sandbox).toMatch(/^[0-9a-f]{16}$/);
    // the record names bubblewrap's init (a live process leading its own session)
    expect(readProcStat(rec.pid)).toMatchObject({ session: rec.pid });
    expect(readFileSync(`/proc/${rec.pid}/comm`, "utf8").trim()).toBe("bwrap");
    await waitFor(() => /one\ntwo\n/.test(readFileSync(task.output_path, "utf8")), {
      what: "merged output",
    });
    // a merged spare made only the files a merged task writes
    expect(readdirSync(task.process_dir)).toContain("output.log");
    expect(readdirSync(task.process_dir)).not.toContain("stdout.log");
    expect(readdirSync(task.process_dir)).not.toContain("stderr.log");
    const stopped = await rt.host.tasks.stop(task.id, 200);
    expect(stopped.task.status).toBe("cancelled");
    expect(readProcStat(rec.pid)?.state ?? "gone").toMatch(/^(gone|Z)$/); // dead, maybe unreaped
  });

  it("keeps two spares per profile; commands faster than they are replaced wait for a starting one, never start cold", async () => {
    const ctx = await toolContext(rt.host);
    await exec(ctx, "true");
    const digest = rt.host.tasks.sandboxFor(ctx.agent, ctx.execution_root)!.digest;
    await waitFor(() => sandboxSpareCount(digest, "split").ready === 2, {
      what: "two ready spares",
    });
    const hits = sandboxSpareCount().hits;
    // No wait in between: the second takes the other spare while the first's is replaced, and
    // from the third on each finds only spares still starting (replaced as commands end).
    for (let i = 0; i < 6; i++)
      expect((await exec(ctx, `echo ${i}`)).stdout_preview).toBe(`${i}\n`);
    expect(sandboxSpareCount().hits).toBe(hits + 6);
  });

  it("a command on a spare never holds its wrapper's stdin, and what it leaves behind ends with it", async () => {
    const ctx = await toolContext(rt.host);
    await exec(ctx, "true");
    await spareReady(ctx);
    const hits = sandboxSpareCount().hits;
    // The wrapper's stdin is the socket its notices go to the host by: never the command's.
    const r = await exec(
      ctx,
      `for f in /proc/self/fd/*; do readlink "$f"; done; /bin/sleep 6173 & echo bg`,
    );
    expect(sandboxSpareCount().hits).toBe(hits + 1);
    expect(r.exit_status).toBe(0);
    expect(r.stdout_preview).toContain("bg\n");
    expect(r.stdout_preview).not.toContain("socket:");
    // The status line ended the command: its sandbox and the sleep it left go too.
    await waitFor(() => !sleeping("6173"), { what: "the command's background sleep to end" });
  });

  it("a command of another profile never takes the spare", async () => {
    const ctx = await toolContext(rt.host);
    await exec(ctx, "true");
    await spareReady(ctx);
    const hits = sandboxSpareCount().hits;
    const other = mkdtempSync("/var/tmp/holon-spare-root-");
    try {
      const r = await exec({ ...ctx, execution_root: other, cwd: other }, "pwd; touch made");
      expect(r.exit_status).toBe(0);
      expect(existsSync(join(other, "made"))).toBe(true);
      expect(sandboxSpareCount().hits).toBe(hits); // a miss: started cold
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it.skipIf(!probeSandbox("bwrap").netns)(
    "under sandbox.network off, the spare waits inside the agent's namespace",
    async () => {
      const res = await rt.req("POST", "/control/agents/main/settings", {
        key: "sandbox.network",
        value: "off",
      });
      expect(res.status).toBe(200);
      try {
        // the agent record now says off: the context carries it
        const ctx = await toolContext(rt.host);
        const first = await exec(ctx, "readlink /proc/self/ns/net");
        await spareReady(ctx);
        const hits = sandboxSpareCount().hits;
        const second = await exec(ctx, "readlink /proc/self/ns/net");
        expect(sandboxSpareCount().hits).toBe(hits + 1);
        expect(second.stdout_preview).toBe(first.stdout_preview);
        expect(second.stdout_preview).not.toBe(readlinkOwn());
      } finally {
        await rt.req("POST", "/control/agents/main/settings", {
          key: "sandbox.network",
          value: null,
        });
      }
    },
  );

  it("a stopped host leaves no spare behind", async () => {
    const ctx = await toolContext(rt.host);
    await exec(ctx, "true");
    await spareReady(ctx);
    const dotHolon = join((await rt.host.agents.get("main")).agent_home, ".holon");
    // spares wait beside the process directories, never among them
    expect(readdirSync(join(dotHolon, "spares")).length).toBeGreaterThan(0);
    expect(
      readdirSync(join(dotHolon, "processes")).filter((n) => /^[0-9a-f]{16}$/.test(n)),
    ).toEqual([]);
    await rt.close();
    await waitFor(() => readdirSync(join(dotHolon, "spares")).length === 0, {
      what: "the spare's directory to go",
    });
    expect(sandboxSpareCount()).toMatchObject({ ready: 0, starting: 0 });
    rt = undefined as unknown as TestRuntime;
  });
});

/** Whether a process of ours runs `sleep <arg>`. */
function sleeping(arg: string): boolean {
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "latin1") === `/bin/sleep\0${arg}\0`) return true;
    } catch {
      // gone
    }
  }
  return false;
}

function readlinkOwn(): string {
  return `${readlinkSync("/proc/self/ns/net")}\n`;
}
