// Git plumbing for workspaces: anchor detection (top-level, linked worktrees), creating a
// managed worktree on its own branch, reading what changed in one, and removing a clean one.
// The runtime never commits and never removes a worktree with changes: callers check
// `worktreeChanges` first, and `removeWorktree` refuses a dirty tree itself (no --force).
import { execFileSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { HolonError } from "../domain/errors.ts";

/** git with a bounded run time, no prompts, and the user's config (identity for the model's commits). */
function git(cwd: string, args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    timeout: 30_000,
    maxBuffer: 8 * 1024 * 1024,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_OPTIONAL_LOCKS: "0" },
  });
}

function tryGit(cwd: string, args: string[]): string | null {
  try {
    return git(cwd, args).trim();
  } catch {
    return null;
  }
}

export type GitLocation = {
  /** The top level of the working tree that contains the path. */
  top_level: string;
  /** The main repository's working tree: the anchor (differs from top_level in a linked worktree). */
  main_root: string;
  linked_worktree: boolean;
};

/**
 * Whether git could find a repository from `dir` at all: some ancestor holds a `.git` entry
 * (a directory, or a linked worktree's file), or the environment names one. When none can,
 * git is not started to say so (a child process on the start path of every `holon run`
 * outside a repository).
 */
function mayBeInGit(dir: string): boolean {
  if (process.env.GIT_DIR !== undefined || process.env.GIT_WORK_TREE !== undefined) return true;
  let d = resolve(dir);
  for (;;) {
    if (existsSync(join(d, ".git"))) return true;
    const up = dirname(d);
    if (up === d) return false;
    d = up;
  }
}

/** Where `dir` sits in git, or null when it is not inside a working tree. */
export function gitLocation(dir: string): GitLocation | null {
  if (!mayBeInGit(dir)) return null;
  const out = tryGit(dir, [
    "rev-parse",
    "--path-format=absolute",
    "--show-toplevel",
    "--git-common-dir",
    "--git-dir",
  ]);
  if (!out) return null;
  const [top, common, gitDir] = out.split("\n");
  if (!top || !common || !gitDir) return null;
  const topReal = realpathSync.native(top);
  const commonReal = realpathSync.native(common);
  const gitDirReal = realpathSync.native(gitDir);
  const linked = commonReal !== gitDirReal;
  // A bare or unusual layout keeps the tree's own top level as its anchor.
  const main = linked && basename(commonReal) === ".git" ? dirname(commonReal) : topReal;
  return { top_level: topReal, main_root: main, linked_worktree: linked };
}

export function currentBranch(repo: string): string {
  return tryGit(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"]) ?? "HEAD";
}

export function headCommit(repo: string): string | null {
  return tryGit(repo, ["rev-parse", "--verify", "--quiet", "HEAD"]);
}

/** A label as a branch/path fragment: lowercase, [a-z0-9-], bounded; "work" when nothing is left. */
export function slugLabel(label: string | undefined): string {
  const slug = (label ?? "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/g, "");
  return slug || "work";
}

export function branchExists(repo: string, branch: string): boolean {
  return tryGit(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]) !== null;
}

/** `git worktree add -b <branch> <path> <base>`; throws `worktree_create_failed` with git's words. */
export function addWorktree(repo: string, path: string, branch: string, base: string): void {
  try {
    git(repo, ["worktree", "add", "--quiet", "-b", branch, path, base]);
  } catch (err) {
    throw new HolonError(
      "worktree_create_failed",
      `git could not create the worktree: ${gitError(err)}`,
      {
        hint: "check that the repository has at least one commit and is not locked by another git process",
        details: { repository: repo, branch },
      },
    );
  }
}

export type WorktreeChanges = {
  /** Paths with uncommitted changes (tracked or untracked), as `git status` names them. */
  changed_files: string[];
  /** Commits on the worktree's branch that its base does not have. */
  commits_ahead: number;
  /** The worktree directory no longer exists. */
  missing: boolean;
};

const MAX_LISTED_FILES = 200;

export function worktreeChanges(
  path: string,
  baseCommit: string,
  branch: string,
  repo: string,
): WorktreeChanges {
  let status: string;
  try {
    status = git(path, ["status", "--porcelain=v1", "-z", "--untracked-files=all"]);
  } catch {
    return {
      changed_files: [],
      commits_ahead: commitsAhead(repo, baseCommit, branch),
      missing: true,
    };
  }
  const files: string[] = [];
  const parts = status.split("\0");
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i]!;
    if (entry.length < 4) continue;
    files.push(entry.slice(3));
    // A rename/copy entry is followed by its source path.
    if (entry[0] === "R" || entry[0] === "C") i++;
  }
  return {
    changed_files: files.slice(0, MAX_LISTED_FILES),
    commits_ahead: commitsAhead(repo, baseCommit, branch),
    missing: false,
  };
}

function commitsAhead(repo: string, baseCommit: string, branch: string): number {
  const n = tryGit(repo, ["rev-list", "--count", `${baseCommit}..refs/heads/${branch}`]);
  return n === null ? 0 : Number(n) || 0;
}

/**
 * Remove a clean worktree (git refuses a dirty one since no --force is passed) and prune a
 * vanished one; delete its branch only when the branch holds nothing its base lacks.
 */
export function removeWorktree(
  repo: string,
  path: string,
  branch: string,
  deleteBranch: boolean,
): { branch_deleted: boolean } {
  try {
    git(repo, ["worktree", "remove", path]);
  } catch (err) {
    // Already gone from disk: let git forget it.
    if (tryGit(repo, ["worktree", "prune"]) === null) {
      throw new HolonError(
        "worktree_remove_failed",
        `git could not remove the worktree: ${gitError(err)}`,
      );
    }
    if (tryGit(repo, ["worktree", "list", "--porcelain"])?.includes(`worktree ${path}\n`)) {
      throw new HolonError(
        "worktree_remove_failed",
        `git could not remove the worktree: ${gitError(err)}`,
      );
    }
  }
  if (!deleteBranch) return { branch_deleted: false };
  // -d (not -D): git itself refuses a branch with unmerged commits.
  return { branch_deleted: tryGit(repo, ["branch", "-d", branch]) !== null };
}

function gitError(err: unknown): string {
  const e = err as { stderr?: string | Buffer; message?: string };
  const text = (e.stderr ? String(e.stderr) : (e.message ?? String(err))).trim();
  return text.split("\n").slice(-3).join(" ").slice(0, 500);
}

/** Absolute path of `p` resolved against `base` (the agent's cwd) without touching the disk. */
export function absoluteFrom(base: string, p: string): string {
  return isAbsolute(p) ? resolve(p) : resolve(base, p);
}
