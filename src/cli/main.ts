// The `holon` command. Definitions here are cheap (commander only); each action imports
// its implementation lazily so `holon --help` and `holon status` start fast.
import { readFileSync } from "node:fs";
import { Command, Option } from "commander";
import { action, homeOption, tokenOption, jsonOption } from "./output.ts";

// package.json sits two levels up from src/cli/ and from dist/cli/ alike.
const { version } = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
) as { version: string };

const program = new Command();
program
  .name("holon")
  .description("Headless, event-driven runtime for long-lived AI agents")
  .version(version)
  .showHelpAfterError();

// Before any command: a state directory that cannot be one (HOLON_HOME naming a file) is
// one clear line, not a raw EEXIST or ENOTDIR from whichever command ran into it first.
program.hook("preAction", async (_program, command) => {
  const flag = (command.optsWithGlobals() as { home?: unknown }).home;
  const given = typeof flag === "string" ? flag : process.env.HOLON_HOME;
  if (!given) return;
  const { homeProblem } = await import("./output.ts");
  const { resolveHome } = await import("../host/paths.ts");
  const problem = homeProblem(
    resolveHome(given, {}),
    typeof flag === "string" ? "--home" : "HOLON_HOME",
  );
  if (problem) {
    process.stderr.write(`error: ${problem}\n`);
    process.exit(1);
  }
});

const home = homeOption;
const token = tokenOption;
const json = jsonOption;

program
  .command("serve")
  .description("Run the runtime host in the foreground with its HTTP control plane")
  .option("--port <port>", "TCP port on the listen host (0 picks a free one)", "9101")
  .option("--host <host>", "address to bind", "127.0.0.1")
  .option("--listen <addr>", "host:port to bind (overrides --host/--port)")
  .addOption(
    new Option(
      "--access <mode>",
      "local (loopback), tunnel (loopback, token on every route), lan or tailnet (non-loopback, token required)",
    ).choices(["local", "tunnel", "lan", "tailnet"]),
  )
  .option("--advertise <url>", "the URL clients use to reach this host (for lan/tailnet)")
  .addOption(home())
  .option("--token <token>", "control token (visible in ps; prefer --token-file)")
  .option("--token-file <path>", "read the control token from a file")
  .action(action(async (opts) => await (await import("./serve.ts")).serve(opts)));

program
  .command("console")
  .description("Open the web console in a browser with a one-time login link (valid 60 s)")
  .option("--no-open", "print the link instead of opening a browser")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (opts) => (await import("./console.ts")).consoleCommand(opts)));

program
  .command("status")
  .description("Show an agent's status (default agent when omitted)")
  .argument("[agent]", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./inspect.ts")).status(agent, opts)));

program
  .command("prompt")
  .description("Send an operator prompt to an agent")
  .argument("[text...]", "prompt text, or - to read it from standard input")
  .option("--file <path>", "read the prompt from a file")
  .option("--agent <id>", "target agent (default agent when omitted)")
  .addOption(
    new Option("--priority <priority>", "queue priority").choices([
      "interject",
      "next",
      "normal",
      "background",
    ]),
  )
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (words, opts) => (await import("./inspect.ts")).prompt(words, opts)));

program
  .command("tail")
  .description("Show an agent's recent events")
  .argument("[agent]", "agent id")
  .option("-n, --limit <n>", "how many events", "20")
  .option("-f, --follow", "keep streaming new events (survives host restarts)")
  .option("--display <level>", "info, verbose (default), debug or trace (raw events)")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./inspect.ts")).tail(agent, opts)));

program
  .command("transcript")
  .description("Show an agent's transcript")
  .argument("[agent]", "agent id")
  .option("-n, --limit <n>", "how many entries", "50")
  .option("--display <level>", "info, verbose (default), debug or trace")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./inspect.ts")).transcript(agent, opts)));

program
  .command("run")
  .description("Run one prompt to completion and print the result")
  .argument("[prompt...]", "what the agent should do, or - to read it from standard input")
  .option("--file <path>", "read the prompt from a file")
  .option("--agent <id>", "use this existing public agent instead of a temporary one")
  .option("--create-agent", "create the --agent if it does not exist")
  .option("--max-turns <n>", "limit the number of model rounds")
  .option("--max-tokens <n>", "budget: stop (exit 3) before tokens would pass this, like 200k")
  .option("--max-budget-usd <amount>", "budget: stop (exit 3) before dollars would pass this")
  .option("--max-time <duration>", "budget: stop (exit 3) after this much wall time, like 10m")
  .option("--workspace-root <path>", "workspace to work in (default: the current directory)")
  .option("--cwd <path>", "working directory inside the workspace")
  .addOption(
    new Option("--trust <trust>", "trust label of the prompt").choices([
      "trusted-operator",
      "trusted-system",
      "trusted-integration",
      "untrusted-external",
    ]),
  )
  .addOption(home())
  .addOption(token())
  .addOption(new Option("--json", "print the RunOnceResponse as JSON"))
  .addOption(
    new Option(
      "--output-format <format>",
      "text (the answer), json (the RunOnceResponse) or stream-json (one event per line, then the RunOnceResponse)",
    ).choices(["text", "json", "stream-json"]),
  )
  .option("--keep", "keep the temporary agent after the run (continue it with --resume)")
  .option("--resume <agent_id>", "continue the temporary agent of an earlier run")
  .option("--display <level>", "show the run's events on stderr at info, verbose or debug")
  .action(action(async (words, opts) => (await import("./run.ts")).run(words, opts)));

const agentCmd = program.command("agent").description("Manage agents");
agentCmd
  .command("list")
  .description("List public agents (--all: private children and archived agents too)")
  .option("--all", "include private children and archived agents")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (opts) => (await import("./agent.ts")).list(opts)));
