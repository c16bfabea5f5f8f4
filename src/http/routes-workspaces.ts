// Workspace and skill routes: an agent's attached set and active workspace, attach / use /
// exit / detach, its managed worktrees (list, clean), and the skill catalog with install and
// uninstall. Reads follow the read rule; anything that changes bindings or files is control.
import type { Hono } from "hono";
import { z } from "zod";
import {
  ExecutionSnapshot,
  ProjectionKind,
  RootOwnership,
  SkillActivation,
  SkillScope,
  WorkspaceMode,
  WorkspaceRecord,
  WorktreeRecord,
  WorktreeSession,
} from "../domain/workspace.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { readJson, requireControl, requireRead, validate, type AppEnv } from "./support.ts";

const PathField = z.string().min(1).max(4096);
export const AttachBody = z.strictObject({ path: PathField });
export const UseBody = z.strictObject({
  path: PathField.optional(),
  workspace_id: z.string().min(1).max(200).optional(),
  mode: WorkspaceMode.optional(),
  isolation_label: z.string().max(200).optional(),
});
export const DetachBody = z.strictObject({ workspace_id: z.string().min(1).max(200) });
export const InstallBody = z.strictObject({
  path: PathField.optional(),
  remote: z.string().min(1).max(2048).optional(),
  agent_id: z.string().min(1).max(64).optional(),
  force: z.boolean().optional(),
});
export const UninstallBody = z.strictObject({
  name: z.string().min(1).max(64),
  agent_id: z.string().min(1).max(64).optional(),
});

export function workspaceRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const ws = () => host.services.workspaces;
  const skills = () => host.services.skills;
  const agentOf = async (id: string | undefined) => (await host.agents.getPublic(id!)).agent_id;

  app.get("/agents/:id/workspaces", async (c) => {
    requireRead(c);
    return c.json({ ok: true, ...(await ws().list(await agentOf(c.req.param("id")))) });
  });

  app.get("/agents/:id/worktrees", async (c) => {
    requireRead(c);
    return c.json({ ok: true, worktrees: await ws().worktrees(await agentOf(c.req.param("id"))) });
  });

  app.post("/control/agents/:id/workspaces/attach", async (c) => {
    requireControl(c);
    const body = validate(AttachBody, await readJson(c));
    return c.json({
      ok: true,
      ...(await ws().attach(await agentOf(c.req.param("id")), body.path, "operator")),
    });
  });

  app.post("/control/agents/:id/workspaces/use", async (c) => {
    requireControl(c);
    const body = validate(UseBody, await readJson(c));
    return c.json({
      ok: true,
      ...(await ws().use(await agentOf(c.req.param("id")), body, "operator")),
    });
  });

  app.post("/control/agents/:id/workspaces/exit", async (c) => {
    requireControl(c);
    await readJson(c, { optional: true });
    return c.json({ ok: true, ...(await ws().exit(await agentOf(c.req.param("id")))) });
  });

  app.post("/control/agents/:id/workspaces/detach", async (c) => {
    requireControl(c);
    const body = validate(DetachBody, await readJson(c));
    return c.json({
      ok: true,
      ...(await ws().detach(await agentOf(c.req.param("id")), body.workspace_id)),
    });
  });

  app.post("/control/agents/:id/worktrees/clean", async (c) => {
    requireControl(c);
    await readJson(c, { optional: true });
    return c.json({ ok: true, ...(await ws().cleanWorktrees(await agentOf(c.req.param("id")))) });
  });

  app.get("/agents/:id/skills", async (c) => {
    requireRead(c);
    return c.json({ ok: true, ...(await skills().list(await agentOf(c.req.param("id")))) });
  });

  app.post("/control/skills/install", async (c) => {
    requireControl(c);
    const body = validate(InstallBody, await readJson(c));
    if (body.agent_id) await agentOf(body.agent_id);
    return c.json({ ok: true, ...(await skills().install(body)) });
  });

  app.post("/control/skills/uninstall", async (c) => {
    requireControl(c);
    const body = validate(UninstallBody, await readJson(c));
    if (body.agent_id) await agentOf(body.agent_id);
    return c.json({ ok: true, ...(await skills().uninstall(body.name, body.agent_id)) });
  });
}

// ---------------------------------------------------------------------------------------
// Response shapes, for /openapi.json

