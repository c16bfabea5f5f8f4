// Agents use tools from real MCP servers installed from npm: server-everything over stdio
// (confined by the sandbox) and over streamable HTTP, server-filesystem confined to a temp
// workspace. Calls go through the production catalog bridge and tool dispatch of a real host.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RuntimeHost } from "../src/host/host.ts";
import { cleanupHomes, tempHome, waitFor } from "./helpers/home.ts";
import { EVERYTHING, FILESYSTEM, NODE, callMcp, writeMcpConfig } from "./helpers/mcp.ts";
import { toolContext } from "./helpers/tool-context.ts";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch } from "../src/tools/registry.ts";

const SECRET = "mcp-5ecret-value-ZZZ";
const hosts: RuntimeHost[] = [];
const procs: ChildProcess[] = [];

afterAll(async () => {
  for (const h of hosts.splice(0)) await h.shutdown();
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  cleanupHomes();
});

async function openHost(
  mcp: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<RuntimeHost> {
  const home = tempHome();
  writeMcpConfig(home, mcp);
  const host = await RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home, ...env } });
  hosts.push(host);
  return host;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe("server-everything over stdio", () => {
  let host: RuntimeHost;
  beforeAll(async () => {
    process.env.HOLON_TEST_MCP_SECRET = SECRET;
    host = await openHost({
      servers: {
        everything: {
          command: NODE,
          args: [EVERYTHING, "stdio"],
          env: { PASSED_SECRET: "${HOLON_TEST_MCP_SECRET}", PLAIN: "plain-value" },
        },
      },
    });
  });

  it("echo and get-sum answer through the catalog; names follow mcp__<server>__<tool>", async () => {
    const echo = await callMcp(host, "mcp__everything__echo", { message: "hello there" });
    expect(echo.canonical.status, echo.rendered).toBe("success");
    expect(echo.result.text).toContain("hello there");
    expect(echo.result.evidence).toBe("external");
    expect(echo.external_evidence).toBe(true);
    expect(echo.rendered).toContain("external evidence from MCP server everything");
    expect(echo.names).toContain("mcp__everything__get-sum");
    const sum = await callMcp(host, "mcp__everything__get-sum", { a: 2, b: 40 });
    expect(sum.result.text).toContain("42");
  });

  it("a long-running operation with progress, structured content and a tiny image", async () => {
    const long = await callMcp(host, "mcp__everything__trigger-long-running-operation", {
      duration: 0.2,
      steps: 2,
    });
    expect(long.canonical.status, long.rendered).toBe("success");
    expect(long.result.text).toMatch(/completed/i);
    const structured = await callMcp(host, "mcp__everything__get-structured-content", {
      location: "New York",
    });
    expect(structured.canonical.status, structured.rendered).toBe("success");
    expect(structured.result.structured_content).toHaveProperty("temperature");
    expect(structured.rendered).toContain("structured content:");
    const image = await callMcp(host, "mcp__everything__get-tiny-image", {});
    expect(image.canonical.status, image.rendered).toBe("success");
    const media = image.result.media as { type: string; mime_type: string; bytes: number }[];
    expect(media[0]).toMatchObject({ type: "image", mime_type: "image/png" });
    expect(media[0]!.bytes).toBeGreaterThan(0);
  });

  it("get-env shows a scrubbed environment: its own env, no host secrets", async () => {
    const env = await callMcp(host, "mcp__everything__get-env", {});
    const seen = JSON.parse(env.result.text as string) as Record<string, string>;
    expect(seen.PLAIN).toBe("plain-value");
    expect(seen.PASSED_SECRET).toBe(SECRET); // the server was given it by reference
    expect(seen.HOLON_TEST_MCP_SECRET).toBeUndefined();
    expect(seen.HOLON_CONTROL_TOKEN).toBeUndefined();
    expect(Object.keys(seen).some((k) => /_API_KEY$/.test(k))).toBe(false);
  });

  it("a variable a server definition references is withheld from commands", async () => {
    const ctx = await toolContext(host);
    const out = await dispatch(buildRegistry(), "ExecCommand", JSON.stringify({ cmd: "env" }), ctx);
    expect(out.canonical.status).toBe("success");
    expect(out.rendered).not.toContain(SECRET);
    expect(out.rendered).not.toContain("HOLON_TEST_MCP_SECRET");
  });

  it("status shows the running server with its pid and tool mapping", async () => {
    const [view] = await host.services.mcp.status(await host.agents.get("main"));
    expect(view).toMatchObject({ name: "everything", state: "running", transport: "stdio" });
    expect(view!.pid).toBeGreaterThan(0);
    expect(view!.tools.find((t) => t.tool === "get-sum")?.name).toBe("mcp__everything__get-sum");
    expect(JSON.stringify(view)).not.toContain(SECRET);
  });
});

