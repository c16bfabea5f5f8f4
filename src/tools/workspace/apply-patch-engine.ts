// The ApplyPatch engine: applies a unified diff (see apply-patch-parse.ts) to
// files inside one workspace root, following the RFC's context-first rules.
//
// One call is all-or-nothing. Every path is resolved and confined, every
// file's new bytes are computed in memory, and only when all of that succeeds
// do we touch the disk: writes first (temp file + rename), removals last, and
// whatever was already changed is put back if a later step fails.
//
// All-or-nothing holds across a crash too when the caller names a journal
// directory (the tool uses the agent's `.holon/patch-journal/`). Before the
// first file changes, every new content and every original is written there,
// then the journal record; from that moment `recoverPatchJournals` finishes the
// patch (rolls forward) after a crash, and a journal without its record is
// discarded (nothing was touched yet). A failure in the middle of applying
// marks the journal as rolling back first, so a crash during the rollback is
// finished as a rollback. Temp files have names the journal knows, so none
// survives recovery.
//
// Bytes, not characters: file contents are handled as latin1 strings (one
// char per byte) and patch lines are UTF-8 encoded into the same space, so any
// file encoding survives untouched outside the edited lines.

import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fchmodSync,
  fchownSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  type Stats,
} from "node:fs";
import {
  lstat,
  mkdir,
  open,
  readFile,
  realpath,
  rename,
  rm,
  rmdir,
  stat,
  unlink,
} from "node:fs/promises";
import path from "node:path";
import {
  parsePatch,
  type ApplyPatchError,
  type ApplyPatchErrorKind,
  type FilePatch,
  type Hunk,
  type PatchDiagnostic,
  type PatchOperation,
} from "./apply-patch-parse.ts";
import { isInside, relativeInside } from "../../workspace/roots.ts";

export { parsePatch } from "./apply-patch-parse.ts";
export type {
  ApplyPatchError,
  ApplyPatchErrorKind,
  FilePatch,
  Hunk,
  HunkLine,
  ParsedPatch,
  ParsePatchResult,
  PatchDiagnostic,
  PatchOperation,
} from "./apply-patch-parse.ts";

export interface ApplyPatchInput {
  /** Workspace root (execution root). Every path the patch names must stay inside it. */
  root: string;
  /** Unified diff text. */
  patch: string;
  /** Directory that relative patch paths are resolved against; absolute or relative to root. Defaults to root. */
  cwd?: string;
  /** Where to keep the crash journal (see the header); without it a crash can leave a mix. */
  journalDir?: string;
}

/** Test seams: a throw from `beforeCommitStep` aborts and rolls back. */
export interface ApplyPatchOptions {
  /** Runs before each filesystem mutation of the commit phase. */
  beforeCommitStep?: (step: {
    index: number;
    action: "write" | "remove";
    path: string;
  }) => void | Promise<void>;
  /**
   * Runs at each point a crash could hit the journaled commit: `staged` (contents saved,
   * no record yet), `journaled` (record written), `temp:<i>` (step i's temp file written,
   * not yet renamed), `rolling-back` (rollback marked, not yet done).
   */
  journalPoint?: (point: string) => void | Promise<void>;
}

export interface HunkApplication {
  /** 1-based hunk index within the file patch. */
  hunk: number;
  /** Line the hunk header pointed at (old side, 1-based). */
  old_start: number;
  /** Line where the hunk's old side actually matched (1-based; for a pure insertion, the line it was inserted before). */
  matched_line: number;
  /** matched_line - old_start: how far the header's line number had drifted. */
  offset: number;
  lines_added: number;
  lines_removed: number;
}

export type LineEndingAdaptation = "none" | "added_cr" | "stripped_cr";

export interface FileChange {
  /** Workspace-relative path (posix separators) of the file as it is after the patch (before, for a delete). */
  path: string;
  /** For renames: the workspace-relative path the file was moved from. */
  old_path?: string;
  operation: PatchOperation;
  hunks_applied: number;
  lines_added: number;
  lines_removed: number;
  /** Largest absolute hunk offset in this file; 0 when every hunk sat where its header said. */
  max_offset: number;
  hunks: HunkApplication[];
  /** How patch line endings were adapted to the file's CRLF / LF convention. */
  line_endings: LineEndingAdaptation;
  /** Git metadata that was accepted but not executed (mode lines, index lines, similarity). */
  ignored_metadata: string[];
}

export type ApplyPatchOutcome =
  | { ok: true; summary_text: string; files: FileChange[]; diagnostics: PatchDiagnostic[] }
  | { ok: false; error: ApplyPatchError };

// ---------------------------------------------------------------------------

class Failure extends Error {
  readonly error: ApplyPatchError;
  constructor(error: ApplyPatchError) {
    super(error.message);
    this.error = error;
  }
}

function failure(
  kind: ApplyPatchErrorKind,
  message: string,
  recoveryHint: string,
  extra: {
    path?: string;
    hunk?: number;
    details?: Record<string, unknown>;
    retryable?: boolean;
  } = {},
): Failure {
  const error: ApplyPatchError = {
    kind,
    message,
    recovery_hint: recoveryHint,
    retryable: extra.retryable ?? false,
  };
  if (extra.path !== undefined) error.path = extra.path;
  if (extra.hunk !== undefined) error.hunk = extra.hunk;
  if (extra.details !== undefined) error.details = extra.details;
  return new Failure(error);
}

function errno(e: unknown): string | undefined {
  return typeof e === "object" && e !== null && "code" in e
    ? String((e as { code: unknown }).code)
    : undefined;
}

