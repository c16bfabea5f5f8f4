// `holon asks …`: the operator's inbox. Everything any agent waits on a person for (a
// question, a runaway halt, a budget stop), across agents; show one, answer one, or wait
// until one is decided. Answers speak with the control token's operator authority.
import type { Command } from "commander";
import { requester } from "./request.ts";
import { CliError, action, printJson, clientOptions } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

type Flags = ClientFlags & { json?: boolean };

type Ask = {
  id: string;
  agent_id: string;
  kind: string;
  source: string;
  scope: string;
  work_item_id?: string;
  about: string;
  detail: string;
  options: string[];
  free_text: boolean;
  state: string;
  decision?: string;
  decided_by?: Record<string, string>;
  decided_at?: string;
  reason?: string;
  expires_at: string;
  closed_at?: string;
  created_at: string;
};

const STATES = ["pending", "decided", "expired", "withdrawn", "all"];
/** One poll of `--wait` (the server holds the request this long unless the ask settles). */
const WAIT_SLICE_MS = 30_000;

function oneLine(a: Ask): string {
  const subject = a.work_item_id ? ` ${a.work_item_id}` : "";
  const state = a.state === "pending" ? "" : ` [${a.state}]`;
  return `${a.id.padEnd(24)} ${a.agent_id.padEnd(16)} ${a.kind.padEnd(8)}${subject}${state}  ${a.about}`;
}

function decider(a: Ask): string {
  const d = a.decided_by;
  if (!d) return "";
  if (d.kind === "agent") return `agent ${d.agent_id}`;
  return d.via === "operator_binding" ? `operator ${d.actor_id} via ${d.binding_id}` : "operator";
}

function detail(a: Ask): string {
  const lines = [
    `ask:       ${a.id} (${a.state})`,
    `agent:     ${a.agent_id}${a.work_item_id ? `, work item ${a.work_item_id}` : " (the whole agent)"}`,
    `kind:      ${a.kind} (${a.source})`,
    `about:     ${a.about}`,
    ...a.detail.split("\n").map((l) => `  | ${l}`),
  ];
  if (a.options.length) {
    lines.push(`options:   ${a.options.join(" | ")}${a.free_text ? " (or any answer)" : ""}`);
  }
  lines.push(`opened:    ${a.created_at}  expires: ${a.expires_at}`);
  if (a.state === "decided") {
    lines.push(`decided:   ${a.decision} (by ${decider(a)} at ${a.decided_at})`);
  }
  if (a.reason) lines.push(`reason:    ${a.reason}`);
  if (a.state === "pending") lines.push(`answer:    holon asks answer ${a.id} <answer>`);
  return lines.join("\n");
}

async function list(flags: Flags & { state?: string; agent?: string }): Promise<void> {
  const state = flags.state ?? "pending";
  if (!STATES.includes(state))
    throw new CliError(`unknown --state ${state}`, `use one of: ${STATES.join(", ")}`);
  const req = await requester(flags);
  const q = new URLSearchParams({ state });
  if (flags.agent) q.set("agent", flags.agent);
  const res = await req<{ asks: Ask[] }>("GET", `/control/asks?${q}`);
  if (flags.json) return printJson(res.asks);
  if (res.asks.length === 0) {
    process.stdout.write(
      state === "pending" ? "nothing is waiting on you\n" : `no asks (${state})\n`,
    );
    return;
  }
  for (const a of res.asks) process.stdout.write(oneLine(a) + "\n");
}

async function show(id: string, flags: Flags & { wait?: boolean }): Promise<void> {
  const req = await requester(flags);
  const path = `/control/asks/${encodeURIComponent(id)}`;
  let res = await req<{ ask: Ask }>("GET", path);
  // --wait: hold on (server-side waits of WAIT_SLICE_MS each) until it is no longer pending.
  while (flags.wait && res.ask.state === "pending") {
    res = await req<{ ask: Ask }>("GET", `${path}?wait_ms=${WAIT_SLICE_MS}`);
  }
  if (flags.json) return printJson(res.ask);
  process.stdout.write(detail(res.ask) + "\n");
}

async function answer(
  id: string,
  words: string[],
  flags: Flags & { reason?: string },
): Promise<void> {
  const decision = words.join(" ").trim();
  if (!decision)
    throw new CliError("the answer is empty", 'usage: holon asks answer <ask_id> "<answer>"');
  const req = await requester(flags);
  const body: Record<string, string> = { decision };
  if (flags.reason !== undefined) body.reason = flags.reason;
  const res = await req<{ ask: Ask; message_id: string | null }>(
    "POST",
    `/control/asks/${encodeURIComponent(id)}/decision`,
    body,
  );
  if (flags.json) return printJson(res);
  process.stdout.write(`decided ${res.ask.id}: ${res.ask.decision} (agent ${res.ask.agent_id})\n`);
}

function withGlobals<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return action(async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const merged = [...args.slice(0, -2), cmd.optsWithGlobals()] as unknown as A;
    await fn(...merged);
  });
}

export function registerAskCommands(program: Command): void {
  const common = clientOptions;
  const asks = common(
    program
      .command("asks")
      .description(
        "What agents wait on you for (questions, halts, budget stops): list, show, answer",
      )
      .option("--state <state>", `which asks: ${STATES.join(", ")} (default pending)`)
      .option("--agent <agent>", "only this agent's asks"),
  ).action(withGlobals(list));
  common(asks.command("show").description("Show one ask; --wait blocks until it is decided"))
    .argument("<ask_id>")
    .option("--wait", "wait until the ask is no longer pending, then show it")
    .action(withGlobals(show));
  common(
    asks
      .command("answer")
      .description(
        "Decide a pending ask: one of its options (continue 5, block item) or your answer",
      ),
  )
    .argument("<ask_id>")
    .argument("<answer...>", "the option or the answer's text")
    .option("--reason <text>", "why (kept with the decision and told to the agent)")
    .action(withGlobals(answer));
}
