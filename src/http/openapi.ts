// `GET /openapi.json`: an OpenAPI 3.1 document of every HTTP route, generated from the zod
// schemas the routes validate with (request bodies) and the response schemas in schemas.ts,
// through zod 4's own `z.toJSONSchema` (OpenAPI 3.1 schemas are JSON Schema 2020-12).
//
// The routes stay plain Hono handlers; this table describes them. test/openapi.test.ts
// checks that the table and the routes the app registers are the same set, and validates
// real responses against the document, so neither can drift from the other.
import type { Hono } from "hono";
import { z } from "zod";
import { BriefRecord } from "../domain/brief.ts";
import { ClosureDecision, ContinuationResolution } from "../domain/closure.ts";
import { EventProjectionName, projectedCatalogEventSchema } from "../domain/events.ts";
import { MessageOrigin } from "../domain/message.ts";
import { FailureArtifact, ProviderAttemptTimeline, TokenUsage } from "../domain/provider.ts";
import { TaskRecord, TaskSnapshot } from "../domain/task.ts";
import { TranscriptEntry } from "../domain/transcript.ts";
import {
  AbortBody,
  ClearBody,
  ControlBody,
  CreateBody,
  ModelBody,
  PromptBody,
  SettingBody,
  RunBody,
  WakeBody,
} from "./routes-control.ts";
import { EnqueueBody, PublicOrigin } from "./routes-public.ts";
import { InputBody, StartBody } from "./routes-tasks.ts";
import { WAITING_ROUTE_DOCS } from "./routes-waiting.ts";
import { WORKSPACE_ROUTE_DOCS } from "./routes-workspaces.ts";
import { AGENT_ROUTE_DOCS } from "./routes-agents.ts";
import { USAGE_ROUTE_DOCS } from "./routes-usage.ts";
import { BUDGET_ROUTE_DOCS } from "./routes-budget.ts";
import { OPERATOR_ROUTE_DOCS } from "./routes-operator.ts";
import { MEMORY_ROUTE_DOCS } from "./routes-memory.ts";
import { METRICS_ROUTE_DOCS } from "./routes-metrics.ts";
import { ASK_ROUTE_DOCS } from "./routes-asks.ts";
import { BRIEF_ROUTE_DOCS } from "./routes-briefs.ts";
import { MCP_ROUTE_DOCS } from "./routes-mcp.ts";
import { MCP_SERVER_ROUTE_DOCS } from "./routes-mcp-servers.ts";
import { UI_ROUTE_DOCS } from "./routes-ui.ts";
import { BlockWorkBody, CompleteWorkBody, EnqueueWorkBody } from "./routes-work.ts";
import * as S from "./schemas.ts";
import type { Param, RouteDoc } from "./route-doc.ts";
import { requireRead, type AppEnv } from "./support.ts";

const Limit = (max: number, dflt: number): Param => ({
  name: "limit",
  schema: z.number().int().min(1).max(max),
  description: `how many, newest last (default ${dflt})`,
});

/** Public enqueue as documented: the fields accepted only to be refused are left out. */
const EnqueueDoc = EnqueueBody.omit({
  trust: true,
  authority_class: true,
  work_item_id: true,
  task_id: true,
}).extend({ origin: PublicOrigin.optional() });

/** Routes served for a named agent and, without `/agents/:id`, for the default agent. */
function withDefault(doc: RouteDoc): RouteDoc[] {
  return [
    doc,
    {
      ...doc,
      path: doc.path.replace("/agents/:id", ""),
      summary: `${doc.summary} (default agent)`,
    },
  ];
}

/**
 * The /control twin of a read route: the same answer for any agent the operator can list
 * (private children and finished run agents too), behind the control token.
 */
function controlTwin(doc: RouteDoc): RouteDoc {
  return {
    ...doc,
    path: `/control${doc.path}`,
    summary: `${doc.summary} (any agent, private ones included)`,
    access: "control",
  };
}

