// Hostile callers of the control plane: a web page in the user's browser, a DNS-rebinding
// page, another user on the same machine. Each attack is made over real HTTP (or the real
// Unix socket) and must be refused before routing, with a stable kind, an audit event and
// nothing admitted.
import { spawn } from "node:child_process";
import { chmodSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanupHomes, startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";
import { rawRequest } from "./helpers/http.ts";
import type { TurnExecutor } from "../src/agent/runtime.ts";
import { RefusalAudit, hostNameOf, type Refusal } from "../src/http/guard.ts";

const parked: TurnExecutor = { run: () => new Promise(() => {}) };

let rt: TestRuntime;
beforeEach(async () => {
  rt = await startRuntime({ executor: () => parked });
  await rt.host.lifecycle.control("main", "pause");
});
afterEach(async () => {
  await rt.close();
});
afterAll(cleanupHomes);

function messageCount(): number {
  return (rt.host.store.db.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number }).n;
}

async function refusals() {
  return (await rt.host.store.events.query("main", { limit: 1000, order: "asc" })).filter(
    (e) => e.type === "http_request_refused",
  );
}

describe("a web page in the user's browser", () => {
  it("cannot prompt the agent with a text/plain cross-origin fetch, even holding the token", async () => {
    const before = messageCount();
    // The exact request a page on evil.example makes with fetch(..., {mode: "no-cors"}).
    for (const auth of [undefined, `Bearer ${rt.token}`]) {
      const res = await fetch(rt.url + "/control/agents/main/prompt", {
        method: "POST",
        headers: {
          "content-type": "text/plain",
          origin: "https://evil.example",
          ...(auth ? { authorization: auth } : {}),
        },
        body: JSON.stringify({ text: "rm -rf ~" }),
      });
      expect(res.status).toBe(403);
      const json: any = await res.json();
      expect(json.error.kind).toBe("origin_not_allowed");
    }
    // Public ingress and reads are refused to foreign origins too.
    const enqueue = await rawRequest({ url: rt.url }, "POST", "/agents/main/enqueue", {
      headers: { "content-type": "application/json", origin: "http://evil.example" },
      body: JSON.stringify({ text: "hi" }),
    });
    expect(enqueue.status).toBe(403);
    const read = await rawRequest({ url: rt.url }, "GET", "/agents/main/transcript", {
      headers: { origin: "null" },
    });
    expect(read.status).toBe(403);
    const sniff = await rawRequest({ url: rt.url }, "GET", "/agents/list", {
      headers: { "sec-fetch-site": "cross-site" },
    });
    expect(sniff.status).toBe(403);
    expect(sniff.json.error.kind).toBe("origin_not_allowed");

    expect(messageCount()).toBe(before);
    const audit = await refusals();
    expect(audit.length).toBe(5);
    expect(audit[0]!.payload).toMatchObject({
      kind: "origin_not_allowed",
      status: 403,
      method: "POST",
      path: "/control/agents/main/prompt",
      origin: "https://evil.example",
      transport: "tcp",
    });
    // the token never lands in the audit record
    expect(JSON.stringify(audit)).not.toContain(rt.token);
  });

  it("JSON routes refuse any other content type with 415, even same-origin and authenticated", async () => {
    const before = messageCount();
    const cases: [string, string, Record<string, string>][] = [
      ["/control/agents/main/prompt", "text/plain", { authorization: `Bearer ${rt.token}` }],
      ["/control/agents/main/prompt", "application/x-www-form-urlencoded", {}],
      ["/agents/main/enqueue", "multipart/form-data; boundary=x", {}],
      ["/agents/main/enqueue", "", {}],
      ["/webhooks/generic/main", "text/plain", {}],
    ];
    for (const [path, type, extra] of cases) {
      const headers: Record<string, string> = { ...extra };
      if (type) headers["content-type"] = type;
      const res = await rawRequest({ url: rt.url }, "POST", path, {
        headers,
        body: JSON.stringify({ text: "x" }),
      });
      expect(res.status, `${path} ${type}`).toBe(415);
      expect(res.json.error.kind).toBe("unsupported_media_type");
    }
    expect(messageCount()).toBe(before);
    expect((await refusals()).length).toBe(cases.length);
    // A same-origin JSON request is fine, with a charset parameter too.
    const ok = await rawRequest({ url: rt.url }, "POST", "/agents/main/enqueue", {
      headers: {
        "content-type": "application/json; charset=utf-8",
        origin: rt.url,
        "sec-fetch-site": "same-origin",
      },
      body: JSON.stringify({ text: "same origin" }),
    });
    expect(ok.status).toBe(202);
  });

  it("webhooks keep working for machine senders whatever Origin they carry", async () => {
    const res = await rawRequest({ url: rt.url }, "POST", "/webhooks/generic/main", {
      headers: { "content-type": "application/json", origin: "https://github.com" },
      body: JSON.stringify({ action: "opened" }),
    });
    expect(res.status).toBe(202);
  });
});

