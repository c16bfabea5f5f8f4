// Command definitions of the operator surfaces: daemon lifecycle, usage, debugging and the
// TUI. Definitions only (commander); each action imports its implementation lazily.
import { Option, type Command } from "commander";
import { action, homeOption, tokenOption, jsonOption } from "./output.ts";

const home = homeOption;
const json = jsonOption;
const token = tokenOption;

/** The access options `serve` takes, for `daemon start|restart`. */
function serveOptions(cmd: Command): Command {
  return cmd
    .option("--port <port>", "TCP port on the listen host (0 picks a free one)")
    .option("--host <host>", "address to bind")
    .option("--listen <addr>", "host:port to bind (overrides --host/--port)")
    .addOption(
      new Option("--access <mode>", "local, tunnel, lan or tailnet (as for serve)").choices([
        "local",
        "tunnel",
        "lan",
        "tailnet",
      ]),
    )
    .option("--advertise <url>", "the URL clients use to reach this host (for lan/tailnet)")
    .option("--token <token>", "control token (passed to the daemon through its environment)")
    .option("--token-file <path>", "read the control token from a file");
}

export function registerOperatorCommands(program: Command): void {
  const daemon = program
    .command("daemon")
    .description("Run the runtime host in the background and manage it");
  serveOptions(
    daemon
      .command("start")
      .description("Start `holon serve` in the background (no-op when already running alike)"),
  )
    .addOption(home())
    .addOption(json())
    .action(action(async (opts) => (await import("./daemon.ts")).start(opts)));
  serveOptions(
    daemon
      .command("restart")
      .description("Stop the running host (if any) and start it with these options"),
  )
    .option("--timeout <seconds>", "how long each stop phase waits", "10")
    .addOption(home())
    .addOption(json())
    .action(action(async (opts) => (await import("./daemon.ts")).restart(opts)));
  daemon
    .command("stop")
    .description("Shut the host down gracefully; SIGTERM, then SIGKILL after the timeout")
    .option("--timeout <seconds>", "how long each stop phase waits", "10")
    .addOption(home())
    .addOption(json())
    .action(action(async (opts) => (await import("./daemon.ts")).stop(opts)));
  daemon
    .command("status")
    .description("Pid, uptime, endpoint, access mode, version, health and activity")
    .addOption(home())
    .addOption(json())
    .action(action(async (opts) => (await import("./daemon.ts")).status(opts)));
  daemon
    .command("logs")
    .description("Show the runtime log (rotated by size) and the last daemon failure")
    .option("-n, --lines <n>", "how many lines", "50")
    .option("-f, --follow", "keep printing new lines")
    .addOption(home())
    .addOption(json())
    .action(action(async (opts) => (await import("./daemon.ts")).logs(opts)));

  program
    .command("usage")
    .description("Tokens and cost per agent, model and day")
    .option("--agent <id>", "only this agent")
    .option("--since <when>", "7d, 24h, 30m or an ISO time (default: all kept history)")
    .option("--until <when>", "same forms (default: now)")
    .option("--rounds", "list the agent's recent model rounds, each with its cost")
    .option("-n, --limit <n>", "with --rounds: how many (default 50)")
    .option("--by <what>", "work-item: spend by work item, with the children spawned for each")
    .option("--tree", "agents as a tree: each child's spend rolled up under its parent")
    .addOption(home())
    .addOption(token())
    .addOption(json())
    .action(action(async (opts) => (await import("./usage.ts")).usage(opts)));

  program
    .command("tui")
    .description("Live operator console on the running host (HTTP + SSE only)")
    .argument("[agent]", "agent id (default agent when omitted)")
    .option("--display <level>", "info (default), verbose or debug; /display 3|4|5 inside")
    .option("--connect <url>", "a remote host's URL (http://host:port); needs its token")
    .option("--token-file <path>", "with --connect: read the control token from a file")
    .option(
      "--alternate-screen <mode>",
      "auto (default: on a terminal whose TERM is not dumb), always or never; overrides tui.alternate_screen",
    )
    .addOption(home())
    .addOption(token())
    .action(action(async (agent, opts) => (await import("./tui.ts")).tui(agent, opts)));

  const debug =
    program.commands.find((c) => c.name() === "debug") ??
    program.command("debug").description("Troubleshooting tools");
  debug
    .command("latency")
    .description("Where each recent run's time went: queue, context, model, tools, other")
    .argument("[agent]", "agent id (default agent when omitted)")
    .option("-n, --limit <n>", "how many recent events to read", "2000")
    .addOption(home())
    .addOption(token())
    .addOption(json())
    .action(action(async (agent, opts) => (await import("./debug.ts")).latency(agent, opts)));
  debug
    .command("prompt")
    .description("What the agent's next model request holds: sections, sizes, token estimates")
    .argument("[agent]", "agent id (default agent when omitted)")
    .option(
      "--text <text>",
      "preview the turn for this operator prompt (default: the next queued message)",
    )
    .option("--full", "print each section's text, the incoming message and the tool names")
    .addOption(home())
    .addOption(token())
    .addOption(json())
    .action(action(async (agent, opts) => (await import("./memory.ts")).debugPrompt(agent, opts)));
}
