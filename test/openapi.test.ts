// `/openapi.json` against the real runtime: every route the app registers is in the
// document (and nothing else), and real answers of real routes validate against the schema
// the document gives for that route and status. And the event and transcript catalogs hold
// every record a real turn writes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ajv2020 } from "ajv/dist/2020.js";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { cleanupHomes, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import { reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";
import { createApp } from "../src/http/app.ts";
import { openApiPath } from "../src/http/openapi.ts";
import { eventTypes, parseEvent, type EventEnvelope } from "../src/domain/events.ts";
import { parseTranscriptEntry } from "../src/domain/transcript.ts";

let fake: FakeProvider;
let rt: TestRuntime;
let doc: any;
let ajv: Ajv2020;

beforeAll(async () => {
  fake = await startFakeProvider();
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  rt = await startRuntime({ home });
  const res = await rt.req("GET", "/openapi.json");
  expect(res.status).toBe(200);
  doc = res.json;
  // OpenAPI 3.1 schemas are JSON Schema 2020-12; refs point into the document itself.
  ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema(doc, "openapi.json");
});
afterAll(async () => {
  await rt?.close();
  await fake.close();
  cleanupHomes();
});

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

/** The schema the document gives for this route, status and content type. */
function responseSchema(method: string, path: string, status: number, type = "application/json") {
  const op = doc.paths[path]?.[method];
  expect(op, `${method} ${path} is documented`).toBeDefined();
  const key = op.responses[String(status)] ? String(status) : "default";
  expect(op.responses[key]?.content?.[type], `${method} ${path} ${status} ${type}`).toBeDefined();
  return `openapi.json#/${pointer("paths", path, method, "responses", key, "content", type, "schema")}`;
}

function expectValid(ref: string, body: unknown, what: string) {
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  const ok = validate(body);
  expect(
    ok,
    `${what}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 2000)}`,
  ).toBe(true);
}

/** Call a real route and check its answer against the document. */
async function check(
  method: "GET" | "POST",
  docPath: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) {
  const res = await rt.req(method, path, body, headers);
  expectValid(
    responseSchema(method.toLowerCase(), docPath, res.status),
    res.json,
    `${method} ${path} → ${res.status}`,
  );
  return res;
}

function settled(id: string) {
  return waitFor(
    async () => {
      const s = (await rt.host.store.messages.get(id))?.status;
      return s && s !== "queued" && s !== "processing" ? s : undefined;
    },
    { what: `message ${id} to settle` },
  );
}

