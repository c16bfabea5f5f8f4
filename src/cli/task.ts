// `holon task …`: start a command task for an agent and inspect, stop or feed it. The
// definitions are cheap; each action loads the client only when it runs.
import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { CliError, action, printJson, homeOption, tokenOption, jsonOption } from "./output.ts";
import type { ClientFlags } from "./connect.ts";

type Flags = ClientFlags & { json?: boolean; agent?: string };

type Snapshot = {
  task_id: string;
  status: string;
  summary: string | null;
  created_at: string;
  finished_at: string | null;
  command: {
    cmd: string;
    workdir: string;
    tty: boolean;
    accepts_input: boolean;
    output_path: string;
  };
  input_target: string | null;
  exit_status: { exit_code: number | null; signal: string | null } | null;
  failure: { summary: string } | null;
};

const opts = {
  home: homeOption,
  token: tokenOption,
  json: jsonOption,
  agent: () =>
    new Option("--agent <id>", "the agent that owns the task (default agent when omitted)"),
};

async function client(flags: Flags) {
  const { agentOrDefault, call, connect } = await import("./connect.ts");
  const c = connect(flags);
  const agentId = await agentOrDefault(c, flags.agent);
  return {
    agentId,
    req: <T>(method: string, path: string, body?: unknown) =>
      call(() => c.call<T>(method, path, body)),
    base: `/agents/${encodeURIComponent(agentId)}/tasks`,
    control: `/control/agents/${encodeURIComponent(agentId)}/tasks`,
  };
}

function exitText(t: Snapshot): string {
  if (t.failure && !t.exit_status) return t.failure.summary;
  if (!t.exit_status) return "";
  const e = t.exit_status;
  return e.signal && (e.exit_code === null || e.exit_code > 128)
    ? `signal ${e.signal}`
    : `exit ${e.exit_code}`;
}

function statusLines(t: Snapshot): string {
  return [
    `task:     ${t.task_id}`,
    `status:   ${t.status}${exitText(t) ? ` (${exitText(t)})` : ""}`,
    `command:  ${t.command.cmd}`,
    `workdir:  ${t.command.workdir}`,
    `started:  ${t.created_at}${t.finished_at ? `  finished: ${t.finished_at}` : ""}`,
    `input:    ${t.input_target ?? "none"}`,
    `output:   ${t.command.output_path}`,
  ].join("\n");
}

async function start(words: string[], flags: Flags & Record<string, unknown>): Promise<void> {
  const cmd = words.join(" ");
  if (!cmd.trim()) throw new CliError("the command is empty", 'usage: holon task "<cmd>"');
  const c = await client(flags);
  const body: Record<string, unknown> = { cmd };
  if (typeof flags.workdir === "string") body.workdir = resolve(flags.workdir);
  if (typeof flags.shell === "string") body.shell = flags.shell;
  if (typeof flags.summary === "string") body.summary = flags.summary;
  if (flags.login) body.login = true;
  if (flags.tty) body.tty = true;
  if (flags.acceptsInput) body.accepts_input = true;
  if (flags.continue) body.continue_on_result = true;
  const res = await c.req<{ task: Snapshot }>("POST", c.control, body);
  if (flags.json) return printJson(res);
  process.stdout.write(
    `started ${res.task.task_id} for ${c.agentId} (${res.task.status})\noutput: ${res.task.command.output_path}\n`,
  );
}

async function list(flags: Flags & { all?: boolean }): Promise<void> {
  const c = await client(flags);
  const res = await c.req<{
    tasks: { task_id: string; status: string; command: { cmd: string }; created_at: string }[];
  }>("GET", c.base);
  const tasks = flags.all
    ? res.tasks
    : res.tasks.filter((t) => t.status === "running" || t.status === "queued");
  if (flags.json) return printJson(tasks);
  if (tasks.length === 0) {
    process.stdout.write(
      flags.all ? "no tasks\n" : "no active tasks (--all shows finished ones)\n",
    );
    return;
  }
  for (const t of tasks) {
    const full = t.command.cmd;
    const cmd = full.length > 80 ? full.slice(0, 80) + "…" : full;
    process.stdout.write(`${t.task_id.padEnd(28)} ${t.status.padEnd(10)} ${cmd}\n`);
  }
}

async function status(taskId: string, flags: Flags): Promise<void> {
  const c = await client(flags);
  const res = await c.req<{ task: Snapshot }>("GET", `${c.base}/${encodeURIComponent(taskId)}`);
  if (flags.json) return printJson(res.task);
  process.stdout.write(statusLines(res.task) + "\n");
}

