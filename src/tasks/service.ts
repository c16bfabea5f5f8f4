// The task plane: managed command tasks. Records live in SQLite; the processes run
// detached under the process layer, so they survive the host. The service watches every
// live task, settles it exactly once when it ends (terminal record + task_result message in
// one transaction), and on start-up reattaches to what a previous host left running.
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, statfsSync } from "node:fs";
import { classifyStorageError } from "../store/health.ts";
import { basename, join } from "node:path";
import { HolonError } from "../domain/errors.ts";
import type { FailureArtifact } from "../domain/provider.ts";
import {
  TERMINAL_TASK_STATUSES,
  type ChildSupervision,
  type TaskRecord,
  type TaskSnapshot,
  type TaskStatus,
} from "../domain/task.ts";
import type { Ingress } from "../agent/ingress.ts";
import type { AgentOwnedWork } from "../agent/lifecycle.ts";
import { unknownAgent } from "../domain/errors.ts";
import type { Store } from "../store/db.ts";
import { filePreview } from "./output-preview.ts";
import { BUILTIN_COMMAND_POLICY, commandEnvOf, type CommandPolicy } from "./command-policy.ts";
import { ensureSpawner } from "./spawner.ts";
import { droppedBytes } from "./output-cap.ts";
import {
  closeInput,
  reattach,
  startProcess,
  stopProcess,
  waitForExit,
  writeInput,
  defaultShell,
  PROCESS_FILES,
  type ExitStatus,
  type ProcessHandle,
} from "./process.ts";

/** Characters of output kept in a terminal snapshot and in the task_result message. */
const SNAPSHOT_CHARS = 8_000;
/** A process directory named like a task id (see processDir). */
const TASK_ID = /^task_[A-Za-z0-9]+$/;

import { executionBinding, executionSnapshot } from "../workspace/roots.ts";
import { retireSandboxSpares } from "./sandbox-spares.ts";
import type { SandboxService } from "../sandbox/service.ts";
import type { SandboxLaunch } from "../sandbox/profile.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { ExecutionSnapshot } from "../domain/workspace.ts";

export type CommandIdentity = {
  cmd: string;
  workdir: string;
  shell: string;
  login: boolean;
  tty: boolean;
};

export function cmdDigest(id: CommandIdentity): string {
  return createHash("sha256")
    .update(JSON.stringify([id.cmd, id.workdir, id.shell, id.login, id.tty]))
    .digest("hex")
    .slice(0, 32);
}

export type StartTaskSpec = CommandIdentity & {
  agent_id: string;
  accepts_input: boolean;
  summary?: string | undefined;
  terminal_reentry: boolean;
  parent_message_id?: string | undefined;
};

export class TaskService implements AgentOwnedWork {
  private readonly store: Store;
  private readonly ingress: Ingress;
  /** Environment rules and output cap for every command this service starts. */
  readonly policy: CommandPolicy;
  private readonly handles = new Map<string, ProcessHandle>();
  private readonly stopping = new Set<string>();
  /** In-process waiters for a task to settle (TaskOutput's blocking wait). */
  private readonly settleWaiters = new Map<string, Set<() => void>>();
  private closed = false;

  /** The execution snapshot a new task records (the workspace plane's, with its policy). */
  private readonly snapshot: (agent: AgentRecord) => ExecutionSnapshot;

  /** Decides how each command is confined (null: every command runs unconfined). */
  private readonly sandbox: SandboxService | null;

  constructor(
    store: Store,
    ingress: Ingress,
    policy: CommandPolicy = BUILTIN_COMMAND_POLICY,
    snapshot: (agent: AgentRecord) => ExecutionSnapshot = (agent) => executionSnapshot(agent),
    sandbox: SandboxService | null = null,
  ) {
    this.store = store;
    this.ingress = ingress;
    this.policy = policy;
    this.snapshot = snapshot;
    this.sandbox = sandbox;
  }

  /**
   * The sandbox profile a command of `agent` in `executionRoot` starts under; null when it
   * runs unconfined. Throws `sandbox_unavailable` when the agent's mode is `required` and the
   * machine cannot confine: every start path asks here, so none can skip the sandbox.
   */
  sandboxFor(agent: AgentRecord, executionRoot: string): SandboxLaunch | null {
    return this.sandbox?.launchFor(agent, executionRoot) ?? null;
  }

