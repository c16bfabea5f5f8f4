// MCP elicitation as an `input` ask. A server that wants something from the user in the middle
// of a tool call sends `elicitation/create` (form mode: a message and a flat object schema of
// primitive fields). The client advertises form mode only; the request becomes an input ask of
// the agent whose call is in flight, and the call waits, bounded by `mcp.elicitation_timeout_ms`
// (its own call timeout is paused meanwhile). The operator answers through the asks surfaces
// with a JSON object (checked against the requested schema: a bad answer is a 400 and the ask
// stays pending), or with `decline` / `cancel`. No answer in time: the ask is withdrawn, the
// server hears `cancel`, and the tool result says the operator did not answer (with the ask id).
//
// Only the operator answers (never a parent agent): the server asked the user. A request while
// no call of one agent is in flight on that session (out of band, or a shared server with calls
// of several agents) is declined; so is a schema or message over the caps below. The waiters
// live in memory: an ask left pending by a host that died is withdrawn at the next start.
import type { AskRecord } from "../domain/ask.ts";
import { HolonError } from "../domain/errors.ts";
import type { AskCredential, AskDecision, AskEffects } from "../asks/service.ts";

// Its timeouts are settings: they live with the config schema (mcp/config.ts), which every
// start reads, while this module loads only with the MCP client.
/** Elicitations one tool call may make; more are declined (a server looping on the user). */
export const MAX_ELICITATIONS_PER_CALL = 3;

const LIMITS = {
  message_chars: 4_000,
  schema_json_chars: 16_000,
  properties: 32,
  enum_values: 100,
  text_chars: 1_000,
};
const FIELD_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export type ElicitAction = "accept" | "decline" | "cancel";
export type ElicitResult = { action: ElicitAction; content?: Record<string, unknown> };

/** The requested schema, as the SDK checked it (ElicitRequestFormParamsSchema). */
export type RequestedSchema = {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
};

/** What an elicitation ask keeps (`details.mcp_elicitation` identifies it). */
export type ElicitationDetails = {
  server: string;
  tool: string;
  call_id: string | null;
  message: string;
  requested_schema: RequestedSchema;
};

/** How the call that waited learns what happened, for its tool result. */
export type ElicitationOutcome = {
  ask_id: string;
  action: ElicitAction;
  /** answered: the operator decided; timed_out: no answer in time; withdrawn: anything else. */
  how: "answered" | "timed_out" | "withdrawn";
  reason?: string;
};

/**
 * Why this request is refused (declined), or null when it may become an ask. The SDK already
 * refused anything that is not a flat object of primitive fields (InvalidParams); this adds
 * the size caps and the field names.
 */
export function refuseRequest(message: string, schema: RequestedSchema): string | null {
  if (message.length > LIMITS.message_chars)
    return `the message is longer than ${LIMITS.message_chars} characters`;
  let json: string;
  try {
    json = JSON.stringify(schema);
  } catch {
    return "the schema is not JSON";
  }
  if (json.length > LIMITS.schema_json_chars)
    return `the schema is larger than ${LIMITS.schema_json_chars} characters`;
  const names = Object.keys(schema.properties);
  if (names.length === 0) return "the schema asks for nothing";
  if (names.length > LIMITS.properties)
    return `the schema has more than ${LIMITS.properties} fields`;
  for (const n of names)
    if (!FIELD_NAME.test(n))
      return `the field name ${JSON.stringify(n.slice(0, 80))} is not allowed`;
  for (const r of schema.required ?? [])
    if (!names.includes(r))
      return `the required field ${JSON.stringify(r.slice(0, 80))} is not in the schema`;
  for (const [n, p] of Object.entries(schema.properties)) {
    if (choices(p).length > LIMITS.enum_values)
      return `the field ${n} offers more than ${LIMITS.enum_values} choices`;
  }
  return null;
}

/** The values a field accepts when it is a choice (enum, oneOf, a multi-select's items). */
function choices(p: Record<string, unknown>): string[] {
  const consts = (list: unknown) =>
    Array.isArray(list) ? list.map((o) => String((o as { const?: unknown })?.const)) : [];
  if (Array.isArray(p.enum)) return p.enum.map(String);
  if (Array.isArray(p.oneOf)) return consts(p.oneOf);
  const items = p.items as Record<string, unknown> | undefined;
  if (items && Array.isArray(items.enum)) return items.enum.map(String);
  if (items && Array.isArray(items.anyOf)) return consts(items.anyOf);
  return [];
}

