// File modes of Holon's own state. HOLON_HOME holds the database, credentials, logs, the
// control token and every agent's task output: other users of the machine must not read
// any of it. So the home is 0700, the files Holon itself creates there are 0600 and their
// directories 0700, and state left by an older version is tightened when a host starts (a
// finished `holon run` agent's runtime directory when its loop starts again).
//
// The one thing never touched is agent and workspace content: an agent's skill scripts must
// stay executable and a git worktree must not show mode changes. Below an agent home only
// the runtime's own `.holon/` directory is Holon's.
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  statSync,
  type Stats,
} from "node:fs";
import { join } from "node:path";
import { HolonError } from "../domain/errors.ts";
import { atomicWriteFile } from "../store/files.ts";
import { homePaths } from "./paths.ts";

export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;

/** The runtime's own directory inside an agent home (process output, patch journals). */
export function agentRuntimeDir(agentHome: string): string {
  return join(agentHome, ".holon");
}

function unusable(home: string, why: string): HolonError {
  return new HolonError("home_unusable", `HOLON_HOME ${home} cannot hold Holon's state: ${why}`, {
    status: 500,
    hint: "point --home or HOLON_HOME at a directory you own and can write, on a local disk",
  });
}

/** Create a directory (and its parents) as 0700; an existing one is narrowed to 0700. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  narrow(dir, PRIVATE_DIR);
}

/** Narrow the permission bits of `path` to `mode` when they are wider; never widen. */
function narrow(path: string, mode: number, st?: Stats): void {
  const s = st ?? lstatSync(path);
  if (s.isSymbolicLink()) return; // never follow a link out of our tree
  if ((s.mode & 0o777 & ~mode) !== 0) chmodSync(path, s.mode & mode & 0o7777);
}

/** Narrow a whole tree: directories to 0700, everything else to 0600. Links are left alone. */
function narrowTree(root: string): void {
  let st: Stats;
  try {
    st = lstatSync(root);
  } catch {
    return;
  }
  if (st.isSymbolicLink()) return;
  if (!st.isDirectory()) return narrow(root, PRIVATE_FILE, st);
  narrow(root, PRIVATE_DIR, st);
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) narrowTree(join(root, name));
}

function narrowIfPresent(path: string, mode: number): void {
  try {
    narrow(path, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/**
 * Make HOLON_HOME ready for a host: the home, `run/` and `logs/` exist as 0700, the database
 * file exists as 0600 before SQLite opens it (SQLite gives its WAL and SHM files the mode of
 * the database; none for a home whose records are in Postgres), and whatever an older version left with wider modes is narrowed. A home
 * that cannot hold a database (not a directory, the database path taken by something else)
 * fails here with `home_unusable` instead of a raw error from deeper down.
 */
export function secureHome(home: string, opts: { sqlite?: boolean } = {}): void {
  const paths = homePaths(home);
  // A home whose records are in Postgres gets no database file.
  const sqlite = opts.sqlite !== false;
  try {
    const st = statSync(home, { throwIfNoEntry: false });
    if (st && !st.isDirectory()) throw unusable(home, "it exists and is not a directory");
    ensurePrivateDir(home);
    ensurePrivateDir(paths.runDir);
    ensurePrivateDir(paths.logsDir);
    if (sqlite) {
      const db = statSync(paths.database, { throwIfNoEntry: false });
      if (db && !db.isFile()) throw unusable(home, `${paths.database} is not a regular file`);
      if (!db) closeSync(openSync(paths.database, "a", PRIVATE_FILE));
    }
    for (const f of [
      paths.database,
      `${paths.database}-wal`,
      `${paths.database}-shm`,
      paths.config,
      paths.credentials,
    ]) {
      narrowIfPresent(f, PRIVATE_FILE);
    }
    narrowTree(paths.runDir);
    narrowTree(paths.logsDir);
  } catch (err) {
    throw homeError(home, err);
  }
}

function homeError(home: string, err: unknown): unknown {
  if (err instanceof HolonError) return err;
  const e = err as NodeJS.ErrnoException;
  return unusable(home, e.code ? `${e.code}: ${e.message}` : e.message);
}

/**
 * The runtime's own directory (`.holon/`) of every agent home under `<home>/agents/`, narrowed
 * as `secureHome` narrows the rest, except the agents named in `skip`: a finished `holon run`
 * agent's is narrowed when its loop starts again (`secureAgentRuntime`), so a start does not
 * walk one more tree for every past run.
 */
export function secureAgentHomes(home: string, skip: ReadonlySet<string>): void {
  const { agentsDir } = homePaths(home);
  let agents: string[] = [];
  try {
    agents = readdirSync(agentsDir);
  } catch {
    return; // no agents yet
  }
  try {
    for (const id of agents) if (!skip.has(id)) secureAgentRuntime(join(agentsDir, id));
  } catch (err) {
    throw homeError(home, err);
  }
}

/** One agent home's `.holon/`: directories 0700, files 0600 (its other content is the agent's). */
export function secureAgentRuntime(agentHome: string): void {
  narrowTree(agentRuntimeDir(agentHome));
}

/** Where a local-mode host keeps the control token it generated. */
export function controlTokenPath(home: string): string {
  return join(homePaths(home).runDir, "control-token");
}

/** The generated control token, or undefined when none was generated (or it is unreadable). */
export function readGeneratedToken(home: string): string | undefined {
  try {
    const token = readFileSync(controlTokenPath(home), "utf8").trim();
    return token === "" ? undefined : token;
  } catch {
    return undefined;
  }
}

/**
 * The control token a local-mode host uses when none is configured: generated once, at the
 * first start, into `<home>/run/control-token` (0600), and reused afterwards so clients that
 * already read it keep working.
 */
export function ensureGeneratedToken(home: string): string {
  const existing = readGeneratedToken(home);
  const path = controlTokenPath(home);
  if (existing !== undefined) {
    narrow(path, PRIVATE_FILE);
    return existing;
  }
  ensurePrivateDir(homePaths(home).runDir);
  const token = randomBytes(32).toString("base64url");
  atomicWriteFile(path, token + "\n", { mode: PRIVATE_FILE });
  return token;
}
