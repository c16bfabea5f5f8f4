// `holon run`: one prompt, one settled turn. Uses the running host when there is one,
// otherwise hosts the runtime in-process for the length of the run.
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { HolonError } from "../domain/errors.ts";
import type { RunOnceOptions, RunOnceResponse, RunProgress } from "../host/run-once.ts";
import { homePaths, resolveHome } from "../host/paths.ts";
import type { CatalogEvent } from "../domain/events.ts";
import {
  IDLE,
  nextActivity,
  oneLine,
  painter,
  parseDisplayLevel,
  presentEvent,
  renderActivity,
  renderItem,
  shows,
  type ActivityState,
  type DisplayLevel,
} from "../client/presentation.ts";
import { CliError, printJson } from "./output.ts";
import { checkPromptSize, readPrompt } from "./prompt-input.ts";

// Taken with getBuiltinModule: a static ESM import of node:http loads undici (see
// providers/http-fetch.ts), which a run that talks to a running host never needs.
const { request: httpRequest } = process.getBuiltinModule("node:http");

type RunFlags = {
  agent?: string;
  outputFormat?: string;
  keep?: boolean;
  resume?: string;
  display?: string;
  createAgent?: boolean;
  json?: boolean;
  maxTurns?: string;
  maxTokens?: string;
  maxBudgetUsd?: string;
  maxTime?: string;
  workspaceRoot?: string;
  cwd?: string;
  trust?: string;
  home?: string;
  token?: string;
  file?: string;
};

const TRUST: Record<string, RunOnceOptions["trust"]> = {
  "trusted-operator": "trusted_operator",
  "trusted-system": "trusted_system",
  "trusted-integration": "trusted_integration",
  "untrusted-external": "untrusted_external",
};