  /** Have spare command wrappers ready, with the environment commands get now. */
  async warmSpawner(): Promise<void> {
    ensureSpawner(await commandEnvOf(this.policy));
  }

  /**
   * Directory for a new process of this agent, named by a fresh id. A process that may
   * become a task (`prefix` "task") is named by the id the task will carry, so a task's
   * output folder is `processes/<task id>`; one that finishes first leaves that id unused.
   */
  processDir(agentHome: string, prefix: string): string {
    // startProcess creates it, parents included.
    return join(agentHome, ".holon", "processes", this.store.ids.next(prefix));
  }

  /** The id a task adopting `handle` gets: its directory's name when that is a free task id. */
  private async taskIdFor(handle: ProcessHandle): Promise<string> {
    const name = basename(handle.dir);
    if (TASK_ID.test(name) && !(await this.store.tasks.get(name))) return name;
    return this.store.ids.next("task");
  }

  /** Start a command directly as a task (operator surfaces: HTTP and `holon task`). */
  async start(spec: StartTaskSpec): Promise<TaskRecord> {
    const agent = await this.store.agents.get(spec.agent_id);
    if (!agent) throw unknownAgent(spec.agent_id);
    if (agent.status === "stopped") {
      throw new HolonError("agent_stopped", `agent '${agent.agent_id}' is stopped`, {
        status: 409,
        hint: `resume it first: holon agent start ${agent.agent_id}`,
      });
    }
    const handle = await startProcess({
      cmd: spec.cmd,
      cwd: spec.workdir,
      dir: this.processDir(agent.agent_home, "task"),
      shell: spec.shell,
      login: spec.login,
      tty: spec.tty,
      acceptsInput: spec.accepts_input,
      output: "merged",
      policy: this.policy,
      sandbox: this.sandboxFor(agent, executionBinding(agent).execution_root),
    });
    return await this.adopt(spec, handle);
  }

  /** Record an already running process (an ExecCommand past its yield time) as a task. */
  async adopt(spec: StartTaskSpec, handle: ProcessHandle): Promise<TaskRecord> {
    const store = this.store;
    const now = store.clock.now().toISOString();
    const task: TaskRecord = {
      id: await this.taskIdFor(handle),
      agent_id: spec.agent_id,
      kind: "command_task",
      status: "running",
      created_at: now,
      updated_at: now,
      cmd: spec.cmd,
      cmd_digest: cmdDigest(spec),
      workdir: spec.workdir,
      shell: spec.shell,
      login: spec.login,
      tty: spec.tty,
      accepts_input: spec.accepts_input,
      output_path: handle.output_path,
      process_dir: handle.dir,
      pid: handle.pid,
      terminal_reentry: spec.terminal_reentry,
    };
    if (spec.summary) task.summary = spec.summary;
    if (spec.parent_message_id) task.parent_message_id = spec.parent_message_id;
    const owner = await store.agents.get(spec.agent_id);
    if (owner) task.execution_snapshot = this.snapshot(owner);
    await store.tx(async () => {
      await store.tasks.put(task);
      await store.appendEvent(spec.agent_id, {
        type: "task_created",
        provenance: {
          task_id: task.id,
          ...(task.parent_message_id ? { message_id: task.parent_message_id } : {}),
        },
        payload: { task: taskSnapshot(task) },
      });
    });
    this.watch(task.id, handle);
    return task;
  }

  /** An active task of this agent running the same command, for `duplicate_policy = reuse_running`. */
  async findRunning(agentId: string, digest: string): Promise<TaskRecord | undefined> {
    return (await this.store.tasks.activeForAgent(agentId)).find((t) => t.cmd_digest === digest);
  }

  async get(agentId: string, taskId: string): Promise<TaskRecord> {
    const task = await this.store.tasks.get(taskId);
    if (!task || task.agent_id !== agentId) {
      throw new HolonError("unknown_task", `no task '${taskId}' for agent '${agentId}'`, {
        status: 404,
        hint: "list the agent's tasks with TaskList",
        operatorHint: `list the agent's tasks: holon task list --all --agent ${agentId}`,
      });
    }
    return task;
  }

  handleOf(taskId: string): ProcessHandle | undefined {
    return this.handles.get(taskId);
  }

