// The task plane: managed command tasks. Records live in SQLite; the processes run
// detached under the process layer, so they survive the host. The service watches every
// live task, settles it exactly once when it ends (terminal record + task_result message in
// one transaction), and on start-up reattaches to what a previous host left running.
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { HolonError } from "../domain/errors.ts";
import type { FailureArtifact } from "../domain/provider.ts";
import { TERMINAL_TASK_STATUSES, type TaskRecord, type TaskStatus } from "../domain/task.ts";
import type { RuntimeHost } from "../host/host.ts";
import { filePreview } from "../tools/budget.ts";
import {
  closeInput,
  reattach,
  startProcess,
  stopProcess,
  waitForExit,
  writeInput,
  defaultShell,
  type ExitStatus,
  type ProcessHandle,
} from "./process.ts";

/** Characters of output kept in a terminal snapshot and in the task_result message. */
const SNAPSHOT_CHARS = 8_000;

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

export class TaskService {
  private readonly host: RuntimeHost;
  private readonly handles = new Map<string, ProcessHandle>();
  private readonly stopping = new Set<string>();
  private closed = false;

  constructor(host: RuntimeHost) {
    this.host = host;
  }

  private get store() {
    return this.host.store;
  }

  /** Directory for a new process of this agent. */
  processDir(agentHome: string, prefix: string): string {
    const dir = join(agentHome, ".holon", "processes", this.store.ids.next(prefix));
    mkdirSync(join(dir, ".."), { recursive: true });
    return dir;
  }

  /** Start a command directly as a task (operator surfaces: HTTP and `holon task`). */
  start(spec: StartTaskSpec): TaskRecord {
    const agent = this.host.getAgent(spec.agent_id);
    if (agent.status === "stopped") {
      throw new HolonError("agent_stopped", `agent '${agent.agent_id}' is stopped`, {
        status: 409,
        hint: `resume it first: holon agent start ${agent.agent_id}`,
      });
    }
    const handle = startProcess({
      cmd: spec.cmd,
      cwd: spec.workdir,
      dir: this.processDir(agent.agent_home, "task"),
      shell: spec.shell,
      login: spec.login,
      tty: spec.tty,
      acceptsInput: spec.accepts_input,
      output: "merged",
    });
    return this.adopt(spec, handle);
  }

