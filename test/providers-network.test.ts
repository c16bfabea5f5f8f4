// Transports on a network that is not perfect: slow streams succeed, stalled ones fail fast
// on the idle timeout, `stream: false` records the same response, a CONNECT proxy from the
// environment carries the traffic, and a long retry-after is honoured up to the cap, beyond
// which the round reports when to come back. Backoff runs on a fake clock; only the stream
// timings are real, and short.
import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { callProvider, createDefaultTransports } from "../src/providers/fallback.ts";
import { bypassesProxy, proxyFor } from "../src/providers/http-fetch.ts";
import type { ProviderResponse } from "../src/providers/model.ts";
import { DEFAULT_RETRY_POLICY } from "../src/providers/retry.ts";
import type { ProviderTransport } from "../src/providers/types.ts";
import { baseRequest, candidateFor, fakeClock } from "./fake-provider/fixtures.ts";
import { fault, reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";
import { cleanupHomes, runCli, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.setFallback(null);
});

const STREAMING: ProviderTransport[] = [
  "openai_responses",
  "anthropic_messages",
  "openai_chat_completions",
];

describe("streams under an idle timeout", () => {
  for (const transport of STREAMING) {
    it(`a slow stream longer than the idle timeout succeeds (${transport})`, async () => {
      // Every stream has five or more events: 100 ms apart they outlast the 400 ms idle limit
      // while each gap leaves 300 ms of slack for a loaded machine's stalls.
      fake.enqueue({ ...reply.text("slow but steady answer"), event_delay_ms: 100 });
      const t0 = performance.now();
      const result = await callProvider({
        candidates: [candidateFor(fake, transport)],
        request: baseRequest(),
        transports: createDefaultTransports(),
        clock: fakeClock(),
        policy: { ...DEFAULT_RETRY_POLICY, idle_timeout_ms: 400, max_retries: 0 },
      });
      expect(result.ok, JSON.stringify(!result.ok && result.failure)).toBe(true);
      if (!result.ok) return;
      expect(performance.now() - t0).toBeGreaterThan(400); // longer than the idle limit
      expect(result.response.blocks).toEqual([
        { type: "assistant_text", text: "slow but steady answer" },
      ]);
      expect(fake.requests[0]?.stream).toBe(true);
    });

    it(`a stalled stream times out on the idle limit and is retried (${transport})`, async () => {
      fake.enqueue({ ...reply.text("never finished"), stall_after_events: 2 }, reply.text("ok"));
      const result = await callProvider({
        candidates: [candidateFor(fake, transport)],
        request: baseRequest(),
        transports: createDefaultTransports(),
        clock: fakeClock(),
        policy: { ...DEFAULT_RETRY_POLICY, idle_timeout_ms: 200 },
      });
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      const first = result.timeline.attempts[0];
      expect(first).toMatchObject({ failure_kind: "timeout", outcome: "retrying" });
      expect(first?.summary).toMatch(/idle timeout/);
      expect(result.response.blocks).toEqual([{ type: "assistant_text", text: "ok" }]);
    });
  }

  it("stream: false sends one JSON request under the total timeout", async () => {
    fake.enqueue(fault.hang());
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_responses", { stream: false })],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
      policy: { ...DEFAULT_RETRY_POLICY, request_timeout_ms: 150, max_retries: 0 },
    });
    expect(result.ok).toBe(false);
    expect(fake.requests[0]?.stream).toBe(false);
    if (result.ok) return;
    expect(result.failure.kind).toBe("timeout");
    expect(result.failure.summary).toMatch(/timed out after 150 ms/);
  });
});

