// Process records of the MCP servers this host started: one small file per running server
// under <holon_home>/run/mcp/, written before the server is used and removed when it is
// stopped. A host killed with SIGKILL cannot stop its servers; the next host reads the
// records left behind and kills each server that is still the same process (same boot, pid
// and start time: a recycled pid is never touched), then removes the record.
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { atomicWriteFile } from "../store/files.ts";
import { bootId, isSameLiveProcess, readProcStat } from "../tasks/process-proc.ts";

export type ServerProcessRecord = {
  key: string;
  agent_id: string | null;
  server: string;
  pid: number;
  /** The process group the server leads (it was started detached). */
  pgid: number;
  start_ticks: number;
  boot_id: string;
  started_at: string;
};

export class ServerProcessRecords {
  readonly dir: string;

  constructor(runDir: string) {
    this.dir = join(runDir, "mcp");
  }

  #file(key: string): string {
    return join(this.dir, `${key}.json`);
  }

  write(key: string, rec: Omit<ServerProcessRecord, "key" | "boot_id" | "start_ticks">): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const full: ServerProcessRecord = {
      key,
      ...rec,
      start_ticks: readProcStat(rec.pid)?.start_ticks ?? -1,
      boot_id: bootId(),
    };
    atomicWriteFile(this.#file(key), JSON.stringify(full) + "\n", { fsync: false });
  }

  remove(key: string): void {
    rmSync(this.#file(key), { force: true });
  }

  list(): ServerProcessRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: ServerProcessRecord[] = [];
    for (const n of names) {
      if (!n.endsWith(".json")) continue;
      try {
        out.push(JSON.parse(readFileSync(join(this.dir, n), "utf8")) as ServerProcessRecord);
      } catch {
        rmSync(join(this.dir, n), { force: true });
      }
    }
    return out;
  }

  /** Kill every server a previous host left running; returns the pids killed. */
  sweep(): number[] {
    const killed: number[] = [];
    for (const rec of this.list()) {
      if (rec.boot_id === bootId() && isSameLiveProcess(rec.pid, rec.start_ticks)) {
        killGroup(rec.pgid, rec.pid);
        killed.push(rec.pid);
      }
      this.remove(rec.key);
    }
    return killed;
  }
}

/** SIGKILL a server's process group (and the leader, should it have left the group). */
export function killGroup(pgid: number, pid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // the group is gone
  }
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone
  }
}