export async function run(words: string[], flags: RunFlags): Promise<void> {
  const text = await readPrompt({ words, file: flags.file });
  const opts: RunOnceOptions = { text };
  if (flags.agent) opts.agent_id = flags.agent;
  if (flags.createAgent) {
    if (!flags.agent) throw new CliError("--create-agent needs --agent <id>");
    opts.create_agent = true;
  }
  if (flags.maxTurns !== undefined) {
    const n = Number(flags.maxTurns);
    if (!Number.isInteger(n) || n < 1) throw new CliError("--max-turns must be a positive integer");
    opts.max_turns = n;
  }
  const limits = { tokens: flags.maxTokens, usd: flags.maxBudgetUsd, time: flags.maxTime };
  if (Object.values(limits).some((v) => v !== undefined)) {
    // The budget command group (and its HTTP requester) loads only for a run that sets one.
    const { limitsFromFlags } = await import("./budget.ts");
    const budget = limitsFromFlags(limits, {
      tokens: "--max-tokens",
      usd: "--max-budget-usd",
      rounds: "--max-turns",
      time: "--max-time",
    });
    if (Object.keys(budget).length > 0) opts.budget = budget;
  }
  // Relative to this shell, like every path on a command line; the host's cwd means nothing here.
  if (flags.workspaceRoot) opts.workspace_root = existingDir(flags.workspaceRoot);
  if (flags.cwd) opts.cwd = flags.cwd;
  if (flags.trust) {
    const t =
      TRUST[flags.trust] ??
      (Object.values(TRUST).includes(flags.trust as never)
        ? (flags.trust as RunOnceOptions["trust"])
        : undefined);
    if (!t) throw new CliError(`--trust must be one of ${Object.keys(TRUST).join(", ")}`);
    opts.trust = t;
  }
  if (flags.keep) opts.keep = true;
  if (flags.resume) {
    if (flags.agent) throw new CliError("give --agent or --resume, not both");
    opts.resume = flags.resume;
  }
  // The same limit with or without a host: the request /control/run would carry.
  checkPromptSize(text, {
    ...opts,
    workspace_root: opts.workspace_root ?? process.cwd(),
    stream_events: true,
  });
  const format = flags.outputFormat ?? (flags.json ? "json" : "text");
  if (format !== "text" && format !== "json" && format !== "stream-json") {
    throw new CliError("--output-format must be text, json or stream-json");
  }
  let display: DisplayLevel | undefined;
  if (flags.display !== undefined) {
    display = parseDisplayLevel(flags.display);
    if (!display || display === "trace") {
      throw new CliError("--display must be info, verbose or debug (or 3, 4, 5)");
    }
  }
  // Human output: either a progress line rewritten in place, or (--display) the run's events
  // as the presentation layer shows them, on stderr so stdout stays the answer.
  const live = process.stderr.isTTY && format === "text" && !display;
  const line = live ? progressLine() : undefined;
  const progress = line ? line.progress : () => {};
  const paint = painter(process.stderr);
  const onEvent: ((e: CatalogEvent) => void) | undefined =
    format === "stream-json"
      ? (e) => process.stdout.write(JSON.stringify(e) + "\n")
      : display
        ? (e) => {
            const it = presentEvent(e);
            if (shows(it, display)) process.stderr.write(renderItem(it, display, paint) + "\n");
          }
        : line?.event;

  // Ctrl-C: the first aborts the turn (its commands are stopped) and exits non-zero once it
  // has; a second one exits at once.
  const interrupt = new AbortController();
  const onSigint = () => {
    if (interrupt.signal.aborted) {
      process.stderr.write("\nholon: quitting without waiting\n");
      process.exit(130);
    }
    process.stderr.write("\nholon: aborting the run (Ctrl-C again to quit at once)\n");
    interrupt.abort();
  };
  process.on("SIGINT", onSigint);
  // The client (and its SSE parser) loads only when a host may be running for this home.
  const client = existsSync(homePaths(resolveHome(flags.home)).runtimeFile)
    ? (await import("./connect.ts")).tryConnect(flags)
    : undefined;
  let result: RunOnceResponse;
  try {
    if (client) {
      // paths must mean the same thing to the host as to this shell
      if (!opts.workspace_root && !opts.agent_id) opts.workspace_root = process.cwd();
      result = await remoteRun(client.conn, opts, progress, interrupt.signal, onEvent);
    } else {
      result = await localRun(resolveHome(flags.home), opts, progress, interrupt.signal, onEvent);
    }
  } finally {
    process.off("SIGINT", onSigint);
    line?.stop();
    if (live) process.stderr.write("\r\x1b[K");
  }
  if (format === "json") printJson(result);
  else if (format === "stream-json") process.stdout.write(JSON.stringify(result) + "\n");
  else {
    if (result.final_text) process.stdout.write(result.final_text + "\n");
    if (result.temporary_agent) {
      process.stderr.write(
        `holon: run agent ${result.agent_id}${result.kept ? " (kept)" : ""}; continue it with: holon run --resume ${result.agent_id} "…"\n`,
      );
    }
    for (const t of result.tasks_still_running) {
      process.stderr.write(
        `holon: task ${t.task_id} is still ${t.status}${t.summary ? ` (${t.summary})` : ""}; its agent is kept\n`,
      );
    }
    if (!result.ok) {
      const summary = (result.failure_artifact?.summary as string | undefined) ?? result.outcome;
      process.stderr.write(`holon: run ${result.outcome}: ${summary}\n`);
    }
  }
  // Exit 3: the run's budget ran out (its failure artifact says where).
  if (!result.ok) {
    process.exitCode = interrupt.signal.aborted
      ? 130
      : result.failure_artifact?.kind === "budget_exhausted"
        ? 3
        : 1;
  }
}

function existingDir(path: string): string {
  const abs = resolve(path);
  let st;
  try {
    st = statSync(abs);
  } catch {
    throw new CliError(`--workspace-root ${abs} does not exist`);
  }
  if (!st.isDirectory()) throw new CliError(`--workspace-root ${abs} is not a directory`);
  return abs;
}

async function localRun(
  home: string,
  opts: RunOnceOptions,
  progress: (p: RunProgress) => void,
  signal: AbortSignal,
  onEvent?: (e: CatalogEvent) => void,
): Promise<RunOnceResponse> {
  // A one-shot run parses most schemas once or twice: zod's compiled fast path (built with
  // `new Function` on a schema's first parse) costs milliseconds per schema and never pays
  // back here. A long-running host keeps it.
  const { z } = await import("zod");
  z.config({ jitless: true });
  // Every request goes through node:http (providers/http-fetch.ts); without this the SDK's
  // `new Headers()` would load undici (30-40 ms) before the first provider request.
  (await import("../providers/lite-web.ts")).useLiteHeaders();
  const { RuntimeHost } = await import("../host/host.ts");
  const { runOnce } = await import("../host/run-once.ts");
  let host;
  try {
    host = await RuntimeHost.open({ home, autostartAgents: false });
  } catch (err) {
    if (err instanceof HolonError) throw new CliError(err.message, err.operatorHint ?? err.hint);
    throw err;
  }
  try {
    await host.ready(); // the start-up work of subsystems that load on demand (MCP)
    return await runOnce(host, opts, progress, signal, onEvent);
  } catch (err) {
    if (err instanceof HolonError)
      throw new CliError(`${err.message} (${err.kind})`, err.operatorHint ?? err.hint);
    throw err;
  } finally {
    await host.shutdown();
  }
}

