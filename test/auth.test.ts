// Access modes (serve --access local|tunnel|lan|tailnet): who may call, over which transport,
// and which starts are refused outright. Network peers are real: the lan tests bind this
// machine's own non-loopback address and call it from there.
import { networkInterfaces } from "node:os";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, runCli, spawnServe, startRuntime, tempHome } from "./helpers/home.ts";
import { rawRequest } from "./helpers/http.ts";

afterAll(cleanupHomes);

/** A non-loopback IPv4 address of this machine, if it has one. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === "IPv4" && !i.internal)?.address;

describe("starting serve", () => {
  const refused: [string, string[], Record<string, string>, RegExp][] = [
    [
      "a non-loopback bind without a token",
      ["--host", "0.0.0.0"],
      {},
      /refusing to listen on 0\.0\.0\.0.*without a control token/,
    ],
    [
      "lan without a token",
      ["--access", "lan", "--host", lanAddress ?? "192.0.2.1"],
      {},
      /without a control token/,
    ],
    ["an empty --token", ["--token", ""], {}, /control token from --token is empty/],
    [
      "an empty HOLON_CONTROL_TOKEN",
      [],
      { HOLON_CONTROL_TOKEN: "  " },
      /HOLON_CONTROL_TOKEN is empty/,
    ],
    [
      "local access on a non-loopback address",
      ["--access", "local", "--host", "0.0.0.0", "--token", "t"],
      {},
      /listens on loopback only/,
    ],
    [
      "a wildcard --advertise",
      ["--access", "lan", "--host", "0.0.0.0", "--token", "t", "--advertise", "http://0.0.0.0:1"],
      {},
      /cannot be 0\.0\.0\.0/,
    ],
    ["an unknown access mode", ["--access", "internet"], {}, /--access/],
  ];
  // Each refusal is one short-lived process in a home of its own: they run side by side.
  for (const [name, args, env, message] of refused) {
    it.concurrent(`refuses ${name}`, async ({ expect }) => {
      const home = tempHome();
      const r = await runCli(["serve", "--port", "0", "--home", home, ...args], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(message);
    });
  }

  it("refuses an empty --token-file and warns that --token shows in ps", async () => {
    const home = tempHome();
    const empty = join(home, "empty.token");
    writeFileSync(empty, "\n", { mode: 0o600 });
    const r = await runCli(["serve", "--port", "0", "--home", home, "--token-file", empty]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is empty/);

    const s = await spawnServe(home, ["--token", "visible-token"]);
    try {
      expect(s.stderr()).toMatch(/--token is visible to every user.*ps/);
      const res = await fetch(`${s.url}/control/runtime/status`, { headers: s.auth });
      expect(res.status).toBe(200);
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });
});

describe("local mode", () => {
  it("a configured token (HOLON_CONTROL_TOKEN) replaces the generated one; the CLI finds it", async () => {
    const home = tempHome();
    const s = await spawnServe(home, [], { HOLON_CONTROL_TOKEN: "from-env" });
    try {
      expect(s.stderr()).not.toMatch(/control-token/);
      const bad = await fetch(`${s.url}/control/runtime/status`);
      expect(bad.status).toBe(401);
      const good = await fetch(`${s.url}/control/runtime/status`, {
        headers: { authorization: "Bearer from-env" },
      });
      expect(good.status).toBe(200);
      const body: any = await good.json();
      expect(JSON.stringify(body)).not.toContain("from-env");
      const st = await runCli(["status", "--json"], {
        env: { HOLON_HOME: home, HOLON_CONTROL_TOKEN: "from-env" },
      });
      expect(st.code, st.stderr).toBe(0);
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });

  it("without the socket the CLI falls back to TCP and sends the generated token", async () => {
    const home = tempHome();
    const s = await spawnServe(home);
    try {
      const { readFileSync, rmSync } = await import("node:fs");
      // As if the socket were unusable: the runtime file names one that is not there. (Removing
      // the real one races the host, which puts a deleted socket back within a second.)
      const runtimeFile = join(home, "run", "runtime.json");
      const info = JSON.parse(readFileSync(runtimeFile, "utf8"));
      info.socket_path = join(home, "run", "gone.sock");
      writeFileSync(runtimeFile, JSON.stringify(info), { mode: 0o600 });
      const env = { HOLON_HOME: home };
      const prompt = await runCli(["prompt", "over tcp"], { env });
      expect(prompt.code, prompt.stderr).toBe(0);
      const tokenFile = join(home, "run", "control-token");
      const saved = readFileSync(tokenFile, "utf8");
      rmSync(tokenFile);
      const refused = await runCli(["prompt", "no token"], { env });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("unauthorized");
      writeFileSync(tokenFile, saved, { mode: 0o600 });
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });

  it("the control_token config key works", async () => {
    const home = tempHome();
    const set = await runCli(["config", "set", "control_token", "from-config"], {
      env: { HOLON_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    const s = await spawnServe(home);
    try {
      const bad = await fetch(`${s.url}/control/runtime/status`);
      expect(bad.status).toBe(401);
      const res = await fetch(`${s.url}/control/runtime/status`, {
        headers: { authorization: "Bearer from-config" },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).control_token_configured).toBe(true);
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });
});

describe("tunnel mode", () => {
  it("stays on loopback but wants the token on every TCP route, reads included", async () => {
    const rt = await startRuntime({ serve: { access: "tunnel" } });
    try {
      // Through an SSH forward every caller looks local, so loopback proves nothing.
      for (const path of ["/status", "/agents/list", "/agents/main/events"]) {
        const res = await rt.req("GET", path, undefined, { authorization: "" });
        expect(res.status, path).toBe(401);
      }
      const enqueue = await rt.req("POST", "/enqueue", { text: "x" }, { authorization: "" });
      expect(enqueue.status).toBe(401);
      expect((await rt.req("GET", "/status")).status).toBe(200);
      const hs = await rt.req("GET", "/handshake", undefined, { authorization: "" });
      expect(hs.status).toBe(200);
      expect(hs.json.auth).toMatchObject({ mode: "bearer", required: true, access: "tunnel" });
      // The forwarded port differs from ours; the name is still loopback.
      const tunneled = await rawRequest({ url: rt.url }, "GET", "/status", {
        headers: { host: "127.0.0.1:7878", authorization: `Bearer ${rt.token}` },
      });
      expect(tunneled.status).toBe(200);
      // The socket stays the local user's door.
      const sock = await rawRequest({ socketPath: rt.server.socketPath! }, "GET", "/status");
      expect(sock.status).toBe(200);
    } finally {
      await rt.close();
    }
  });
});

describe.runIf(lanAddress)("lan and tailnet modes", () => {
  it("a peer on the network needs the token for everything but the handshake", async () => {
    const rt = await startRuntime({
      serve: { access: "lan", hostname: lanAddress!, token: "lan-secret" },
    });
    try {
      expect(rt.url).toContain(lanAddress!);
      const from = { localAddress: lanAddress! };
      const target = { url: rt.url };
      for (const path of ["/status", "/agents/list", "/models", "/agents/main/transcript"]) {
        const res = await rawRequest(target, "GET", path, from);
        expect(res.status, path).toBe(401);
      }
      const enqueue = await rawRequest(target, "POST", "/enqueue", {
        ...from,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: "x" }),
      });
      expect(enqueue.status).toBe(401);
      const hs = await rawRequest(target, "GET", "/handshake", from);
      expect(hs.status).toBe(200);
      expect(hs.json.auth).toMatchObject({ mode: "bearer", required: true, access: "lan" });
      const ok = await rawRequest(target, "GET", "/status", {
        ...from,
        headers: { authorization: "Bearer lan-secret" },
      });
      expect(ok.status).toBe(200);
      const prompt = await rawRequest(target, "POST", "/control/agents/main/prompt", {
        ...from,
        headers: { authorization: "Bearer lan-secret", "content-type": "application/json" },
        body: JSON.stringify({ text: "from the lan" }),
      });
      expect(prompt.status).toBe(202);
      expect((await rt.host.store.messages.get(prompt.json.message_id))!.admission_context).toBe(
        "control_authenticated",
      );
    } finally {
      await rt.close();
    }
  });

  it("serve --access lan --listen <addr>:0 --token-file starts from the command line and wants that token", async () => {
    const home = tempHome();
    const file = join(home, "lan.token");
    writeFileSync(file, "file-secret\n", { mode: 0o600 });
    const s = await spawnServe(home, [
      "--access",
      "lan",
      "--listen",
      `${lanAddress}:0`,
      "--token-file",
      file,
    ]);
    try {
      expect(new URL(s.url).hostname).toBe(lanAddress);
      expect((await fetch(`${s.url}/status`)).status).toBe(401);
      const ok = await fetch(`${s.url}/status`, {
        headers: { authorization: "Bearer file-secret" },
      });
      expect(ok.status).toBe(200);
      const hs = (await (await fetch(`${s.url}/handshake`)).json()) as any;
      expect(hs.auth).toMatchObject({ mode: "bearer", required: true, access: "lan" });
      expect(s.stderr()).not.toContain("file-secret");
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });

  it("a wildcard bind accepts the advertised name and this machine's addresses, nothing else", async () => {
    const rt = await startRuntime({
      serve: {
        access: "tailnet",
        hostname: "0.0.0.0",
        token: "tail-secret",
        advertise: "http://lab.example.test:7878",
      },
    });
    try {
      const port = new URL(rt.url).port;
      const auth = { authorization: "Bearer tail-secret" };
      for (const host of ["lab.example.test:7878", `${lanAddress}:${port}`, `127.0.0.1:${port}`]) {
        const res = await rawRequest({ url: `http://127.0.0.1:${port}` }, "GET", "/status", {
          headers: { host, ...auth },
        });
        expect(res.status, host).toBe(200);
      }
      const evil = await rawRequest({ url: `http://127.0.0.1:${port}` }, "GET", "/status", {
        headers: { host: "lab.example.test.evil.example", ...auth },
      });
      expect(evil.status).toBe(403);
      // The advertised origin counts as our own.
      const fromUi = await rawRequest({ url: `http://127.0.0.1:${port}` }, "GET", "/status", {
        headers: { host: "lab.example.test:7878", origin: "http://lab.example.test:7878", ...auth },
      });
      expect(fromUi.status).toBe(200);
      const hs = await rawRequest({ url: `http://127.0.0.1:${port}` }, "GET", "/handshake");
      expect(hs.json.runtime.advertise_url).toBe("http://lab.example.test:7878");
    } finally {
      await rt.close();
    }
  });
});
