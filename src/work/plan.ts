// The plan artifact: a markdown file owned by one work item, under the agent's home
// (`<agent_home>/work-items/<id>/plan.md`). The file is the truth; the record keeps a
// descriptor (hash, size, time, bounded preview) refreshed whenever the runtime looks.
import { createHash } from "node:crypto";
import { closeSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { WORK_LIMITS, type PlanArtifact } from "../domain/work-item.ts";
import { atomicWriteFile } from "../store/files.ts";

/** Files larger than this are described by their head only (hash of the head + the size). */
const MAX_HASHED_BYTES = 4 * 1024 * 1024;

export function planPath(agentHome: string, workItemId: string): string {
  return join(agentHome, "work-items", workItemId, "plan.md");
}

/** Create the plan file (0600, directories 0700), seeded with `text`. */
export function writePlan(path: string, text: string): void {
  atomicWriteFile(path, text, { mkdir: true });
}

export function removePlanDir(path: string): void {
  rmSync(dirname(path), { recursive: true, force: true });
}

/**
 * Describe the plan file as it is now; a missing file is an empty plan. With `known` (the
 * stored descriptor), a file whose size and modification time did not change is not read.
 */
export function describePlan(path: string, now: string, known?: PlanArtifact): PlanArtifact {
  if (known) {
    try {
      const st = statSync(path);
      if (st.size === known.bytes && st.mtime.toISOString() === known.updated_at) return known;
    } catch {
      if (known.bytes === 0) return known;
    }
  }
  let bytes = 0;
  let updatedAt = now;
  let head = Buffer.alloc(0);
  try {
    const st = statSync(path);
    bytes = st.size;
    updatedAt = st.mtime.toISOString();
    const fd = openSync(path, "r");
    try {
      head = Buffer.alloc(Math.min(bytes, MAX_HASHED_BYTES));
      let off = 0;
      while (off < head.length) {
        const n = readSync(fd, head, off, head.length - off, off);
        if (n === 0) break;
        off += n;
      }
      head = head.subarray(0, off);
    } finally {
      closeSync(fd);
    }
  } catch {
    // no plan file (yet, or removed by hand): described as empty
  }
  const hash = createHash("sha256").update(head);
  if (bytes > head.length) hash.update(`:${bytes}`);
  const text = head.toString("utf8");
  const limit = WORK_LIMITS.preview_chars;
  const complete = bytes === head.length && text.length <= limit;
  return {
    path,
    hash: `sha256:${hash.digest("hex")}`,
    bytes,
    updated_at: updatedAt,
    preview: complete ? text : text.slice(0, limit),
    preview_complete: complete,
  };
}
