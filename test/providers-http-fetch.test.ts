// The fetch given to the provider SDKs (node:http with keep-alive): what the SDKs rely on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { providerFetch } from "../src/providers/http-fetch.ts";

let server: Server;
let base: string;
const seen: { method: string; headers: Record<string, unknown>; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method!, headers: req.headers, body });
      if (req.url === "/slow") return; // never answers
      if (req.url === "/empty") {
        res.writeHead(204).end();
        return;
      }
      if (req.url === "/stream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: one\n\n");
        setTimeout(() => res.end("data: two\n\n"), 20);
        return;
      }
      res.setHeader("set-cookie", ["a=1", "b=2"]);
      res.writeHead(429, { "content-type": "application/json", "retry-after": "3" });
      res.end(JSON.stringify({ echo: body }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

describe("providerFetch", () => {
  it("sends method, headers and body, and returns status, every header and the body", async () => {
    const res = await providerFetch(`${base}/x`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-test": "1" },
      body: '{"a":"é"}',
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("3");
    expect(res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(await res.json()).toEqual({ echo: '{"a":"é"}' });
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ method: "POST", body: '{"a":"é"}' });
    expect(last.headers["x-test"]).toBe("1");
    expect(last.headers["content-length"]).toBe(String(Buffer.byteLength('{"a":"é"}')));
  });

  it("streams a body as it arrives, and gives no body for 204", async () => {
    const res = await providerFetch(`${base}/stream`, { method: "GET" });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe("data: one\n\n");
    let rest = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toBe("data: two\n\n");
    const empty = await providerFetch(`${base}/empty`, { method: "DELETE" });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it("rejects with an abort error when the signal fires, before or during the request", async () => {
    const before = new AbortController();
    before.abort();
    await expect(providerFetch(`${base}/x`, { signal: before.signal })).rejects.toThrow(/abort/i);
    const during = new AbortController();
    const pending = providerFetch(`${base}/slow`, {
      method: "POST",
      body: "x",
      signal: during.signal,
    });
    setTimeout(() => during.abort(), 50);
    await expect(pending).rejects.toThrow(/abort/i);
  });

  it("rejects with the connection error when nothing listens", async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    await expect(providerFetch(`http://127.0.0.1:${port}/`, { method: "GET" })).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });
});
