// `holon timer …` (create, list, cancel an agent's timers) and `holon agent trigger` (show,
// rotate or revoke the agent's external trigger URL). Definitions are cheap; each action
// loads the client only when it runs. Also the waiting lines `holon status` prints.
import type { Command } from "commander";
import { CliError, action, printJson, homeOption, tokenOption, jsonOption } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

type Flags = ClientFlags & { json?: boolean };

type Timer = {
  timer_id: string;
  kind: string;
  status: string;
  summary: string;
  next_fire_at: string | null;
  interval_ms?: number;
  cron?: string;
  tz?: string;
  fire_count: number;
  skipped_count: number;
  last_fired_at?: string;
};

const UNITS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** "10m", "1h30m", "2d", "500ms" → milliseconds. */
export function parseDuration(text: string): number {
  const s = text.trim().toLowerCase();
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    matched = re.lastIndex;
  }
  if (s === "" || matched !== s.length) {
    throw new CliError(`'${text}' is not a duration`, "use e.g. 30s, 10m, 1h30m, 2d");
  }
  return Math.round(total);
}

const opts = {
  home: homeOption,
  token: tokenOption,
  json: jsonOption,
};

async function client(flags: Flags, agent: string | undefined) {
  const { agentOrDefault, call, connect } = await import("./connect.ts");
  const c = connect(flags);
  const agentId = await agentOrDefault(c, agent);
  return {
    agentId,
    req: <T>(method: string, path: string, body?: unknown) =>
      call(() => c.call<T>(method, path, body)),
    control: `/control/agents/${encodeURIComponent(agentId)}`,
    read: `/agents/${encodeURIComponent(agentId)}`,
  };
}

function schedule(t: Timer): string {
  switch (t.kind) {
    case "interval":
      return `every ${t.interval_ms} ms`;
    case "cron":
      return `cron "${t.cron}"${t.tz ? ` ${t.tz}` : ""}`;
    default:
      return "once";
  }
}

function timerLine(t: Timer): string {
  const next = t.next_fire_at ?? "-";
  const counts = `fired ${t.fire_count}${t.skipped_count ? `, skipped ${t.skipped_count}` : ""}`;
  return `${t.timer_id.padEnd(26)} ${t.status.padEnd(9)} ${next.padEnd(24)} ${schedule(t)} (${counts})  ${t.summary}`;
}

async function create(
  agent: string,
  words: string[],
  flags: Flags & { in?: string; at?: string; every?: string; cron?: string; tz?: string },
): Promise<void> {
  const summary = words.join(" ").trim();
  if (!summary)
    throw new CliError(
      "the timer needs a summary",
      'usage: holon timer <agent> --in 10m "what to check"',
    );
  const body: Record<string, unknown> = { summary };
  if (flags.in !== undefined) body.duration_ms = parseDuration(flags.in);
  if (flags.at !== undefined) body.at = flags.at;
  if (flags.every !== undefined) body.interval_ms = parseDuration(flags.every);
  if (flags.cron !== undefined) body.cron = flags.cron;
  if (flags.tz !== undefined) body.tz = flags.tz;
  if (
    flags.in === undefined &&
    flags.at === undefined &&
    flags.every === undefined &&
    flags.cron === undefined
  ) {
    throw new CliError("say when the timer fires", "give --in, --at, --every or --cron");
  }
  const c = await client(flags, agent);
  const res = await c.req<{ timer: Timer }>("POST", `${c.control}/timers`, body);
  if (flags.json) return printJson(res.timer);
  process.stdout.write(
    `timer ${res.timer.timer_id} for ${c.agentId}: ${schedule(res.timer)}, next at ${res.timer.next_fire_at}\n`,
  );
}

async function list(agent: string | undefined, flags: Flags): Promise<void> {
  const c = await client(flags, agent);
  const res = await c.req<{ timers: Timer[]; active_count: number }>("GET", `${c.read}/timers`);
  if (flags.json) return printJson(res.timers);
  if (res.timers.length === 0) {
    process.stdout.write(`${c.agentId} has no timers\n`);
    return;
  }
  process.stdout.write(`${res.active_count} active\n`);
  for (const t of res.timers) process.stdout.write(timerLine(t) + "\n");
}

async function cancel(agent: string, timerId: string, flags: Flags): Promise<void> {
  const c = await client(flags, agent);
  const res = await c.req<{ timer: Timer }>(
    "POST",
    `${c.control}/timers/${encodeURIComponent(timerId)}/cancel`,
    {},
  );
  if (flags.json) return printJson(res.timer);
  process.stdout.write(`cancelled ${res.timer.timer_id} (${res.timer.summary})\n`);
}

type Descriptor = {
  external_trigger_id: string;
  trigger_url: string | null;
  status: string;
  delivery_count: number;
  last_delivery_at: string | null;
};

