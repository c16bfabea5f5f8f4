// Real git repositories in temp dirs for workspace and skills tests, with a fixed identity.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempHome } from "./home.ts";

export const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: "Holon Test",
  GIT_AUTHOR_EMAIL: "test@example.invalid",
  GIT_COMMITTER_NAME: "Holon Test",
  GIT_COMMITTER_EMAIL: "test@example.invalid",
};
// The in-process host and the commands it runs see the identity too.
Object.assign(process.env, GIT_IDENTITY);

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, ...GIT_IDENTITY },
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();
}

/** A repository on branch main with `files` committed. */
export function gitRepo(files: Record<string, string>, prefix = "holon-repo-"): string {
  const dir = tempHome(prefix);
  git(dir, "init", "-q", "-b", "main");
  writeFiles(dir, files);
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "initial");
  return dir;
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    const p = join(dir, name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
}
