// Ingress through HTTP: provenance is derived by the runtime, and bad input gets a 4xx
// with a stable kind while storing nothing.
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { cleanupHomes, startRuntime, type TestRuntime } from "./helpers/home.ts";
import type { TurnExecutor } from "../src/agent/runtime.ts";

// Hold every message in the queue so tests can inspect it.
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

function counts() {
  const db = rt.host.store.db;
  return {
    messages: (db.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number }).n,
    // Refusals before routing leave an audit event and nothing else.
    events: (
      db
        .prepare(
          "SELECT COUNT(*) AS n FROM events WHERE type_id NOT IN (SELECT id FROM event_types WHERE name = 'http_request_refused')",
        )
        .get() as {
        n: number;
      }
    ).n,
  };
}

const deep = (n: number) => "[".repeat(n) + "]".repeat(n);

describe("public enqueue", () => {
  it("admits a channel message with runtime-derived provenance", async () => {
    const res = await rt.req(
      "POST",
      "/agents/main/enqueue",
      {
        text: "hello from slack",
        origin: { kind: "channel", channel_id: "slack-general", sender_id: "U1" },
        correlation_id: "c-1",
      },
      { authorization: "" }, // public ingress: no token
    );
    expect(res.status).toBe(202);
    expect(res.json.ok).toBe(true);
    const m = (await rt.host.store.messages.get(res.json.message_id))!;
    expect(m).toMatchObject({
      kind: "channel_event",
      trust: "untrusted_external",
      authority_class: "external_evidence",
      priority: "normal",
      trigger_kind: "external_event",
      delivery_surface: "http_public_enqueue",
      admission_context: "public_unauthenticated",
      source_refs: { channel_id: "slack-general" },
      correlation_id: "c-1",
      status: "queued",
      body: { type: "text", text: "hello from slack" },
    });
    const admitted = (await rt.host.store.events.query("main", { limit: 10, order: "desc" })).find(
      (e) => e.type === "message_admitted",
    )!;
    expect(admitted.provenance).toMatchObject({ message_id: m.id, trust: "untrusted_external" });
  });

  it("POST /enqueue targets the default agent", async () => {
    // sent with the control token: an authenticated integration
    const res = await rt.req("POST", "/enqueue", { kind: "webhook_event", json: { a: 1 } });
    expect(res.status).toBe(202);
    expect(res.json.agent_id).toBe("main");
    const m = (await rt.host.store.messages.get(res.json.message_id))!;
    expect(m.trust).toBe("trusted_integration");
    expect(m.body).toEqual({ type: "json", value: { a: 1 } });
  });

  const bad: [string, string, unknown, number, string][] = [
    ["malformed JSON", "/agents/main/enqueue", "{not json", 400, "invalid_json"],
    ["empty body", "/agents/main/enqueue", "", 400, "invalid_json"],
    ["unknown field", "/agents/main/enqueue", { text: "x", colour: "red" }, 400, "unknown_field"],
    [
      "unknown kind",
      "/agents/main/enqueue",
      { text: "x", kind: "telepathy" },
      400,
      "invalid_request",
    ],
    [
      "unknown priority",
      "/agents/main/enqueue",
      { text: "x", priority: "urgent" },
      400,
      "invalid_request",
    ],
    [
      "trust override",
      "/agents/main/enqueue",
      { text: "x", trust: "trusted_operator" },
      403,
      "forbidden_trust_override",
    ],
    [
      "authority override",
      "/agents/main/enqueue",
      { text: "x", authority_class: "operator_instruction" },
      403,
      "forbidden_trust_override",
    ],
    [
      "interject",
      "/agents/main/enqueue",
      { text: "x", priority: "interject" },
      403,
      "forbidden_priority",
    ],
    [
      "operator_prompt",
      "/agents/main/enqueue",
      { text: "x", kind: "operator_prompt" },
      403,
      "forbidden_kind",
    ],
    [
      "task_result",
      "/agents/main/enqueue",
      { text: "x", kind: "task_result" },
      403,
      "forbidden_kind",
    ],
    [
      "system_tick",
      "/agents/main/enqueue",
      { text: "x", kind: "system_tick" },
      403,
      "forbidden_kind",
    ],
    ["control", "/agents/main/enqueue", { text: "x", kind: "control" }, 403, "forbidden_kind"],
    [
      "internal_followup",
      "/agents/main/enqueue",
      { text: "x", kind: "internal_followup" },
      403,
      "forbidden_kind",
    ],
    [
      "task_status",
      "/agents/main/enqueue",
      { text: "x", kind: "task_status" },
      403,
      "forbidden_kind",
    ],
    [
      "work item binding",
      "/agents/main/enqueue",
      { text: "x", work_item_id: "wi_1" },
      403,
      "forbidden_binding",
    ],
    [
      "task binding",
      "/agents/main/enqueue",
      { text: "x", task_id: "t_1" },
      403,
      "forbidden_binding",
    ],
    [
      "operator origin",
      "/agents/main/enqueue",
      { text: "x", origin: { kind: "operator" } },
      400,
      "invalid_request",
    ],
    ["no body", "/agents/main/enqueue", { kind: "channel_event" }, 400, "invalid_request"],
    ["two bodies", "/agents/main/enqueue", { text: "x", json: {} }, 400, "invalid_request"],
    ["unknown agent", "/agents/ghost/enqueue", { text: "x" }, 404, "unknown_agent"],
    ["webhook unknown agent", "/webhooks/generic/ghost", { a: 1 }, 404, "unknown_agent"],
    ["webhook malformed", "/webhooks/generic/main", "[1,", 400, "invalid_json"],
    [
      "control prompt unknown field",
      "/control/agents/main/prompt",
      { text: "x", extra: 1 },
      400,
      "unknown_field",
    ],
    ["control prompt empty", "/control/agents/main/prompt", { text: "" }, 400, "invalid_request"],
    [
      "control prompt unknown agent",
      "/control/agents/ghost/prompt",
      { text: "x" },
      404,
      "unknown_agent",
    ],
    [
      "control unknown action",
      "/control/agents/main/control",
      { action: "explode" },
      400,
      "invalid_request",
    ],
    // Hostile shapes: every one a 4xx, never a 500.
    ["deeply nested JSON", "/agents/main/enqueue", `{"json":${deep(5000)}}`, 400, "json_too_deep"],
    ["deeply nested webhook", "/webhooks/generic/main", deep(100_000), 400, "json_too_deep"],
    ["a NUL byte in prompt text", "/control/agents/main/prompt", { text: "a\0b" }, 400, "nul_byte"],
    ["a NUL byte in public text", "/agents/main/enqueue", { text: "\0" }, 400, "nul_byte"],
    ["a NUL byte in a task cmd", "/control/agents/main/tasks", { cmd: "echo \0" }, 400, "nul_byte"],
    ["a NUL byte in a key", "/webhooks/generic/main", { "a\0": 1 }, 400, "nul_byte"],
    ["a NUL byte in an agent id", "/agents/ma%00in/enqueue", { text: "x" }, 400, "nul_byte"],
    ["a NUL byte in a new agent id", "/control/agents/x%00y/create", {}, 400, "nul_byte"],
    ["an id differing only by case", "/control/agents/Main/create", {}, 400, "invalid_agent_id"],
    ["an upper-case id", "/control/agents/Main/prompt", { text: "x" }, 404, "unknown_agent"],
  ];
  for (const [name, path, body, status, kind] of bad) {
    it(`rejects ${name} with ${status} ${kind} and stores nothing`, async () => {
      const before = counts();
      const res = await rt.req("POST", path, body);
      expect(res.status).toBe(status);
      expect(res.json.ok).toBe(false);
      expect(res.json.error.kind).toBe(kind);
      expect(typeof res.json.error.message).toBe("string");
      expect(counts()).toEqual(before);
    });
  }

  it("rejects oversized public and webhook bodies (256 KiB cap) and stores nothing", async () => {
    const before = counts();
    const big = "x".repeat(256 * 1024 + 10);
    for (const path of [
      "/agents/main/enqueue",
      "/webhooks/generic/main",
      "/control/agents/main/prompt",
    ]) {
      const res = await rt.req("POST", path, { text: big });
      expect(res.status).toBe(413);
      expect(res.json.error.kind).toBe("payload_too_large");
    }
    // Chunked upload without content-length is cut off too.
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 40; i++) c.enqueue(new TextEncoder().encode("y".repeat(8192)));
        c.close();
      },
    });
    const res = await fetch(rt.url + "/agents/main/enqueue", {
      method: "POST",
      body: stream,
      headers: { "content-type": "application/json" },
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(counts()).toEqual(before);
  });

  it("unknown routes answer 404 not_found as JSON", async () => {
    const res = await rt.req("GET", "/nope");
    expect(res.status).toBe(404);
    expect(res.json.error.kind).toBe("not_found");
  });
});