async function trigger(
  agent: string | undefined,
  flags: Flags & { rotate?: boolean; revoke?: boolean },
): Promise<void> {
  if (flags.rotate && flags.revoke) throw new CliError("give --rotate or --revoke, not both");
  const c = await client(flags, agent);
  const path = `${c.control}/external-trigger`;
  const res = flags.rotate
    ? await c.req<{ external_trigger: Descriptor }>("POST", `${path}/rotate`, {})
    : flags.revoke
      ? await c.req<{ external_trigger: Descriptor }>("POST", `${path}/revoke`, {})
      : await c.req<{ external_trigger: Descriptor }>("GET", path);
  const d = res.external_trigger;
  if (flags.json) return printJson(d);
  if (flags.revoke) {
    process.stdout.write(
      `revoked ${d.external_trigger_id}; its URL no longer works (make a new one with holon agent trigger ${c.agentId} --rotate)\n`,
    );
    return;
  }
  if (d.trigger_url === null) {
    throw new CliError("the host has no HTTP listener to put in a URL", "run holon serve");
  }
  // The URL alone on stdout, so `TRIGGER_URL=$(holon agent trigger main)` works.
  process.stdout.write(`${d.trigger_url}\n`);
  process.stderr.write(
    `${d.external_trigger_id} for ${c.agentId}: ${d.delivery_count} deliveries${d.last_delivery_at ? `, last ${d.last_delivery_at}` : ""}. This URL is a secret: anyone holding it can wake the agent.\n`,
  );
}

export function registerTimerCommands(program: Command): void {
  const timer = program
    .command("timer")
    .description("Wake an agent with a timer tick: once (--in, --at), every interval, or on a cron")
    .argument("<agent>", "agent id")
    .argument("<summary...>", "what the agent receives when the timer fires")
    .option("--in <duration>", "fire once after this long (30s, 10m, 1h30m, 2d)")
    .option("--at <time>", "fire once at this ISO 8601 time")
    .option(
      "--every <duration>",
      "fire every interval (first fire after one interval, or --in/--at)",
    )
    .option("--cron <expr>", 'fire on a cron schedule, e.g. "0 9 * * 1-5"')
    .option("--tz <zone>", "time zone of the cron schedule (IANA name, default UTC)")
    .addOption(opts.home())
    .addOption(opts.token())
    .addOption(opts.json())
    .action(action(create));
  timer
    .command("list")
    .description("List an agent's timers: active ones first, then recently finished")
    .argument("[agent]", "agent id (default agent when omitted)")
    .addOption(opts.home())
    .addOption(opts.token())
    .addOption(opts.json())
    // `timer` has the same flags, and commander gives a flag after the agent to `timer`.
    .action(
      action((agent: string | undefined, _o, cmd: Command) => list(agent, cmd.optsWithGlobals())),
    );
  timer
    .command("cancel")
    .description("Cancel an active timer")
    .argument("<agent>", "agent id")
    .argument("<timer_id>", "timer id (from holon timer list)")
    .addOption(opts.home())
    .addOption(opts.token())
    .addOption(opts.json())
    .action(
      action((agent: string, id: string, _o, cmd: Command) =>
        cancel(agent, id, cmd.optsWithGlobals()),
      ),
    );

  // `holon agent trigger` lives with the other waiting commands; `agent` is defined in main.ts.
  program.commands
    .find((c) => c.name() === "agent")
    ?.command("trigger")
    .description("Print the agent's external trigger URL (a secret: POSTing to it wakes the agent)")
    .argument("[agent]", "agent id (default agent when omitted)")
    .option("--rotate", "revoke the current URL and make a new one")
    .option("--revoke", "revoke the URL (CancelExternalTrigger)")
    .addOption(opts.home())
    .addOption(opts.token())
    .addOption(opts.json())
    .action(action(trigger));
}

/** The waiting plane's lines in `holon status` (from the summary's `waiting` block). */
export function waitingLines(w: any): string[] {
  if (!w) return [];
  const lines: string[] = [];
  if (w.timers?.active)
    lines.push(
      `timers:   ${w.timers.active} active, next ${w.timers.next_fire_at} (${w.timers.next_timer_id})`,
    );
  const h = w.pending_wake_hint;
  if (h)
    lines.push(
      `wake hint: pending from ${h.source} (×${h.count}, last ${h.last_received_at})${h.body ? `, ${h.body.bytes} bytes ${h.body.content_type}` : ""}`,
    );
  const t = w.external_trigger;
  if (t)
    lines.push(
      `trigger:  ${t.external_trigger_id} ${t.status}, ${t.delivery_count} deliveries (holon agent trigger shows the URL)`,
    );
  return lines;
}
