// Workspace and skill routes: an agent's attached set and active workspace, attach / use /
// exit / detach, its managed worktrees (list, clean), and the skill catalog with install and
// uninstall. Reads follow the read rule; anything that changes bindings or files is control.
import type { Hono } from "hono";
import { z } from "zod";
import type { AppContext } from "./context.ts";
import { readJson, requireControl, requireRead, validate, type AppEnv } from "./support.ts";

const PathField = z.string().min(1).max(4096);
const AttachBody = z.strictObject({ path: PathField });
const UseBody = z.strictObject({
  path: PathField.optional(),
  workspace_id: z.string().min(1).max(200).optional(),
  mode: z.enum(["direct", "isolated"]).optional(),
  isolation_label: z.string().max(200).optional(),
});
const DetachBody = z.strictObject({ workspace_id: z.string().min(1).max(200) });
const InstallBody = z.strictObject({
  path: PathField.optional(),
  remote: z.string().min(1).max(2048).optional(),
  agent_id: z.string().min(1).max(64).optional(),
  force: z.boolean().optional(),
});
const UninstallBody = z.strictObject({
  name: z.string().min(1).max(64),
  agent_id: z.string().min(1).max(64).optional(),
});

export function workspaceRoutes(app: Hono<AppEnv>, { host }: AppContext): void {
  const ws = () => host.services.workspaces;
  const skills = () => host.services.skills;
  const agentOf = (id: string | undefined) => host.agents.getPublic(id!).agent_id;

  app.get("/agents/:id/workspaces", (c) => {
    requireRead(c);
    return c.json(ws().list(agentOf(c.req.param("id"))));
  });

  app.get("/agents/:id/worktrees", (c) => {
    requireRead(c);
    return c.json({ worktrees: ws().worktrees(agentOf(c.req.param("id"))) });
  });

  app.post("/control/agents/:id/workspaces/attach", async (c) => {
    requireControl(c);
    const body = validate(AttachBody, await readJson(c));
    return c.json(ws().attach(agentOf(c.req.param("id")), body.path, "operator"));
  });

  app.post("/control/agents/:id/workspaces/use", async (c) => {
    requireControl(c);
    const body = validate(UseBody, await readJson(c));
    return c.json(ws().use(agentOf(c.req.param("id")), body, "operator"));
  });

  app.post("/control/agents/:id/workspaces/exit", async (c) => {
    requireControl(c);
    await readJson(c, { optional: true });
    return c.json(ws().exit(agentOf(c.req.param("id"))));
  });

  app.post("/control/agents/:id/workspaces/detach", async (c) => {
    requireControl(c);
    const body = validate(DetachBody, await readJson(c));
    return c.json(ws().detach(agentOf(c.req.param("id")), body.workspace_id));
  });

  app.post("/control/agents/:id/worktrees/clean", async (c) => {
    requireControl(c);
    await readJson(c, { optional: true });
    return c.json(ws().cleanWorktrees(agentOf(c.req.param("id"))));
  });

  app.get("/agents/:id/skills", (c) => {
    requireRead(c);
    return c.json(skills().list(agentOf(c.req.param("id"))));
  });

  app.post("/control/skills/install", async (c) => {
    requireControl(c);
    const body = validate(InstallBody, await readJson(c));
    if (body.agent_id) agentOf(body.agent_id);
    return c.json(skills().install(body));
  });

  app.post("/control/skills/uninstall", async (c) => {
    requireControl(c);
    const body = validate(UninstallBody, await readJson(c));
    if (body.agent_id) agentOf(body.agent_id);
    return c.json(skills().uninstall(body.name, body.agent_id));
  });
}