  /** The agent's tasks, most recent first: active ones only unless `includeTerminal`. */
  async list(
    agentId: string,
    opts: { includeTerminal?: boolean; limit?: number } = {},
  ): Promise<TaskRecord[]> {
    const limit = opts.limit ?? 50;
    if (opts.includeTerminal) return await this.store.tasks.forAgent(agentId, limit);
    return (await this.store.tasks.forAgent(agentId, 1_000))
      .filter((t) => !TERMINAL_TASK_STATUSES.has(t.status))
      .slice(0, limit);
  }

  /**
   * The live handle of an active task. A task this service is not watching yet (a host opened
   * without restart recovery) is reattached from its process directory and watched from now on.
   */
  private async handleFor(task: TaskRecord): Promise<ProcessHandle | undefined> {
    const known = this.handles.get(task.id);
    if (known || TERMINAL_TASK_STATUSES.has(task.status) || this.closed) return known;
    if (task.kind !== "command_task") return undefined; // a child agent has no process
    const r = reattach(task.process_dir);
    if (r.state === "running") {
      this.watch(task.id, r.handle);
      return r.handle;
    }
    if (r.state === "exited") {
      await this.settleSafely(task.id, { exit: r.status });
      return undefined;
    }
    await this.settleSafely(task.id, {
      lost: `the task's process could not be found: ${r.reason}`,
    });
    return undefined;
  }