describe("stream: false records the same response", () => {
  const answer = () =>
    reply.tools([{ name: "exec_command", arguments: { cmd: "ls" }, call_id: "call_9" }], {
      text: "Looking.",
      reasoning: { summary: "plan", encrypted_content: "enc", signature: "sig_9" },
      usage: { input_tokens: 40, output_tokens: 9, cached_tokens: 20 },
    });
  const comparable = (r: ProviderResponse) => {
    const { response_id: _id, ...rest } = r;
    // Reasoning items carry the provider's own item id; the content must match.
    return JSON.parse(JSON.stringify(rest).replace(/"(rs|msg)_\d+"/g, '"$1_n"'));
  };
  for (const transport of STREAMING) {
    it(transport, async () => {
      const responses: ProviderResponse[] = [];
      for (const stream of [true, false]) {
        fake.enqueue(answer());
        const result = await callProvider({
          candidates: [candidateFor(fake, transport, stream ? {} : { stream: false })],
          request: baseRequest(),
          transports: createDefaultTransports(),
          clock: fakeClock(),
        });
        expect(result.ok).toBe(true);
        if (result.ok) responses.push(result.response);
      }
      expect(fake.requests.map((r) => r.stream)).toEqual([true, false]);
      expect(comparable(responses[0]!)).toEqual(comparable(responses[1]!));
      expect(responses[0]!.blocks.some((b) => b.type === "tool_call")).toBe(true);
    });
  }
});

// ---------------------------------------------------------------- proxy

type Proxy = { url: string; seen: { target: string; auth: string | undefined }[]; close(): void };

/** A tiny CONNECT proxy on 127.0.0.1 that records what it tunnels. */
async function startConnectProxy(): Promise<Proxy> {
  const seen: Proxy["seen"] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      client.off("data", onData);
      const [requestLine, ...lines] = head.slice(0, end).split("\r\n");
      const [method, target] = (requestLine ?? "").split(" ");
      const auth = lines
        .find((l) => l.toLowerCase().startsWith("proxy-authorization:"))
        ?.slice("proxy-authorization:".length)
        .trim();
      seen.push({ target: target ?? "", auth });
      if (method !== "CONNECT" || !target) {
        client.end("HTTP/1.1 405 Method Not Allowed\r\n\r\n");
        return;
      }
      const [host, port] = [target.slice(0, target.lastIndexOf(":")), target.split(":").pop()];
      if (host !== "127.0.0.1") {
        client.end("HTTP/1.1 403 Forbidden\r\n\r\n"); // never leaves the machine
        return;
      }
      const upstream = connect(Number(port), host, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        const rest = Buffer.from(head.slice(end + 4), "latin1");
        if (rest.length > 0) upstream.write(rest);
        client.pipe(upstream).pipe(client);
      });
      sockets.add(upstream);
      upstream.on("close", () => sockets.delete(upstream));
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    };
    client.on("data", onData);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe("stream: false from the user's configuration", () => {
  it("`holon config set providers.<id>.stream false` makes the host send non-streaming requests", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "anthropic_messages", fake.baseUrl("anthropic"));
    const set = await runCli(["config", "set", "providers.fake.stream", "false"], {
      env: { HOLON_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    const rt = await startRuntime({ home });
    try {
      fake.enqueue(reply.text("one JSON answer"));
      const res = await rt.req("POST", "/control/agents/main/prompt", { text: "hi" });
      expect(res.status).toBe(202);
      const brief = await waitFor(async () =>
        (await rt.host.store.briefs.recent("main", 5)).find((b) => b.text === "one JSON answer"),
      );
      expect(brief).toBeDefined();
      expect(fake.requests.map((r) => r.stream)).toEqual([false]);
    } finally {
      await rt.close();
      cleanupHomes();
    }
  });
});

describe("proxies from the environment", () => {
  let proxy: Proxy;
  const saved: Record<string, string | undefined> = {};
  const names = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"];
  beforeEach(async () => {
    for (const n of names) {
      saved[n] = process.env[n];
      delete process.env[n];
    }
    proxy = await startConnectProxy();
  });
  afterEach(() => {
    proxy.close();
    for (const n of names) {
      if (saved[n] === undefined) delete process.env[n];
      else process.env[n] = saved[n];
    }
  });

  for (const transport of STREAMING) {
    it(`HTTP_PROXY carries the request through a CONNECT tunnel (${transport})`, async () => {
      process.env.HTTP_PROXY = proxy.url.replace("http://", "http://holon:s3cret@");
      fake.enqueue(reply.text("through the proxy"));
      const result = await callProvider({
        candidates: [candidateFor(fake, transport)],
        request: baseRequest(),
        transports: createDefaultTransports(),
        clock: fakeClock(),
      });
      expect(result.ok).toBe(true);
      expect(proxy.seen.map((s) => s.target)).toEqual([`127.0.0.1:${fake.port}`]);
      expect(proxy.seen[0]?.auth).toBe(`Basic ${Buffer.from("holon:s3cret").toString("base64")}`);
      expect(fake.requests).toHaveLength(1);
    });
  }

  it("NO_PROXY sends matching hosts direct", async () => {
    process.env.HTTP_PROXY = proxy.url;
    process.env.NO_PROXY = "example.com, 127.0.0.1";
    fake.enqueue(reply.text("direct"));
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_responses")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
    });
    expect(result.ok).toBe(true);
    expect(proxy.seen).toEqual([]);
  });

  it("picks the variable by scheme and reads NO_PROXY forms", () => {
    const env = { HTTPS_PROXY: "http://p:3128", HTTP_PROXY: "http://q:8080" };
    expect(proxyFor(new URL("https://api.openai.com/v1"), env)?.host).toBe("p:3128");
    expect(proxyFor(new URL("http://127.0.0.1:1/v1"), env)?.host).toBe("q:8080");
    expect(
      proxyFor(new URL("https://x.test"), { https_proxy: "h:1", HTTPS_PROXY: "H:2" })?.host,
    ).toBe("h:1");
    expect(proxyFor(new URL("https://x.test"), {})).toBeNull();
    const u = new URL("https://api.anthropic.com/v1/messages");
    expect(bypassesProxy(u, "anthropic.com")).toBe(true);
    expect(bypassesProxy(u, ".anthropic.com")).toBe(true);
    expect(bypassesProxy(u, "*.anthropic.com")).toBe(true);
    expect(bypassesProxy(u, "api.anthropic.com:443")).toBe(true);
    expect(bypassesProxy(u, "api.anthropic.com:8443")).toBe(false);
    expect(bypassesProxy(u, "thropic.com")).toBe(false);
    expect(bypassesProxy(u, "*")).toBe(true);
    expect(bypassesProxy(new URL("http://[::1]:8080/"), "::1")).toBe(true);
  });
});

