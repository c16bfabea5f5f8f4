// Where wave 1 drifted from the contract: ExecCommandBatch's `items`, the TaskHandle shape and
// task views without raw process details, workspace roots resolved where the caller stands,
// plain words when no provider is configured, and a clean refusal on a Node too old to run.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Script } from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { RuntimeHost } from "../src/host/host.ts";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch, type ToolContext } from "../src/tools/registry.ts";
import { toolSpecs } from "../src/turn/turn.ts";
import {
  HOLON_BIN,
  REPO_ROOT,
  cleanupHomes,
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
} from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";

const registry = buildRegistry();
const hosts: RuntimeHost[] = [];
afterAll(async () => {
  for (const host of hosts.splice(0)) {
    await Promise.all((await host.store.tasks.active()).map((t) => host.tasks.stop(t.id, 100)));
    await host.shutdown();
  }
  cleanupHomes();
});

async function openHost(): Promise<RuntimeHost> {
  const home = tempHome();
  const host = await RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
  hosts.push(host);
  return host;
}

async function ctxFor(host: RuntimeHost): Promise<ToolContext> {
  return await toolContext(host);
}

async function call(ctx: ToolContext, name: string, args: Record<string, unknown>) {
  const out = await dispatch(registry, name, JSON.stringify(args), ctx);
  return { ...out, result: out.canonical.result as any, error: out.canonical.error as any };
}

