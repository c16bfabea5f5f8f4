// The other faults a home can meet under a running host: a read-only HOLON_HOME, a deleted
// run/ directory, and a database file replaced or truncated by someone else (the host refuses
// to write rather than corrupt it). Real files, real mounts, real HTTP.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { TurnExecutor } from "../src/agent/runtime.ts";
import { RuntimeHost } from "../src/host/host.ts";
import { cleanupHomes, runCli, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { IS_ROOT, fillDisk, mountTmpfs, unmountAll } from "./helpers/tmpfs.ts";

afterAll(() => {
  cleanupHomes();
  unmountAll();
});

/** Holds every run until shutdown aborts it. */
const parked: TurnExecutor = {
  run: (req) =>
    new Promise((resolve) =>
      req.signal.addEventListener("abort", () => resolve({ kind: "aborted", reason: "shutdown" })),
    ),
};

/** GET over the Unix socket (no token needed there). */
function overSocket(socketPath: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: "GET" }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

describe("home faults", () => {
  it("a deleted run/ directory is put back: lock, runtime file and socket, and a second host is still refused", async () => {
    const rt = await startRuntime({ executor: () => parked });
    try {
      const paths = rt.host.paths;
      rmSync(paths.runDir, { recursive: true, force: true });
      await waitFor(
        () =>
          existsSync(paths.lockFile) && existsSync(paths.runtimeFile) && existsSync(paths.socket),
        { what: "run/ to be restored" },
      );
      expect(await overSocket(paths.socket, "/handshake")).toBe(200);
      expect(JSON.parse(readFileSync(paths.runtimeFile, "utf8")).pid).toBe(process.pid);
      await expect(async () => await RuntimeHost.open({ home: rt.home })).rejects.toThrow(
        /owns this home/,
      );
    } finally {
      await rt.close();
    }
  });

  it("a truncated database file: writes are refused with storage_lost, the file is never written again", async () => {
    // The SQLite file itself, on both test runs.
    const rt = await startRuntime({
      home: tempHome("holon-test-", { sqlite: true }),
      executor: () => parked,
    });
    const db = rt.host.paths.database;
    try {
      expect((await rt.req("POST", "/agents/main/enqueue", { text: "before" })).status).toBe(202);
      truncateSync(db, 0);
      const refused = await rt.req("POST", "/agents/main/enqueue", { text: "after" });
      expect(refused.status).toBe(503);
      expect(refused.json.error.kind).toBe("storage_lost");
      expect(refused.json.error.message).toMatch(/truncated/);
      const status = await rt.req("GET", "/agents/main/status");
      expect(status.status).toBe(200);
      expect(status.json.storage.state).toBe("lost");
      const cli = await runCli(["status"], { env: { HOLON_HOME: rt.home } });
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(/storage: +LOST since .*truncated.*restart the runtime/);
    } finally {
      await rt.close();
    }
    // Not even the shutdown's checkpoint wrote into it.
    expect(readFileSync(db).length).toBe(0);
  });

  it("a database file replaced by another: refused, and the new file is left exactly as it is", async () => {
    // The SQLite file itself, on both test runs.
    const rt = await startRuntime({
      home: tempHome("holon-test-", { sqlite: true }),
      executor: () => parked,
    });
    const db = rt.host.paths.database;
    const other = join(rt.home, "other.db");
    try {
      writeFileSync(other, "someone else's bytes\n".repeat(100));
      const before = sha(other);
      renameSync(other, db);
      // Within a second the watch notices even with no write coming in.
      await waitFor(() => rt.host.store.health.state === "lost", { what: "the store lost" });
      const refused = await rt.req("POST", "/agents/main/enqueue", { text: "after" });
      expect(refused.status).toBe(503);
      expect(refused.json.error.kind).toBe("storage_lost");
      expect(refused.json.error.hint).toMatch(/restart/);
      expect(sha(db)).toBe(before);
      await rt.close();
      expect(sha(db)).toBe(before);
    } finally {
      await rt.close();
    }
  });

  it("a database file that is not a database: the host refuses to start with a clear error", async () => {
    const home = tempHome("holon-test-", { sqlite: true }); // the SQLite file itself
    writeFileSync(join(home, "holon.db"), "not a database at all".repeat(300), { mode: 0o600 });
    const r = await runCli(["serve", "--port", "0", "--home", home]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/cannot be opened as the runtime's database/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // one clear line, no stack trace
  });

  it.skipIf(!IS_ROOT)(
    "a read-only HOLON_HOME: the host refuses to start with a clear error",
    async () => {
      const mount = mountTmpfs(4);
      const home = join(mount, "home");
      const first = await startRuntime({ home, executor: () => parked });
      await first.close();
      execFileSync("mount", ["-o", "remount,ro", mount]);
      const r = await runCli(["serve", "--port", "0", "--home", home]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/cannot be written, so the runtime cannot start/);
      expect(r.stderr).toMatch(/hint: make it writable/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
  );

  it.skipIf(!IS_ROOT)(
    "a task whose output cannot be written: the output and its result mark the gap",
    async () => {
      const mount = mountTmpfs(24);
      const home = join(mount, "home");
      const rt = await startRuntime({ home, executor: () => parked });
      try {
        const agentHome = (await rt.host.agents.get("main")).agent_home;
        const task = await rt.host.tasks.start({
          agent_id: "main",
          cmd: "echo before; while [ ! -e go ]; do sleep 0.02; done; seq 1 200000",
          workdir: agentHome,
          shell: "/bin/sh",
          login: false,
          tty: false,
          accepts_input: false,
          terminal_reentry: false,
        });
        // The command has written its first line before the disk fills (on a loaded machine
        // its shell can start late).
        await waitFor(() => readFileSync(task.output_path, "utf8").includes("before"), {
          what: "the command's first line",
        });
        const filler = join(mount, "filler");
        fillDisk(filler);
        writeFileSync(join(agentHome, "go"), ""); // an empty file needs no block
        await waitFor(() => !rt.host.tasks.handleOf(task.id), { what: "the command to end" });
        rmSync(filler);
        const done = await waitFor(
          async () => {
            const t = (await rt.host.store.tasks.get(task.id))!;
            return ["completed", "failed"].includes(t.status) ? t : undefined;
          },
          { what: "the task to be settled", timeoutMs: 20_000 },
        );
        const output = readFileSync(done.output_path, "utf8");
        expect(output).toContain("before");
        expect(output).toMatch(/output may be missing here: the disk was full/);
        const result = (await rt.host.store.messages.recent("main", 50)).find(
          (m) => m.kind === "task_result" && m.task_id === task.id,
        )!;
        expect(JSON.stringify(result.body)).toMatch(/INCOMPLETE: the disk was full/);
      } finally {
        await rt.close();
      }
    },
    60_000,
  );
});
