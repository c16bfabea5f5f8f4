// What `holon run` loads before it asks the model anything (issue 32), counted rather than
// timed: a real `holon run` from the checkout, watched from outside by a module hook that
// records every module Node loads and a diagnostics channel that marks the first outgoing
// HTTP request (the provider call). The project's own modules loaded by then stay within a
// budget written here; packages a run must never load are named. Which SDK loads for which
// provider family is test/provider-sdk-loading.test.ts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HOLON_BIN, REPO_ROOT, runCli, tempHome } from "./helpers/home.ts";
import { reply } from "./fake-provider/server.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

const HOOKS = `import { registerHooks } from "node:module";
import { subscribe } from "node:diagnostics_channel";
const loaded = [];
let reported = false;
registerHooks({
  load(url, context, next) {
    loaded.push(url);
    return next(url, context);
  },
});
subscribe("http.client.request.start", () => {
  if (reported) return;
  reported = true;
  process.stderr.write("before-first-request:" + JSON.stringify(loaded) + "\\n");
});
process.on("exit", () => {
  process.stderr.write("whole-run:" + JSON.stringify(loaded) + "\\n");
});
`;

/** The package a module URL belongs to, or null for the project's own and Node's modules. */
function packageOf(url: string): string | null {
  const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  return m ? m[1]! : null;
}

async function run(): Promise<{ before: string[]; whole: string[] }> {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const hooks = join(home, "module-hooks.mjs");
  writeFileSync(hooks, HOOKS);
  fake.enqueue(reply.text("hello back"));
  const r = await runCli([], {
    exec: [process.execPath, "--import", hooks, HOLON_BIN, "run", "--home", home, "hello"],
  });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain("hello back");
  const line = (prefix: string): string[] => {
    const found = r.stderr.split("\n").find((l) => l.startsWith(prefix));
    expect(found, `no '${prefix}' line in:\n${r.stderr}`).toBeDefined();
    return JSON.parse(found!.slice(prefix.length)) as string[];
  };
  return { before: line("before-first-request:"), whole: line("whole-run:") };
}