  /**
   * Wait (bounded) for a task to settle; returns the current record either way. Resolves as
   * soon as the terminal record is committed (never on process exit alone).
   */
  async waitTerminal(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<TaskRecord> {
    const current = (await this.store.tasks.get(taskId))!;
    if (TERMINAL_TASK_STATUSES.has(current.status) || timeoutMs <= 0) return current;
    await this.handleFor(current); // make sure someone is watching it
    await new Promise<void>((resolve, reject) => {
      const waiters = this.settleWaiters.get(taskId) ?? new Set<() => void>();
      this.settleWaiters.set(taskId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.settleWaiters.delete(taskId);
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        done();
        reject(signal!.reason ?? new DOMException("The operation was aborted", "AbortError"));
      };
      const timer = setTimeout(done, timeoutMs);
      waiters.add(done);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      // Settled between the first read and registering the waiter. A failed read stops the
      // wait: the read after it fails the same way, for the caller.
      void this.store.tasks.get(taskId).then(
        (task) => TERMINAL_TASK_STATUSES.has(task!.status) && done(),
        () => done(),
      );
    });
    return (await this.store.tasks.get(taskId))!;
  }

  /**
   * TERM the task's process group, escalate to KILL after `graceMs`, and settle as cancelled.
   * A task that already ended is left as it is (`stop_requested = false`); one whose process
   * ended on its own while the stop was starting settles with its real status.
   */
  async stop(
    taskId: string,
    graceMs = 2_000,
  ): Promise<{ task: TaskRecord; stop_requested: boolean; escalated: boolean }> {
    const task = (await this.store.tasks.get(taskId))!;
    if (TERMINAL_TASK_STATUSES.has(task.status))
      return { task, stop_requested: false, escalated: false };
    const handle = await this.handleFor(task);
    if (!handle) {
      // handleFor settled it (the process had ended or was lost); nothing left to signal
      const now = (await this.store.tasks.get(taskId))!;
      if (!TERMINAL_TASK_STATUSES.has(now.status)) {
        await this.settle(
          taskId,
          { lost: "the task's process could not be found; it was marked stopped" },
          "cancelled",
        );
      }
      return {
        task: (await this.store.tasks.get(taskId))!,
        stop_requested: false,
        escalated: false,
      };
    }
    this.stopping.add(taskId);
    try {
      const result = await stopProcess(handle, { graceMs });
      if (result.signal_sent === null) {
        await this.settle(taskId, { exit: result.exit });
        return {
          task: (await this.store.tasks.get(taskId))!,
          stop_requested: false,
          escalated: false,
        };
      }
      await this.settle(taskId, { exit: result.exit }, "cancelled");
      return {
        task: (await this.store.tasks.get(taskId))!,
        stop_requested: true,
        escalated: result.escalated_to_kill,
      };
    } finally {
      this.stopping.delete(taskId);
    }
  }

  /**
   * Send input to a task: its stdin (`accepts_input`) or its terminal (`tty`). Refusals are
   * results, not errors: `{ accepted: false, reason }`.
   */
  async input(
    taskId: string,
    text: string,
    close: boolean,
  ): Promise<{ accepted: boolean; bytes_written: number; reason?: string }> {
    const task = (await this.store.tasks.get(taskId))!;
    if (!task.accepts_input && !task.tty)
      return { accepted: false, bytes_written: 0, reason: "input_not_enabled" };
    if (TERMINAL_TASK_STATUSES.has(task.status))
      return { accepted: false, bytes_written: 0, reason: "task_not_running" };
    const handle = await this.handleFor(task);
    if (!handle) return { accepted: false, bytes_written: 0, reason: "process_exited" };
    const written =
      text.length > 0 ? await writeInput(handle, text) : { accepted: true, bytes_written: 0 };
    if (close && written.accepted) {
      const closed = await closeInput(handle);
      if (!closed.accepted)
        return { ...written, ...(closed.reason ? { reason: closed.reason } : {}) };
    }
    return written;
  }

  private watch(taskId: string, handle: ProcessHandle): void {
    this.handles.set(taskId, handle);
    void waitForExit(handle)
      .then(async (exit) => {
        if (this.closed || exit === "timeout") return;
        if (this.stopping.has(taskId)) return; // stop() settles it as cancelled
        await this.settleSafely(taskId, { exit });
      })
      .catch(() => {});
  }

  /**
   * Settle, but never throw into a watcher: when the host is shutting down the transaction is
   * refused and rolled back, and the next start's recovery settles the task from its exit file.
   */
  private async settleSafely(
    taskId: string,
    how: { exit: ExitStatus } | { lost: string },
    known?: boolean,
  ): Promise<void> {
    const gap = known ?? outputDiskFull((await this.store.tasks.get(taskId))?.process_dir);
    try {
      await this.settle(taskId, how, undefined, gap);
    } catch (err) {
      this.handles.delete(taskId);
      const fault = classifyStorageError(err);
      if (!this.closed && fault && fault !== "lost") {
        // The store cannot be written (a full disk): the end is kept here and recorded once
        // it can, rather than leaving the task running forever.
        void this.store.health.whenWritableAfter(err).then(async () => {
          if (!this.closed) await this.settleSafely(taskId, how, gap);
        });
        return;
      }
      if (!this.closed) {
        process.emitWarning(
          `could not settle task ${taskId}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
  }

  /**
   * Settle a task exactly once: the terminal record, its event and the task_result message
   * that rejoins the agent's queue are written in one transaction.
   */
  async settle(
    taskId: string,
    how: { exit: ExitStatus } | { lost: string },
    forced?: TaskStatus,
    outputGap = false,
  ): Promise<void> {
    const store = this.store;
    this.handles.delete(taskId);
    this.stopping.delete(taskId);
    await store.tx(async () => {
      const task = await store.tasks.get(taskId);
      if (!task || TERMINAL_TASK_STATUSES.has(task.status)) return;
      const now = store.clock.now().toISOString();
      const next: TaskRecord = { ...task, updated_at: now, finished_at: now };
      let status: TaskStatus;
      if ("exit" in how && !how.exit.lost_reason) {
        next.exit_status = { exit_code: how.exit.exit_code, signal: how.exit.signal };
        status = forced ?? (how.exit.exit_code === 0 ? "completed" : "failed");
      } else {
        status = forced ?? "failed";
        const reason = "lost" in how ? how.lost : how.exit.lost_reason!;
        const artifact: FailureArtifact = {
          category: "task",
          kind: "task_process_lost",
          summary: reason,
          task_id: task.id,
        };
        if (status === "failed") next.failure_artifact = artifact;
      }
      if (status === "failed" && !next.failure_artifact && next.exit_status) {
        next.failure_artifact = {
          category: "task",
          kind: next.exit_status.signal ? "task_killed_by_signal" : "task_nonzero_exit",
          summary: next.exit_status.signal
            ? `the command ended by signal ${next.exit_status.signal}`
            : `the command exited with status ${next.exit_status.exit_code}`,
          task_id: task.id,
          ...(next.exit_status.exit_code !== null
            ? { exit_status: next.exit_status.exit_code }
            : {}),
        };
      }
      next.status = status;
      // The disk was full when the command ended: what it printed meanwhile may be missing.
      // The output file says so where the gap is (once it can be written), and so does the
      // result the agent reads.
      const gapText = outputGap ? markOutputGap(task.output_path) : "";
      const preview = combinedPreview(task, SNAPSHOT_CHARS);
      next.output_snapshot = {
        preview: preview.text,
        total_bytes: preview.total_bytes,
        truncated: preview.truncated,
      };
      await store.tasks.put(next);
      await store.appendEvent(task.agent_id, {
        type: "task_status_updated",
        provenance: { task_id: task.id },
        payload: { task: taskSnapshot(next) },
      });
      const agent = await store.agents.get(task.agent_id);
      if (agent) {
        const headline = taskHeadline(next);
        await this.ingress.admit({
          agent_id: task.agent_id,
          kind: "task_result",
          origin: { kind: "task", task_id: task.id },
          body: {
            type: "text",
            text: `${headline}\nCommand: ${task.cmd}\nOutput (${preview.total_bytes} bytes${preview.truncated ? ", truncated" : ""}${droppedText(task)}${gapText}; full output in ${task.output_path}${taskStreams(task).stderr ? `, stderr in ${taskStreams(task).stderr}` : ""}):\n${preview.text}`,
          },
          surface: "task_rejoin",
          admission: "runtime_owned",
          task_id: task.id,
          source_refs: { task_result_id: `${task.id}:terminal` },
          ...(task.parent_message_id ? { causation_id: task.parent_message_id } : {}),
        });
      }
    });
    this.notifySettled(taskId);
  }

  /** Wake whoever waits on this task (TaskOutput's block); others settle child tasks too. */
  notifySettled(taskId: string): void {
    const waiters = this.settleWaiters.get(taskId);
    if (waiters) for (const wake of [...waiters]) wake();
  }

  /**
   * After a restart: reattach every task a previous host left running. A process that still
   * runs is watched again; one that ended meanwhile is settled with its recorded status; one
   * that cannot be accounted for fails with a failure artifact. Only the tasks of `agents`
   * (the groups a host acquires: host.ts).
   */
  async recover(agents: ReadonlySet<string>): Promise<void> {
    for (const task of await this.store.tasks.active()) {
      if (task.kind !== "command_task") continue; // children: tasks/children.ts recovers them
      if (!agents.has(task.agent_id)) continue;
      const r = reattach(task.process_dir);
      if (r.state === "running") {
        await this.store.tx(
          async () =>
            await this.store.appendEvent(task.agent_id, {
              type: "task_reattached_after_restart",
              provenance: { task_id: task.id },
              payload: { task_id: task.id },
            }),
        );
        this.watch(task.id, r.handle);
      } else if (r.state === "exited") {
        await this.settleSafely(task.id, { exit: r.status });
      } else {
        if (r.handle && r.leftover_pids.length > 0)
          void stopProcess(r.handle, { graceMs: 500 }).catch(() => {});
        await this.settleSafely(task.id, {
          lost: `the task could not be recovered after a restart: ${r.reason}`,
        });
      }
    }
  }

  /**
   * Agent stop: cancel every live task the agent owns (each settles as cancelled with its
   * result recorded). Returns the ids it stopped.
   */
  async cancelForAgent(agentId: string, reason: string): Promise<string[]> {
    const live = (await this.store.tasks.activeForAgent(agentId)).filter(
      (t) => t.kind === "command_task",
    );
    await Promise.all(
      live.map((t) =>
        this.stop(t.id).catch((err: unknown) => {
          process.emitWarning(
            `could not cancel task ${t.id} (${reason}): ${err instanceof Error ? err.message : String(err)}`,
          );
        }),
      ),
    );
    return live.map((t) => t.id);
  }

  /** Stop watching (host shutdown). The processes themselves keep running. */
  close(): void {
    this.closed = true;
    retireSandboxSpares(); // unused confined spares exit; running commands are not touched
    this.handles.clear();
    for (const waiters of this.settleWaiters.values()) for (const wake of [...waiters]) wake();
  }

  static shellOr(shell: string | undefined): string {
    return shell ?? defaultShell();
  }
}

export function taskHeadline(t: TaskRecord): string {
  switch (t.status) {
    case "completed":
      return `Task ${t.id} completed (exit status 0).`;
    case "failed":
      return t.exit_status
        ? `Task ${t.id} failed (${t.exit_status.signal ? `signal ${t.exit_status.signal}` : `exit status ${t.exit_status.exit_code}`}).`
        : `Task ${t.id} failed: ${t.failure_artifact?.summary ?? "unknown reason"}.`;
    case "cancelled":
      return `Task ${t.id} was stopped.`;
    default:
      return `Task ${t.id} is ${t.status}.`;
  }
}

/** Where a task's output lives: `output_path`, plus stderr.log beside it for split-mode tasks. */
export function taskStreams(t: TaskRecord): { output: string; stderr: string | null } {
  const stderr = join(t.process_dir, PROCESS_FILES.stderr);
  const split = t.output_path.endsWith(`/${PROCESS_FILES.stdout}`) && existsSync(stderr);
  return { output: t.output_path, stderr: split ? stderr : null };
}

/**
 * A bounded head-and-tail preview of a task's output within `chars` characters. Split-mode
 * tasks (promoted ExecCommands) show stdout, then stderr under a `[stderr]` marker. Only the
 * previewed bytes are read, whatever the size of the files.
 */
export function combinedPreview(
  t: TaskRecord,
  chars: number,
): { text: string; truncated: boolean; total_bytes: number; stderr_bytes: number } {
  const { output, stderr } = taskStreams(t);
  const errProbe = stderr ? filePreview(stderr, 256) : null;
  if (!stderr || !errProbe || errProbe.total_bytes === 0) {
    const p = filePreview(output, chars);
    return { ...p, stderr_bytes: 0 };
  }
  const out = filePreview(output, Math.max(256, Math.floor(chars * 0.6)));
  const err = filePreview(stderr, Math.max(256, Math.floor(chars * 0.4)));
  const text = out.total_bytes > 0 ? `${out.text}\n[stderr]\n${err.text}` : `[stderr]\n${err.text}`;
  return {
    text,
    truncated: out.truncated || err.truncated,
    total_bytes: out.total_bytes + err.total_bytes,
    stderr_bytes: err.total_bytes,
  };
}

export type RetrievalStatus = "success" | "not_ready" | "timeout" | "unavailable";

/**
 * The TaskOutput envelope of a task. Readiness follows the persisted record only: `success`
 * needs a terminal record plus a stable snapshot (the output file, or the excerpt persisted
 * with the terminal record when the file cannot be read). A running task is `not_ready` (or
 * `timeout` after a wait that ended first) and still shows the output so far.
 */
export function taskOutputView(t: TaskRecord, chars: number, waited: boolean) {
  const terminal = TERMINAL_TASK_STATUSES.has(t.status);
  const streams = taskStreams(t);
  const fileReadable = existsSync(streams.output);
  let preview: { text: string; truncated: boolean; total_bytes: number } | null = null;
  let source: "output_file" | "terminal_snapshot" | "none" = "none";
  if (fileReadable) {
    preview = combinedPreview(t, chars);
    source = "output_file";
  } else if (terminal && t.output_snapshot) {
    const snap = t.output_snapshot;
    const cut = snap.preview.length > chars;
    preview = {
      text: cut
        ? snap.preview.slice(0, chars) + "\n[snapshot cut to the preview budget]"
        : snap.preview,
      truncated: snap.truncated || cut,
      total_bytes: snap.total_bytes,
    };
    source = "terminal_snapshot";
  }
  const retrieval_status: RetrievalStatus = terminal
    ? preview
      ? "success"
      : "unavailable"
    : waited
      ? "timeout"
      : "not_ready";
  const artifacts: { path: string; kind: string }[] = [];
  const task: Record<string, unknown> = {
    task_id: t.id,
    kind: t.kind,
    status: t.status,
    summary: t.summary ?? null,
    output_preview: preview?.text ?? "",
    output_truncated: preview?.truncated ?? false,
    output_bytes: preview?.total_bytes ?? 0,
    output_dropped_bytes: droppedBytes(t.process_dir).total,
    output_source: source,
    artifacts,
    result_summary: terminal ? taskHeadline(t) : null,
    exit_status: t.exit_status ?? null,
    failure_artifact: t.failure_artifact ?? null,
  };
  if (fileReadable) {
    task.output_artifact = artifacts.length;
    artifacts.push({
      path: streams.output,
      kind: t.tty ? "terminal_transcript" : streams.stderr ? "stdout" : "combined_output",
    });
    if (streams.stderr) {
      task.stderr_artifact = artifacts.length;
      artifacts.push({ path: streams.stderr, kind: "stderr" });
    }
  }
  return { retrieval_status, task };
}

/** How a task takes input, if at all. */
export function inputTarget(t: TaskRecord): "tty" | "stdin" | null {
  return t.tty ? "tty" : t.accepts_input ? "stdin" : null;
}

/** The lifecycle snapshot TaskStatus and events expose: identity and state, no output bytes. */
export function taskSnapshot(t: TaskRecord): TaskSnapshot {
  const terminal = TERMINAL_TASK_STATUSES.has(t.status);
  if (t.child) {
    return {
      task_id: t.id,
      kind: t.kind,
      status: t.status,
      summary: t.summary ?? null,
      created_at: t.created_at,
      updated_at: t.updated_at,
      finished_at: t.finished_at ?? null,
      wait_policy: "background",
      command: null,
      child_supervision: childSupervision(t),
      input_target: terminal ? null : "child_agent",
      can_stop: !terminal,
      output_ready: terminal,
      exit_status: null,
      failure: t.failure_artifact
        ? { kind: t.failure_artifact.kind, summary: t.failure_artifact.summary }
        : null,
      output_dropped_bytes: 0,
    };
  }
  return {
    task_id: t.id,
    kind: t.kind,
    status: t.status,
    summary: t.summary ?? null,
    created_at: t.created_at,
    updated_at: t.updated_at,
    finished_at: t.finished_at ?? null,
    wait_policy: "background" as const,
    child_supervision: null,
    command: {
      cmd: t.cmd,
      cmd_digest: t.cmd_digest,
      workdir: t.workdir,
      shell: t.shell,
      login: t.login,
      tty: t.tty,
      accepts_input: t.accepts_input,
      output_path: t.output_path,
      terminal_reentry: t.terminal_reentry,
    },
    input_target: terminal ? null : inputTarget(t),
    can_stop: !terminal,
    output_ready: terminal,
    exit_status: t.exit_status ?? null,
    failure: t.failure_artifact
      ? { kind: t.failure_artifact.kind, summary: t.failure_artifact.summary }
      : null,
    /** Bytes the output cap cut from the middle of the task's output on disk. */
    output_dropped_bytes: droppedBytes(t.process_dir).total,
  };
}

/** Whether the file system holding a task's output has no room left (the output has a gap). */
function outputDiskFull(dir: string | null | undefined): boolean {
  if (!dir) return false;
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize < 4096;
  } catch {
    return false;
  }
}

/** Append the gap marker to the output file (best-effort); the text the result carries. */
function markOutputGap(outputPath: string): string {
  try {
    appendFileSync(
      outputPath,
      "\n[... holon: output may be missing here: the disk was full (ENOSPC) while the command ran ...]\n",
    );
  } catch {
    // still full: the result below says it
  }
  return ", INCOMPLETE: the disk was full while the command ran, so output may be missing";
}

function droppedText(t: TaskRecord): string {
  const n = droppedBytes(t.process_dir).total;
  return n > 0 ? `, ${n} bytes dropped from the middle by the output cap` : "";
}

export type { TaskSnapshot };

/** The `child_supervision` projection of a child_agent_task (the same in every surface). */
export function childSupervision(t: TaskRecord): ChildSupervision {
  const c = t.child!;
  const state: ChildSupervision["state"] =
    t.status === "running" || t.status === "queued"
      ? c.needs_input
        ? "needs_input"
        : "running"
      : t.status;
  return {
    child_agent_id: c.child_agent_id,
    supervision_task_id: t.id,
    parent_agent_id: c.parent_agent_id,
    delegation_id: c.delegation_id,
    parent_work_item_id: c.parent_work_item_id ?? null,
    workspace_mode: c.workspace_mode,
    context_mode: c.context_mode,
    label: c.label,
    state,
    closure_outcome: c.closure_outcome ?? null,
    waiting_reason: c.waiting_reason ?? null,
    current_work_item_id: c.current_work_item_id ?? null,
    worktree: c.worktree ? { path: c.worktree.path, branch: c.worktree.branch } : null,
    cleanup_owner: "supervision_task",
    followup_target: "parent_supervisor",
  };
}
