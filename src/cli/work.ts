// `holon work …`: the operator's view of an agent's work items: enqueue one, list and show
// them, and close, park or release one. The definitions are cheap; each action loads the
// client only when it runs.
import type { Command } from "commander";
import { CliError, action, printJson, clientOptions } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

type Flags = ClientFlags & { json?: boolean };

type Item = {
  id: string;
  objective: string;
  state: string;
  view: string;
  readiness: string;
  plan_status: string;
  is_current: boolean;
  todo_progress: { done: number; total: number };
  todo_list?: { text: string; state: string }[];
  blocked_by?: string;
  recheck_at?: string;
  recheck_consumed_at?: string;
  created_at: string;
  updated_at: string;
  completed_at?: string;
  plan_artifact: { path: string; bytes: number; preview: string; preview_complete: boolean };
  completion_report: { text: string; source: string } | null;
  held_by_asks?: {
    ask_id: string;
    kind: string;
    source: string;
    about: string;
    options: string[];
  }[];
};

const STATES = ["current", "open", "queued", "blocked", "waiting_for_operator", "completed", "all"];

async function client(flags: Flags, agent: string) {
  const { call, connect } = await import("./connect.ts");
  const c = connect(flags);
  const a = encodeURIComponent(agent);
  return {
    req: <T>(method: string, path: string, body?: unknown) =>
      call(() => c.call<T>(method, path, body)),
    base: `/agents/${a}/work-items`,
    control: `/control/agents/${a}/work-items`,
  };
}

function oneLine(i: Item): string {
  const todos = i.todo_progress.total
    ? ` todos ${i.todo_progress.done}/${i.todo_progress.total}`
    : "";
  const blocked = i.blocked_by ? `  (blocked: ${i.blocked_by})` : "";
  return `${i.id.padEnd(26)} ${i.view.padEnd(20)} ${i.plan_status.padEnd(11)}${todos.padEnd(12)} ${i.objective}${blocked}`;
}

function detail(i: Item): string {
  const lines = [
    `work item: ${i.id}${i.is_current ? " (current)" : ""}`,
    `objective: ${i.objective}`,
    `state:     ${i.state} / ${i.view} (${i.readiness}); plan ${i.plan_status}`,
    `created:   ${i.created_at}  updated: ${i.updated_at}${i.completed_at ? `  completed: ${i.completed_at}` : ""}`,
    `plan:      ${i.plan_artifact.path} (${i.plan_artifact.bytes} bytes)`,
  ];
  if (i.plan_artifact.preview.trim()) {
    lines.push(
      ...i.plan_artifact.preview
        .trimEnd()
        .split("\n")
        .map((l) => `  | ${l}`),
      ...(i.plan_artifact.preview_complete ? [] : ["  | … (preview truncated)"]),
    );
  }
  if (i.todo_list?.length) {
    lines.push(`todos:     ${i.todo_progress.done}/${i.todo_progress.total} done`);
    const mark: Record<string, string> = { completed: "x", in_progress: ">", pending: " " };
    for (const t of i.todo_list) lines.push(`  [${mark[t.state] ?? "?"}] ${t.text}`);
  }
  for (const a of i.held_by_asks ?? []) {
    const halted = a.source === "runaway_guard" || a.source === "max_turns";
    lines.push(
      `${halted ? "halted:    " : "asks you:  "}${a.about} (ask ${a.ask_id})`,
      `           answer: holon asks answer ${a.ask_id} ${a.options.length ? `"${a.options.join('" | "')}"` : '"<your answer>"'}`,
    );
  }
  if (i.blocked_by) {
    lines.push(`blocked:   ${i.blocked_by}`);
    if (i.recheck_at)
      lines.push(
        `recheck:   ${i.recheck_at}${i.recheck_consumed_at ? " (reminder delivered)" : ""}`,
      );
  }
  if (i.completion_report) {
    lines.push(
      `report (${i.completion_report.source}):`,
      ...i.completion_report.text.split("\n").map((l) => `  ${l}`),
    );
  }
  return lines.join("\n");
}

type BudgetFlags = {
  budgetTokens?: string;
  budgetUsd?: string;
  budgetRounds?: string;
  budgetTime?: string;
};

async function add(agent: string, words: string[], flags: Flags & BudgetFlags): Promise<void> {
  const objective = words.join(" ").trim();
  if (!objective)
    throw new CliError("the objective is empty", 'usage: holon work add <agent> "<objective>"');
  const { limitsFromFlags } = await import("./budget.ts");
  const budget = await limitsFromFlags(
    {
      tokens: flags.budgetTokens,
      usd: flags.budgetUsd,
      rounds: flags.budgetRounds,
      time: flags.budgetTime,
    },
    {
      tokens: "--budget-tokens",
      usd: "--budget-usd",
      rounds: "--budget-rounds",
      time: "--budget-time",
    },
  );
  const c = await client(flags, agent);
  const res = await c.req<{ work_item: Item }>("POST", c.control, {
    objective,
    ...(Object.keys(budget).length ? { budget } : {}),
  });
  if (flags.json) return printJson(res);
  process.stdout.write(`queued ${res.work_item.id} for ${agent}: ${res.work_item.objective}\n`);
}

async function list(agent: string, flags: Flags & { state?: string }): Promise<void> {
  const state = flags.state ?? "all";
  if (!STATES.includes(state))
    throw new CliError(`unknown --state ${state}`, `use one of: ${STATES.join(", ")}`);
  const c = await client(flags, agent);
  const res = await c.req<{ work_items: Item[] }>("GET", `${c.base}?state=${state}`);
  if (flags.json) return printJson(res.work_items);
  if (res.work_items.length === 0) {
    process.stdout.write(`no work items (${state})\n`);
    return;
  }
  for (const i of res.work_items) process.stdout.write(oneLine(i) + "\n");
}