  /** Record an already running process (an ExecCommand past its yield time) as a task. */
  adopt(spec: StartTaskSpec, handle: ProcessHandle): TaskRecord {
    const store = this.store;
    const now = store.clock.now().toISOString();
    const task: TaskRecord = {
      id: store.ids.next("task"),
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
    store.tx(() => {
      store.tasks.put(task);
      store.appendEvent(spec.agent_id, {
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
  findRunning(agentId: string, digest: string): TaskRecord | undefined {
    return this.store.tasks
      .forAgent(agentId, 200)
      .find((t) => t.cmd_digest === digest && !TERMINAL_TASK_STATUSES.has(t.status));
  }

  get(agentId: string, taskId: string): TaskRecord {
    const task = this.store.tasks.get(taskId);
    if (!task || task.agent_id !== agentId) {
      throw new HolonError("unknown_task", `no task '${taskId}' for agent '${agentId}'`, {
        status: 404,
        hint: "list the agent's tasks with TaskList (or GET /agents/:id/tasks)",
      });
    }
    return task;
  }

  handleOf(taskId: string): ProcessHandle | undefined {
    return this.handles.get(taskId);
  }

  /** Wait (bounded) for a task to settle; returns the current record either way. */
  async waitTerminal(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<TaskRecord> {
    const handle = this.handles.get(taskId);
    if (handle && timeoutMs > 0) {
      await waitForExit(handle, signal ? { timeoutMs, signal } : { timeoutMs }).catch(
        () => "timeout",
      );
      // the watcher settles the record right after the exit; give it that moment
      for (
        let i = 0;
        i < 50 && !TERMINAL_TASK_STATUSES.has(this.store.tasks.get(taskId)!.status);
        i++
      ) {
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    return this.store.tasks.get(taskId)!;
  }

  /** TERM the task's process group, escalate to KILL after `graceMs`, and settle as cancelled. */
  async stop(
    taskId: string,
    graceMs = 2_000,
  ): Promise<{ task: TaskRecord; stop_requested: boolean; escalated: boolean }> {
    const task = this.store.tasks.get(taskId)!;
    if (TERMINAL_TASK_STATUSES.has(task.status))
      return { task, stop_requested: false, escalated: false };
    const handle = this.handles.get(taskId);
    if (!handle) {
      // nothing to signal (lost process): settle it now
      this.settle(
        taskId,
        { lost: "the task's process handle is gone; it was stopped without a signal" },
        "cancelled",
      );
      return { task: this.store.tasks.get(taskId)!, stop_requested: true, escalated: false };
    }
    this.stopping.add(taskId);
    const result = await stopProcess(handle, { graceMs });
    this.settle(taskId, { exit: result.exit }, "cancelled");
    return {
      task: this.store.tasks.get(taskId)!,
      stop_requested: true,
      escalated: result.escalated_to_kill,
    };
  }

  async input(taskId: string, text: string, close: boolean) {
    const handle = this.handles.get(taskId);
    if (!handle) return { accepted: false, bytes_written: 0, reason: "process_exited" };
    const written =
      text.length > 0 ? await writeInput(handle, text) : { accepted: true, bytes_written: 0 };
    if (close && written.accepted) await closeInput(handle);
    return written;
  }

  private watch(taskId: string, handle: ProcessHandle): void {
    this.handles.set(taskId, handle);
    void waitForExit(handle).then(
      (exit) => {
        if (this.closed || exit === "timeout") return;
        if (this.stopping.has(taskId)) return; // stop() settles it as cancelled
        this.settle(taskId, { exit });
      },
      () => {},
    );
  }

  /**
   * Settle a task exactly once: the terminal record, its event and the task_result message
   * that rejoins the agent's queue are written in one transaction.
   */
  settle(taskId: string, how: { exit: ExitStatus } | { lost: string }, forced?: TaskStatus): void {
    const store = this.store;
    this.handles.delete(taskId);
    this.stopping.delete(taskId);
    store.tx(() => {
      const task = store.tasks.get(taskId);
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
      const preview = filePreview(task.output_path, SNAPSHOT_CHARS);
      next.output_snapshot = {
        preview: preview.text,
        total_bytes: preview.total_bytes,
        truncated: preview.truncated,
      };
      store.tasks.put(next);
      store.appendEvent(task.agent_id, {
        type: "task_status_updated",
        provenance: { task_id: task.id },
        payload: { task: taskSnapshot(next) },
      });
      const agent = store.agents.get(task.agent_id);
      if (agent) {
        const headline = taskHeadline(next);
        this.host.admit({
          agent_id: task.agent_id,
          kind: "task_result",
          origin: { kind: "task", task_id: task.id },
          body: {
            type: "text",
            text: `${headline}\nCommand: ${task.cmd}\nOutput (${preview.total_bytes} bytes${preview.truncated ? ", truncated" : ""}; full output in ${task.output_path}):\n${preview.text}`,
          },
          surface: "task_rejoin",
          admission: "runtime_owned",
          task_id: task.id,
          source_refs: { task_result_id: `${task.id}:terminal` },
          ...(task.parent_message_id ? { causation_id: task.parent_message_id } : {}),
        });
      }
    });
  }

  /**
   * After a restart: reattach every task a previous host left running. A process that still
   * runs is watched again; one that ended meanwhile is settled with its recorded status; one
   * that cannot be accounted for fails with a failure artifact.
   */
  recover(): void {
    for (const task of this.store.tasks.active()) {
      const r = reattach(task.process_dir);
      if (r.state === "running") {
        this.store.tx(() =>
          this.store.appendEvent(task.agent_id, {
            type: "task_reattached_after_restart",
            provenance: { task_id: task.id },
            payload: { task_id: task.id, pid: r.handle.pid },
          }),
        );
        this.watch(task.id, r.handle);
      } else if (r.state === "exited") {
        this.settle(task.id, { exit: r.status });
      } else {
        if (r.handle && r.leftover_pids.length > 0)
          void stopProcess(r.handle, { graceMs: 500 }).catch(() => {});
        this.settle(task.id, {
          lost: `the task could not be recovered after a restart: ${r.reason}`,
        });
      }
    }
  }

  /** Stop watching (host shutdown). The processes themselves keep running. */
  close(): void {
    this.closed = true;
    this.handles.clear();
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

/** The lifecycle snapshot TaskStatus and events expose: identity and state, no output bytes. */
export function taskSnapshot(t: TaskRecord) {
  return {
    task_id: t.id,
    kind: t.kind,
    status: t.status,
    summary: t.summary ?? null,
    created_at: t.created_at,
    updated_at: t.updated_at,
    finished_at: t.finished_at ?? null,
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
    exit_status: t.exit_status ?? null,
  };
}
