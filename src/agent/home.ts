// The agent home layout: every agent (default, named, child, temporary) owns a directory
// with the same shape. Visible entries are the agent's own workspace (AGENTS.md, memory/,
// notes/, work/, skills/); `.holon/` is the runtime's (state, ledger, indexes, cache).
// Creating the layout never overwrites a file that exists: an agent's edits are its own.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const HOME_DIRS = [
  "memory",
  "notes",
  "work",
  "skills",
  ".holon",
  ".holon/state",
  ".holon/ledger",
  ".holon/indexes",
  ".holon/cache",
] as const;

const MEMORY_SEEDS: Record<string, string> = {
  "memory/self.md":
    "# Self memory\n\nLessons about my own role and habits that hold across workspaces.\n",
  "memory/operator.md":
    "# Operator memory\n\nWhat I have learned about how the operator likes to work with me.\n",
};

/**
 * What a new agent's home starts from: the rendered AGENTS.md and where it came from.
 * The template service (context/templates.ts) produces it; the directory writes it.
 */
export type HomeSeed = {
  /** Rendered AGENTS.md (template guidance plus Holon's required home guidance). */
  agents_md: string;
  /** Provenance recorded under `.holon/state/template.json`. */
  provenance: Record<string, unknown> | null;
  /** Skill directories already materialized in a staging area, moved into `skills/`. */
  staged_skills_dir?: string | undefined;
};

/**
 * Resolves a template selector into a seed, staging whatever it installs; the agent plane
 * asks it before anything of the agent is written, so a failure leaves nothing behind.
 */
export interface HomeInitializer {
  /** The seed for a new agent: `template` (id, absolute path, URL) or the default. */
  prepare(template: string | undefined): HomeSeed & { cleanup(): void };
  /** The default agent's seed, used only when its AGENTS.md is missing. */
  defaultSeed(): HomeSeed;
}

/** Create the layout (0700 directories, 0600 seed files). Existing files are left alone. */
export function ensureHomeLayout(home: string, seed?: HomeSeed): void {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  for (const d of HOME_DIRS) mkdirSync(join(home, d), { recursive: true, mode: 0o700 });
  for (const [rel, text] of Object.entries(MEMORY_SEEDS)) writeIfMissing(join(home, rel), text);
  if (seed) {
    writeIfMissing(join(home, "AGENTS.md"), seed.agents_md);
    if (seed.provenance) {
      writeIfMissing(
        join(home, ".holon", "state", "template.json"),
        JSON.stringify(seed.provenance, null, 2) + "\n",
      );
    }
  }
}

function writeIfMissing(path: string, text: string): void {
  if (existsSync(path)) return;
  try {
    writeFileSync(path, text, { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
}