agentCmd
  .command("status")
  .description("Show an agent's status")
  .argument("[agent]", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./inspect.ts")).status(agent, opts)));
agentCmd
  .command("create")
  .description("Create a named public agent")
  .argument("<agent>", "agent id")
  .option("--workspace-root <path>", "workspace the agent works in")
  .option(
    "--template <template>",
    "initialize the agent from a template: an id (~/.agents/templates/<id>), an absolute directory, or a git tree URL",
  )
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).create(agent, opts)));
for (const [name, act, desc] of [
  ["start", "resume", "Start (resume) a stopped or paused agent"],
  ["stop", "stop", "Stop an agent: abort its current run and stop processing"],
  ["pause", "pause", "Pause an agent: finish the current run, then stop dequeuing"],
  ["wake", "wake", "Wake a sleeping agent"],
] as const) {
  agentCmd
    .command(name)
    .description(desc)
    .argument("[agent]", "agent id")
    .addOption(home())
    .addOption(token())
    .addOption(json())
    .action(action(async (agent, opts) => (await import("./agent.ts")).control(act, agent, opts)));
}

// The agent plane (issue 15): home, AgentGet, archive, delete.
agentCmd
  .command("home")
  .description("Print the agent's home directory")
  .argument("<agent>", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).homeDir(agent, opts)));
agentCmd
  .command("get")
  .description("Show the agent-plane view of an agent (AgentGet): identity, tasks, children")
  .argument("<agent>", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).get(agent, opts)));
agentCmd
  .command("archive")
  .description("Archive an agent: stop it and its children, keep its data, hide it from lists")
  .argument("<agent>", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).archive(agent, opts)));
agentCmd
  .command("delete")
  .description("Delete an agent: its home and live records (a tombstone and its events stay)")
  .argument("<agent>", "agent id")
  .option("--yes", "confirm the deletion")
  .option("--force", "stop its running tasks and children instead of refusing")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).remove(agent, opts)));
agentCmd
  .command("abort")
  .description("Abort the agent's current run (the agent is stopped afterwards)")
  .argument("[agent]", "agent id")
  .option("--run-id <id>", "only abort if this is still the current run")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).abort(agent, opts)));

agentCmd
  .command("set")
  .description(
    "Change one of the agent's own settings (recorded as an event): sandbox.mode (off|auto|required), sandbox.writable_paths, sandbox.hidden_paths (JSON lists of paths), permissions.mode (trusted|ask|read_only), permissions.allow|ask|deny (JSON lists of rules), hooks (JSON)",
  )
  .argument("<agent>", "agent id")
  .argument("<key>", "setting, e.g. sandbox.mode or permissions.deny")
  .argument("<value>", "new value (read as JSON when it parses, else as text)")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(
    action(async (agent, key, value, opts) =>
      (await import("./agent.ts")).settingSet(agent, key, value, opts),
    ),
  );
agentCmd
  .command("unset")
  .description("Return one of the agent's own settings to the host's value")
  .argument("<agent>", "agent id")
  .argument("<key>", "setting, e.g. sandbox.mode")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(
    action(async (agent, key, opts) => (await import("./agent.ts")).settingUnset(agent, key, opts)),
  );

const modelCmd = agentCmd.command("model").description("Per-agent model override");
modelCmd
  .command("get")
  .description("Show the agent's model selection")
  .argument("[agent]", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).modelGet(agent, opts)));
modelCmd
  .command("set")
  .description("Override the agent's primary model (future turns only)")
  .argument("<model>", "model ref, <provider>/<model>")
  .argument("[agent]", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(
    action(async (model, agent, opts) => (await import("./agent.ts")).modelSet(model, agent, opts)),
  );
modelCmd
  .command("clear")
  .description("Return the agent to the runtime default model")
  .argument("[agent]", "agent id")
  .addOption(home())
  .addOption(token())
  .addOption(json())
  .action(action(async (agent, opts) => (await import("./agent.ts")).modelClear(agent, opts)));

// The command groups of their own modules load only when the command line may need them:
// a command defined above (`holon run`, `serve`, `status` …) loads none of them (issue 32);
// anything else (a group, help, a typo to suggest for) registers every group. `agent` is
// defined above but a group adds to it (`holon agent trigger`, timer.ts), so it loads them.
const EXTENDED_BY_GROUPS = new Set(["agent"]);
const ownCommands = new Set(program.commands.flatMap((c) => [c.name(), ...c.aliases()]));
const first = process.argv.slice(2).find((a) => !a.startsWith("-"));
if (first === undefined || !ownCommands.has(first) || EXTENDED_BY_GROUPS.has(first)) {
  const groups = await Promise.all([
    import("./config.ts"),
    import("./task.ts"),
    import("./workspace.ts"),
    import("./skills.ts"),
    import("./timer.ts"),
    import("./work.ts"),
    import("./asks.ts"),
    import("./budget.ts"),
    import("./operator-commands.ts"),
    import("./mcp.ts"),
    import("./store.ts"),
  ]);
  const [config, task, workspace, skills, timer, work, asks, budget, operator, mcp, store] = groups;
  config.registerConfigCommands(program);
  task.registerTaskCommands(program);
  workspace.registerWorkspaceCommands(program);
  skills.registerSkillsCommands(program);
  timer.registerTimerCommands(program);
  work.registerWorkCommands(program);
  asks.registerAskCommands(program);
  budget.registerBudgetCommands(program);
  operator.registerOperatorCommands(program);
  mcp.registerMcpCommands(program); // `holon mcp …` (other subcommands attach to the group it returns)
  store.registerStoreCommands(program);
}

await program.parseAsync(process.argv);