describe("server-everything over streamable HTTP", () => {
  it("echo and get-sum over HTTP", async () => {
    const port = await freePort();
    const server = spawn(NODE, [EVERYTHING, "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    procs.push(server);
    let err = "";
    server.stderr!.on("data", (d) => (err += d));
    await waitFor(() => /listening/i.test(err), { what: "the HTTP server" });
    const host = await openHost({
      servers: { web: { type: "http", url: `http://127.0.0.1:${port}/mcp` } },
    });
    const echo = await callMcp(host, "mcp__web__echo", { message: "over http" });
    expect(echo.canonical.status, echo.rendered).toBe("success");
    expect(echo.result.text).toContain("over http");
    const sum = await callMcp(host, "mcp__web__get-sum", { a: 1, b: 2 });
    expect(sum.result.text).toContain("3");
    const [view] = await host.services.mcp.status(await host.agents.get("main"));
    expect(view).toMatchObject({ transport: "http", state: "running", pid: null });
  });
});

describe("server-everything over the legacy HTTP+SSE transport", () => {
  it("echo over SSE", async () => {
    const port = await freePort();
    const server = spawn(NODE, [EVERYTHING, "sse"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    procs.push(server);
    let err = "";
    server.stderr!.on("data", (d) => (err += d));
    await waitFor(() => /listening|running/i.test(err), { what: "the SSE server" });
    const host = await openHost({
      servers: { old: { type: "sse", url: `http://127.0.0.1:${port}/sse` } },
    });
    const echo = await callMcp(host, "mcp__old__echo", { message: "over sse" });
    expect(echo.canonical.status, echo.rendered).toBe("success");
    expect(echo.result.text).toContain("over sse");
  });
});

describe("server-filesystem confined to a workspace", () => {
  it("its root is the agent's execution root: inside works, outside is refused", async () => {
    const other = realpathSync(tempHome("holon-mcp-other-"));
    writeFileSync(join(other, "secret.txt"), "not for the agent");
    // The server is given two directories on its command line; the client's MCP roots (the
    // agent's execution root, a temp home here) replace them, as the protocol says.
    const host = await openHost({
      servers: { fs: { command: NODE, args: [FILESYSTEM, ".", other] } },
    });
    const root = realpathSync((await host.agents.get("main")).agent_home);
    mkdirSync(join(root, "docs"), { recursive: true });
    writeFileSync(join(root, "docs", "a.txt"), "alpha");
    const read = await callMcp(host, "mcp__fs__read_text_file", { path: join(root, "docs/a.txt") });
    expect(read.canonical.status, read.rendered).toBe("success");
    expect(read.result.text).toContain("alpha");
    const write = await callMcp(host, "mcp__fs__write_file", {
      path: join(root, "b.txt"),
      content: "beta",
    });
    expect(write.canonical.status, write.rendered).toBe("success");
    expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("beta");
    for (const path of ["/etc/hostname", join(other, "secret.txt")]) {
      const outside = await callMcp(host, "mcp__fs__read_text_file", { path });
      expect(outside.canonical.status).toBe("error");
      expect(outside.error?.kind).toBe("mcp_tool_error");
      expect(outside.rendered).toMatch(/denied|outside|not allowed/i);
      expect(outside.rendered).not.toContain("not for the agent");
    }
  });
});
