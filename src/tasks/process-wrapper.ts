// The POSIX sh wrapper every non-PTY process runs under, and the exit-status file format
// shared by the wrapper, the PTY supervisor and the host.
import {
  closeSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs";
import { signalName } from "./process-proc.ts";

/**
 * Run as `sh -c WRAPPER_SCRIPT holon-wrap <dir> <shell> <-c|-lc> <cmd> <0|1> <sleep path>`.
 *
 * - Catches TERM/INT/HUP/QUIT with a no-op trap: a group-wide SIGTERM reaches the command
 *   (caught signals reset to default across exec), while the wrapper lives on long enough to
 *   record the status. A trap runs only after the foreground command returns.
 * - With input enabled (`$5 = 1`) it opens the FIFO read-write on fd 3 (never blocks on Linux),
 *   hands that fd to a `sleep` holder so the command never sees EOF between writers (and a
 *   host restart does not close its stdin), then drops its own copy. The command opens the
 *   FIFO read-only as its stdin. Closing input = killing the holder (pid in `stdin.holder`).
 * - Writes the exit status with a single `echo` (one write(2) of "<status>\n"); a reader treats
 *   a file without the trailing newline as not yet written. No temp + rename: `mv` is an
 *   external program and would put a fork + exec on every command's exit path.
 * - Uses only shell builtins on the path of a plain command, so the overhead over the user's
 *   shell is one `sh` start and one fork.
 */
export const WRAPPER_SCRIPT = `trap : TERM INT HUP QUIT
if [ "$5" = 1 ]; then
exec 3<>"$1/stdin.fifo"
"$6" 2147483647 </dev/null >/dev/null 2>&1 &
h=$!
echo "$h" >"$1/stdin.holder"
exec 3>&-
"$2" "$3" "$4" <"$1/stdin.fifo"
s=$?
kill "$h" 2>/dev/null
else
"$2" "$3" "$4"
s=$?
fi
echo "$s" >"$1/exit"
exit "$s"`;

export type ExitStatus = {
  /** Exit code. For wrapper-run commands this is the shell status `$?` (0–255). */
  exit_code: number | null;
  /**
   * Terminating signal name. Exact for PTY processes and when the host saw the wrapper itself
   * die by a signal; for a wrapper-recorded status above 128 it is inferred from the shell
   * convention (status = 128 + signal number) and `exit_code` keeps the raw status.
   */
  signal: string | null;
  finished_at: string;
  /** Set when no process recorded a status (the recorder was killed); exit_code and signal are then null. */
  lost_reason?: string;
};

/** A status recorded by the host or the PTY supervisor (JSON line). */
export type RecordedExit = {
  exit_code: number | null;
  signal: string | null;
  finished_at: string;
  recorded_by: "host" | "pty_supervisor";
  lost_reason?: string;
};

/** Turn a shell status (`$?`) into an ExitStatus; statuses 129–192 also name the inferred signal. */
export function statusFromShell(status: number, finishedAt: string): ExitStatus {
  const sig = status > 128 && status <= 192 ? signalName(status - 128) : null;
  return { exit_code: status, signal: sig, finished_at: finishedAt };
}

/** Read `<dir>/exit`; null while absent or not completely written. */
export function readExitFile(path: string): ExitStatus | null {
  let text: string;
  let mtime: Date;
  try {
    text = readFileSync(path, "utf8");
    mtime = statSync(path).mtime;
  } catch {
    return null;
  }
  if (!text.endsWith("\n")) return null;
  const line = text.trim();
  if (/^\d+$/.test(line)) return statusFromShell(Number(line), mtime.toISOString());
  try {
    const rec = JSON.parse(line) as RecordedExit;
    const out: ExitStatus = {
      exit_code: rec.exit_code,
      signal: rec.signal,
      finished_at: rec.finished_at,
    };
    if (rec.lost_reason !== undefined) out.lost_reason = rec.lost_reason;
    return out;
  } catch {
    return null;
  }
}

/** Write `<dir>/exit` from Node (host or supervisor): temp file, fsync, rename. Never overwrites. */
export function writeExitFile(path: string, rec: RecordedExit): boolean {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    statSync(path);
    return false; // someone (the wrapper) already recorded it
  } catch {
    // absent: write it
  }
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, JSON.stringify(rec) + "\n");
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  return true;
}