describe("GET /openapi.json", () => {
  it("documents exactly the routes the app registers", () => {
    const { app, hub } = createApp(rt.host);
    hub.close();
    const registered = new Set(
      app.routes
        .filter((r) => r.method !== "ALL")
        .map((r) => `${r.method.toLowerCase()} ${openApiPath(r.path)}`),
    );
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries<any>(doc.paths))
      for (const method of Object.keys(ops)) documented.add(`${method} ${path}`);
    expect([...documented].sort()).toEqual([...registered].sort());
    expect(doc.openapi).toBe("3.1.0");
  });

  it("follows the read rule: over TCP it needs the token, like every other read route", async () => {
    const res = await rt.req("GET", "/openapi.json", undefined, { authorization: "" });
    expect(res.status).toBe(401);
    expect((await rt.req("GET", "/openapi.json")).status).toBe(200);
  });

  it("every real answer validates against the schema the document gives for it", async () => {
    const workspace = join(rt.home, "ws");
    mkdirSync(workspace);

    // A turn first, so the logs hold briefs, transcript entries and turn events.
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "echo hi" }, call_id: "c1" }]),
      reply.text("done"),
    );
    const prompted = await check(
      "POST",
      "/control/agents/{id}/prompt",
      "/control/agents/main/prompt",
      {
        text: "say hi",
      },
    );
    expect(prompted.status).toBe(202);
    await settled(prompted.json.message_id);

    await check("GET", "/", "/");
    await check("GET", "/handshake", "/handshake");
    await check("GET", "/models", "/models");
    await check("GET", "/agents/list", "/agents/list");
    for (const p of ["status", "state", "briefs", "transcript", "tasks"]) {
      const r = await check("GET", `/agents/{id}/${p}`, `/agents/main/${p}`);
      expect(r.status).toBe(200);
      await check("GET", `/${p}`, `/${p}`);
    }
    const next = await check(
      "GET",
      "/agents/{id}/briefs/next",
      `/agents/main/briefs/next?message_id=${prompted.json.message_id}`,
    );
    expect(next.json.brief.related_message_id).toBe(prompted.json.message_id);
    const events = await check(
      "GET",
      "/agents/{id}/events",
      "/agents/main/events?limit=1000&order=asc",
    );
    expect(events.json.events.length).toBeGreaterThan(10);
    const transcript = await check("GET", "/agents/{id}/transcript", "/agents/main/transcript");
    expect(transcript.json.entries.map((e: any) => e.kind)).toEqual(
      expect.arrayContaining([
        "incoming_message",
        "assistant_round",
        "tool_execution",
        "turn_terminal",
      ]),
    );

    const enq = await check("POST", "/agents/{id}/enqueue", "/agents/main/enqueue", {
      text: "hello",
    });
    expect(enq.status).toBe(202);
    const hook = await check("POST", "/webhooks/generic/{agent_id}", "/webhooks/generic/main", {
      a: 1,
    });
    expect(hook.status).toBe(202);
    fake.enqueue(reply.text("ok"), reply.text("ok"));

    const created = await check(
      "POST",
      "/control/agents/{id}/create",
      "/control/agents/worker/create",
      {
        workspace_root: workspace,
      },
    );
    expect(created.status).toBe(201);
    await check("POST", "/control/agents/{id}/control", "/control/agents/worker/control", {
      action: "pause",
    });
    await check("POST", "/control/agents/{id}/control", "/control/agents/worker/control", {
      action: "resume",
    });
    await check("POST", "/control/agents/{id}/wake", "/control/agents/worker/wake", {});
    await check("POST", "/control/agents/{id}/model", "/control/agents/worker/model", {
      model: "fake/other-model",
    });
    await check(
      "POST",
      "/control/agents/{id}/model/clear",
      "/control/agents/worker/model/clear",
      {},
    );
    await check("GET", "/control/runtime/status", "/control/runtime/status");

    const task = await check("POST", "/control/agents/{id}/tasks", "/control/agents/worker/tasks", {
      cmd: "echo task-out",
    });
    expect(task.status).toBe(201);
    const taskId = task.json.task.task_id as string;
    await check(
      "GET",
      "/agents/{id}/tasks/{task_id}/output",
      `/agents/worker/tasks/${taskId}/output?wait_ms=10000`,
    );
    await check("GET", "/agents/{id}/tasks/{task_id}", `/agents/worker/tasks/${taskId}`);
    await check(
      "POST",
      "/control/agents/{id}/tasks/{task_id}/input",
      `/control/agents/worker/tasks/${taskId}/input`,
      {
        input: "x",
      },
    );
    await check(
      "POST",
      "/control/agents/{id}/tasks/{task_id}/stop",
      `/control/agents/worker/tasks/${taskId}/stop`,
    );
    await check("GET", "/agents/{id}/tasks", "/agents/worker/tasks");
    await check("GET", "/agents/{id}/state", "/agents/worker/state");

    // Errors share one body: unknown agent, bad body, missing token, stopped agent, no route.
    expect((await check("GET", "/agents/{id}/status", "/agents/nobody/status")).status).toBe(404);
    expect(
      (
        await check("POST", "/control/agents/{id}/prompt", "/control/agents/main/prompt", {
          nope: 1,
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await check("GET", "/control/runtime/status", "/control/runtime/status", undefined, {
          authorization: "",
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await check(
          "POST",
          "/control/agents/{id}/current-run/abort",
          "/control/agents/worker/current-run/abort",
          {},
        )
      ).status,
    ).toBe(409);
    await check("POST", "/control/agents/{id}/control", "/control/agents/worker/control", {
      action: "stop",
    });
    const stopped = await check(
      "POST",
      "/control/agents/{id}/control",
      "/control/agents/worker/control",
      {
        action: "wake",
      },
    );
    expect(stopped.status).toBe(409);
    expect(stopped.json.error.kind).toBe("agent_stopped");
  }, 90_000); // one long journey through every route: it outlasts the default under a loaded machine

  it("the /control/run stream: every NDJSON line validates against the documented line schema", async () => {
    fake.enqueue(reply.text("ran once"));
    const res = await fetch(`${rt.url}/control/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${rt.token}`, "content-type": "application/json" },
      body: JSON.stringify({ text: "once" }),
    });
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const ref = responseSchema("post", "/control/run", 200, "application/x-ndjson");
    for (const line of lines) expectValid(ref, line, "run line");
    expect(lines.at(-1)).toMatchObject({ type: "result", result: { outcome: "completed" } });
  });
});

describe("the typed catalog", () => {
  it("every event and transcript entry a real turn wrote parses against the catalog, losing nothing", async () => {
    const stored: EventEnvelope[] = await rt.host.store.events.query("main", {
      limit: 100_000,
      order: "asc",
    });
    expect(stored.length).toBeGreaterThan(10);
    const seen = new Set<string>();
    for (const e of stored) {
      const parsed = parseEvent(e);
      expect(parsed, `${e.type}: ${JSON.stringify(e.payload)}`).toBeDefined();
      // Nothing the writer put there is unknown to the schema (parsing would have dropped it).
      expect(parsed).toEqual(e);
      seen.add(e.type);
    }
    for (const t of [
      "message_admitted",
      "turn_context_built",
      "provider_round_completed",
      "tool_executed",
      "turn_terminal",
      "closure_decided",
      "continuation_resolved",
      "brief_created",
    ])
      expect(seen).toContain(t);
    expect(eventTypes()).toEqual(expect.arrayContaining([...seen]));

    const entries = await rt.host.store.transcript.recent("main", 1000);
    expect(entries.length).toBeGreaterThan(4);
    for (const t of entries) {
      const parsed = parseTranscriptEntry(t);
      expect(parsed, `${t.kind}: ${JSON.stringify(t.data)}`).toBeDefined();
      expect(parsed).toEqual(t);
    }
  });

  it("a stored event of a type this version does not know is read, not thrown on", () => {
    const old: EventEnvelope = {
      id: "evt_old",
      event_seq: 1,
      ts: "2020-01-01T00:00:00.000Z",
      agent_id: "main",
      type: "something_from_an_older_version",
      provenance: {},
      payload: { x: 1 },
    };
    expect(parseEvent(old)).toBeUndefined();
    expect(parseEvent({ ...old, type: "turn_terminal" })).toBeUndefined();
  });
});
