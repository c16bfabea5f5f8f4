// The POSIX sh wrapper every non-PTY process runs under, and the exit-status file format
// shared by the wrapper, the PTY supervisor and the host.
import { readFileSync, statSync } from "node:fs";
import { signalName } from "./process-proc.ts";
import { atomicWriteFile } from "../store/files.ts";

/**
 * Run as `sh -c WRAPPER_SCRIPT holon-wrap <dir>`, or as `sh -c WRAPPER_SCRIPT holon-wrap` with
 * `<dir>` written later as one line to its stdin: a spare wrapper, started ahead of time and
 * blocked there until it is given a command (see spawner.ts). A spare that reads nothing (its
 * host went away) exits without doing anything.
 *
 * - Sources its parameters from `<dir>/params.sh` (`wrapperParams`: single-quoted assignments
 *   of cwd, shell, shell flag, command, input flag, output mode and sleep path). Variable
 *   names carry a `_hw_` prefix so they cannot shadow an exported variable of the command.
 * - Opens its own output: `stdout.log` + `stderr.log`, or `output.log` for both when merged;
 *   always appending (the host created the files empty).
 * - Writes its own files (exit status, input holder pid) owner-only (umask 077) and gives the
 *   command the host's umask back (`_hw_u`), so the command's own files are unaffected.
 * - Catches TERM/INT/HUP/QUIT: a group-wide SIGTERM reaches the command (caught signals
 *   reset to default across exec), while the wrapper lives on long enough to record the
 *   status. A trap runs only after the foreground command returns. A signal that arrives
 *   before the command starts (a stop right after the start, while a spare still waits for
 *   its directory: `read` then fails and is retried) is recorded as the status the command
 *   would have had (128 + signal number), and the command is not started. The retries are
 *   bounded: a signalled spare whose stdin then ends (its helper died before handing it a
 *   directory) would otherwise spin on `read` at end of file for ever.
 * - With input enabled it opens the FIFO read-write on fd 3 (never blocks on Linux) and
 *   read-only on fd 4 (does not block either: fd 3 is a writer), hands fd 3 to a `sleep`
 *   holder so the command never sees EOF between writers (and a host restart does not close
 *   its stdin), then drops its own copy. The command gets fd 4 as its stdin: its read side is
 *   open before the holder's pid is in `stdin.holder`, so closing input right after the start
 *   cannot leave the command blocked in open(2) on a FIFO without writers. Closing input =
 *   killing the holder (pid in `stdin.holder`) with SIGKILL: the holder may still be the
 *   wrapper's fork, not yet `sleep`, and a SIGTERM there hits the wrapper's inherited TERM
 *   trap, which the fork drops when it resets its traps, so a holder killed with SIGTERM
 *   could live on and the command never see EOF. Without input the command's stdin is
 *   /dev/null.
 * - Writes the exit status with a single `echo` (one write(2) of "<status>\n"); a reader treats
 *   a file without the trailing newline as not yet written. No temp + rename: `mv` is an
 *   external program and would put a fork + exec on every command's exit path.
 * - Uses only shell builtins on the path of a plain command, so the overhead over the user's
 *   shell is one `sh` start and one fork.
 * - A spare (no `<dir>` argument) talks over its stdin, a socket whose other end the host
 *   holds (see spawner.ts): it writes `r` once it runs (for a confined spare: once
 *   bubblewrap has set the sandbox up), and after the command, once the exit file is written,
 *   the status again (`<status>\n`), so the host learns of the end without waiting for the
 *   wrapper, the sandbox and the helper to exit and report it. The command never gets that
 *   socket (fd 5 is closed for it). The status line is written with SIGPIPE ignored (the
 *   command has ended; a host that went away must not turn the status into a signal).
 */
export const WRAPPER_SCRIPT = `umask 077
trap _hw_t=143 TERM; trap _hw_t=130 INT; trap _hw_t=129 HUP; trap _hw_t=131 QUIT
_hw_t=
_hw_n=
if [ $# -gt 0 ]; then _hw_d=$1
else
_hw_n=1
echo r >&0 2>/dev/null
_hw_e=0
until IFS= read -r _hw_d; do [ -n "$_hw_t" ] && [ $((_hw_e += 1)) -lt 16 ] || exit 0; done
exec 5>&0
fi
. "$_hw_d/params.sh"
if [ -n "$_hw_t" ]; then echo "$_hw_t" >"$_hw_d/exit"; exit "$_hw_t"; fi
if [ "$_hw_m" = 1 ]; then exec >>"$_hw_d/output.log" 2>&1
else exec >>"$_hw_d/stdout.log" 2>>"$_hw_d/stderr.log"; fi
cd -- "$_hw_cwd" || { echo 1 >"$_hw_d/exit"; exit 1; }
if [ "$_hw_i" = 1 ]; then
exec 3<>"$_hw_d/stdin.fifo"
exec 4<"$_hw_d/stdin.fifo"
"$_hw_z" 2147483647 </dev/null >/dev/null 2>&1 4<&- 5>&- &
_hw_h=$!
echo "$_hw_h" >"$_hw_d/stdin.holder"
exec 3>&-
umask "$_hw_u"
"$_hw_s" "$_hw_f" "$_hw_c" <&4 4<&- 5>&-
_hw_r=$?
exec 4<&-
kill -s KILL "$_hw_h" 2>/dev/null
else
exec </dev/null
umask "$_hw_u"
"$_hw_s" "$_hw_f" "$_hw_c" 5>&-
_hw_r=$?
fi
umask 077
echo "$_hw_r" >"$_hw_d/exit"
if [ -n "$_hw_n" ]; then trap '' PIPE; echo "$_hw_r" >&5 2>/dev/null; fi
exit "$_hw_r"`;

/** Quote a string for a POSIX shell: single quotes, with each `'` as `'\\''`. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/** The `params.sh` the wrapper sources. */
export function wrapperParams(p: {
  cwd: string;
  shell: string;
  flag: string;
  cmd: string;
  input: boolean;
  merged: boolean;
  sleep: string;
  /** The umask the command runs with (the wrapper's own files are written with 077). */
  umask: string;
}): string {
  return (
    [
      `_hw_cwd=${shellQuote(p.cwd)}`,
      `_hw_s=${shellQuote(p.shell)}`,
      `_hw_f=${shellQuote(p.flag)}`,
      `_hw_c=${shellQuote(p.cmd)}`,
      `_hw_i=${p.input ? 1 : 0}`,
      `_hw_m=${p.merged ? 1 : 0}`,
      `_hw_z=${shellQuote(p.sleep)}`,
      `_hw_u=${/^[0-7]{1,4}$/.test(p.umask) ? p.umask : "022"}`,
    ].join("\n") + "\n"
  );
}

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

/**
 * Whether `<dir>/exit` holds a status. A sandboxed command's process directory is read-only
 * to it, so its wrapper writes into an `exit` file the host created empty (and bound writable
 * into the sandbox): an empty file is "not yet written", like an absent one.
 */
export function exitRecorded(path: string): boolean {
  try {
    return statSync(path).size > 0;
  } catch {
    return false;
  }
}

/** Write `<dir>/exit` from Node (host or supervisor): temp file, fsync, rename. Never overwrites. */
export function writeExitFile(path: string, rec: RecordedExit): boolean {
  if (exitRecorded(path)) return false; // someone (the wrapper) already recorded it
  atomicWriteFile(path, JSON.stringify(rec) + "\n");
  return true;
}