describe("DNS rebinding", () => {
  it("a Host that is not one of ours is refused on every route; loopback names pass on any port", async () => {
    const before = messageCount();
    for (const path of ["/status", "/agents/list", "/handshake", "/agents/main/events"]) {
      const res = await rawRequest({ url: rt.url }, "GET", path, {
        headers: { host: `evil.example:${new URL(rt.url).port}` },
      });
      expect(res.status, path).toBe(403);
      expect(res.json.error.kind).toBe("host_not_allowed");
    }
    const post = await rawRequest({ url: rt.url }, "POST", "/agents/main/enqueue", {
      headers: { host: "rebind.evil.example", "content-type": "application/json" },
      body: JSON.stringify({ text: "x" }),
    });
    expect(post.status).toBe(403);
    const noHost = await rawRequest({ url: rt.url }, "GET", "/status", { headers: { host: "" } });
    expect(noHost.status).toBeGreaterThanOrEqual(400);
    expect(messageCount()).toBe(before);

    // SSH tunnels change the port; the names stay loopback.
    for (const host of ["localhost:7878", "127.0.0.1:1", "[::1]:9101", "LOCALHOST", "127.0.0.1"]) {
      const res = await rawRequest({ url: rt.url }, "GET", "/status", {
        headers: { host, authorization: `Bearer ${rt.token}` },
      });
      expect(res.status, host).toBe(200);
    }
    expect((await refusals()).map((e) => e.payload.kind)).toEqual([
      "host_not_allowed",
      "host_not_allowed",
      "host_not_allowed",
      "host_not_allowed",
      "host_not_allowed",
      ...(noHost.status === 403 ? ["host_not_allowed"] : []),
    ]);
  });

  it("parses Host headers strictly", () => {
    expect(hostNameOf("Example.COM:80")).toBe("example.com");
    expect(hostNameOf("[::1]:9")).toBe("::1");
    expect(hostNameOf("[::1]x")).toBeNull();
    expect(hostNameOf("user@evil:80")).toBeNull();
    expect(hostNameOf("a b")).toBeNull();
    expect(hostNameOf("")).toBeNull();
  });
});

describe("local mode trusts the user, not the machine", () => {
  it("over TCP every /control route needs the generated token; the Unix socket needs none", async () => {
    const tokenFile = join(rt.home, "run", "control-token");
    expect(readFileSync(tokenFile, "utf8").trim()).toBe(rt.token);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(rt.home, "run")).mode & 0o777).toBe(0o700);
    expect(statSync(rt.server.socketPath!).mode & 0o777).toBe(0o600);

    const before = messageCount();
    const none = await rt.req(
      "POST",
      "/control/agents/main/prompt",
      { text: "x" },
      { authorization: "" },
    );
    expect(none.status).toBe(401);
    expect(none.json.error.kind).toBe("unauthorized");
    const wrong = await rt.req(
      "POST",
      "/control/agents/main/prompt",
      { text: "x" },
      { authorization: "Bearer not-the-token" },
    );
    expect(wrong.status).toBe(401);
    const status = await rt.req("GET", "/control/runtime/status", undefined, { authorization: "" });
    expect(status.status).toBe(401);
    expect(messageCount()).toBe(before);
    expect((await refusals()).map((e) => e.payload.kind)).toEqual([
      "unauthorized",
      "unauthorized",
      "unauthorized",
    ]);

    // Reads need the token too (a departure from the spec's local mode: another user on the
    // machine reaches loopback TCP); public enqueue stays open on loopback.
    for (const path of ["/", "/status", "/agents/main/events", "/openapi.json"]) {
      const read = await rt.req("GET", path, undefined, { authorization: "" });
      expect(read.status, path).toBe(401);
    }
    const publicEnqueue = await rt.req(
      "POST",
      "/agents/main/enqueue",
      { text: "public" },
      { authorization: "" },
    );
    expect(publicEnqueue.status).toBe(202);
    expect((await rt.req("GET", "/status")).status).toBe(200);
    // The handshake says what a TCP client must send.
    const hs = await rt.req("GET", "/handshake", undefined, { authorization: "" });
    expect(hs.json.auth).toMatchObject({ mode: "local", required: true, access: "local" });

    const sock = { socketPath: rt.server.socketPath! };
    const viaSocket = await rawRequest(sock, "POST", "/control/agents/main/prompt", {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "from the socket" }),
    });
    expect(viaSocket.status).toBe(202);
    expect((await rt.host.store.messages.get(viaSocket.json.message_id))!.admission_context).toBe(
      "local_process",
    );
    const hsSock = await rawRequest(sock, "GET", "/handshake");
    expect(hsSock.json.auth).toMatchObject({ mode: "local", required: false, transport: "unix" });

    const withToken = await rt.req("POST", "/control/agents/main/prompt", { text: "tcp" });
    expect(withToken.status).toBe(202);
    expect((await rt.host.store.messages.get(withToken.json.message_id))!.admission_context).toBe(
      "control_authenticated",
    );
  });

  it("the generated token survives a restart", async () => {
    const home = rt.home;
    const first = rt.token;
    await rt.close();
    rt = await startRuntime({ home, executor: () => parked });
    expect(rt.token).toBe(first);
  });
});