describe("holon run start-up budget", () => {
  it("loads at most its budgeted own modules before the first provider request, and never an SDK or telemetry it does not use", async () => {
    const { before, whole } = await run();
    const src = new URL("src/", `file://${REPO_ROOT}/`).href;
    const own = before.filter((u) => u.startsWith(src));
    // HOLON_PRINT_BUDGETS=1 prints the own modules, to see what a budget counts.
    if (process.env.HOLON_PRINT_BUDGETS)
      console.log(own.map((u) => u.slice(src.length)).join("\n"));
    // Budget: the project's own modules loaded before the first provider request. Measured
    // at 195 (issue 32); raise it in the commit that needs more, and say why. 216: the MCP
    // client (src/mcp/, 10 modules, its SDK still lazy), the `holon mcp` command group (2),
    // approval asks and consent (3), the sandbox's network namespace, proxy and spares (3),
    // and the tracing seam (1, the SDK still lazy) are part of every host's composition.
    // 217: the usage report's running totals come from telemetry/cost.ts (one shared copy).
    // 218: MCP elicitation (src/mcp/elicitation.ts): the asks plane's hook that checks an
    // answer against a server's form is part of the composition.
    // 208: the CLI's command groups (config, task, workspace, skills, timer, work, asks,
    // budget, operator commands, mcp) load only for a command line that may need them.
    // 195: the MCP client loads only once a home uses MCP (host/mcp-facade.ts), a provider
    // family's transport at its first send (providers/lazy-transports.ts), and `run` reads
    // budget flags with the budget command group only when a limit is given. 193: the HTTP
    // client loads only when a host may be running for the home (its runtime file exists).
    // 196: the store's checkpoint watcher (store/checkpoint.ts: it moves WAL checkpoints off
    // the committing request, its worker thread starts only past 4 MB of WAL), the phrase
    // table admitted rows are encoded with (store/codec-phrases.ts), and the trace links'
    // repository, which retention now caps by size (store/trace-links.ts). 197: the provider
    // fetch's own Headers and Response (providers/lite-web.ts), which keep undici and some 110
    // builtin modules from loading before the first provider request.
    const BUDGET = 197;
    expect(
      own.length,
      `own modules before the first provider request: ${own.length}, budget ${BUDGET} (over by ${own.length - BUDGET})`,
    ).toBeLessThanOrEqual(BUDGET);
    // Packages a run against an OpenAI-shaped provider, telemetry off, must never load.
    const forbidden = [/^@anthropic-ai\//, /^@opentelemetry\//];
    const packages = [...new Set(whole.map(packageOf).filter((p) => p !== null))];
    const loadedForbidden = packages.filter((p) => forbidden.some((f) => f.test(p)));
    expect(loadedForbidden, "packages this run must not load").toEqual([]);
    expect(packages).toContain("openai"); // the hook saw the SDK the run does use
    // The project's own subsystems a run with a default config never uses, so never loads:
    // the MCP client and its tool bridge (loaded once a home uses MCP: test/mcp-run.test.ts),
    // the transports of provider families not configured, the budget command group, and the
    // HTTP client (no host runs for this home).
    const unused = [
      "mcp/service.ts",
      "mcp/sdk.ts",
      "mcp/catalog.ts",
      "mcp/records.ts",
      "mcp/elicitation.ts",
      "mcp/results.ts",
      "tools/mcp/mcp-tool.ts",
      "providers/anthropic-messages.ts",
      "providers/openai-chat-completions.ts",
      "providers/openai-codex.ts",
      "cli/budget.ts",
      "cli/connect.ts",
      "client/client.ts",
    ];
    expect(
      unused.filter((m) => whole.includes(src + m)),
      "own modules this run must not load",
    ).toEqual([]);
    // Packages that load at their first use, never before the first provider request: the
    // shell grammar's runtime (at the first command a policy looks at) and the YAML library
    // (at the first front matter to parse). Each was loaded by every `holon run` before.
    const lazy = [/^web-tree-sitter$/, /^yaml$/];
    const early = [...new Set(before.map(packageOf).filter((p) => p !== null))];
    expect(
      early.filter((p) => lazy.some((f) => f.test(p))),
      "packages loaded before the first provider request that should wait for their first use",
    ).toEqual([]);
  }, 60_000);
});

// Builtin modules `holon run` does not need before its first provider request (against a
// provider on plain http): undici (Node's fetch and web Headers, which the provider SDKs would
// load through `new Headers()`: providers/lite-web.ts), the WAL checkpoint worker's
// worker_threads (store/checkpoint.ts), and https/tls (at the first https:// URL).
const BUILTIN_HOOKS = `import { subscribe } from "node:diagnostics_channel";
let reported = false;
subscribe("http.client.request.start", () => {
  if (reported) return;
  reported = true;
  const builtins = process.moduleLoadList.filter((m) => m.startsWith("NativeModule ")).map((m) => m.slice(13));
  process.stderr.write("builtins-before-first-request:" + JSON.stringify(builtins) + "\\n");
});
`;

describe("holon run start-up builtins", () => {
  it("loads neither undici, worker_threads nor tls before the first provider request", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const hooks = join(home, "builtin-hooks.mjs");
    writeFileSync(hooks, BUILTIN_HOOKS);
    fake.enqueue(reply.text("hello back"));
    const r = await runCli([], {
      exec: [process.execPath, "--import", hooks, HOLON_BIN, "run", "--home", home, "hello"],
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("hello back");
    const prefix = "builtins-before-first-request:";
    const line = r.stderr.split("\n").find((l) => l.startsWith(prefix));
    expect(line, r.stderr).toBeDefined();
    const builtins = JSON.parse(line!.slice(prefix.length)) as string[];
    expect(builtins).toContain("http"); // the hook saw the request's own module
    const mustWait = ["internal/deps/undici/undici", "worker_threads", "tls", "https"];
    expect(
      mustWait.filter((m) => builtins.includes(m)),
      "builtins loaded before the first provider request",
    ).toEqual([]);
  }, 60_000);
});