const FORMATS: Record<string, (v: string) => boolean> = {
  email: (v) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v),
  uri: (v) => {
    try {
      return new URL(v).protocol.length > 1;
    } catch {
      return false;
    }
  },
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)),
  "date-time": (v) => /^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v)),
};

/** Problems of an answer against the requested schema (empty: it fits). */
export function checkAnswer(schema: RequestedSchema, value: unknown): string[] {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return ["the answer is not a JSON object"];
  const out: string[] = [];
  const v = value as Record<string, unknown>;
  for (const k of Object.keys(v))
    if (!Object.hasOwn(schema.properties, k)) out.push(`${k}: not a field of the form`);
  for (const r of schema.required ?? []) if (v[r] === undefined) out.push(`${r}: required`);
  for (const [k, p] of Object.entries(schema.properties)) {
    if (v[k] === undefined) continue;
    const problem = checkField(p, v[k]);
    if (problem) out.push(`${k}: ${problem}`);
  }
  return out.slice(0, 20);
}

function checkField(p: Record<string, unknown>, x: unknown): string | null {
  const num = (k: string) => (typeof p[k] === "number" ? (p[k] as number) : undefined);
  switch (p.type) {
    case "boolean":
      return typeof x === "boolean" ? null : "expected true or false";
    case "number":
    case "integer": {
      if (typeof x !== "number" || !Number.isFinite(x)) return "expected a number";
      if (p.type === "integer" && !Number.isInteger(x)) return "expected a whole number";
      const min = num("minimum");
      const max = num("maximum");
      if (min !== undefined && x < min) return `at least ${min}`;
      if (max !== undefined && x > max) return `at most ${max}`;
      return null;
    }
    case "string": {
      if (typeof x !== "string") return "expected a string";
      const allowed = choices(p);
      if (allowed.length) return allowed.includes(x) ? null : `one of ${allowed.join(", ")}`;
      const min = num("minLength");
      const max = num("maxLength") ?? LIMITS.text_chars;
      if (min !== undefined && x.length < min) return `at least ${min} characters`;
      if (x.length > max) return `at most ${max} characters`;
      const format = typeof p.format === "string" ? FORMATS[p.format] : undefined;
      if (format && !format(x)) return `not a valid ${String(p.format)}`;
      return null;
    }
    case "array": {
      if (!Array.isArray(x) || x.some((e) => typeof e !== "string"))
        return "expected a list of strings";
      const allowed = choices(p);
      const bad = x.find((e) => !allowed.includes(e as string));
      if (bad !== undefined) return `${JSON.stringify(bad)} is not one of ${allowed.join(", ")}`;
      if (new Set(x).size !== x.length) return "a choice is listed twice";
      const min = num("minItems");
      const max = num("maxItems");
      if (min !== undefined && x.length < min) return `choose at least ${min}`;
      if (max !== undefined && x.length > max) return `choose at most ${max}`;
      return null;
    }
    default:
      return "this field's type is not supported";
  }
}

/** One line per field, as the operator reads it in the ask. */
function describeFields(schema: RequestedSchema): string[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, p]) => {
    const type = p.type === "array" ? "list" : String(p.type);
    const allowed = choices(p);
    const bits = [
      `${name} (${type}${typeof p.format === "string" ? `, ${p.format}` : ""}${required.has(name) ? ", required" : ""})`,
    ];
    const text = [p.title, p.description].filter((t) => typeof t === "string" && t).join(": ");
    if (text) bits.push(String(text).slice(0, 300));
    if (allowed.length) bits.push(`one of ${allowed.slice(0, 20).join(", ")}`);
    return `  - ${bits.join(" — ")}`;
  });
}

/** The input ask a form-mode elicitation becomes. */
export function elicitationAsk(agentId: string, d: ElicitationDetails, timeoutMs: number) {
  const example: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(d.requested_schema.properties)) {
    if (!(d.requested_schema.required ?? []).includes(k)) continue;
    example[k] =
      p.type === "boolean"
        ? true
        : p.type === "number" || p.type === "integer"
          ? 1
          : p.type === "array"
            ? []
            : "…";
  }
  return {
    agent_id: agentId,
    kind: "input" as const,
    source: "mcp_elicitation" as const,
    scope: "agent" as const,
    // The agent's turn is already held by the call itself; nothing else needs holding.
    gates_agent: false as const,
    about: `MCP server '${d.server}' asks for input during ${d.tool}`,
    detail: [
      `During the agent's call of tool ${d.tool}${d.call_id ? ` (call ${d.call_id})` : ""}, the MCP server '${d.server}' asks:`,
      "",
      d.message,
      "",
      "Fields:",
      ...describeFields(d.requested_schema),
      "",
      `Answer with a JSON object of these fields (e.g. ${JSON.stringify(example)}), or with decline or cancel.`,
      `The call waits at most ${Math.round(timeoutMs / 1000)} s; without an answer the server is told cancel.`,
    ].join("\n"),
    options: ["decline", "cancel"],
    free_text: true,
    details: { mcp_elicitation: d },
    expires_in_ms: timeoutMs,
  };
}

