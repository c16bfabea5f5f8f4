// `GET /agents/:id/briefs/next`: wait, bounded, for an agent's next brief. A caller that has
// just handed an agent work (a prompt, a work item) holds one request open instead of
// polling; the MCP server's `wait_for_brief` is built on it. The check runs once after the
// subscription is in place, so a brief written between the caller's last read and this
// request is never missed. Acknowledgements (`ack` briefs) are not what anyone waits for and
// are passed over.
import type { Hono } from "hono";
import { z } from "zod";
import { BriefRecord } from "../domain/brief.ts";
import { HolonError } from "../domain/errors.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { intParam, requireRead, type AppEnv } from "./support.ts";

/** The longest one request may wait. */
export const MAX_BRIEF_WAIT_MS = 60_000;
/** How many briefs one check reads: a burst larger than this is read on the next check. */
const SCAN = 200;
const IdQuery = /^[A-Za-z0-9_.:-]{1,200}$/;

const NextBriefResponse = z.object({
  ok: z.literal(true),
  agent_id: z.string(),
  /** The brief, or null when none came before the wait ran out. */
  brief: BriefRecord.nullable(),
});

export function briefRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  app.get("/agents/:id/briefs/next", async (c) => {
    requireRead(c);
    const agentId = (await host.agents.getPublic(c.req.param("id"))).agent_id;
    const waitMs = intParam(c, "wait_ms", { min: 0, max: MAX_BRIEF_WAIT_MS }) ?? 0;
    const messageId = idQuery(c.req.query("message_id"), "message_id");
    const after = idQuery(c.req.query("after"), "after");
    const briefs = host.store.briefs;

    // Where to look: after a named brief; for a message, among the recent ones (its answer
    // may already be there); otherwise only briefs written from now on.
    let floor: number | undefined;
    if (after !== undefined) {
      floor = await briefs.seqOf(agentId, after);
      if (floor === undefined) {
        throw new HolonError("unknown_brief", `agent '${agentId}' has no brief '${after}'`, {
          status: 404,
          hint: "pass the id of one of the agent's briefs (GET /agents/:id/briefs)",
        });
      }
    } else if (messageId === undefined) floor = await briefs.newestSeq(agentId);
    const matches = (b: BriefRecord) =>
      b.kind !== "ack" && (messageId === undefined || b.related_message_id === messageId);
    const find = async (): Promise<BriefRecord | undefined> =>
      floor === undefined
        ? (await briefs.recent(agentId, SCAN)).find(matches)
        : (await briefs.after(agentId, floor, SCAN)).map((r) => r.brief).find(matches);

    let brief = await find();
    if (!brief && waitMs > 0)
      brief = await nextBrief(host, agentId, find, waitMs, c.req.raw.signal);
    return c.json({ ok: true, agent_id: agentId, brief: brief ?? null });
  });
}

function idQuery(value: string | undefined, name: string): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (!IdQuery.test(value)) {
    throw new HolonError("invalid_request", `query parameter ${name} is not an id`, {
      hint: "ids are 1-200 letters, digits, '_', '.', ':' or '-'",
    });
  }
  return value;
}

/** Resolve with the first matching brief its agent writes, or undefined at the deadline. */
function nextBrief(
  host: AppContext["host"],
  agentId: string,
  find: () => Promise<BriefRecord | undefined>,
  ms: number,
  signal: AbortSignal,
): Promise<BriefRecord | undefined> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (brief: BriefRecord | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      unlisten();
      signal.removeEventListener("abort", onAbort);
      resolve(brief);
    };
    const onAbort = () => finish(undefined);
    const unlisten = host.store.onEvents((events) => {
      if (events.some((e) => e.agent_id === agentId && e.type === "brief_created")) {
        void find().then((brief) => brief && finish(brief));
      }
    });
    const timer = setTimeout(() => finish(undefined), ms);
    timer.unref?.();
    signal.addEventListener("abort", onAbort);
    // Written between the first look and the subscription: answer at once.
    void find().then((brief) => brief && finish(brief));
  });
}

export const BRIEF_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/agents/:id/briefs/next",
    summary:
      "The agent's next brief (not an ack): held until one is written or wait_ms runs out (brief null)",
    access: "read",
    query: [
      {
        name: "wait_ms",
        schema: z.number().int(),
        description: `wait up to this long for the brief (0–${MAX_BRIEF_WAIT_MS}; default 0)`,
      },
      {
        name: "message_id",
        schema: z.string(),
        description:
          "only a brief answering this message (found among recent briefs if already written)",
      },
      {
        name: "after",
        schema: z.string(),
        description: "only briefs written after this brief id (default: after the newest now)",
      },
    ],
    ok: { status: 200, schema: NextBriefResponse },
  },
];