function withControlTwin(doc: RouteDoc): RouteDoc[] {
  return [doc, controlTwin(doc)];
}

/** A read route for a named agent, the default agent, and any agent under /control. */
function agentRead(doc: RouteDoc): RouteDoc[] {
  return [...withDefault(doc), controlTwin(doc)];
}

export const ROUTES: RouteDoc[] = [
  {
    method: "get",
    path: "/",
    summary: "Default agent",
    access: "none",
    ok: { status: 200, schema: S.RootResponse },
  },
  {
    method: "get",
    path: "/handshake",
    summary: "Protocol, auth requirements and runtime info",
    access: "none",
    ok: { status: 200, schema: S.HandshakeResponse },
  },
  {
    method: "get",
    path: "/openapi.json",
    summary: "This document",
    access: "read",
    ok: { status: 200, schema: z.record(z.string(), z.unknown()) },
  },
  {
    method: "get",
    path: "/models",
    summary: "Model catalog and availability",
    access: "read",
    ok: { status: 200, schema: S.ModelsResponse },
  },
  {
    method: "get",
    path: "/agents/list",
    summary:
      "Public agents (all=true, with the control token: private children and archived agents too)",
    access: "read",
    query: [
      {
        name: "all",
        schema: z.enum(["true", "false"]),
        description: "include private children and archived agents (control access)",
      },
    ],
    ok: { status: 200, schema: S.AgentsListResponse },
  },
  ...agentRead({
    method: "get",
    path: "/agents/:id/status",
    summary: "Agent summary",
    access: "read",
    ok: { status: 200, schema: S.AgentSummary },
  }),
  ...agentRead({
    method: "get",
    path: "/agents/:id/state",
    summary: "Bootstrap snapshot",
    access: "read",
    ok: { status: 200, schema: S.AgentStateResponse },
  }),
  ...agentRead({
    method: "get",
    path: "/agents/:id/briefs",
    summary: "Recent briefs, oldest first",
    access: "read",
    query: [Limit(1000, 50)],
    ok: { status: 200, schema: S.BriefsResponse },
  }),
  ...agentRead({
    method: "get",
    path: "/agents/:id/transcript",
    summary: "Recent transcript entries, oldest first",
    access: "read",
    query: [Limit(1000, 100)],
    ok: { status: 200, schema: S.TranscriptResponse },
  }),
  ...agentRead({
    method: "get",
    path: "/agents/:id/tasks",
    summary: "Task records, newest first",
    access: "read",
    ok: { status: 200, schema: S.TasksResponse },
  }),
  ...withDefault({
    method: "post",
    path: "/agents/:id/enqueue",
    summary: "Public ingress",
    access: "read",
    body: { schema: EnqueueDoc },
    ok: { status: 202, schema: S.AcceptedResponse, description: "committed" },
  }),
  {
    method: "post",
    path: "/webhooks/generic/:agent_id",
    summary: "Any JSON value as a webhook_event",
    access: "read",
    body: { schema: z.unknown() },
    query: [
      {
        name: "event_type",
        schema: z.string(),
        description: "origin.event_type (or X-Event-Type)",
      },
      { name: "source", schema: z.string(), description: "origin.source (default generic)" },
    ],
    ok: { status: 202, schema: S.AcceptedResponse, description: "committed" },
  },
  ...withControlTwin({
    method: "get",
    path: "/agents/:id/events",
    summary: "Page the durable event log",
    access: "read",
    query: [
      { name: "after_seq", schema: z.number().int().min(0), description: "exclusive lower bound" },
      { name: "before_seq", schema: z.number().int().min(0), description: "exclusive upper bound" },
      { name: "limit", schema: z.number().int().min(1).max(10_000), description: "default 128" },
      { name: "order", schema: z.enum(["asc", "desc"]), description: "default desc" },
      {
        name: "projection",
        schema: EventProjectionName,
        description: "local_debug needs control authorization",
      },
    ],
    ok: { status: 200, schema: S.EventsResponse },
  }),
  ...withControlTwin({
    method: "get",
    path: "/agents/:id/events/stream",
    summary: "Server-Sent Events: replay after a cursor, then live",
    access: "read",
    query: [
      { name: "after_seq", schema: z.number().int().min(0), description: "replay cursor" },
      { name: "projection", schema: EventProjectionName, description: "default operator" },
    ],
    headers: [
      {
        name: "Last-Event-ID",
        schema: z.string(),
        description: "replay cursor; wins over after_seq",
      },
    ],
    ok: {
      status: 200,
      schema: z.string(),
      contentType: "text/event-stream",
      description:
        "`id:` is the event_seq, `event:` the type, `data:` the event as in x-event-data",
    },
  }),
  {
    method: "post",
    path: "/control/agents/:id/prompt",
    summary: "Operator prompt",
    access: "control",
    body: { schema: PromptBody },
    ok: { status: 202, schema: S.PromptAcceptedResponse, description: "committed" },
  },
  {
    method: "post",
    path: "/control/agents/:id/control",
    summary: "Lifecycle: pause, resume, start, stop, wake",
    access: "control",
    body: { schema: ControlBody },
    ok: { status: 200, schema: S.ControlResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/wake",
    summary: "Wake an asleep agent",
    access: "control",
    body: { schema: WakeBody, optional: true },
    ok: { status: 200, schema: S.WakeResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/create",
    summary: "Create a named agent",
    access: "control",
    body: { schema: CreateBody, optional: true },
    ok: { status: 201, schema: S.CreateAgentResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/current-run/abort",
    summary: "Abort the running turn; the agent is stopped afterwards",
    access: "control",
    body: { schema: AbortBody, optional: true },
    ok: { status: 202, schema: S.AbortResponse },
  },
  {
    method: "get",
    path: "/control/runtime/status",
    summary: "Runtime status and activity",
    access: "control",
    ok: { status: 200, schema: S.RuntimeStatusResponse },
  },
  {
    method: "post",
    path: "/control/runtime/shutdown",
    summary: "Graceful shutdown",
    access: "control",
    ok: { status: 202, schema: S.ShutdownResponse },
  },
  {
    method: "post",
    path: "/control/run",
    summary: "One prompt through one agent, streamed as NDJSON (holon run)",
    access: "control",
    body: { schema: RunBody },
    ok: {
      status: 200,
      schema: S.RunLine,
      contentType: "application/x-ndjson",
      description: "one JSON value per line; the schema describes each line",
    },
  },
  {
    method: "post",
    path: "/control/agents/:id/model",
    summary: "Set the agent's model override",
    access: "control",
    body: { schema: ModelBody },
    ok: { status: 200, schema: S.ModelResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/settings",
    summary:
      "Change one of the agent's own settings (sandbox.mode, sandbox.writable_paths, sandbox.hidden_paths, permissions.mode/allow/ask/deny, hooks); value null returns it to the host's",
    access: "control",
    body: { schema: SettingBody },
    ok: { status: 200, schema: S.AgentSettingsResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/model/clear",
    summary: "Clear the agent's model override",
    access: "control",
    body: { schema: ClearBody, optional: true },
    ok: { status: 200, schema: S.ModelResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/tasks",
    summary: "Start a command task",
    access: "control",
    body: { schema: StartBody },
    ok: { status: 201, schema: S.TaskStartResponse },
  },
  ...withControlTwin({
    method: "get",
    path: "/agents/:id/tasks/:task_id",
    summary: "One task's snapshot",
    access: "read",
    ok: { status: 200, schema: S.TaskResponse },
  }),
  ...withControlTwin({
    method: "get",
    path: "/agents/:id/tasks/:task_id/output",
    summary: "A task's output preview",
    access: "read",
    query: [
      {
        name: "max_chars",
        schema: z.number().int().min(256).max(256_000),
        description: "default 32000",
      },
      {
        name: "wait_ms",
        schema: z.number().int().min(0).max(60_000),
        description: "wait for the terminal record",
      },
    ],
    ok: { status: 200, schema: S.TaskOutputResponse },
  }),
  {
    method: "post",
    path: "/control/agents/:id/tasks/:task_id/stop",
    summary: "Stop a task's process group (any agent's task, a private child's too)",
    access: "control",
    ok: { status: 200, schema: S.TaskStopResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/tasks/:task_id/input",
    summary: "Write to a task's stdin or terminal",
    access: "control",
    body: { schema: InputBody },
    ok: { status: 200, schema: S.TaskInputResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/work-items",
    summary: "Enqueue a work item (no transcript message; the current item is left alone)",
    access: "control",
    body: { schema: EnqueueWorkBody },
    ok: { status: 201, schema: S.WorkItemCreatedResponse },
  },
  ...withControlTwin({
    method: "get",
    path: "/agents/:id/work-items",
    summary: "An agent's work items, by view",
    access: "read",
    query: [
      {
        name: "state",
        schema: z.enum([
          "current",
          "open",
          "queued",
          "blocked",
          "waiting_for_operator",
          "completed",
          "all",
        ]),
        description: "which items (default all)",
      },
      Limit(200, 50),
    ],
    ok: { status: 200, schema: S.WorkItemsResponse },
  }),
  ...withControlTwin({
    method: "get",
    path: "/agents/:id/work-items/:work_item_id",
    summary: "One work item with its plan descriptor and completion report",
    access: "read",
    ok: { status: 200, schema: S.WorkItemResponse },
  }),
  {
    method: "post",
    path: "/control/agents/:id/work-items/:work_item_id/complete",
    summary: "The operator completes a work item (the note becomes its result summary)",
    access: "control",
    body: { schema: CompleteWorkBody, optional: true },
    ok: { status: 200, schema: S.WorkItemResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/work-items/:work_item_id/block",
    summary: "The operator parks a work item",
    access: "control",
    body: { schema: BlockWorkBody },
    ok: { status: 200, schema: S.WorkItemResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/work-items/:work_item_id/unblock",
    summary: "The operator clears a work item's blocker",
    access: "control",
    ok: { status: 200, schema: S.WorkItemResponse },
  },
  ...WAITING_ROUTE_DOCS,
  ...WORKSPACE_ROUTE_DOCS,
  ...AGENT_ROUTE_DOCS,
  ...USAGE_ROUTE_DOCS.flatMap((d) =>
    d.path.startsWith("/agents/:id/") ? withControlTwin(d) : [d],
  ),
  ...BUDGET_ROUTE_DOCS,
  ...MEMORY_ROUTE_DOCS,
  ...OPERATOR_ROUTE_DOCS,
  ...METRICS_ROUTE_DOCS,
  ...ASK_ROUTE_DOCS,
  ...BRIEF_ROUTE_DOCS,
  ...MCP_ROUTE_DOCS,
  ...MCP_SERVER_ROUTE_DOCS,
  ...UI_ROUTE_DOCS,
];

type JsonSchema = Record<string, unknown>;

const CONVERT = { target: "draft-2020-12", unrepresentable: "any" } as const;

/** A small schema written out in place (query parameters, unnamed bodies). */
function inline(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { ...CONVERT, io }) as JsonSchema;
  return rest;
}

/**
 * The schemas that get a name under `components.schemas`: every response and request body
 * of the table, and the domain shapes they share (referenced, not repeated).
 */
function namedSchemas(): Map<z.ZodType, string> {
  const named = new Map<z.ZodType, string>([
    [TokenUsage, "TokenUsage"],
    [ProviderAttemptTimeline, "ProviderAttemptTimeline"],
    [FailureArtifact, "FailureArtifact"],
    [ClosureDecision, "ClosureDecision"],
    [ContinuationResolution, "ContinuationResolution"],
    [MessageOrigin, "MessageOrigin"],
    [TaskRecord, "TaskRecord"],
    [TaskSnapshot, "TaskSnapshot"],
    [BriefRecord, "BriefRecord"],
    [TranscriptEntry, "TranscriptEntry"],
    [projectedCatalogEventSchema(), "Event"],
    [EnqueueDoc, "EnqueueBody"],
    [PromptBody, "PromptBody"],
    [ControlBody, "ControlBody"],
    [WakeBody, "WakeBody"],
    [CreateBody, "CreateBody"],
    [AbortBody, "AbortBody"],
    [RunBody, "RunBody"],
    [ModelBody, "ModelBody"],
    [ClearBody, "ClearBody"],
    [SettingBody, "SettingBody"],
    [StartBody, "StartBody"],
    [InputBody, "InputBody"],
  ]);
  for (const [name, schema] of Object.entries(S)) named.set(schema, name);
  return named;
}

function buildComponents(named: Map<z.ZodType, string>): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [schema, id] of named) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    ...CONVERT,
    io: "output",
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonSchema> };
  const out: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const { $schema: _dialect, $id: _id, ...rest } = schema;
    out[id] = rest;
  }
  return out;
}

function operation(r: RouteDoc, named: Map<z.ZodType, string>) {
  const ref = (schema: z.ZodType, io: "input" | "output"): JsonSchema => {
    const id = named.get(schema);
    return id ? { $ref: `#/components/schemas/${id}` } : inline(schema, io);
  };
  const parameters = [
    ...[...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    })),
    ...(r.query ?? []).map((p) => ({
      name: p.name,
      in: "query",
      required: false,
      description: p.description,
      schema: inline(p.schema, "input"),
    })),
    ...(r.headers ?? []).map((p) => ({
      name: p.name,
      in: "header",
      required: false,
      description: p.description,
      schema: inline(p.schema, "input"),
    })),
  ];
  const op: Record<string, unknown> = {
    operationId: `${r.method}${r.path.replace(/[/:{}.-]+(\w?)/g, (_m, c: string) => c.toUpperCase())}`,
    summary: r.summary,
    parameters,
    responses: {
      [String(r.ok.status)]: {
        description: r.ok.description ?? "success",
        content: {
          [r.ok.contentType ?? "application/json"]: { schema: ref(r.ok.schema, "output") },
        },
        ...(r.ok.contentType === "text/event-stream"
          ? { "x-event-data": ref(projectedCatalogEventSchema(), "output") }
          : {}),
      },
      default: {
        description: "every error: a stable kind, a message and maybe a hint",
        content: { "application/json": { schema: ref(S.ErrorBody, "output") } },
      },
    },
    // Read routes need the token only from a non-loopback peer or in a token-required access
    // mode; control routes over TCP always (docs/http-api.md, "Authentication").
    security:
      r.access === "control" ? [{ bearer: [] }] : r.access === "read" ? [{}, { bearer: [] }] : [],
  };
  if (r.body) {
    op.requestBody = {
      required: !r.body.optional,
      content: { "application/json": { schema: ref(r.body.schema, "input") } },
    };
  }
  return op;
}

/** The OpenAPI path of a Hono path: `/agents/:id` → `/agents/{id}`. */
export function openApiPath(honoPath: string): string {
  return honoPath.replace(/:([A-Za-z_]+)/g, "{$1}");
}

let cached: Record<string, unknown> | undefined;

/** Built once, on first request. */
export function openApiDocument(): Record<string, unknown> {
  if (cached) return cached;
  const named = namedSchemas();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) (paths[openApiPath(r.path)] ??= {})[r.method] = operation(r, named);
  cached = {
    openapi: "3.1.0",
    info: {
      title: "Holon control plane",
      version: "1",
      description: "The runtime host's HTTP API. Prose reference: docs/http-api.md.",
    },
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: buildComponents(named),
    },
  };
  return cached;
}

export function openApiRoute(app: Hono<AppEnv>): void {
  app.get("/openapi.json", (c) => {
    requireRead(c);
    return c.json(openApiDocument());
  });
}
