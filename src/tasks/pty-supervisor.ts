// PTY supervisor: `node pty-supervisor.ts <process dir>`, started detached by startProcess for
// `tty: true`. A PTY master dies with the process holding it, so this small process (not the
// host) holds it: it copies the terminal transcript into output.log, forwards bytes from
// stdin.fifo into the terminal, and records the exit status, surviving host restarts.
import {
  closeSync,
  constants as fsConstants,
  openSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { spawn } from "@lydell/node-pty";
import { readProcStat, signalName, signalSessions } from "./process-proc.ts";
import { writeExitFile, type RecordedExit } from "./process-wrapper.ts";
import { atomicWriteFile } from "../store/files.ts";

type Launch = {
  shell: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
};

const dir = process.argv[2];
if (dir === undefined) {
  process.stderr.write("usage: pty-supervisor <process dir>\n");
  process.exit(2);
}
const log = (msg: string) => process.stderr.write(`${new Date().toISOString()} ${msg}\n`);
const exitPath = join(dir, "exit");

function record(rec: Omit<RecordedExit, "recorded_by" | "finished_at">): void {
  try {
    writeExitFile(exitPath, {
      ...rec,
      finished_at: new Date().toISOString(),
      recorded_by: "pty_supervisor",
    });
  } catch (err) {
    log(`cannot record exit status: ${(err as Error).message}`);
  }
}

const launchPath = join(dir, "launch.json");
const launch = JSON.parse(readFileSync(launchPath, "utf8")) as Launch;
unlinkSync(launchPath); // it carries the environment; do not leave it on disk

const outFd = openSync(join(dir, "output.log"), fsConstants.O_WRONLY | fsConstants.O_APPEND);

// Input: the FIFO opened read-write never reports EOF when a writer closes, and never blocks.
// Opened before the terminal starts so input written early is queued, not refused.
const fifoFd = openSync(join(dir, "stdin.fifo"), fsConstants.O_RDWR | fsConstants.O_NONBLOCK);

// Stop requests aimed at the supervisor are forwarded to the terminal's session; installed
// before the terminal starts so an early SIGTERM cannot kill the supervisor and orphan it.
let childPid: number | null = null;
const forward = (sig: NodeJS.Signals) => () => {
  if (childPid === null) return;
  const st = readProcStat(childPid);
  if (st !== null) {
    signalSessions([st.session], [], "SIGHUP");
    signalSessions([st.session], [], sig);
  }
};
process.on("SIGTERM", forward("SIGTERM"));
process.on("SIGINT", forward("SIGINT"));
process.on("SIGHUP", forward("SIGHUP"));

let term: ReturnType<typeof spawn>;
try {
  term = spawn(launch.shell, launch.args, {
    name: launch.env["TERM"] ?? "xterm-256color",
    cols: launch.cols,
    rows: launch.rows,
    cwd: launch.cwd,
    env: launch.env,
    encoding: null, // raw bytes: the transcript is copied verbatim
  });
} catch (err) {
  log(`cannot start the terminal: ${(err as Error).message}`);
  record({
    exit_code: null,
    signal: null,
    lost_reason: `PTY start failed: ${(err as Error).message}`,
  });
  process.exit(1);
}
childPid = term.pid;
const childStat = readProcStat(childPid);
{
  // atomic: readers never see a partial record
  atomicWriteFile(
    join(dir, "pty.json"),
    JSON.stringify({ child_pid: childPid, child_start_ticks: childStat?.start_ticks ?? -1 }) + "\n",
    { fsync: false },
  );
}

term.onData((data: string | Buffer) => {
  writeSync(outFd, typeof data === "string" ? Buffer.from(data, "utf8") : data);
});

const decoder = new StringDecoder("utf8");
const input = new Socket({ fd: fifoFd, readable: true, writable: false });
input.on("data", (chunk: Buffer) => {
  const text = decoder.write(chunk);
  if (text.length > 0) term.write(text);
});
input.on("error", (err) => log(`input pipe: ${err.message}`));

term.onExit(({ exitCode, signal }) => {
  const sig = signal !== undefined && signal > 0 ? signalName(signal) : null;
  record(sig !== null ? { exit_code: null, signal: sig } : { exit_code: exitCode, signal: null });
  closeSync(outFd);
  input.destroy();
  process.exit(0);
});
