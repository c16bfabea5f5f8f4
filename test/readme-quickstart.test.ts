// The README, run as written. Its fast-path block (a `holon` shim on the PATH) is run in the
// checkout, and its quickstart block, extracted from README.md itself, runs top to bottom in
// a fresh `sh -e` in a project directory, through that shim. Swapped for the test: the
// provider lines (the scripted fake provider instead of OpenAI), the state directory and port
// (a temporary HOLON_HOME and a free port, so runs never share state), `holon tui` (2 s in a
// pseudo-terminal) and `curl -N` (`--max-time 2`; the stream itself never ends).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { reply } from "./fake-provider/server.ts";
import { REPO_ROOT, runCli, tempHome, waitFor } from "./helpers/home.ts";
import { useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
let userHome: string;
let holonHome: string;
let shimDir: string;

/** The first ```sh block after a heading. */
function shBlock(heading: string): string {
  const at = README.indexOf(heading);
  expect(at, heading).toBeGreaterThanOrEqual(0);
  const m = /```sh\n([\s\S]*?)```/.exec(README.slice(at));
  return m![1]!;
}

/** Statements of a block: comments dropped, continuation lines joined. */
function statements(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((l) =>
      l
        .replace(/^#.*$/, "")
        .replace(/\s+#\s.*$/, "")
        .trim(),
    )
    .filter(Boolean);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** What a fresh shell of this user has: no HOLON_* and no npm script variables. */
function freshEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(HOLON_|npm_|NODE_OPTIONS|VITEST)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

beforeAll(() => {
  userHome = tempHome("holon-user-", { sqlite: true });
  holonHome = join(tempHome("holon-test-", { sqlite: true }), "holon-demo");
  shimDir = join(userHome, ".local", "bin");
});

afterAll(async () => {
  // A failed run may leave the daemon up.
  await runCli(["daemon", "stop"], { env: { HOLON_HOME: holonHome } });
});

describe("README", () => {
  it("the fast path: the shim block puts a `holon` on the PATH that needs neither npm nor the system Node", async () => {
    execFileSync("sh", ["-ec", shBlock("### A fast `holon` from a checkout")], {
      cwd: REPO_ROOT,
      env: freshEnv({ HOME: userHome }),
    });
    const shim = join(shimDir, "holon");
    expect(existsSync(shim)).toBe(true);
    // npm and npx that fail, first on the PATH: the shim must not go through them.
    const noNpm = join(userHome, "no-npm");
    mkdirSync(noNpm);
    for (const name of ["npm", "npx"]) {
      writeFileSync(join(noNpm, name), "#!/bin/sh\necho npm was used >&2; exit 99\n");
      chmodSync(join(noNpm, name), 0o755);
    }
    const env = freshEnv({ HOME: userHome, PATH: `${noNpm}:${shimDir}:/usr/bin:/bin` });
    const version = await runCli([], { exec: ["holon", "--version"], env, cwd: userHome });
    expect(version.stderr).toBe("");
    expect(version.stdout.trim()).toBe(
      JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version,
    );
    // A command that loads the sources (they need Node 24's type stripping).
    const list = await runCli([], {
      exec: ["holon", "config", "list", "--home", join(userHome, "h")],
      env,
      cwd: userHome,
    });
    expect(list.code, list.stderr).toBe(0);
  }, 60_000);

  it("the quickstart runs top to bottom as written and does what it says", async () => {
    expect(existsSync(join(shimDir, "holon")), "the fast-path test runs first").toBe(true);
    fake.setFallback(() => reply.text("Here is what I found."));
    const project = tempHome("holon-project-", { sqlite: true });
    writeFileSync(join(project, "notes.md"), "# notes\n");
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "demo", private: true, scripts: { dev: "echo dev server up" } }),
    );
    const port = await freePort();
    const tuiOut = join(userHome, "tui.out");

    const lines: string[] = [];
    let providerLines = 0;
    for (const s of statements(shBlock("## Quickstart"))) {
      if (/^export OPENAI_API_KEY=/.test(s)) {
        providerLines++;
        continue;
      }
      if (/^holon config set model\.default /.test(s)) {
        providerLines++;
        lines.push(
          `holon config providers set fake --transport openai_responses --base-url ${fake.baseUrl("openai")} --credential-source none --credential-kind none`,
          "holon config set model.default fake/test-model",
        );
        continue;
      }
      let line = s.replace(/^export HOLON_HOME=\S+/, `export HOLON_HOME=${holonHome}`);
      line = line.replaceAll("9101", String(port));
      if (/^holon tui\b/.test(line)) {
        line = `upto ${tuiOut} live script -qec ${JSON.stringify(line)} /dev/null`;
      } else if (/^curl -N /.test(line)) {
        const streamOut = join(userHome, "stream.out");
        line = `upto ${streamOut} ": connected" ${line.replace(/^curl -N /, "curl -sS -N ")}; cat ${streamOut}`;
      }
      lines.push(line);
    }
    expect(providerLines).toBe(2);
    expect(lines.some((l) => l.startsWith(`export HOLON_HOME=${holonHome}`))).toBe(true);

    // The console and the event stream run until stopped: `upto` runs one with its output in a
    // file and stops it once that output shows `pattern` (at most 10 s on), instead of giving
    // each a fixed two seconds. Stopped by us, any exit status goes (as under `timeout`); one
    // that ended on its own must have succeeded.
    const upto = [
      'upto() { out=$1; pattern=$2; shift 2; "$@" > "$out" & p=$!; n=0',
      '  while kill -0 $p 2>/dev/null && ! grep -q "$pattern" "$out" && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done',
      "  if kill $p 2>/dev/null; then wait $p || true; else wait $p; fi; }",
    ];
    const child = spawn("sh", ["-e", "-x", "-c", [...upto, ...lines].join("\n")], {
      cwd: project,
      env: freshEnv({ HOME: userHome, PATH: `${shimDir}:${process.env.PATH}` }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((r) => child.on("close", r));
    expect(code, `${stderr}\n--- stdout ---\n${stdout}`).toBe(0);

    // Not refused, and each did what its comment says.
    expect(stderr).not.toMatch(/^error:/m);
    expect(stdout).toContain(`attached: `);
    expect(stdout).toContain(`main now works in ${project}`);
    expect(stdout).toMatch(/queued msg_\S+ for main/);
    expect(stdout).toContain(": connected"); // the live stream answered (with the token)
    expect(stdout).toMatch(/"message_id"/); // the control prompt over TCP was accepted
    expect(stdout).toMatch(/"ok": true[\s\S]*"final_text": "Here is what I found."/);
    expect(readFileSync(tuiOut, "utf8")).not.toMatch(/error/i);
    // The prompt's turn reached the model in the attached directory.
    expect(fake.requests.some((r) => JSON.stringify(r.body).includes(project))).toBe(true);
    // The task ran `npm run dev` in the attached directory.
    const output = /output: (\S+)/.exec(stdout)![1]!;
    await waitFor(
      () => existsSync(output) && readFileSync(output, "utf8").includes("dev server up"),
      {
        what: "the dev task's output",
        timeoutMs: 30_000,
      },
    );
    // The daemon was stopped at the end.
    const after = await runCli(["status"], { env: { HOLON_HOME: holonHome } });
    expect(after.stderr).toContain("no Holon runtime is running");
  }, 240_000);
});
