// Bearer mode: control routes need the token; local reads do not; remote reads would.
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, startRuntime } from "./helpers/home.ts";
import { createApp } from "../src/http/app.ts";

afterAll(cleanupHomes);

describe("bearer mode", () => {
  it("requires the control token on /control routes and reports the mode in /handshake", async () => {
    const rt = await startRuntime({ serve: { token: "s3cret-token" } });
    const hs = await rt.req("GET", "/handshake");
    expect(hs.json.auth).toEqual({ mode: "bearer", required: true });
    expect(hs.json.protocol).toEqual({ name: "holon-control", version: 1 });

    const none = await rt.req("POST", "/control/agents/main/prompt", { text: "x" });
    expect(none.status).toBe(401);
    expect(none.json.error.kind).toBe("unauthorized");
    const wrong = await rt.req(
      "POST",
      "/control/agents/main/prompt",
      { text: "x" },
      { authorization: "Bearer nope" },
    );
    expect(wrong.status).toBe(401);
    const status = await rt.req("GET", "/control/runtime/status");
    expect(status.status).toBe(401);
    const ok = await rt.req(
      "POST",
      "/control/agents/main/prompt",
      { text: "x" },
      { authorization: "Bearer s3cret-token" },
    );
    expect(ok.status).toBe(202);
    expect(rt.host.store.messages.get(ok.json.message_id)!.admission_context).toBe(
      "control_authenticated",
    );
    // local reads are fine without the token
    expect((await rt.req("GET", "/status")).status).toBe(200);
    // the token never shows up in any answer
    const rs = await rt.req("GET", "/control/runtime/status", undefined, {
      authorization: "Bearer s3cret-token",
    });
    expect(JSON.stringify(rs.json)).not.toContain("s3cret-token");
    expect(rs.json.control_token_configured).toBe(true);
    await rt.close();
  });

  it("remote callers need the token for reads and public enqueue", async () => {
    const rt = await startRuntime({ serve: { token: "tok" } });
    const { app } = createApp(rt.host, { token: "tok" });
    const remoteEnv = { incoming: { socket: { remoteAddress: "203.0.113.9" } } };
    const read = await app.request("/status", {}, remoteEnv);
    expect(read.status).toBe(401);
    const enqueue = await app.request(
      "/enqueue",
      { method: "POST", body: JSON.stringify({ text: "x" }) },
      remoteEnv,
    );
    expect(enqueue.status).toBe(401);
    const authed = await app.request(
      "/status",
      { headers: { authorization: "Bearer tok" } },
      remoteEnv,
    );
    expect(authed.status).toBe(200);
    await rt.close();
  });

  it("local mode refuses control routes from remote addresses", async () => {
    const rt = await startRuntime();
    const { app } = createApp(rt.host, {});
    const res = await app.request(
      "/control/agents/main/prompt",
      { method: "POST", body: JSON.stringify({ text: "x" }) },
      { incoming: { socket: { remoteAddress: "198.51.100.4" } } },
    );
    expect(res.status).toBe(401);
    await rt.close();
  });
});