// ---------------------------------------------------------------- retry-after

describe("retry-after on a fake clock", () => {
  it("a 429 with retry-after: 30 is waited out in place under the default cap", async () => {
    const clock = fakeClock();
    fake.enqueue(fault.status(429, { headers: { "retry-after": "30" } }), reply.text("ok"));
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_responses")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock,
    });
    expect(result.ok).toBe(true);
    expect(clock.sleeps).toEqual([30_000]);
  });

  it("beyond the cap the candidate is left; a fallback still comes first", async () => {
    const clock = fakeClock();
    fake.enqueue(fault.status(429, { headers: { "retry-after": "30" } }), reply.text("fallback"));
    const result = await callProvider({
      candidates: [
        candidateFor(fake, "openai_responses"),
        candidateFor(fake, "anthropic_messages"),
      ],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock,
      policy: { ...DEFAULT_RETRY_POLICY, retry_after_cap_ms: 10_000 },
    });
    expect(result.ok).toBe(true);
    expect(clock.sleeps).toEqual([]);
    if (!result.ok) return;
    expect(result.timeline.attempts[0]).toMatchObject({
      disposition: "retry_after_exceeds_cap",
      outcome: "rate_limited",
      backoff_ms: 30_000,
      advanced_to_fallback: true,
    });
  });

  it("when every candidate is limited beyond the cap, the round says when to come back", async () => {
    const clock = fakeClock();
    fake.enqueue(
      fault.status(429, { headers: { "retry-after": "30" } }),
      fault.status(429, { headers: { "retry-after-ms": "45000" } }),
    );
    const result = await callProvider({
      candidates: [
        candidateFor(fake, "openai_responses"),
        candidateFor(fake, "anthropic_messages"),
      ],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock,
      policy: { ...DEFAULT_RETRY_POLICY, retry_after_cap_ms: 10_000 },
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe("rate_limited");
    expect(result.retry_at).toBe(new Date(clock.now().getTime() + 30_000).toISOString());
    expect(result.failure.metadata?.retry_at).toBe(result.retry_at);
    expect(clock.sleeps).toEqual([]);
  });
});
