// UseWorkspace: make a workspace active (a path, or a known workspace id; direct or isolated).
// The workspace service does the work and owns the rules (attach policy, anchor detection,
// worktree creation and cleanup); this wraps its result for the model.
import { z } from "zod";
import { describe, type ToolDefinition } from "../registry.ts";

const Input = z.strictObject({
  path: z
    .string()
    .min(1)
    .max(4096)
    .optional()
    .describe("A directory to work in: a repository, a folder inside one, or any directory."),
  workspace_id: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('A workspace already attached to you, or "agent_home" to go back home.'),
  mode: z
    .enum(["direct", "isolated"])
    .optional()
    .describe("direct (default): work in place. isolated: a fresh git worktree on its own branch."),
  isolation_label: z
    .string()
    .max(200)
    .optional()
    .describe("Short hint for the isolated branch and directory name, e.g. fix-login."),
});

export const useWorkspaceTool: ToolDefinition<typeof Input> = {
  name: "UseWorkspace",
  family: "workspace",
  description: describe(import.meta.url, "./use-workspace.md"),
  input: Input,
  async execute(input, ctx) {
    const r = await ctx.services.workspaces.use(ctx.agent.agent_id, input, "agent");
    const where =
      r.mode === "isolated" && r.worktree
        ? `isolated worktree ${r.worktree.path} on branch ${r.worktree.branch}`
        : r.execution_root;
    return {
      summary_text: `active workspace ${r.workspace_id}: ${where}`,
      result: r as unknown as Record<string, unknown>,
    };
  },
  render(c) {
    const r = (c.result ?? {}) as Record<string, any>;
    const lines = [
      `Active workspace: ${r.workspace_id} (${r.mode}${r.detected_kind ? `, ${r.detected_kind}` : ""})`,
      `Workspace anchor: ${r.workspace_anchor}`,
      `Execution root: ${r.execution_root}`,
      `Working directory: ${r.cwd}`,
    ];
    if (r.worktree) {
      lines.push(
        `Branch: ${r.worktree.branch} (from ${r.worktree.base_branch}); commit there if you want your changes kept as commits`,
      );
    }
    if (r.left) {
      const l = r.left;
      lines.push(
        l.disposition === "removed"
          ? `Left worktree ${l.path}: it was clean and has been removed${l.branch_deleted ? " with its branch" : `; branch ${l.branch} keeps its ${l.commits_ahead} commit(s)`}`
          : `Left worktree ${l.path}: kept for review, ${l.changed_files.length} uncommitted change(s) on branch ${l.branch}`,
      );
    }
    if (r.guidance) lines.push(r.guidance);
    return lines.join("\n");
  },
};