const Ok = z.literal(true);
const LeaveReport = z.object({
  worktree_id: z.string(),
  path: z.string(),
  branch: z.string(),
  disposition: z.enum(["removed", "retained"]),
  branch_deleted: z.boolean(),
  changed_files: z.array(z.string()),
  commits_ahead: z.number().int(),
});
const WorktreeView = WorktreeRecord.extend({
  changed_files: z.array(z.string()),
  commits_ahead: z.number().int(),
  missing: z.boolean(),
});
const UseResponse = z.object({
  ok: Ok,
  workspace_id: z.string(),
  workspace_anchor: z.string(),
  execution_root: z.string(),
  execution_root_id: z.string(),
  cwd: z.string(),
  mode: WorkspaceMode,
  projection_kind: ProjectionKind,
  ownership: RootOwnership,
  detected_kind: z.string(),
  attached_now: z.boolean(),
  worktree: z
    .object({
      worktree_id: z.string(),
      path: z.string(),
      branch: z.string(),
      base_branch: z.string(),
    })
    .optional(),
  left: LeaveReport.optional(),
  guidance: z.string().optional(),
});
const ListResponse = z.object({
  ok: Ok,
  agent_id: z.string(),
  active: z.object({
    workspace_id: z.string(),
    workspace_anchor: z.string(),
    execution_root: z.string(),
    execution_root_id: z.string(),
    cwd: z.string(),
    projection_kind: ProjectionKind,
    mode: WorkspaceMode,
    ownership: RootOwnership,
  }),
  attached: z.array(
    z.object({
      workspace_id: z.string(),
      workspace_anchor: z.string().nullable(),
      kind: z.string().nullable(),
      attached_at: z.string(),
      attached_by: z.string(),
      available: z.boolean(),
      active: z.boolean(),
    }),
  ),
  worktree_session: WorktreeSession.nullable(),
  worktrees: z.array(WorktreeView),
  execution_snapshot: ExecutionSnapshot,
});
const SkillEntry = z.object({
  skill_id: z.string(),
  name: z.string(),
  description: z.string(),
  scope: SkillScope,
  dir: z.string(),
  entrypoint_path: z.string(),
});

export const WORKSPACE_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/agents/:id/workspaces",
    summary: "Attached workspaces, the active entry, worktree session and managed worktrees",
    access: "read",
    ok: { status: 200, schema: ListResponse },
  },
  {
    method: "get",
    path: "/agents/:id/worktrees",
    summary: "The agent's managed worktrees with their changed files",
    access: "read",
    ok: { status: 200, schema: z.object({ ok: Ok, worktrees: z.array(WorktreeView) }) },
  },
  {
    method: "post",
    path: "/control/agents/:id/workspaces/attach",
    summary: "Register a directory and attach it to the agent (does not switch)",
    access: "control",
    body: { schema: AttachBody },
    ok: {
      status: 200,
      schema: z.object({ ok: Ok, workspace: WorkspaceRecord, attached_now: z.boolean() }),
    },
  },
  {
    method: "post",
    path: "/control/agents/:id/workspaces/use",
    summary: "Make a workspace active (path or workspace_id; direct or isolated)",
    access: "control",
    body: { schema: UseBody },
    ok: { status: 200, schema: UseResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/workspaces/exit",
    summary: "Return the agent to agent_home",
    access: "control",
    body: { schema: z.strictObject({}), optional: true },
    ok: { status: 200, schema: UseResponse },
  },
  {
    method: "post",
    path: "/control/agents/:id/workspaces/detach",
    summary: "Remove a workspace from the agent's attached set (never deletes files)",
    access: "control",
    body: { schema: DetachBody },
    ok: {
      status: 200,
      schema: z.object({
        ok: Ok,
        workspace_id: z.string(),
        detached: z.literal(true),
        files_deleted: z.literal(false),
      }),
    },
  },
  {
    method: "post",
    path: "/control/agents/:id/worktrees/clean",
    summary: "Remove the agent's retained worktrees that have no uncommitted changes",
    access: "control",
    body: { schema: z.strictObject({}), optional: true },
    ok: {
      status: 200,
      schema: z.object({ ok: Ok, removed: z.array(LeaveReport), retained: z.array(LeaveReport) }),
    },
  },
  {
    method: "get",
    path: "/agents/:id/skills",
    summary: "Skills the agent discovers (roots per scope, catalog, warnings, activations)",
    access: "read",
    ok: {
      status: 200,
      schema: z.object({
        ok: Ok,
        agent_id: z.string(),
        roots: z.array(
          z.object({
            scope: SkillScope,
            root: z.string().nullable(),
            candidates: z.array(z.string()),
          }),
        ),
        skills: z.array(SkillEntry),
        warnings: z.array(z.string()),
        active: z.array(SkillActivation),
      }),
    },
  },
  {
    method: "post",
    path: "/control/skills/install",
    summary: "Install a skill from a directory or a git tree URL",
    access: "control",
    body: { schema: InstallBody },
    ok: {
      status: 200,
      schema: z.object({
        ok: Ok,
        name: z.string(),
        scope: SkillScope,
        path: z.string(),
        description: z.string(),
      }),
    },
  },
  {
    method: "post",
    path: "/control/skills/uninstall",
    summary: "Remove an installed skill",
    access: "control",
    body: { schema: UninstallBody },
    ok: {
      status: 200,
      schema: z.object({
        ok: Ok,
        name: z.string(),
        scope: SkillScope,
        path: z.string(),
        removed: z.literal(true),
      }),
    },
  },
];