const enc = (s: string): string => Buffer.from(s, "utf8").toString("latin1");
const dec = (s: string): string => Buffer.from(s, "latin1").toString("utf8");
const stripCr = (s: string): string => (s.endsWith("\r") ? s.slice(0, -1) : s);
const BOM = "\xEF\xBB\xBF";

function show(s: string): string {
  const text = dec(stripCr(s));
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 117)}...` : text);
}

// ---------------------------------------------------------------------------
// Paths

interface Workspace {
  rootAbs: string;
  rootReal: string;
  cwd: string;
}

interface Resolved {
  /** Workspace-relative posix path for reporting. */
  display: string;
  /** Physical path (symlinks resolved) where the file is or would be. */
  real: string;
  exists: boolean;
  /** The final component itself is a symbolic link. */
  isSymlink: boolean;
  dangling: boolean;
  stats: Stats | null;
}

const ESCAPE_HINT =
  "name files relative to the workspace root (for example 'src/app.ts'); paths may not leave the workspace through '..', absolute paths or symbolic links";

async function resolveInWorkspace(ws: Workspace, raw: string): Promise<Resolved> {
  const abs = path.resolve(ws.cwd, raw);
  const rel = relativeInside(ws.rootAbs, abs) ?? relativeInside(ws.rootReal, abs);
  if (rel === null) {
    throw failure("path_escape", `${raw} resolves outside the workspace`, ESCAPE_HINT, {
      path: raw,
    });
  }
  if (rel === "") {
    throw failure("invalid_path", `${raw} names the workspace root, not a file`, ESCAPE_HINT, {
      path: raw,
    });
  }
  const display = rel.split(path.sep).join("/");
  const parts = rel.split(path.sep);
  let cur = ws.rootReal;
  for (let k = 0; k < parts.length; k++) {
    const next = path.join(cur, parts[k]!);
    const last = k === parts.length - 1;
    let st: Stats;
    try {
      st = await lstat(next);
    } catch (e) {
      if (errno(e) === "ENOENT") {
        return {
          display,
          real: path.join(next, ...parts.slice(k + 1)),
          exists: false,
          isSymlink: false,
          dangling: false,
          stats: null,
        };
      }
      throw ioFailure(`cannot inspect ${display}`, e, display);
    }
    if (st.isSymbolicLink()) {
      let target: string;
      try {
        target = await realpath(next);
      } catch {
        if (last)
          return {
            display,
            real: next,
            exists: true,
            isSymlink: true,
            dangling: true,
            stats: null,
          };
        throw failure(
          "invalid_path",
          `${display} passes through a broken symbolic link`,
          ESCAPE_HINT,
          {
            path: display,
          },
        );
      }
      if (!isInside(ws.rootReal, target)) {
        throw failure(
          "path_escape",
          `${display} resolves through a symbolic link to a location outside the workspace`,
          ESCAPE_HINT,
          { path: display },
        );
      }
      const tst = await stat(target);
      if (last)
        return {
          display,
          real: target,
          exists: true,
          isSymlink: true,
          dangling: false,
          stats: tst,
        };
      if (!tst.isDirectory()) {
        throw failure(
          "not_a_file",
          `${display}: a parent component is not a directory`,
          ESCAPE_HINT,
          {
            path: display,
          },
        );
      }
      cur = target;
      continue;
    }
    if (last)
      return { display, real: next, exists: true, isSymlink: false, dangling: false, stats: st };
    if (!st.isDirectory()) {
      throw failure(
        "not_a_file",
        `${display}: ${parts.slice(0, k + 1).join("/")} is a file, not a directory`,
        "check the path; a file cannot contain other files",
        { path: display },
      );
    }
    cur = next;
  }
  throw failure("invalid_path", `${raw} is not a valid path`, ESCAPE_HINT, { path: raw });
}

function ioFailure(what: string, e: unknown, p?: string): Failure {
  const code = errno(e);
  const extra: { path?: string; retryable: boolean; details: Record<string, unknown> } = {
    retryable: true,
    details: { cause: e instanceof Error ? e.message : String(e), ...(code ? { code } : {}) },
  };
  if (p !== undefined) extra.path = p;
  return failure(
    "io_error",
    `${what}${code ? ` (${code})` : ""}`,
    "check that the file is readable and writable, then retry",
    extra,
  );
}

// ---------------------------------------------------------------------------
// Content

interface SplitText {
  lines: string[];
  finalNewline: boolean;
}

function splitLines(s: string): SplitText {
  if (s === "") return { lines: [], finalNewline: true };
  const lines = s.split("\n");
  if (lines[lines.length - 1] === "") {
    lines.pop();
    return { lines, finalNewline: true };
  }
  return { lines, finalNewline: false };
}

interface OutLine {
  text: string;
  /** Came from the patch, so its line ending follows the adaptation mode. */
  fromPatch: boolean;
}

function joinLines(out: OutLine[], finalNewline: boolean, mode: LineEndingAdaptation): string {
  const parts: string[] = [];
  for (let i = 0; i < out.length; i++) {
    const line = out[i]!;
    const terminated = i < out.length - 1 || finalNewline;
    let text = line.text;
    if (line.fromPatch && mode !== "none") {
      text = stripCr(text);
      if (mode === "added_cr" && terminated) text += "\r";
    }
    parts.push(terminated ? `${text}\n` : text);
  }
  return parts.join("");
}

interface PreparedHunk {
  hunk: Hunk;
  index: number;
  old: string[];
  added: number;
  removed: number;
}

function prepareHunks(fp: FilePatch): PreparedHunk[] {
  return fp.hunks.map((hunk, i) => {
    const old: string[] = [];
    let added = 0;
    let removed = 0;
    for (const line of hunk.lines) {
      if (line.kind !== "add") old.push(enc(line.text));
      if (line.kind === "add") added++;
      if (line.kind === "remove") removed++;
    }
    return { hunk, index: i + 1, old, added, removed };
  });
}

function chooseLineEndings(
  lines: string[],
  finalNewline: boolean,
  fp: FilePatch,
): LineEndingAdaptation {
  const terminated = finalNewline ? lines.length : Math.max(0, lines.length - 1);
  let crlf = 0;
  for (let i = 0; i < terminated; i++) if (lines[i]!.endsWith("\r")) crlf++;
  let patchLines = 0;
  let patchCr = 0;
  for (const h of fp.hunks) {
    for (const l of h.lines) {
      if (l.text === "") continue;
      patchLines++;
      if (l.text.endsWith("\r")) patchCr++;
    }
  }
  if (terminated > 0 && crlf === terminated && patchCr === 0) return "added_cr";
  if (terminated > 0 && crlf === 0 && patchLines > 0 && patchCr === patchLines)
    return "stripped_cr";
  return "none";
}

type Eq = (fileLine: string, hunkLine: string) => boolean;
const eqExact: Eq = (a, b) => a === b;
const eqIgnoringCr: Eq = (a, b) => stripCr(a) === stripCr(b);
const squash = (s: string) => s.replace(/\s+/g, " ").trim();
const eqIgnoringSpace: Eq = (a, b) => squash(a) === squash(b);

interface ApplyResult {
  bytes: Buffer;
  remainingLines: number;
  hunks: HunkApplication[];
  added: number;
  removed: number;
  lineEndings: LineEndingAdaptation;
}

/** Apply all hunks of one file patch to `content`, in memory. */
function applyHunks(content: Buffer, fp: FilePatch, display: string): ApplyResult {
  let text = content.toString("latin1");
  const prepared = prepareHunks(fp);
  let bom = "";
  if (text.startsWith(BOM) && !prepared.some((p) => p.old.some((l) => l.startsWith(BOM)))) {
    bom = BOM;
    text = text.slice(BOM.length);
  }
  const { lines, finalNewline: fileFinal } = splitLines(text);
  const mode = chooseLineEndings(lines, fileFinal, fp);
  const n = lines.length;
  const out: OutLine[] = [];
  const results: HunkApplication[] = [];
  let finalNewline = fileFinal;
  let cursor = 0;
  let drift = 0;
  let added = 0;
  let removed = 0;

  for (const ph of prepared) {
    const { hunk, old } = ph;
    const m = old.length;
    const hint =
      m === 0
        ? hunk.old_count === 0
          ? hunk.old_start
          : hunk.old_start - 1
        : Math.max(0, hunk.old_start - 1);
    const pos = locate(ph, lines, cursor, hint, drift, mode, display);
    for (let k = cursor; k < pos; k++) out.push({ text: lines[k]!, fromPatch: false });
    let oi = 0;
    for (const line of hunk.lines) {
      if (line.kind === "context") {
        out.push({ text: lines[pos + oi]!, fromPatch: false });
        oi++;
      } else if (line.kind === "remove") {
        oi++;
      } else {
        out.push({ text: enc(line.text), fromPatch: true });
      }
    }
    cursor = pos + m;
    if (cursor === n) {
      const newSideEmpty = ph.added === 0 && !hunk.lines.some((l) => l.kind === "context");
      if (hunk.new_no_newline) finalNewline = false;
      else if (hunk.old_no_newline || newSideEmpty) finalNewline = true;
      else finalNewline = fileFinal;
    }
    drift = pos - hint;
    added += ph.added;
    removed += ph.removed;
    results.push({
      hunk: ph.index,
      old_start: hunk.old_start,
      matched_line: pos + 1,
      offset: pos - hint,
      lines_added: ph.added,
      lines_removed: ph.removed,
    });
  }
  for (let k = cursor; k < n; k++) out.push({ text: lines[k]!, fromPatch: false });
  const body = joinLines(out, finalNewline, mode);
  return {
    bytes: Buffer.from(bom + body, "latin1"),
    remainingLines: out.length,
    hunks: results,
    added,
    removed,
    lineEndings: mode,
  };
}

function matchesAt(lines: string[], old: string[], p: number, eq: Eq): boolean {
  for (let k = 0; k < old.length; k++) if (!eq(lines[p + k]!, old[k]!)) return false;
  return true;
}

function findAll(
  lines: string[],
  old: string[],
  from: number,
  to: number,
  needEof: boolean,
  eq: Eq,
): number[] {
  const found: number[] = [];
  const m = old.length;
  const last = lines.length - m;
  const start = needEof ? Math.max(from, last) : from;
  const end = Math.min(to, last);
  for (let p = start; p <= end; p++) {
    if (needEof && p !== last) continue;
    if (matchesAt(lines, old, p, eq)) found.push(p);
  }
  return found;
}

/** Where the hunk's old side sits in `lines`; throws a typed failure when it is missing or ambiguous. */
function locate(
  ph: PreparedHunk,
  lines: string[],
  cursor: number,
  hint: number,
  drift: number,
  mode: LineEndingAdaptation,
  display: string,
): number {
  const { hunk, old, index } = ph;
  const m = old.length;
  const n = lines.length;
  const needEof = hunk.old_no_newline || hunk.new_no_newline;
  const tries = [...new Set([hint + drift, hint])];
  const where = { path: display, hunk: index };

  if (m === 0) {
    // A hunk without context or removed lines: only the header can place it.
    for (const p of tries) {
      if (p >= cursor && p <= n && (!needEof || p === n)) return p;
    }
    throw failure(
      "context_not_found",
      `hunk ${index} of ${display} inserts after line ${hunk.old_start}, but the file has ${n} lines${cursor > 0 ? ` and the previous hunk ends at line ${cursor}` : ""}`,
      "include a few unchanged context lines around the insertion so the hunk can be placed by its content",
      where,
    );
  }

  const strategies: Eq[] = mode === "none" ? [eqExact, eqIgnoringCr] : [eqIgnoringCr];
  for (const eq of strategies) {
    for (const p of tries) {
      if (p >= cursor && p + m <= n && (!needEof || p + m === n) && matchesAt(lines, old, p, eq))
        return p;
    }
    const all = findAll(lines, old, cursor, n, needEof, eq);
    if (all.length === 1) return all[0]!;
    if (all.length > 1) {
      const at = all.slice(0, 5).map((p) => p + 1);
      throw failure(
        "ambiguous_context",
        `hunk ${index} of ${display} matches ${all.length} places (lines ${at.join(", ")}${all.length > 5 ? ", ..." : ""}) and its header line ${hunk.old_start} matches none of them`,
        "add more unchanged context lines around the change so the hunk matches exactly one place, or fix the '@@ -line' number to point at the intended one",
        { ...where, details: { candidate_lines: at, header_line: hunk.old_start } },
      );
    }
  }
  throw notFound(ph, lines, cursor, hint, needEof, display);
}

function notFound(
  ph: PreparedHunk,
  lines: string[],
  cursor: number,
  hint: number,
  needEof: boolean,
  display: string,
): Failure {
  const { hunk, old, index } = ph;
  const m = old.length;
  const n = lines.length;
  const where = { path: display, hunk: index };
  const reread = `re-read ${display} around line ${hunk.old_start} and rebuild the hunk from its current text: context (' ') and removed ('-') lines must match the file exactly, including indentation`;

  if (needEof) {
    const anywhere = findAll(lines, old, cursor, n, false, eqIgnoringCr);
    if (anywhere.length > 0) {
      return failure(
        "context_not_found",
        `hunk ${index} of ${display} is marked '\\ No newline at end of file' but its lines match at line ${anywhere[0]! + 1}, not at the end of the file`,
        "only use '\\ No newline at end of file' after the file's very last line",
        where,
      );
    }
  }
  const earlier = cursor > 0 ? findAll(lines, old, 0, cursor - 1, false, eqIgnoringCr) : [];
  if (earlier.length > 0) {
    return failure(
      "context_not_found",
      `hunk ${index} of ${display} matches at line ${earlier[0]! + 1}, which is before or inside the previous hunk`,
      "order hunks from the top of the file to the bottom and do not let them overlap; merge overlapping hunks into one",
      { ...where, details: { matched_line_out_of_order: earlier[0]! + 1 } },
    );
  }
  const loose = findAll(lines, old, cursor, n, needEof, eqIgnoringSpace);
  if (loose.length > 0) {
    return failure(
      "context_not_found",
      `hunk ${index} of ${display} matches line ${loose[0]! + 1} only when whitespace is ignored; ApplyPatch compares lines exactly`,
      `copy the exact indentation and spacing of ${display} into the context and '-' lines`,
      { ...where, details: { whitespace_only_match_line: loose[0]! + 1 } },
    );
  }
  // Best partial match: the position where the longest run of leading hunk lines agrees.
  let best = -1;
  let bestLen = 0;
  if (n * m <= 4_000_000) {
    for (let p = 0; p + 1 <= n; p++) {
      let k = 0;
      while (k < m && p + k < n && eqIgnoringCr(lines[p + k]!, old[k]!)) k++;
      if (k > bestLen || (k === bestLen && k > 0 && Math.abs(p - hint) < Math.abs(best - hint))) {
        best = p;
        bestLen = k;
      }
    }
  }
  const details: Record<string, unknown> = { header_line: hunk.old_start, file_lines: n };
  let message = `hunk ${index} of ${display}: its context and removed lines were not found in the file`;
  if (bestLen > 0 && best + bestLen < n) {
    const fileLine = best + bestLen;
    details.mismatch_line = fileLine + 1;
    details.expected = dec(stripCr(old[bestLen]!));
    details.found = dec(stripCr(lines[fileLine]!));
    message += `; the closest match starts at line ${best + 1}, but line ${fileLine + 1} is ${show(lines[fileLine]!)} where the hunk expects ${show(old[bestLen]!)}`;
  } else if (bestLen > 0) {
    message += `; the closest match starts at line ${best + 1} but the file ends before the hunk does`;
  } else {
    message += ` (first expected line: ${show(old[0]!)})`;
  }
  return failure("context_not_found", message, reread, { ...where, details });
}

// ---------------------------------------------------------------------------
// Planning

interface WriteStep {
  action: "write";
  target: string;
  display: string;
  content: Buffer;
  mode: number | null;
  owner: { uid: number; gid: number } | null;
  original: { content: Buffer; mode: number } | null;
}

interface RemoveStep {
  action: "remove";
  target: string;
  display: string;
  original: { content: Buffer; mode: number };
}

type Step = WriteStep | RemoveStep;

function requireRegularFile(r: Resolved, fp: FilePatch, allowSymlink: boolean): Stats {
  if (!r.exists) {
    throw failure(
      "file_not_found",
      `${r.display} does not exist`,
      "check the path against the workspace (for example with 'ls'); to create a file use '--- /dev/null' and '+++ b/<path>'",
      { path: r.display },
    );
  }
  if (r.dangling || (r.isSymlink && !allowSymlink)) {
    throw failure(
      "not_a_file",
      `${r.display} is a symbolic link; ApplyPatch only ${fp.operation === "delete" ? "deletes" : "renames"} regular files`,
      "use a shell command to change symbolic links",
      { path: r.display },
    );
  }
  if (!r.stats || !r.stats.isFile()) {
    throw failure(
      "not_a_file",
      `${r.display} is not a regular file`,
      "ApplyPatch edits regular text files only",
      {
        path: r.display,
      },
    );
  }
  return r.stats;
}

function requireAbsent(r: Resolved): void {
  if (r.exists) {
    throw failure(
      "file_exists",
      `${r.display} already exists`,
      `to change an existing file, diff against it ('--- a/${r.display}' / '+++ b/${r.display}') instead of creating it from /dev/null`,
      { path: r.display },
    );
  }
}

async function readContent(r: Resolved): Promise<Buffer> {
  try {
    return await readFile(r.real);
  } catch (e) {
    throw ioFailure(`cannot read ${r.display}`, e, r.display);
  }
}

function addedContent(fp: FilePatch): Buffer {
  const parts: string[] = [];
  for (const h of fp.hunks) for (const l of h.lines) parts.push(enc(l.text));
  const last = fp.hunks[fp.hunks.length - 1];
  const body = parts.length === 0 ? "" : parts.join("\n") + (last?.new_no_newline ? "" : "\n");
  return Buffer.from(body, "latin1");
}

interface Planned {
  change: FileChange;
  steps: Step[];
}

function changeFor(
  fp: FilePatch,
  display: string,
  result: Pick<ApplyResult, "hunks" | "added" | "removed" | "lineEndings"> | null,
  oldDisplay?: string,
): FileChange {
  const hunks = result?.hunks ?? [];
  const change: FileChange = {
    path: display,
    operation: fp.operation,
    hunks_applied: fp.hunks.length,
    lines_added: result?.added ?? 0,
    lines_removed: result?.removed ?? 0,
    max_offset: hunks.reduce((mx, h) => Math.max(mx, Math.abs(h.offset)), 0),
    hunks,
    line_endings: result?.lineEndings ?? "none",
    ignored_metadata: fp.ignored_metadata,
  };
  if (oldDisplay !== undefined) change.old_path = oldDisplay;
  return change;
}

async function plan(fp: FilePatch, src: Resolved | null, dst: Resolved | null): Promise<Planned> {
  switch (fp.operation) {
    case "modify": {
      const st = requireRegularFile(src!, fp, true);
      const original = await readContent(src!);
      const res = applyHunks(original, fp, src!.display);
      return {
        change: changeFor(fp, src!.display, res),
        steps: [
          {
            action: "write",
            target: src!.real,
            display: src!.display,
            content: res.bytes,
            mode: st.mode & 0o7777,
            owner: { uid: st.uid, gid: st.gid },
            original: { content: original, mode: st.mode & 0o7777 },
          },
        ],
      };
    }
    case "add": {
      requireAbsent(dst!);
      const content = addedContent(fp);
      let lines = 0;
      for (const h of fp.hunks) lines += h.lines.length;
      return {
        change: changeFor(fp, dst!.display, {
          hunks: fp.hunks.map((h, i) => ({
            hunk: i + 1,
            old_start: h.old_start,
            matched_line: 1,
            offset: 0,
            lines_added: h.lines.length,
            lines_removed: 0,
          })),
          added: lines,
          removed: 0,
          lineEndings: "none",
        }),
        steps: [
          {
            action: "write",
            target: dst!.real,
            display: dst!.display,
            content,
            mode: null,
            owner: null,
            original: null,
          },
        ],
      };
    }
    case "delete": {
      const st = requireRegularFile(src!, fp, false);
      const original = await readContent(src!);
      let res: ApplyResult | null = null;
      let remaining = original.length;
      if (fp.hunks.length > 0) {
        res = applyHunks(original, fp, src!.display);
        remaining = res.bytes.toString("latin1").replace(BOM, "").length;
      }
      if (remaining > 0) {
        const lines = res ? res.remainingLines : null;
        throw failure(
          "delete_content_mismatch",
          `the deletion of ${src!.display} does not cover the whole file${lines !== null ? `: ${lines} line(s) would remain` : " (the file is not empty)"}`,
          `list every line of ${src!.display} as a '-' line under '+++ /dev/null', or send a normal hunk if only part of the file should go`,
          { path: src!.display },
        );
      }
      return {
        change: changeFor(fp, src!.display, res),
        steps: [
          {
            action: "remove",
            target: src!.real,
            display: src!.display,
            original: { content: original, mode: st.mode & 0o7777 },
          },
        ],
      };
    }
    case "rename": {
      const st = requireRegularFile(src!, fp, false);
      requireAbsent(dst!);
      const original = await readContent(src!);
      const res = fp.hunks.length > 0 ? applyHunks(original, fp, src!.display) : null;
      const mode = st.mode & 0o7777;
      return {
        change: changeFor(fp, dst!.display, res, src!.display),
        steps: [
          {
            action: "write",
            target: dst!.real,
            display: dst!.display,
            content: res ? res.bytes : original,
            mode,
            owner: { uid: st.uid, gid: st.gid },
            original: null,
          },
          {
            action: "remove",
            target: src!.real,
            display: src!.display,
            original: { content: original, mode },
          },
        ],
      };
    }
  }
}

// ---------------------------------------------------------------------------
// Commit

async function writeAtomic(
  target: string,
  content: Buffer,
  mode: number | null,
  owner: { uid: number; gid: number } | null,
  journaled?: { tmp: string; beforeRename: () => void | Promise<void> },
): Promise<void> {
  const tmp =
    journaled?.tmp ??
    path.join(
      path.dirname(target),
      `.${path.basename(target).slice(0, 120)}.${randomBytes(6).toString("hex")}.holon-patch.tmp`,
    );
  const fh = await open(tmp, "wx", mode ?? 0o666);
  try {
    try {
      await fh.writeFile(content);
      if (mode !== null) await fh.chmod(mode);
      if (owner && process.getuid?.() === 0) await fh.chown(owner.uid, owner.gid).catch(() => {});
      await fh.sync();
    } finally {
      await fh.close();
    }
    await journaled?.beforeRename();
    await rename(tmp, target);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

/** mkdir -p that reports which directories it created (outermost first). */
async function ensureDir(dir: string): Promise<string[]> {
  const missing: string[] = [];
  let cur = dir;
  for (;;) {
    try {
      const st = await stat(cur);
      if (!st.isDirectory())
        throw Object.assign(new Error(`${cur} is not a directory`), { code: "ENOTDIR" });
      break;
    } catch (e) {
      if (errno(e) !== "ENOENT") throw e;
      missing.push(cur);
      const up = path.dirname(cur);
      if (up === cur) break;
      cur = up;
    }
  }
  missing.reverse();
  for (const d of missing) await mkdir(d);
  return missing;
}

async function commit(steps: Step[], options: ApplyPatchOptions): Promise<void> {
  const ordered = [
    ...steps.filter((s) => s.action === "write"),
    ...steps.filter((s) => s.action === "remove"),
  ];
  const undo: Array<() => Promise<void>> = [];
  let current: Step | undefined;
  try {
    for (const [index, step] of ordered.entries()) {
      current = step;
      await options.beforeCommitStep?.({ index, action: step.action, path: step.display });
      if (step.action === "write") {
        if (step.original === null) {
          const created = await ensureDir(path.dirname(step.target));
          if (created.length > 0) {
            undo.push(async () => {
              for (const d of [...created].reverse()) await rmdir(d);
            });
          }
          let exists = true;
          await lstat(step.target).catch(() => (exists = false));
          if (exists)
            throw Object.assign(new Error(`${step.display} appeared while the patch was applied`), {
              code: "EEXIST",
            });
          await writeAtomic(step.target, step.content, step.mode, step.owner);
          undo.push(() => unlink(step.target));
        } else {
          const original = step.original;
          await writeAtomic(step.target, step.content, step.mode, step.owner);
          undo.push(() => writeAtomic(step.target, original.content, original.mode, step.owner));
        }
      } else {
        await unlink(step.target);
        const original = step.original;
        undo.push(() => writeAtomic(step.target, original.content, original.mode, null));
      }
    }
  } catch (e) {
    const rollbackErrors: string[] = [];
    for (const u of undo.reverse()) {
      try {
        await u();
      } catch (r) {
        rollbackErrors.push(r instanceof Error ? r.message : String(r));
      }
    }
    const f = ioFailure(
      `writing ${current?.display ?? "the patch"} failed; ${rollbackErrors.length === 0 ? "every file was restored, nothing was changed" : "restoring earlier files also failed"}`,
      e,
      current?.display,
    );
    if (rollbackErrors.length > 0)
      f.error.details = { ...f.error.details, rollback_errors: rollbackErrors };
    throw f;
  }
}

// ---------------------------------------------------------------------------
// Crash journal

const JOURNAL_RECORD = "journal.json";
const ROLLBACK_MARK = "rolling-back";

/** Where an agent's patch journals live: the runtime's own directory in its home. */
export function patchJournalDir(agentHome: string): string {
  return path.join(agentHome, ".holon", "patch-journal");
}

interface JournalStep {
  action: "write" | "remove";
  target: string;
  /** The temp file this step writes before its rename (known, so recovery can remove it). */
  tmp: string;
  /** Journal file holding the new content (writes). */
  new: string | null;
  /** Journal file holding the original content (modified and removed files). */
  old: string | null;
  mode: number | null;
  old_mode: number | null;
  owner: { uid: number; gid: number } | null;
}

interface JournalRecord {
  version: 1;
  id: string;
  created_at: string;
  steps: JournalStep[];
}

function tmpNameFor(target: string, id: string, index: number): string {
  return path.join(
    path.dirname(target),
    `.${path.basename(target).slice(0, 100)}.${id}-${index}.holon-patch.tmp`,
  );
}

async function writeSynced(file: string, content: Buffer | string): Promise<void> {
  const fh = await open(file, "wx", 0o600);
  try {
    await fh.writeFile(content);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Write `content` to `target` through the named temp file (sync; recovery and rollback). */
function replaceSync(
  target: string,
  tmp: string,
  content: Buffer,
  mode: number | null,
  owner: { uid: number; gid: number } | null,
): void {
  mkdirSync(path.dirname(target), { recursive: true });
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, "wx", mode ?? 0o666);
  try {
    writeFileSync(fd, content);
    if (mode !== null) fchmodSync(fd, mode);
    if (owner && process.getuid?.() === 0) {
      try {
        fchownSync(fd, owner.uid, owner.gid);
      } catch {
        // best effort, as in the normal path
      }
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, target);
}

function unlinkIfPresent(file: string): void {
  try {
    unlinkSync(file);
  } catch (e) {
    if (errno(e) !== "ENOENT") throw e;
  }
}

/** Finish a journaled patch: every file gets its new content, every removal happens. */
function rollForward(dir: string, j: JournalRecord): void {
  for (const step of j.steps) {
    if (step.action === "write") {
      replaceSync(
        step.target,
        step.tmp,
        readFileSync(path.join(dir, step.new!)),
        step.mode,
        step.owner,
      );
    } else {
      unlinkIfPresent(step.target);
    }
  }
  for (const step of j.steps) rmSync(step.tmp, { force: true });
}

/**
 * Undo the first `applied` steps of a journaled patch: originals come back, added files go.
 * Steps never applied are left alone (a file that appeared meanwhile is not ours to delete).
 */
function rollBack(dir: string, j: JournalRecord, applied: number): string[] {
  const errors: string[] = [];
  for (const step of j.steps.slice(0, applied).reverse()) {
    try {
      if (step.old !== null) {
        replaceSync(
          step.target,
          step.tmp,
          readFileSync(path.join(dir, step.old)),
          step.old_mode,
          step.owner,
        );
      } else {
        unlinkIfPresent(step.target);
      }
    } catch (e) {
      errors.push(e instanceof Error ? e.message : String(e));
    }
  }
  for (const step of j.steps) rmSync(step.tmp, { force: true });
  return errors;
}

export type JournalRecovery = {
  rolled_forward: string[];
  rolled_back: string[];
  /** Journals a crash left before their record: nothing had been touched yet. */
  discarded: string[];
};

/**
 * Run at host start, before any agent works: finish or undo every patch a crash left in
 * `journalDir` (see the header). Synchronous; a journal that cannot be finished is left in
 * place and reported by the thrown error's message on the next start too.
 */
export function recoverPatchJournals(journalDir: string): JournalRecovery {
  const out: JournalRecovery = { rolled_forward: [], rolled_back: [], discarded: [] };
  let entries: string[];
  try {
    entries = readdirSync(journalDir);
  } catch {
    return out;
  }
  for (const id of entries) {
    const dir = path.join(journalDir, id);
    let record: JournalRecord | null = null;
    try {
      record = JSON.parse(readFileSync(path.join(dir, JOURNAL_RECORD), "utf8")) as JournalRecord;
    } catch {
      record = null;
    }
    if (record === null || record.version !== 1 || !Array.isArray(record.steps)) {
      rmSync(dir, { recursive: true, force: true });
      out.discarded.push(id);
      continue;
    }
    if (existsSync(path.join(dir, ROLLBACK_MARK))) {
      const applied = Number(readFileSync(path.join(dir, ROLLBACK_MARK), "utf8").trim());
      const errors = rollBack(
        dir,
        record,
        Number.isInteger(applied) ? applied : record.steps.length,
      );
      if (errors.length > 0) throw new Error(`patch journal ${dir}: ${errors.join("; ")}`);
      out.rolled_back.push(id);
    } else {
      rollForward(dir, record);
      out.rolled_forward.push(id);
    }
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

async function commitJournaled(
  steps: Step[],
  options: ApplyPatchOptions,
  journalRoot: string,
): Promise<void> {
  const ordered = [
    ...steps.filter((s) => s.action === "write"),
    ...steps.filter((s) => s.action === "remove"),
  ];
  const id = `${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
  const dir = path.join(journalRoot, id);
  const record: JournalRecord = {
    version: 1,
    id,
    created_at: new Date().toISOString(),
    steps: [],
  };
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    for (const [i, step] of ordered.entries()) {
      const js: JournalStep = {
        action: step.action,
        target: step.target,
        tmp: tmpNameFor(step.target, id, i),
        new: null,
        old: null,
        mode: step.action === "write" ? step.mode : null,
        old_mode: step.original?.mode ?? null,
        owner: step.action === "write" ? step.owner : null,
      };
      if (step.action === "write") {
        js.new = `new-${i}`;
        await writeSynced(path.join(dir, js.new), step.content);
      }
      if (step.original !== null) {
        js.old = `old-${i}`;
        await writeSynced(path.join(dir, js.old), step.original.content);
      }
      record.steps.push(js);
    }
    await options.journalPoint?.("staged");
    // The record makes the patch durable: from here a crash is finished, not undone.
    const tmp = path.join(dir, `${JOURNAL_RECORD}.tmp`);
    await writeSynced(tmp, JSON.stringify(record));
    await rename(tmp, path.join(dir, JOURNAL_RECORD));
  } catch (e) {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
    throw ioFailure("could not write the patch journal; nothing was changed", e);
  }
  await options.journalPoint?.("journaled");

  const createdDirs: string[][] = [];
  let current: Step | undefined;
  let applied = 0;
  try {
    for (const [index, step] of ordered.entries()) {
      current = step;
      const js = record.steps[index]!;
      await options.beforeCommitStep?.({ index, action: step.action, path: step.display });
      if (step.action === "write") {
        if (step.original === null) {
          createdDirs.push(await ensureDir(path.dirname(step.target)));
          let exists = true;
          await lstat(step.target).catch(() => (exists = false));
          if (exists)
            throw Object.assign(new Error(`${step.display} appeared while the patch was applied`), {
              code: "EEXIST",
            });
        }
        await writeAtomic(step.target, step.content, step.mode, step.owner, {
          tmp: js.tmp,
          beforeRename: () => options.journalPoint?.(`temp:${index}`),
        });
      } else {
        await unlink(step.target);
      }
      applied++;
    }
  } catch (e) {
    // Mark first (with how far it got): a crash from here on is finished as a rollback.
    let rollbackErrors: string[];
    try {
      await writeSynced(path.join(dir, ROLLBACK_MARK), String(applied));
      await options.journalPoint?.("rolling-back");
      rollbackErrors = rollBack(dir, record, applied);
    } catch (r) {
      rollbackErrors = [r instanceof Error ? r.message : String(r)];
    }
    for (const created of createdDirs.reverse()) {
      for (const d of [...created].reverse()) await rmdir(d).catch(() => {});
    }
    if (rollbackErrors.length === 0)
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    const f = ioFailure(
      `writing ${current?.display ?? "the patch"} failed; ${rollbackErrors.length === 0 ? "every file was restored, nothing was changed" : "restoring earlier files also failed"}`,
      e,
      current?.display,
    );
    if (rollbackErrors.length > 0)
      f.error.details = { ...f.error.details, rollback_errors: rollbackErrors };
    throw f;
  }
  await rm(dir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------

function summarize(files: FileChange[]): string {
  const verbs: Record<PatchOperation, string> = {
    modify: "modified",
    add: "added",
    delete: "deleted",
    rename: "renamed",
  };
  const parts = files.map((f) => {
    const name = f.operation === "rename" ? `${f.old_path} -> ${f.path}` : f.path;
    const counts = [
      f.lines_added > 0 ? `+${f.lines_added}` : "",
      f.lines_removed > 0 ? `-${f.lines_removed}` : "",
    ]
      .filter(Boolean)
      .join(" ");
    return `${verbs[f.operation]} ${name}${counts ? ` (${counts})` : ""}`;
  });
  return `applied patch to ${files.length} file${files.length === 1 ? "" : "s"}: ${parts.join("; ")}`;
}

/**
 * Apply a unified diff to the workspace at `root`. All-or-nothing: on any
 * failure no file is changed, and the outcome says which rule failed.
 */
export async function applyPatch(
  input: ApplyPatchInput,
  options: ApplyPatchOptions = {},
): Promise<ApplyPatchOutcome> {
  try {
    const parsed = parsePatch(input.patch);
    if (!parsed.ok) return parsed;

    const rootAbs = path.resolve(input.root);
    let rootReal: string;
    try {
      rootReal = await realpath(rootAbs);
      if (!(await stat(rootReal)).isDirectory()) throw new Error("not a directory");
    } catch {
      return {
        ok: false,
        error: {
          kind: "workspace_unavailable",
          message: `workspace root ${input.root} is not an existing directory`,
          recovery_hint: "select a workspace before applying patches",
          retryable: false,
        },
      };
    }
    const cwd = path.resolve(rootAbs, input.cwd ?? ".");
    if (relativeInside(rootAbs, cwd) === null && relativeInside(rootReal, cwd) === null) {
      throw failure(
        "path_escape",
        `working directory ${input.cwd} is outside the workspace`,
        ESCAPE_HINT,
      );
    }
    const ws: Workspace = { rootAbs, rootReal, cwd };

    // Resolve every path first so confinement and duplicates fail before any reads.
    const resolved: Array<{ fp: FilePatch; src: Resolved | null; dst: Resolved | null }> = [];
    const seen = new Map<string, { display: string; index: number }>();
    for (const [index, fp] of parsed.patch.files.entries()) {
      const src = fp.old_path !== null ? await resolveInWorkspace(ws, fp.old_path) : null;
      const dst =
        fp.new_path === null
          ? null
          : fp.operation === "modify"
            ? src
            : await resolveInWorkspace(ws, fp.new_path);
      for (const r of new Set([src, dst])) {
        if (!r) continue;
        const prior = seen.get(r.real);
        if (prior && prior.index === index) {
          throw failure(
            "invalid_path",
            `rename source ${fp.old_path} and destination ${fp.new_path} are the same file`,
            "rename to a different path, or send a normal modify patch",
            { path: r.display },
          );
        }
        if (prior) {
          throw failure(
            "duplicate_file_patch",
            `${r.display} is touched by file patch ${prior.index + 1} and again by file patch ${index + 1}`,
            "merge all hunks for one file into a single file patch, in file order; a path may appear in only one file patch per call",
            {
              path: r.display,
              details: { first_file_patch: prior.index + 1, second_file_patch: index + 1 },
            },
          );
        }
        seen.set(r.real, { display: r.display, index });
      }
      resolved.push({ fp, src, dst });
    }

    const planned: Planned[] = [];
    for (const { fp, src, dst } of resolved) planned.push(await plan(fp, src, dst));

    const steps = planned.flatMap((p) => p.steps);
    if (input.journalDir !== undefined) await commitJournaled(steps, options, input.journalDir);
    else await commit(steps, options);
    const files = planned.map((p) => p.change);
    return {
      ok: true,
      summary_text: summarize(files),
      files,
      diagnostics: parsed.patch.files.flatMap((f) => f.diagnostics),
    };
  } catch (e) {
    if (e instanceof Failure) return { ok: false, error: e.error };
    // A filesystem error outside the guarded reads and writes (a file vanishing mid-call):
    // nothing was written yet, so it is an ordinary, retryable failure.
    if (errno(e) !== undefined)
      return { ok: false, error: ioFailure("filesystem error while preparing the patch", e).error };
    throw e;
  }
}
