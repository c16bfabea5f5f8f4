// Small real file systems for the fault tests: a tmpfs of a few megabytes, mounted by the
// test (it needs root, which CI has), so a full disk is a real ENOSPC and not a mock.
import { execFileSync } from "node:child_process";
import { mkdtempSync, openSync, closeSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT && process.env.CI) {
  throw new Error("the file-system fault tests mount a tmpfs and must run as root in CI");
}

const mounted: string[] = [];

/** Mount a fresh tmpfs of `sizeMb` megabytes and return its directory. */
export function mountTmpfs(sizeMb: number): string {
  const dir = mkdtempSync(join(tmpdir(), "holon-tmpfs-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m,mode=0700`, "tmpfs", dir]);
  mounted.push(dir);
  return dir;
}

/** Unmount every tmpfs this file mounted (afterAll). */
export function unmountAll(): void {
  for (const dir of mounted.splice(0)) {
    try {
      execFileSync("umount", ["-l", dir]);
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // already gone
    }
  }
}

/** Write `file` until the file system says ENOSPC; returns the bytes written. */
export function fillDisk(file: string): number {
  const fd = openSync(file, "a");
  const chunk = Buffer.alloc(256 * 1024, 1);
  let written = 0;
  try {
    for (;;) {
      try {
        written += writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOSPC") {
          // top off the last partial block too
          for (let n = 4096; n >= 1; n = Math.floor(n / 2)) {
            try {
              for (;;) written += writeSync(fd, chunk.subarray(0, n));
            } catch {
              // smaller next
            }
          }
          return written;
        }
        throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
}