type ItemBudget = {
  limits: Record<string, number> | null;
  spent: {
    tokens: number;
    input_tokens: number;
    output_tokens: number;
    cached_input_tokens: number;
    usd: number;
    rounds: number;
    time_ms: number;
  };
  hold: { summary: string } | null;
};

function budgetLine(b: ItemBudget): string[] {
  const s = b.spent;
  const spentOf: Record<string, number> = {
    tokens: s.tokens,
    usd: s.usd,
    rounds: s.rounds,
    time_ms: s.time_ms,
  };
  const lines = [
    `spent:     ${s.tokens} tokens (${s.input_tokens} in, ${s.cached_input_tokens} cached, ${s.output_tokens} out), $${s.usd.toFixed(4)}, ${s.rounds} rounds`,
  ];
  for (const [d, limit] of Object.entries(b.limits ?? {})) {
    lines.push(
      `budget:    ${d === "time_ms" ? "time" : d}: ${spentOf[d] ?? 0} spent / 0 reserved / ${limit} limit`,
    );
  }
  if (b.hold) lines.push(`halted:    ${b.hold.summary}`);
  return lines;
}

async function show(agent: string, id: string, flags: Flags): Promise<void> {
  const c = await client(flags, agent);
  const res = await c.req<{ work_item: Item; budget?: ItemBudget }>(
    "GET",
    `${c.base}/${encodeURIComponent(id)}`,
  );
  if (flags.json)
    return printJson(res.budget ? { ...res.work_item, budget_spend: res.budget } : res.work_item);
  const lines = [detail(res.work_item)];
  if (res.budget) lines.push(...budgetLine(res.budget));
  process.stdout.write(lines.join("\n") + "\n");
}

async function done(agent: string, id: string, flags: Flags & { note?: string }): Promise<void> {
  const c = await client(flags, agent);
  const body = flags.note !== undefined ? { note: flags.note } : {};
  const res = await c.req<{ work_item: Item }>(
    "POST",
    `${c.control}/${encodeURIComponent(id)}/complete`,
    body,
  );
  if (flags.json) return printJson(res);
  process.stdout.write(`completed ${res.work_item.id}${flags.note ? " with a note" : ""}\n`);
}

async function block(
  agent: string,
  id: string,
  flags: Flags & { reason?: string; recheckAfter?: string },
): Promise<void> {
  if (!flags.reason?.trim()) throw new CliError("--reason is required and must not be empty");
  const body: Record<string, unknown> = { reason: flags.reason };
  if (flags.recheckAfter !== undefined) {
    const ms = Number(flags.recheckAfter);
    if (!Number.isInteger(ms) || ms <= 0)
      throw new CliError("--recheck-after takes a positive number of milliseconds");
    body.recheck_after_ms = ms;
  }
  const c = await client(flags, agent);
  const res = await c.req<{ work_item: Item }>(
    "POST",
    `${c.control}/${encodeURIComponent(id)}/block`,
    body,
  );
  if (flags.json) return printJson(res);
  process.stdout.write(`blocked ${res.work_item.id}: ${res.work_item.blocked_by}\n`);
}

async function unblock(agent: string, id: string, flags: Flags): Promise<void> {
  const c = await client(flags, agent);
  const res = await c.req<{ work_item: Item }>(
    "POST",
    `${c.control}/${encodeURIComponent(id)}/unblock`,
    {},
  );
  if (flags.json) return printJson(res);
  process.stdout.write(`unblocked ${res.work_item.id}\n`);
}

function withGlobals<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return action(async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const merged = [...args.slice(0, -2), cmd.optsWithGlobals()] as unknown as A;
    await fn(...merged);
  });
}

export function registerWorkCommands(program: Command): void {
  const work = program
    .command("work")
    .description("An agent's work items: enqueue, list, show, complete, block, unblock");
  const sub = (name: string, desc: string) =>
    clientOptions(work.command(name).description(desc).argument("<agent>", "agent id"));
  sub("add", "Queue a work item for the agent (no message is sent)")
    .argument("<objective...>", "what the work should achieve")
    .option("--budget-tokens <n>", "the item's token budget, like 500k")
    .option("--budget-usd <amount>", "the item's dollar budget (needs model prices)")
    .option("--budget-rounds <n>", "the item's model-round budget")
    .option("--budget-time <duration>", "the item's wall-time budget, like 2h")
    .action(withGlobals(add));
  sub("list", "List the agent's work items with their views and todo progress")
    .option("--state <state>", `which items: ${STATES.join(", ")} (default all)`)
    .action(withGlobals(list));
  sub("show", "Show one work item: objective, plan, todos, blocker, recheck, report")
    .argument("<work_item_id>")
    .action(withGlobals(show));
  sub("done", "Complete a work item as the operator (a mistaken or obsolete one)")
    .argument("<work_item_id>")
    .option("--note <text>", "why; it becomes the item's result summary")
    .action(withGlobals(done));
  sub("block", "Park a work item")
    .argument("<work_item_id>")
    .requiredOption("--reason <text>", "what it waits for")
    .option(
      "--recheck-after <ms>",
      "remind the agent after this many milliseconds (default one hour)",
    )
    .action(withGlobals(block));
  sub("unblock", "Clear a work item's blocker")
    .argument("<work_item_id>")
    .action(withGlobals(unblock));
}
