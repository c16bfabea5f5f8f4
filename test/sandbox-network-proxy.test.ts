// The allowlist proxy on its own, over a real Unix socket and real TCP on 127.0.0.1: what an
// entry allows, its caps on hostile input (an endless header, a flood of connections, a SOCKS
// command it does not speak), no rebinding of a listed name onto the machine, and the cap on
// how many refusals become events.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  allowedBy,
  MAX_CONNECTIONS,
  MAX_HEADER_BYTES,
  NetworkProxy,
  type ProxyRefusal,
} from "../src/sandbox/proxy.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

let dir: string;
let target: Server;
let targetPort: number;
let proxy: NetworkProxy;
let sock: string;
let allow: string[];
let refused: ProxyRefusal[];
let now: number;
let names: Record<string, string[]>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "holon-proxy-"));
  target = createServer((_q, s) => s.end("TARGET"));
  await new Promise<void>((r) => target.listen(0, "127.0.0.1", () => r()));
  targetPort = (target.address() as AddressInfo).port;
});

afterAll(() => {
  target.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(protectedPorts: number[] = []): void {
  refused = [];
  now = 0;
  names = {};
  proxy = new NetworkProxy({
    allowlist: () => allow,
    protectedPorts: () => protectedPorts,
    onRefused: (_id, r) => refused.push(r),
    resolve: async (h) => names[h] ?? [],
    now: () => now,
  });
  sock = join(dir, `p${Math.random().toString(36).slice(2)}.sock`);
  proxy.listen("a1", sock);
}

afterEach(async () => {
  await proxy?.close();
});

/** Send bytes, read until the proxy closes (or `until` shows up), return everything read. */
function talk(bytes: Buffer | string, until?: RegExp): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const c = connect(sock);
    const got: Buffer[] = [];
    c.on("data", (d) => {
      got.push(d);
      if (until && until.test(Buffer.concat(got).toString("latin1"))) c.end();
    });
    c.on("error", reject);
    c.on("close", () => resolve(Buffer.concat(got)));
    c.write(bytes);
  });
}

describe("allowlist entries", () => {
  it.each([
    [["example.com"], "example.com", 443, true],
    [["example.com"], "example.com", 80, true],
    [["example.com"], "example.com", 8080, false],
    [["example.com"], "api.example.com", 443, false],
    [["*.example.com"], "api.example.com", 443, true],
    [["*.example.com"], "example.com", 443, false],
    [["example.com:8080"], "example.com", 8080, true],
    [["example.com:8080"], "example.com", 443, false],
    [["EXAMPLE.com."], "example.COM", 443, true],
    [["127.0.0.1:3000"], "127.0.0.1", 3000, true],
    [["[::1]:3000"], "::1", 3000, true],
    [["[::1]:3000"], "[::1]", 3000, true],
    [[], "example.com", 443, false],
  ] as const)("%j allows %s:%d → %s", (list, host, port, ok) => {
    expect(allowedBy(list, host, port) !== null).toBe(ok);
  });
});

describe("the proxy", () => {
  beforeAll(() => {
    allow = [];
  });

  it("connects a listed destination over HTTP and CONNECT", async () => {
    allow = [`127.0.0.1:${targetPort}`];
    start();
    const http = await talk(
      `GET http://127.0.0.1:${targetPort}/x HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Connection: keep-alive\r\n\r\n`,
    );
    expect(http.toString()).toMatch(/^HTTP\/1\.1 200[\s\S]*TARGET$/);
    const tunnel = await talk(
      `CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(tunnel.toString()).toMatch(
      /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200/,
    );
    expect(tunnel.toString()).toContain("TARGET");
    expect(refused).toEqual([]);
  });

  it("cuts off a header past its cap with 431, having read no more than the cap", async () => {
    allow = [];
    start();
    const r = await talk(`GET http://x/ HTTP/1.1\r\nX: ${"a".repeat(MAX_HEADER_BYTES + 10)}`);
    expect(r.toString()).toMatch(/^HTTP\/1\.1 431/);
  });

  it("holds at most MAX_CONNECTIONS connections of one agent open", async () => {
    allow = [];
    start();
    const open: Socket[] = [];
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const c = connect(sock);
      await new Promise<void>((r) => c.once("connect", () => r()));
      c.write("G"); // a handshake that never finishes
      open.push(c);
    }
    const extra = connect(sock);
    const closedAt = await new Promise<string>((r) => {
      extra.on("error", () => r("error"));
      extra.on("close", () => r("closed"));
    });
    expect(closedAt).toBe("closed");
    for (const c of open) c.destroy();
  });

  it("answers SOCKS5: CONNECT only, no authentication, refusals as reply 2", async () => {
    allow = [`127.0.0.1:${targetPort}`];
    start();
    // a client that insists on a username and password gets 0xff
    expect([...(await talk(Buffer.from([5, 1, 2])))]).toEqual([5, 0xff]);
    // BIND (2) is not spoken
    const bind = await talk(Buffer.from([5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80]));
    expect([...bind.subarray(0, 4)]).toEqual([5, 0, 5, 7]);
    // a domain not on the list
    const name = Buffer.from("elsewhere.test");
    const no = await talk(
      Buffer.concat([Buffer.from([5, 1, 0, 5, 1, 0, 3, name.length]), name, Buffer.from([1, 187])]),
    );
    expect([...no.subarray(0, 4)]).toEqual([5, 0, 5, 2]);
    expect(refused).toMatchObject([{ host: "elsewhere.test", port: 443, protocol: "socks5" }]);
    // and one that is
    const port = Buffer.alloc(2);
    port.writeUInt16BE(targetPort);
    const ok = await talk(
      Buffer.concat([
        Buffer.from([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1]),
        port,
        Buffer.from("GET / HTTP/1.0\r\n\r\n"),
      ]),
    );
    expect(ok.toString("latin1")).toContain("TARGET");
  });

  it("never lets a listed name resolve onto the machine, nor reach the host's port", async () => {
    allow = [`rebind.test:${targetPort}`, `127.0.0.1:${targetPort}`];
    start([targetPort]);
    names["rebind.test"] = ["127.0.0.1"];
    const r1 = await talk(`CONNECT rebind.test:${targetPort} HTTP/1.1\r\n\r\n`);
    expect(r1.toString()).toMatch(/^HTTP\/1\.1 403[\s\S]*a local address/);
    // the literal entry names the loopback, but the port is the host's own
    const r2 = await talk(`CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\n\r\n`);
    expect(r2.toString()).toMatch(/^HTTP\/1\.1 403[\s\S]*control port/);
    expect(refused.map((r) => r.reason)).toEqual([
      expect.stringContaining("local address"),
      expect.stringContaining("control port"),
    ]);
  });

  it("records at most 20 refusals a minute, then counts the rest into the next record", async () => {
    allow = [];
    start();
    for (let i = 0; i < 25; i++) await talk(`CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n`);
    expect(refused).toHaveLength(20);
    now += 60_000;
    await talk(`CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n`);
    expect(refused).toHaveLength(21);
    expect(refused[20]!.suppressed).toBe(5);
  });

  it("refuses everything once the agent is no longer under allowlist", async () => {
    allow = [`127.0.0.1:${targetPort}`];
    start();
    const p = proxy;
    const off = new NetworkProxy({
      allowlist: () => null,
      protectedPorts: () => [],
      onRefused: (_id, r) => refused.push(r),
    });
    await p.close();
    proxy = off;
    off.listen("a1", sock);
    const r = await talk(`CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\n\r\n`);
    expect(r.toString()).toMatch(/^HTTP\/1\.1 403/);
  });
});