describe("another user on the same machine", () => {
  // Async: the runtime under attack lives in this process and must keep answering.
  const asNobody = (cmd: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(cmd[0]!, cmd.slice(1), { uid: 65534, gid: 65534 });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on("close", (status) => resolve({ status, stdout, stderr }));
    });
  const root = process.getuid?.() === 0;

  it.runIf(root)(
    "cannot read the token or the database, nor use the socket or TCP control",
    async () => {
      // A home an older version left world-readable is tightened when the host starts.
      const home = tempHome();
      chmodSync(home, 0o755);
      await rt.close();
      rt = await startRuntime({ home, executor: () => parked });
      expect(statSync(home).mode & 0o777).toBe(0o700);
      for (const file of ["run/control-token", "holon.db", "run/runtime.json"]) {
        const r = await asNobody(["cat", join(home, file)]);
        expect(r.status, file).not.toBe(0);
        expect(r.stderr).toMatch(/Permission denied/);
      }
      const sock = await asNobody([
        "curl",
        "-sS",
        "--unix-socket",
        rt.server.socketPath!,
        "-X",
        "POST",
        "-H",
        "content-type: application/json",
        "-d",
        '{"text":"x"}',
        "http://localhost/control/agents/main/prompt",
      ]);
      expect(sock.status).not.toBe(0);
      expect(sock.stderr).toMatch(/Permission denied|Couldn't connect/i);
      const tcp = await asNobody([
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        "POST",
        "-H",
        "content-type: application/json",
        "-d",
        '{"text":"x"}',
        `${rt.url}/control/agents/main/prompt`,
      ]);
      expect(tcp.stdout).toBe("401");
      expect(messageCount()).toBe(0);
    },
  );

  it.runIf(root)(
    "reads nothing over TCP: every read and stream but the handshake needs the token",
    async () => {
      await rt.req("POST", "/control/agents/main/prompt", { text: "operator secret prompt 7731" });
      const get = (path: string) =>
        asNobody(["curl", "-s", "--max-time", "2", "-w", "\n%{http_code}", `${rt.url}${path}`]);
      for (const path of [
        "/",
        "/openapi.json",
        "/models",
        "/agents/list",
        "/status",
        "/agents/main/status",
        "/agents/main/state",
        "/agents/main/events",
        "/agents/main/transcript",
        "/agents/main/briefs",
        "/agents/main/tasks",
        "/agents/main/events/stream",
        "/usage",
      ]) {
        const r = await get(path);
        expect(r.stdout.split("\n").at(-1), path).toBe("401");
        expect(r.stdout).not.toContain("7731");
      }
      const hs = await get("/handshake");
      expect(hs.stdout.split("\n").at(-1)).toBe("200");
    },
  );
});

describe("refusal audit", () => {
  it("records at most 30 refusals a minute and says how many it left out", () => {
    let t = 0;
    const seen: [string, number][] = [];
    const audit = new RefusalAudit(
      (r, suppressed) => seen.push([r.kind, suppressed]),
      30,
      () => t,
    );
    const r = { kind: "host_not_allowed" } as Refusal;
    for (let i = 0; i < 100; i++) audit.note(r);
    expect(seen.length).toBe(30);
    t = 61_000;
    audit.note(r);
    expect(seen.at(-1)).toEqual(["host_not_allowed", 70]);
  });

  it("a refusal naming an agent is recorded on that agent", async () => {
    await rt.req("POST", "/control/agents/helper/create", {});
    const res = await rawRequest({ url: rt.url }, "POST", "/control/agents/helper/prompt", {
      headers: { "content-type": "text/plain", authorization: `Bearer ${rt.token}` },
      body: "hi",
    });
    expect(res.status).toBe(415);
    const events = (
      await rt.host.store.events.query("helper", { limit: 100, order: "asc" })
    ).filter((e) => e.type === "http_request_refused");
    expect(events.length).toBe(1);
  });
});