export function elicitationOf(ask: AskRecord): ElicitationDetails | undefined {
  const d = ask.details?.mcp_elicitation as ElicitationDetails | undefined;
  return d && typeof d.server === "string" && d.requested_schema ? d : undefined;
}

/** A decision as the server hears it; throws (400) when the answer does not fit the form. */
export function resultOf(ask: AskRecord, d: ElicitationDetails, decision: string): ElicitResult {
  const text = decision.trim();
  if (text === "decline" || text === "cancel") return { action: text };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badAnswer(ask, ["the answer is neither decline, cancel nor a JSON object"]);
  }
  const problems = checkAnswer(d.requested_schema, value);
  if (problems.length) throw badAnswer(ask, problems);
  return { action: "accept", content: value as Record<string, unknown> };
}

function badAnswer(ask: AskRecord, problems: string[]): HolonError {
  return new HolonError(
    "invalid_elicitation_answer",
    `the answer does not fit the form of ask '${ask.id}': ${problems.join("; ")}`,
    {
      status: 400,
      hint: `answer with a JSON object of the fields listed in \`holon asks show ${ask.id}\`, or with decline or cancel`,
      details: { ask_id: ask.id, problems },
    },
  );
}

/**
 * The calls waiting on an elicitation ask, and the asks plane's hooks that settle them: an
 * answer is checked before it is written, a decision or a close settles the waiter, and no
 * message is admitted to the agent (the answer goes to the server, not into the agent's queue).
 */
export class ElicitationWaiters implements AskEffects {
  readonly #waiting = new Map<string, (o: ElicitationOutcome, r: ElicitResult) => void>();
  /** Asks withdrawn because their time ran out (told apart from other withdrawals). */
  readonly #timedOut = new Set<string>();

  wait(askId: string): Promise<{ outcome: ElicitationOutcome; result: ElicitResult }> {
    return new Promise((resolve) => {
      this.#waiting.set(askId, (outcome, result) => resolve({ outcome, result }));
    });
  }

  /** The ask is about to be withdrawn because the operator did not answer in time. */
  markTimedOut(askId: string): void {
    this.#timedOut.add(askId);
  }

  get size(): number {
    return this.#waiting.size;
  }

  #settle(askId: string, outcome: ElicitationOutcome, result: ElicitResult): void {
    const done = this.#waiting.get(askId);
    this.#waiting.delete(askId);
    this.#timedOut.delete(askId);
    done?.(outcome, result);
  }

  vetDecision(ask: AskRecord, decision: AskDecision, by: AskCredential): void {
    const d = elicitationOf(ask);
    if (!d) return;
    if (by.kind !== "operator") {
      throw new HolonError(
        "human_decision_required",
        `ask '${ask.id}' is an MCP server's question to the user: only the operator answers it`,
        { status: 403, details: { ask_id: ask.id } },
      );
    }
    resultOf(ask, d, decision.decision);
  }

  decided(ask: AskRecord, decision: AskDecision): undefined {
    const d = elicitationOf(ask);
    if (!d) return undefined;
    const result = resultOf(ask, d, decision.decision);
    this.#settle(ask.id, { ask_id: ask.id, action: result.action, how: "answered" }, result);
    return undefined;
  }

  closed(ask: AskRecord): void {
    if (!elicitationOf(ask)) return;
    const timedOut = ask.state === "expired" || this.#timedOut.has(ask.id);
    const outcome: ElicitationOutcome = {
      ask_id: ask.id,
      action: "cancel",
      how: timedOut ? "timed_out" : "withdrawn",
    };
    if (ask.reason) outcome.reason = ask.reason;
    this.#settle(ask.id, outcome, { action: "cancel" });
  }

  message(ask: AskRecord): null | undefined {
    return elicitationOf(ask) ? null : undefined;
  }
}