function remoteRun(
  conn: { socketPath?: string; host?: string; port?: number; token?: string },
  opts: RunOnceOptions,
  progress: (p: RunProgress) => void,
  signal: AbortSignal,
  onEvent?: (e: CatalogEvent) => void,
): Promise<RunOnceResponse> {
  return new Promise((resolvePromise, reject) => {
    const payload = Buffer.from(JSON.stringify(onEvent ? { ...opts, stream_events: true } : opts));
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "content-length": String(payload.length),
    };
    if (conn.token) headers.authorization = `Bearer ${conn.token}`;
    const target = conn.socketPath
      ? { socketPath: conn.socketPath }
      : { host: conn.host, port: conn.port };
    const req = httpRequest({ ...target, method: "POST", path: "/control/run", headers }, (res) => {
      let buf = "";
      let done = false;
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!line.trim()) continue;
          const msg = JSON.parse(line) as {
            type: string;
            result?: RunOnceResponse;
            event?: CatalogEvent;
            error?: { kind: string; message: string; hint?: string };
          } & RunProgress;
          if (msg.type === "progress") progress(msg);
          else if (msg.type === "event") onEvent?.(msg.event!);
          else if (msg.type === "result") {
            done = true;
            resolvePromise(msg.result!);
          } else if (msg.type === "error" || (msg as { ok?: boolean }).ok === false) {
            done = true;
            const e = msg.error!;
            reject(new CliError(`${e.message} (${e.kind})`, e.hint));
          }
        }
      });
      res.on("end", () => {
        if (done) return;
        try {
          const parsed = JSON.parse(buf) as {
            error?: { kind: string; message: string; hint?: string };
          };
          if (parsed.error)
            return reject(
              new CliError(`${parsed.error.message} (${parsed.error.kind})`, parsed.error.hint),
            );
        } catch {
          // fall through
        }
        reject(new CliError("the runtime closed the run stream without a result"));
      });
    });
    // Going away is how the host learns of Ctrl-C: it aborts the turn and stops its commands.
    signal.addEventListener(
      "abort",
      () => {
        req.destroy();
        reject(
          new CliError("run aborted: the runtime stops its turn and its commands", undefined, 130),
        );
      },
      { once: true },
    );
    req.once("error", (err) => {
      if (!signal.aborted) reject(new CliError(`could not reach the runtime: ${err.message}`));
    });
    req.end(payload);
  });
}

/**
 * One status line on the terminal, rewritten in place: the run's clock, then what runs now
 * (the presentation layer's activity line, from the run's events) with its own clock. Both
 * keep moving while a tool runs: the line is redrawn every 100 ms, not only on events.
 */
function progressLine() {
  const started = Date.now();
  let activity: ActivityState = IDLE;
  let fallback = "starting";
  const draw = () => {
    const secs = `[${((Date.now() - started) / 1000).toFixed(1)}s] `;
    const width = Math.max(40, (process.stderr.columns ?? 100) - 1 - secs.length);
    const detail = renderActivity(activity, Date.now(), width) ?? oneLine(fallback, width);
    process.stderr.write(`\r\x1b[K${secs}${detail}`);
  };
  const timer = setInterval(draw, 100);
  timer.unref();
  return {
    progress: (p: RunProgress) => {
      fallback = p.detail ?? p.phase;
      // Ctrl-C: what runs is being stopped, say that instead.
      if (p.phase === "aborting") activity = IDLE;
      draw();
    },
    event: (e: CatalogEvent) => {
      activity = nextActivity(activity, e);
      draw();
    },
    stop: () => clearInterval(timer),
  };
}
