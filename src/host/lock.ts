// One owner per HOLON_HOME: a lock file under run/ holding the owner's pid.
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { HolonError } from "../domain/errors.ts";

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Locks this process holds (a second host in the same process must fail too). */
const heldHere = new Set<string>();

function locked(owner: number): HolonError {
  return new HolonError("home_locked", `another Holon runtime (pid ${owner}) owns this home`, {
    status: 409,
    hint: "talk to it with the CLI (holon status), or stop it first",
    details: { owner_pid: owner },
  });
}

/** Take the lock or fail with `home_locked`. A lock left by a dead process is taken over. */
export function acquireHomeLock(lockPath: string): () => void {
  mkdirSync(dirname(lockPath), { recursive: true });
  if (heldHere.has(lockPath)) throw locked(process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      heldHere.add(lockPath);
      return () => {
        heldHere.delete(lockPath);
        try {
          if (readFileSync(lockPath, "utf8").trim() === String(process.pid)) rmSync(lockPath);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number.parseInt(readFileSync(lockPath, "utf8").trim(), 10);
      if (Number.isFinite(owner) && owner !== process.pid && pidAlive(owner)) {
        throw locked(owner);
      }
      rmSync(lockPath, { force: true }); // stale: its owner is gone
    }
  }
  throw new HolonError("home_locked", "could not take the runtime lock", { status: 409 });
}

/**
 * Put the lock back when someone removed it (or the whole run/ directory) while this process
 * holds it: without it a second host could open the same home. A lock another live process
 * took meanwhile is left alone (and reported as false).
 */
export function reassertHomeLock(lockPath: string): boolean {
  if (!heldHere.has(lockPath)) return false;
  try {
    const owner = Number.parseInt(readFileSync(lockPath, "utf8").trim(), 10);
    return owner === process.pid;
  } catch {
    // missing: write it again below
  }
  try {
    mkdirSync(dirname(lockPath), { recursive: true, mode: 0o700 });
    const fd = openSync(lockPath, "wx", 0o600);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch {
    return false;
  }
}