async function output(taskId: string, flags: Flags & { wait?: string | boolean }): Promise<void> {
  const c = await client(flags);
  let query = "";
  if (flags.wait !== undefined) {
    const ms = flags.wait === true ? 60_000 : Number(flags.wait);
    if (!Number.isInteger(ms) || ms < 0 || ms > 60_000)
      throw new CliError("--wait takes milliseconds between 0 and 60000");
    query = `?wait_ms=${ms}`;
  }
  const res = await c.req<{
    retrieval_status: string;
    task: {
      output_preview: string;
      status: string;
      output_truncated: boolean;
      artifacts: { path: string }[];
    };
  }>("GET", `${c.base}/${encodeURIComponent(taskId)}/output${query}`);
  if (flags.json) return printJson(res);
  process.stdout.write(res.task.output_preview);
  if (res.task.output_preview && !res.task.output_preview.endsWith("\n"))
    process.stdout.write("\n");
  if (res.retrieval_status !== "success")
    process.stderr.write(`(task is ${res.task.status}; ${res.retrieval_status})\n`);
  if (res.task.output_truncated)
    process.stderr.write(
      `(preview cut; full output in ${res.task.artifacts.map((a) => a.path).join(", ")})\n`,
    );
}

async function stop(taskId: string, flags: Flags): Promise<void> {
  const c = await client(flags);
  const res = await c.req<{ task: Snapshot; stop_requested: boolean; escalated: boolean }>(
    "POST",
    `${c.control}/${encodeURIComponent(taskId)}/stop`,
    {},
  );
  if (flags.json) return printJson(res);
  process.stdout.write(
    res.stop_requested
      ? `stopped ${res.task.task_id}${res.escalated ? " (killed after the grace period)" : ""}\n`
      : `${res.task.task_id} had already ended (${res.task.status})\n`,
  );
}

async function input(
  taskId: string,
  text: string[],
  flags: Flags & { close?: boolean; newline?: boolean },
): Promise<void> {
  const c = await client(flags);
  let data = text.join(" ");
  if (flags.newline !== false && data.length > 0) data += "\n";
  const body: Record<string, unknown> = { input: data };
  if (flags.close) body.close_input = true;
  const res = await c.req<{
    accepted_input: boolean;
    bytes_written: number;
    reason: string | null;
  }>("POST", `${c.control}/${encodeURIComponent(taskId)}/input`, body);
  if (flags.json) return printJson(res);
  if (!res.accepted_input) throw new CliError(`input refused: ${res.reason ?? "unknown reason"}`);
  process.stdout.write(`sent ${res.bytes_written} byte(s)${flags.close ? ", input closed" : ""}\n`);
}

/**
 * Subcommand actions see the options given to `holon task` too (commander lets the parent
 * take `--home`, `--agent`, … wherever they appear), so flags work before or after the name.
 */
function withGlobals<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return action(async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const merged = [...args.slice(0, -2), cmd.optsWithGlobals()] as unknown as A;
    await fn(...merged);
  });
}

export function registerTaskCommands(program: Command): void {
  const task = program
    .command("task")
    .description("Start a command as a background task, or inspect and control tasks")
    .argument("[cmd...]", "shell command to run as a task")
    .addOption(opts.agent())
    .option("--workdir <path>", "working directory (inside the agent's execution root)")
    .option("--shell <path>", "shell program (default /bin/bash)")
    .option("--summary <text>", "short description of the task")
    .option("--login", "run the shell as a login shell")
    .option("--tty", "run under a pseudo-terminal")
    .option("--accepts-input", "allow sending input later (holon task input)")
    .option("--continue", "let the result start a new turn for the agent")
    .addOption(opts.home())
    .addOption(opts.token())
    .addOption(opts.json())
    .action(
      action(async (words: string[], flags) => {
        if (words.length === 0) {
          task.outputHelp();
          return;
        }
        await start(words, flags);
      }),
    );
  const sub = (name: string, desc: string) =>
    task
      .command(name)
      .description(desc)
      .addOption(opts.agent())
      .addOption(opts.home())
      .addOption(opts.token())
      .addOption(opts.json());
  sub("list", "List the agent's active tasks")
    .option("--all", "include finished tasks")
    .action(withGlobals(list));
  sub("status", "Show one task's status").argument("<task_id>").action(withGlobals(status));
  sub("output", "Print a task's output (a bounded head and tail)")
    .argument("<task_id>")
    .option("--wait [ms]", "wait for the task to finish first (at most 60000 ms)")
    .action(withGlobals(output));
  sub("stop", "Stop a running task and its child processes")
    .argument("<task_id>")
    .action(withGlobals(stop));
  sub("input", "Send a line of input to a task started with --accepts-input or --tty")
    .argument("<task_id>")
    .argument("[text...]", "text to send (a newline is added)")
    .option("--no-newline", "do not add a newline")
    .option("--close", "close the task's input afterwards")
    .action(withGlobals(input));
}
