// Ask routes (src/asks/): the operator's inbox across agents and the one place an ask is
// decided. All are control routes: reading an ask shows what an agent wants to know, and
// deciding one speaks with operator authority. A decision through an operator binding
// names the binding and its actor (checked like operator ingress); otherwise the control
// token is the credential. `wait_ms` on GET of one ask holds the request until the ask
// leaves `pending` or the time is up (what `holon asks show --wait` polls on).
import type { Hono } from "hono";
import { z } from "zod";
import { ASK_LIMITS, AskRecord, AskState } from "../domain/ask.ts";
import { HolonError } from "../domain/errors.ts";
import type { AskCredential } from "../asks/service.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { intParam, readJson, requireControl, validate, type AppEnv } from "./support.ts";

const Id = z.string().min(1).max(200);

export const AskDecisionBody = z.strictObject({
  /** An option (`continue 5`, `block item`) or, for a question, the answer's text. */
  decision: z.string().min(1).max(ASK_LIMITS.decision_chars),
  reason: z.string().max(ASK_LIMITS.reason_chars).optional(),
  /** A bridge deciding for its remote operator: the binding and the actor it authenticated. */
  binding_id: Id.optional(),
  actor_id: Id.optional(),
});

const AskResponse = z.object({ ok: z.literal(true), ask: AskRecord });
const AsksResponse = z.object({ ok: z.literal(true), asks: z.array(AskRecord) });
const DecisionResponse = z.object({
  ok: z.literal(true),
  ask: AskRecord,
  message_id: z.string().nullable(),
});

/** The longest one GET may wait for a decision. */
const MAX_WAIT_MS = 60_000;

export function askRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const asks = () => host.services.asks;

  app.get("/control/asks", async (c) => {
    requireControl(c);
    const state = c.req.query("state") ?? "pending";
    if (state !== "all" && !AskState.safeParse(state).success) {
      throw new HolonError("invalid_request", `unknown state '${state}'`, {
        hint: "use pending, decided, expired, withdrawn or all",
      });
    }
    const agent = c.req.query("agent");
    if (agent !== undefined) await host.agents.get(agent); // unknown agent: 404
    const list = await asks().list({
      state: state as AskRecord["state"] | "all",
      agent_id: agent,
      limit: intParam(c, "limit", { min: 1, max: 500 }),
    });
    return c.json({ ok: true, asks: list });
  });

  app.get("/control/asks/:ask_id", async (c) => {
    requireControl(c);
    const id = c.req.param("ask_id");
    const waitMs = intParam(c, "wait_ms", { min: 0, max: MAX_WAIT_MS }) ?? 0;
    let ask = await asks().get(id);
    if (ask.state === "pending" && waitMs > 0) {
      ask = await untilSettled(host, id, waitMs, c.req.raw.signal);
    }
    return c.json({ ok: true, ask });
  });

  app.post("/control/asks/:ask_id/decision", async (c) => {
    requireControl(c);
    const body = validate(AskDecisionBody, await readJson(c));
    const id = c.req.param("ask_id");
    const ask = await asks().get(id);
    let by: AskCredential = { kind: "operator", via: "control" };
    if (body.binding_id !== undefined || body.actor_id !== undefined) {
      if (body.binding_id === undefined || body.actor_id === undefined) {
        throw new HolonError("invalid_request", "binding_id and actor_id go together", {
          hint: "a bridge names both the binding and the operator it authenticated",
        });
      }
      by = await host.services.operatorTransport.bindingCredential(
        ask.agent_id,
        body.binding_id,
        body.actor_id,
      );
    }
    const r = await asks().decide(id, { decision: body.decision, reason: body.reason }, by);
    return c.json({ ok: true, ask: r.ask, message_id: r.message_id });
  });
}

/** Resolve when the ask leaves `pending` (its events say so), or at the deadline. */
function untilSettled(
  host: AppContext["host"],
  id: string,
  ms: number,
  signal: AbortSignal,
): Promise<AskRecord> {
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      unlisten();
      signal.removeEventListener("abort", finish);
      resolve(host.services.asks.get(id)); // a failed read rejects the caller's promise
    };
    const unlisten = host.store.onEvents((events) => {
      if (
        events.some(
          (e) =>
            e.type.startsWith("ask_") &&
            e.type !== "ask_opened" &&
            (e.payload as { ask?: { id?: string } }).ask?.id === id,
        )
      )
        finish();
    });
    const timer = setTimeout(finish, ms);
    timer.unref?.();
    signal.addEventListener("abort", finish);
    // Settled between the read and the subscription: answer at once. A failed read: finish
    // reads again and hands that failure to the caller.
    host.services.asks.get(id).then(
      (ask) => ask.state !== "pending" && finish(),
      () => finish(),
    );
  });
}

export const ASK_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/control/asks",
    summary: "Asks across agents: pending ones oldest first (the operator's inbox), or others",
    access: "control",
    query: [
      {
        name: "state",
        schema: z.enum(["pending", "decided", "expired", "withdrawn", "all"]),
        description: "which asks (default pending)",
      },
      { name: "agent", schema: z.string(), description: "only this agent's asks" },
      { name: "limit", schema: z.number().int(), description: "at most this many (1–500)" },
    ],
    ok: { status: 200, schema: AsksResponse },
  },
  {
    method: "get",
    path: "/control/asks/:ask_id",
    summary: "One ask; with wait_ms, held until it is no longer pending (at most 60 s)",
    access: "control",
    query: [
      {
        name: "wait_ms",
        schema: z.number().int(),
        description: "wait up to this long for a pending ask to be decided (0–60000)",
      },
    ],
    ok: { status: 200, schema: AskResponse },
  },
  {
    method: "post",
    path: "/control/asks/:ask_id/decision",
    summary:
      "Decide a pending ask (409 when it is not pending); the decision wakes its agent with operator authority",
    access: "control",
    body: { schema: AskDecisionBody },
    ok: { status: 200, schema: DecisionResponse },
  },
];