/** Fails the test if any key of `value`, at any depth, is one a public view must not carry. */
function expectNoProcessDetails(value: unknown, where: string): void {
  const walk = (v: unknown, at: string) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at}[${i}]`));
    else if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        expect(["pid", "pgid", "process_dir"], `${where}: ${at}.${k}`).not.toContain(k);
        walk(x, `${at}.${k}`);
      }
    }
  };
  walk(value, "");
}

describe("ExecCommandBatch takes items", () => {
  it("runs `items` in order, and refuses the old `commands` field", async () => {
    const spec = toolSpecs(registry).find((t) => t.name === "ExecCommandBatch")!;
    expect(JSON.stringify(spec)).toContain('"items"');
    expect(JSON.stringify(spec)).not.toContain('"commands"');
    const ctx = await ctxFor(await openHost());
    const ok = await call(ctx, "ExecCommandBatch", {
      items: [{ cmd: "echo one" }, { cmd: "echo two" }],
    });
    expect(ok.result).toMatchObject({ item_count: 2, completed_count: 2 });
    expect(ok.result.items.map((i: any) => i.stdout_preview)).toEqual(["one\n", "two\n"]);
    const old = await call(ctx, "ExecCommandBatch", { commands: [{ cmd: "echo x" }] });
    expect(old.result ?? null).toBeNull();
    expect(old.error).toMatchObject({ kind: expect.any(String) });
    expect(JSON.stringify(old.error)).toMatch(/commands|items/);
  });
});

describe("TaskHandle and task views", () => {
  it("promotion returns task_id, task_kind, status and initial_output; no view shows a pid or process dir", async () => {
    const host = await openHost();
    const ctx = await ctxFor(host);
    const gate = join(ctx.cwd, "gate");
    const exec = await call(ctx, "ExecCommand", {
      cmd: `echo started; while [ ! -e ${gate} ]; do sleep 0.02; done`,
      yield_time_ms: 200,
    });
    expect(exec.result.disposition).toBe("promoted_to_task");
    expect(Object.keys(exec.result.task_handle).sort()).toEqual([
      "initial_output",
      "status",
      "task_id",
      "task_kind",
    ]);
    expect(exec.result.task_handle).toMatchObject({
      task_kind: "command_task",
      status: "running",
      initial_output: "started\n",
    });
    const again = await call(ctx, "ExecCommand", {
      cmd: `echo started; while [ ! -e ${gate} ]; do sleep 0.02; done`,
    });
    expect(again.result.disposition).toBe("already_running");
    expect(again.result.task_handle).toMatchObject({
      task_id: exec.result.task_handle.task_id,
      task_kind: "command_task",
      initial_output: null,
    });
    const taskId = exec.result.task_handle.task_id as string;
    for (const [name, args] of [
      ["TaskList", { include_terminal: true }],
      ["TaskStatus", { task_id: taskId }],
      ["TaskOutput", { task_id: taskId }],
    ] as const) {
      expectNoProcessDetails((await call(ctx, name, args)).result, name);
    }
    writeFileSync(gate, "");
    await host.tasks.waitTerminal(taskId, 10_000);

    // The HTTP views of the same task.
    const rt = await startRuntime();
    try {
      const created = await rt.req("POST", "/control/agents/main/tasks", { cmd: "echo hi" });
      expectNoProcessDetails(created.json, "POST tasks");
      const id = created.json.task.task_id;
      await rt.req("GET", `/agents/main/tasks/${id}/output?wait_ms=10000`);
      for (const path of [
        "/agents/main/tasks",
        "/tasks",
        `/agents/main/tasks/${id}`,
        `/agents/main/tasks/${id}/output`,
        "/agents/main/state",
        "/agents/main/events?limit=1000",
      ]) {
        const res = await rt.req("GET", path);
        expect(res.status, path).toBe(200);
        expectNoProcessDetails(res.json, path);
      }
    } finally {
      await rt.close();
    }
  });
});

describe("workspace roots", () => {
  it("a relative --workspace-root resolves against the caller's cwd; a missing or non-directory root is refused", async () => {
    const home = tempHome();
    const parent = join(tempHome("holon-projects-"), "projects"); // outside the state directory
    mkdirSync(join(parent, "app"), { recursive: true });
    writeFileSync(join(parent, "notes.txt"), "x");
    const env = { HOLON_HOME: home };
    // No model configured: the run fails, but only after the workspace was accepted.
    const rel = await runCli(["run", "--json", "--workspace-root", "app", "hello"], {
      env,
      cwd: parent,
    });
    expect(rel.stderr).not.toMatch(/workspace/i);
    expect(JSON.parse(rel.stdout).outcome).toBe("failed");
    for (const [root, why] of [
      ["missing", /does not exist/],
      ["notes.txt", /is not a directory/],
    ] as const) {
      const r = await runCli(["run", "--workspace-root", root, "hello"], { env, cwd: parent });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(why);
      expect(r.stderr).toContain(join(parent, root));
    }

    const s = await spawnServe(home);
    try {
      // Against a running host, from a directory the host knows nothing about.
      const created = await runCli(["agent", "create", "builder", "--workspace-root", "app"], {
        env,
        cwd: parent,
      });
      expect(created.code, created.stderr).toBe(0);
      const status = await (
        await fetch(`${s.url}/agents/builder/status`, { headers: s.auth })
      ).json();
      expect(JSON.stringify(status)).toContain(join(parent, "app"));
      const missing = await runCli(["agent", "create", "other", "--workspace-root", "nope"], {
        env,
        cwd: parent,
      });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/does not exist/);
      const relative = await fetch(`${s.url}/control/agents/third/create`, {
        method: "POST",
        headers: { "content-type": "application/json", ...s.auth },
        body: JSON.stringify({ workspace_root: "app" }),
      });
      expect(relative.status).toBe(400);
      expect(((await relative.json()) as any).error.message).toMatch(/not an absolute path/);
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });
});

describe("no provider configured", () => {
  it("run, prompt and the failure brief say so plainly and give the commands", async () => {
    const home = tempHome();
    const env = { HOLON_HOME: home };
    const run = await runCli(["run", "hello"], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/No model provider is configured/);
    expect(run.stderr).toContain("holon config set model.default");
    expect(run.stderr).not.toMatch(/candidate/);

    const s = await spawnServe(home);
    try {
      const prompt = await runCli(["prompt", "hello"], { env });
      expect(prompt.code, prompt.stderr).toBe(0);
      expect(prompt.stderr).toMatch(/no model provider is configured/);
      expect(prompt.stderr).toContain("holon config set model.default");
      expect(prompt.stderr).toContain("holon config credentials set");
      const briefs: any = await (
        await fetch(`${s.url}/agents/main/briefs`, { headers: s.auth })
      ).json();
      const { waitFor } = await import("./helpers/home.ts");
      await waitFor(async () => {
        const b: any = await (
          await fetch(`${s.url}/agents/main/briefs`, { headers: s.auth })
        ).json();
        return b.briefs.some((x: any) => /No model provider is configured/.test(x.text));
      });
      expect(briefs.ok).toBe(true);
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });
});

/** The source without comments and string contents (a small tokenizer, enough for this file). */
function codeOnly(src: string): string {
  let out = "";
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === "/" && src[i + 1] === "/") {
      while (i < src.length && src[i] !== "\n") i++;
      out += "\n";
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === "\\" ? 2 : 1;
      out += c + c;
      i = j;
    } else out += c;
  }
  return out;
}

describe("a Node too old to run holon", () => {
  const source = readFileSync(HOLON_BIN, "utf8");

  it("bin/holon.js is written so that any Node can parse it", () => {
    // A classic script (not a module), without syntax newer than ES5 outside strings.
    expect(() => new Script(source.replace(/^#!.*\n/, ""))).not.toThrow();
    const code = codeOnly(source.replace(/^#!.*\n/, ""));
    for (const modern of ["=>", "?.", "`", "...", "let ", "const ", "class ", "async ", "await "])
      expect(code, modern).not.toContain(modern);
    expect(code).not.toMatch(/\bimport\b|\bexport\b/);
    const engines = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).engines.node;
    const major = /REQUIRED_MAJOR = (\d+)/.exec(source)![1];
    const minor = /REQUIRED_MINOR = (\d+)/.exec(source)?.[1] ?? "0";
    expect(engines).toBe(`>=${major}.${minor}.0`);
  });

  const systemNode = ["/usr/bin/node", "/usr/local/bin/node"].find((p) => {
    try {
      return Number(execFileSync(p, ["-p", "process.versions.node.split('.')[0]"]).toString()) < 24;
    } catch {
      return false;
    }
  });
  it.runIf(systemNode)("prints one line naming the version and how to get it, and exits 1", () => {
    let code = 0;
    let stderr = "";
    try {
      execFileSync(systemNode!, [HOLON_BIN, "status"], { stdio: ["ignore", "pipe", "pipe"] });
    } catch (err: any) {
      code = err.status;
      stderr = err.stderr.toString();
    }
    expect(code).toBe(1);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/needs Node\.js \d+(\.\d+)? or newer, but this is Node\.js \d+/);
    expect(stderr).toMatch(/nvm install 24|nodejs\.org/);
  });
});
