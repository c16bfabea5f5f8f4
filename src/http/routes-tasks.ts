// Task routes: operator-started command tasks, one task's snapshot and output, and operator
// stop/input. Reads follow the read auth rule; anything that starts, stops or feeds a process
// is a control route.
import type { Context, Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import type { AgentRecord } from "../domain/agent.ts";
import { ProcessStartError } from "../tasks/process.ts";
import { TaskService, inputTarget, taskOutputView, taskSnapshot } from "../tasks/service.ts";
import { confinedWorkdir, executionBinding } from "../workspace/roots.ts";
import type { AppContext } from "./context.ts";
import {
  intParam,
  readJson,
  requireControl,
  requireRead,
  validate,
  type AppEnv,
} from "./support.ts";

export const StartBody = z.strictObject({
  summary: z.string().max(500).optional(),
  cmd: z
    .string()
    .min(1, "cmd must not be empty")
    .max(64 * 1024),
  workdir: z.string().min(1).optional(),
  shell: z.string().min(1).optional(),
  login: z.boolean().optional(),
  tty: z.boolean().optional(),
  accepts_input: z.boolean().optional(),
  /** Operator choice: whether the terminal result starts a model turn (terminal_reentry). */
  continue_on_result: z.boolean().optional(),
});

export const InputBody = z.strictObject({
  input: z.string().max(64 * 1024),
  close_input: z.boolean().optional(),
});

const DEFAULT_PREVIEW_CHARS = 32_000;
const MAX_PREVIEW_CHARS = 256_000;
const MAX_WAIT_MS = 60_000;

function executionRoot(agent: AgentRecord): { root: string; cwd: string } {
  const b = executionBinding(agent);
  return { root: b.execution_root, cwd: b.cwd };
}

export function taskRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const tasks = () => host.tasks;
  const taskOf = async (c: Context<AppEnv>) => {
    const agent = await host.agents.getPublic(c.req.param("id")!);
    return await tasks().get(agent.agent_id, c.req.param("task_id")!);
  };
  /** The operator's view (control routes): a task of any agent, private children's too. */
  const anyTaskOf = async (c: Context<AppEnv>) => {
    const agent = await host.agents.get(c.req.param("id")!);
    return await tasks().get(agent.agent_id, c.req.param("task_id")!);
  };
  type TaskOf = typeof taskOf;

  app.post("/control/agents/:id/tasks", async (c) => {
    requireControl(c);
    const body = validate(StartBody, await readJson(c));
    const agent = await host.agents.getPublic(c.req.param("id"));
    const { root, cwd } = executionRoot(agent);
    const workdir = confinedWorkdir(root, cwd, body.workdir, agent.agent_id);
    let task;
    try {
      task = await tasks().start({
        agent_id: agent.agent_id,
        cmd: body.cmd,
        workdir,
        shell: TaskService.shellOr(body.shell),
        login: body.login ?? false,
        tty: body.tty ?? false,
        accepts_input: body.accepts_input ?? false,
        terminal_reentry: body.continue_on_result ?? false,
        summary: body.summary,
      });
    } catch (err) {
      if (err instanceof ProcessStartError) {
        throw new HolonError(
          "task_start_failed",
          `the command could not be started: ${err.message}`,
          {
            status: 500,
          },
        );
      }
      throw err;
    }
    return c.json({ ok: true, agent_id: agent.agent_id, task: taskSnapshot(task) }, 201);
  });

  // Reads: the public routes see public agents' tasks; their /control twins any agent's.
  const snapshot =
    (find: TaskOf, auth: (c: Context<AppEnv>) => void) => async (c: Context<AppEnv>) => {
      auth(c);
      return c.json({ ok: true, task: taskSnapshot(await find(c)) });
    };
  const output =
    (find: TaskOf, auth: (c: Context<AppEnv>) => void) => async (c: Context<AppEnv>) => {
      auth(c);
      const chars =
        intParam(c, "max_chars", { min: 256, max: MAX_PREVIEW_CHARS }) ?? DEFAULT_PREVIEW_CHARS;
      const waitMs = intParam(c, "wait_ms", { min: 0, max: MAX_WAIT_MS });
      let task = await find(c);
      if (waitMs !== undefined)
        task = await tasks().waitTerminal(task.id, waitMs, c.req.raw.signal);
      if (task.kind === "child_agent_task") {
        return c.json({
          ok: true,
          ...(await host.services.agentPlane.output(task, chars, waitMs !== undefined)),
        });
      }
      return c.json({ ok: true, ...taskOutputView(task, chars, waitMs !== undefined) });
    };
  app.get("/agents/:id/tasks/:task_id", snapshot(taskOf, requireRead));
  app.get("/agents/:id/tasks/:task_id/output", output(taskOf, requireRead));
  app.get("/control/agents/:id/tasks/:task_id", snapshot(anyTaskOf, requireControl));
  app.get("/control/agents/:id/tasks/:task_id/output", output(anyTaskOf, requireControl));

  // Stopping is the operator's, for any agent's task (a private child's included).
  app.post("/control/agents/:id/tasks/:task_id/stop", async (c) => {
    requireControl(c);
    await readJson(c, { optional: true });
    const task = await anyTaskOf(c);
    const r =
      task.kind === "child_agent_task"
        ? { ...(await host.services.agentPlane.stop(task)), escalated: false }
        : await tasks().stop(task.id);
    return c.json({
      ok: true,
      task: taskSnapshot(r.task),
      stop_requested: r.stop_requested,
      escalated: r.escalated,
    });
  });

  app.post("/control/agents/:id/tasks/:task_id/input", async (c) => {
    requireControl(c);
    const body = validate(InputBody, await readJson(c));
    const task = await anyTaskOf(c); // the operator's, like stop: a private child's task too
    const r =
      task.kind === "child_agent_task"
        ? { bytes_written: 0, ...(await host.services.agentPlane.input(task, body.input)) }
        : await tasks().input(task.id, body.input, body.close_input ?? false);
    return c.json({
      ok: true,
      task: taskSnapshot(await tasks().get(task.agent_id, task.id)),
      accepted_input: r.accepted,
      input_target: task.kind === "child_agent_task" ? "child_agent" : inputTarget(task),
      bytes_written: r.bytes_written,
      reason: r.reason ?? null,
    });
  });
}