describe("webhook and operator ingress", () => {
  it("webhook keeps its source, event type and delivery id", async () => {
    const res = await fetch(rt.url + "/webhooks/generic/main", {
      method: "POST",
      body: JSON.stringify({ action: "completed" }),
      headers: {
        "content-type": "application/json",
        "x-github-event": "check_run",
        "x-github-delivery": "d-42",
      },
    });
    const json: any = await res.json();
    expect(res.status).toBe(202);
    const m = (await rt.host.store.messages.get(json.message_id))!;
    // Nothing proved who sent it: evidence, not an integration signal.
    expect(m).toMatchObject({
      kind: "webhook_event",
      origin: { kind: "webhook", source: "github", event_type: "check_run" },
      trust: "untrusted_external",
      authority_class: "external_evidence",
      delivery_surface: "http_webhook",
      admission_context: "public_unauthenticated",
      source_refs: { delivery_id: "d-42" },
    });
  });

  it("a webhook is an integration signal only when its sender authenticated", async () => {
    const anon = await rt.req(
      "POST",
      "/agents/main/enqueue",
      { kind: "webhook_event", json: {} },
      {
        authorization: "",
      },
    );
    expect(await rt.host.store.messages.get(anon.json.message_id)).toMatchObject({
      authority_class: "external_evidence",
      admission_context: "public_unauthenticated",
    });
    const signed = await rt.req("POST", "/webhooks/generic/main", { a: 1 }); // with the token
    expect(await rt.host.store.messages.get(signed.json.message_id)).toMatchObject({
      trust: "trusted_integration",
      authority_class: "integration_signal",
      admission_context: "control_authenticated",
    });
  });

  it("control prompt becomes a trusted operator prompt; interject is allowed there", async () => {
    const res = await rt.req("POST", "/control/agents/main/prompt", {
      text: "do it",
      priority: "interject",
    });
    expect(res.status).toBe(202);
    const m = (await rt.host.store.messages.get(res.json.message_id))!;
    expect(m).toMatchObject({
      kind: "operator_prompt",
      origin: { kind: "operator" },
      trust: "trusted_operator",
      authority_class: "operator_instruction",
      priority: "interject",
      trigger_kind: "operator_input",
      delivery_surface: "http_control_prompt",
      // over TCP the control token is required, so the prompt is token-authenticated
      admission_context: "control_authenticated",
    });
  });
});

describe("a HOLON_HOME that cannot hold a database", () => {
  it("fails to open with home_unusable and says why, for a file and for a database path taken", async () => {
    const { RuntimeHost } = await import("../src/host/host.ts");
    const { tempHome } = await import("./helpers/home.ts");
    const { mkdirSync, writeFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const parent = tempHome("holon-test-", { sqlite: true }); // the SQLite file's path
    const file = join(parent, "file");
    writeFileSync(file, "");
    const dbTaken = join(parent, "home");
    mkdirSync(join(dbTaken, "holon.db"), { recursive: true });
    for (const [home, why] of [
      [file, /is not a directory/],
      [dbTaken, /holon\.db is not a regular file/],
    ] as const) {
      let error: any;
      try {
        await RuntimeHost.open({ home });
      } catch (err) {
        error = err;
      }
      expect(error?.kind).toBe("home_unusable");
      expect(error.message).toMatch(why);
      expect(error.hint).toMatch(/HOLON_HOME/);
    }
  });
});
