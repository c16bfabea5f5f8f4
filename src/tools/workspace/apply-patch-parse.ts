// Parser for the ApplyPatch unified-diff subset (RFC: ApplyPatch Unified Diff
// Contract, "Unified Diff Subset V1"). It turns patch text into file patches
// with hunks; it never touches the filesystem. Paths come out exactly as the
// patch names them (a/ and b/ prefixes stripped); workspace resolution and
// confinement belong to the engine.
//
// Policy: "wide in, narrow out". Common git metadata is accepted and recorded
// as ignored; hunk line counts are advisory (the body decides where a hunk
// ends, the counts only break ties); anything that would change semantics we
// do not implement (binary, copies, symlinks, submodules, mode-only changes)
// is rejected with `unsupported_git_patch_feature`.

export type ApplyPatchErrorKind =
  // syntax
  | "empty_patch"
  | "unsupported_patch_format"
  | "missing_file_header"
  | "invalid_hunk_header"
  | "invalid_hunk_line"
  | "missing_hunk"
  | "unsupported_git_patch_feature"
  | "rename_path_mismatch"
  | "path_mismatch"
  // paths
  | "invalid_path"
  | "path_escape"
  | "duplicate_file_patch"
  | "file_not_found"
  | "file_exists"
  | "not_a_file"
  // apply
  | "context_not_found"
  | "ambiguous_context"
  | "delete_content_mismatch"
  // environment
  | "workspace_unavailable"
  | "io_error";

/** A typed failure; the tool layer maps it onto the shared tool error envelope. */
export interface ApplyPatchError {
  kind: ApplyPatchErrorKind;
  message: string;
  recovery_hint: string;
  retryable: boolean;
  /** Workspace-relative path (as written in the patch) of the file patch that failed. */
  path?: string;
  /** 1-based index of the hunk within its file patch. */
  hunk?: number;
  details?: Record<string, unknown>;
}

export type PatchOperation = "modify" | "add" | "delete" | "rename";

export interface HunkLine {
  kind: "context" | "add" | "remove";
  /** Line content without the prefix character and without the `\n`. A `\r` stays. */
  text: string;
}

export interface Hunk {
  old_start: number;
  old_count: number;
  new_start: number;
  new_count: number;
  /** Text after the closing `@@` (a function name, usually); informational only. */
  section: string;
  lines: HunkLine[];
  /** The last old-side line carries "\ No newline at end of file". */
  old_no_newline: boolean;
  /** The last new-side line carries "\ No newline at end of file". */
  new_no_newline: boolean;
  /** 1-based line of the `@@` header in the patch text. */
  patch_line: number;
}

export interface PatchDiagnostic {
  kind: "hunk_count_mismatch";
  message: string;
  path: string;
  hunk: number;
}

export interface FilePatch {
  operation: PatchOperation;
  /** Old path as written (prefix stripped); null when the file is added. */
  old_path: string | null;
  /** New path as written (prefix stripped); null when the file is deleted. */
  new_path: string | null;
  hunks: Hunk[];
  /** Metadata lines that were accepted but have no effect (`index …`, `new file mode …`, …). */
  ignored_metadata: string[];
  /** Advisory findings such as hunk counts that disagree with the hunk body. */
  diagnostics: PatchDiagnostic[];
  /** 1-based line where this file patch starts in the patch text. */
  patch_line: number;
}

export interface ParsedPatch {
  files: FilePatch[];
}

export type ParsePatchResult =
  { ok: true; patch: ParsedPatch } | { ok: false; error: ApplyPatchError };

class PatchSyntaxError extends Error {
  readonly error: ApplyPatchError;
  constructor(error: ApplyPatchError) {
    super(error.message);
    this.error = error;
  }
}

function fail(
  kind: ApplyPatchErrorKind,
  message: string,
  recoveryHint: string,
  extra: { line?: number; path?: string | null; hunk?: number } = {},
): never {
  const error: ApplyPatchError = { kind, message, recovery_hint: recoveryHint, retryable: false };
  if (extra.path) error.path = extra.path;
  if (extra.hunk !== undefined) error.hunk = extra.hunk;
  if (extra.line !== undefined) error.details = { patch_line: extra.line };
  throw new PatchSyntaxError(error);
}

const HUNK_HEADER = /^@@ +-(\d+)(?:,(\d+))? +\+(\d+)(?:,(\d+))? +@@(.*)$/;
const OLD_DSL = /^\*\*\* (Begin Patch|End Patch|Update File:|Add File:|Delete File:|Move to:)/;
const HEADER_HINT =
  "start each file with '--- a/<path>' and '+++ b/<path>' (use /dev/null for an added or deleted file), then one or more '@@ -start,count +start,count @@' hunks";

function stripCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

function isBlank(line: string): boolean {
  return line === "" || line === "\r";
}

/** Undo git's C-style quoting of a path ("a/with\ttab"). Octal escapes are UTF-8 bytes. */
function unquoteC(quoted: string): { value: string; rest: string } | null {
  const bytes: number[] = [];
  let i = 1;
  const simple: Record<string, number> = {
    a: 7,
    b: 8,
    t: 9,
    n: 10,
    v: 11,
    f: 12,
    r: 13,
    '"': 34,
    "\\": 92,
  };
  while (i < quoted.length) {
    const ch = quoted[i]!;
    if (ch === '"') {
      return { value: Buffer.from(bytes).toString("utf8"), rest: quoted.slice(i + 1) };
    }
    if (ch === "\\") {
      const next = quoted[i + 1];
      if (next === undefined) return null;
      if (/[0-7]/.test(next)) {
        const oct = /^[0-7]{1,3}/.exec(quoted.slice(i + 1))![0];
        bytes.push(parseInt(oct, 8) & 0xff);
        i += 1 + oct.length;
        continue;
      }
      const code = simple[next];
      if (code === undefined) return null;
      bytes.push(code);
      i += 2;
      continue;
    }
    for (const b of Buffer.from(ch, "utf8")) bytes.push(b);
    i += 1;
  }
  return null;
}

function stripAB(p: string): string {
  return p.startsWith("a/") || p.startsWith("b/") ? p.slice(2) : p;
}

/** Path from a `---` / `+++` line: null for /dev/null, prefix stripped otherwise. */
function headerPath(rest: string, line: number): string | null {
  let value: string;
  if (rest.startsWith('"')) {
    const unq = unquoteC(rest);
    if (!unq) {
      fail(
        "invalid_path",
        `line ${line}: malformed quoted path`,
        "quote paths the way git does, or leave them unquoted",
        {
          line,
        },
      );
    }
    value = unq.value;
  } else {
    const tab = rest.indexOf("\t");
    value = (tab >= 0 ? rest.slice(0, tab) : rest).trimEnd();
  }
  if (value === "/dev/null") return null;
  value = stripAB(value);
  if (value === "" || value.includes("\0")) {
    fail("invalid_path", `line ${line}: empty or invalid file path in header`, HEADER_HINT, {
      line,
    });
  }
  return value;
}

/** Path from a `rename from` / `rename to` line (git writes these without a/ b/). */
function metadataPath(rest: string, line: number): string {
  let value = rest;
  if (rest.startsWith('"')) {
    const unq = unquoteC(rest);
    if (!unq)
      fail("invalid_path", `line ${line}: malformed quoted path`, "quote paths the way git does", {
        line,
      });
    value = unq.value;
  }
  value = value.trimEnd();
  if (value === "" || value.includes("\0")) {
    fail(
      "invalid_path",
      `line ${line}: empty rename path`,
      "write 'rename from <old path>' and 'rename to <new path>'",
      {
        line,
      },
    );
  }
  return value;
}

/** Both paths of `diff --git a/x b/y`, when they can be told apart. */
function gitHeaderPaths(rest: string): { a: string; b: string } | null {
  if (rest.startsWith('"')) {
    const first = unquoteC(rest);
    if (!first || !first.rest.startsWith(" ")) return null;
    const tail = first.rest.slice(1);
    const second = tail.startsWith('"') ? unquoteC(tail)?.value : tail;
    return second === undefined ? null : { a: stripAB(first.value), b: stripAB(second) };
  }
  const q = rest.indexOf(' "');
  if (q >= 0) {
    const second = unquoteC(rest.slice(q + 1));
    if (second && second.rest === "")
      return { a: stripAB(rest.slice(0, q)), b: stripAB(second.value) };
  }
  // Unquoted names may contain spaces: pick the split where both sides name the same file.
  const spaces: number[] = [];
  for (let i = 0; i < rest.length; i++) if (rest[i] === " ") spaces.push(i);
  for (const s of spaces) {
    const a = stripAB(rest.slice(0, s));
    const b = stripAB(rest.slice(s + 1));
    if (a === b && a !== "") return { a, b };
  }
  if (spaces.length === 1) {
    const s = spaces[0]!;
    return { a: stripAB(rest.slice(0, s)), b: stripAB(rest.slice(s + 1)) };
  }
  return null;
}

interface GitMeta {
  ignored: string[];
  newFile: boolean;
  deletedFile: boolean;
  modeChange: boolean;
  renameFrom: string | null;
  renameTo: string | null;
}

const UNSUPPORTED_HINT =
  "ApplyPatch only edits text files: binary patches, copies, symlinks, submodules and mode-only changes are not supported; use a shell command for those";

class Parser {
  private readonly lines: string[];
  private i = 0;
  private readonly files: FilePatch[] = [];

  constructor(text: string) {
    const lines = text.split("\n");
    if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    this.lines = lines;
  }

  private at(k: number): string | undefined {
    return this.lines[k];
  }

  parse(): ParsedPatch {
    const n = this.lines.length;
    while (this.i < n) {
      const raw = this.lines[this.i]!;
      const line = stripCr(raw);
      const lineNo = this.i + 1;
      if (OLD_DSL.test(line)) {
        fail(
          "unsupported_patch_format",
          `line ${lineNo}: '${line}' belongs to the old '*** Begin Patch' format, which ApplyPatch no longer accepts`,
          "send a unified diff instead: '--- a/<path>', '+++ b/<path>', then '@@ -start,count +start,count @@' hunks",
          { line: lineNo },
        );
      }
      if (line.startsWith("diff --git ")) {
        this.parseGitBlock();
        continue;
      }
      if (line.startsWith("--- ")) {
        const next = this.at(this.i + 1);
        if (next === undefined || !stripCr(next).startsWith("+++ ")) {
          fail(
            "missing_file_header",
            `line ${lineNo}: '---' header is not followed by a '+++' header`,
            HEADER_HINT,
            {
              line: lineNo,
            },
          );
        }
        this.parseFileHeaders(null, lineNo);
        continue;
      }
      if (line.startsWith("+++ ")) {
        fail(
          "missing_file_header",
          `line ${lineNo}: '+++' header without a preceding '---' header`,
          HEADER_HINT,
          {
            line: lineNo,
          },
        );
      }
      if (line.startsWith("@@")) {
        fail(
          "missing_file_header",
          `line ${lineNo}: hunk header appears before any '---' / '+++' file header`,
          HEADER_HINT,
          {
            line: lineNo,
          },
        );
      }
      if (this.files.length > 0 && line !== "-- " && /^[ +\-\\]/.test(raw)) {
        fail(
          "invalid_hunk_line",
          `line ${lineNo}: diff line outside of any hunk`,
          "every '+', '-' or ' ' line must belong to a hunk that starts with '@@ -start,count +start,count @@'; check the previous hunk for a line without a prefix",
          { line: lineNo },
        );
      }
      // Anything else (prose, mail headers, diffstat, code fences) is ignored, as git does.
      this.i++;
    }
    if (this.files.length === 0) {
      fail("empty_patch", "the patch contains no file changes", HEADER_HINT);
    }
    return { files: this.files };
  }

  private parseGitBlock(): void {
    const start = this.i;
    const gitLine = stripCr(this.lines[start]!);
    const meta: GitMeta = {
      ignored: [],
      newFile: false,
      deletedFile: false,
      modeChange: false,
      renameFrom: null,
      renameTo: null,
    };
    this.i++;
    const n = this.lines.length;
    while (this.i < n) {
      const line = stripCr(this.lines[this.i]!);
      const lineNo = this.i + 1;
      const checkMode = (mode: string) => {
        if (mode.startsWith("160000") || mode.startsWith("120000")) {
          const what = mode.startsWith("160000") ? "submodule" : "symbolic link";
          fail(
            "unsupported_git_patch_feature",
            `line ${lineNo}: ${what} changes are not supported`,
            UNSUPPORTED_HINT,
            {
              line: lineNo,
            },
          );
        }
      };
      if (/^(index|similarity index|dissimilarity index) /.test(line)) {
        meta.ignored.push(line);
      } else if (line.startsWith("new file mode ")) {
        checkMode(line.slice(14));
        meta.newFile = true;
        meta.ignored.push(line);
      } else if (line.startsWith("deleted file mode ")) {
        checkMode(line.slice(18));
        meta.deletedFile = true;
        meta.ignored.push(line);
      } else if (line.startsWith("old mode ") || line.startsWith("new mode ")) {
        checkMode(line.slice(9));
        meta.modeChange = true;
        meta.ignored.push(line);
      } else if (line.startsWith("rename from ") || line.startsWith("rename old ")) {
        meta.renameFrom = metadataPath(
          line.slice(line.startsWith("rename from ") ? 12 : 11),
          lineNo,
        );
      } else if (line.startsWith("rename to ") || line.startsWith("rename new ")) {
        meta.renameTo = metadataPath(line.slice(line.startsWith("rename to ") ? 10 : 11), lineNo);
      } else if (line.startsWith("copy from ") || line.startsWith("copy to ")) {
        fail(
          "unsupported_git_patch_feature",
          `line ${lineNo}: copy patches are not supported`,
          UNSUPPORTED_HINT,
          {
            line: lineNo,
          },
        );
      } else if (line === "GIT binary patch" || /^Binary files .* differ$/.test(line)) {
        fail(
          "unsupported_git_patch_feature",
          `line ${lineNo}: binary patches are not supported`,
          UNSUPPORTED_HINT,
          {
            line: lineNo,
          },
        );
      } else {
        break;
      }
      this.i++;
    }
    if ((meta.renameFrom === null) !== (meta.renameTo === null)) {
      fail(
        "missing_file_header",
        `line ${start + 1}: a rename needs both 'rename from' and 'rename to'`,
        "write 'rename from <old path>' followed by 'rename to <new path>' after the 'diff --git' line",
        { line: start + 1 },
      );
    }
    const next = this.at(this.i);
    if (next !== undefined && stripCr(next).startsWith("--- ")) {
      const after = this.at(this.i + 1);
      if (after === undefined || !stripCr(after).startsWith("+++ ")) {
        fail(
          "missing_file_header",
          `line ${this.i + 1}: '---' header is not followed by a '+++' header`,
          HEADER_HINT,
          {
            line: this.i + 1,
          },
        );
      }
      this.parseFileHeaders(meta, start + 1);
      return;
    }
    if (next !== undefined && stripCr(next).startsWith("@@")) {
      fail(
        "missing_file_header",
        `line ${this.i + 1}: hunk follows 'diff --git' without '---' / '+++' headers`,
        HEADER_HINT,
        { line: this.i + 1 },
      );
    }
    // A git file patch without hunks: rename-only, empty new file, empty deleted file.
    const lineNo = start + 1;
    if (meta.renameFrom !== null && meta.renameTo !== null) {
      this.pushRename(meta.renameFrom, meta.renameTo, [], meta, lineNo);
      return;
    }
    const paths = gitHeaderPaths(gitLine.slice(11));
    if (meta.newFile || meta.deletedFile) {
      if (!paths) {
        fail(
          "invalid_path",
          `line ${lineNo}: cannot read the file path from '${gitLine}'`,
          HEADER_HINT,
          {
            line: lineNo,
          },
        );
      }
      this.files.push({
        operation: meta.newFile ? "add" : "delete",
        old_path: meta.newFile ? null : paths.a,
        new_path: meta.newFile ? paths.b : null,
        hunks: [],
        ignored_metadata: meta.ignored,
        diagnostics: [],
        patch_line: lineNo,
      });
      return;
    }
    const where = paths ? ` for ${paths.b}` : "";
    if (meta.modeChange) {
      fail(
        "unsupported_git_patch_feature",
        `line ${lineNo}: file patch${where} only changes the file mode, which ApplyPatch does not apply`,
        UNSUPPORTED_HINT,
        { line: lineNo, path: paths?.b ?? null },
      );
    }
    fail("missing_hunk", `line ${lineNo}: file patch${where} has no hunks`, HEADER_HINT, {
      line: lineNo,
      path: paths?.b ?? null,
    });
  }

  private pushRename(from: string, to: string, hunks: Hunk[], meta: GitMeta, lineNo: number): void {
    if (from === to) {
      fail(
        "invalid_path",
        `line ${lineNo}: rename source and destination are the same path (${from})`,
        "rename to a different path, or drop the rename headers",
        {
          line: lineNo,
          path: from,
        },
      );
    }
    this.files.push({
      operation: "rename",
      old_path: from,
      new_path: to,
      hunks,
      ignored_metadata: meta.ignored,
      diagnostics: [],
      patch_line: lineNo,
    });
  }

  /** At a `---` line followed by `+++`; reads both headers and the hunks. */
  private parseFileHeaders(meta: GitMeta | null, startLine: number): void {
    const oldLineNo = this.i + 1;
    const oldRaw = stripCr(this.lines[this.i]!).slice(4);
    const newRaw = stripCr(this.lines[this.i + 1]!).slice(4);
    const oldPath = headerPath(oldRaw, oldLineNo);
    const newPath = headerPath(newRaw, oldLineNo + 1);
    this.i += 2;
    const displayPath = newPath ?? oldPath ?? "";
    const diagnostics: PatchDiagnostic[] = [];
    const hunks = this.parseHunks(displayPath, diagnostics);

    let filePatch: FilePatch;
    const base = { ignored_metadata: meta?.ignored ?? [], diagnostics, patch_line: startLine };
    if (oldPath === null && newPath === null) {
      fail("invalid_path", `line ${oldLineNo}: both '---' and '+++' are /dev/null`, HEADER_HINT, {
        line: oldLineNo,
      });
    }
    if (meta?.renameFrom != null && meta.renameTo != null) {
      const agrees = (header: string | null, raw: string, renamed: string) =>
        header !== null && (header === renamed || raw.trimEnd() === renamed);
      if (!agrees(oldPath, oldRaw, meta.renameFrom) || !agrees(newPath, newRaw, meta.renameTo)) {
        fail(
          "rename_path_mismatch",
          `line ${oldLineNo}: '---' / '+++' paths (${oldPath ?? "/dev/null"} -> ${newPath ?? "/dev/null"}) disagree with 'rename from ${meta.renameFrom}' / 'rename to ${meta.renameTo}'`,
          "make '--- a/<old>' and '+++ b/<new>' name the same files as 'rename from <old>' and 'rename to <new>'",
          { line: oldLineNo, path: meta.renameTo },
        );
      }
      this.pushRename(meta.renameFrom, meta.renameTo, hunks, meta, startLine);
      return;
    }
    if (oldPath === null) {
      filePatch = { operation: "add", old_path: null, new_path: newPath, hunks, ...base };
      for (const [h, hunk] of hunks.entries()) {
        if (hunk.lines.some((l) => l.kind !== "add")) {
          fail(
            "invalid_hunk_line",
            `hunk ${h + 1} of added file ${newPath}: a new file may only contain '+' lines`,
            "for '--- /dev/null', write every line of the new file with a '+' prefix and no context or '-' lines",
            { line: hunk.patch_line, path: newPath, hunk: h + 1 },
          );
        }
      }
    } else if (newPath === null) {
      filePatch = { operation: "delete", old_path: oldPath, new_path: null, hunks, ...base };
      for (const [h, hunk] of hunks.entries()) {
        if (hunk.lines.some((l) => l.kind === "add")) {
          fail(
            "invalid_hunk_line",
            `hunk ${h + 1} of deleted file ${oldPath}: a deletion may not contain '+' lines`,
            "for '+++ /dev/null', list the file's lines with '-' prefixes only",
            { line: hunk.patch_line, path: oldPath, hunk: h + 1 },
          );
        }
      }
    } else {
      if (oldPath !== newPath) {
        fail(
          "path_mismatch",
          `line ${oldLineNo}: '---' names ${oldPath} but '+++' names ${newPath}, and there is no rename header`,
          "use the same path in '---' and '+++'; to move a file, add 'diff --git a/<old> b/<new>', 'rename from <old>' and 'rename to <new>'",
          { line: oldLineNo, path: newPath },
        );
      }
      filePatch = { operation: "modify", old_path: oldPath, new_path: newPath, hunks, ...base };
    }
    this.files.push(filePatch);
  }

  private parseHunks(path: string, diagnostics: PatchDiagnostic[]): Hunk[] {
    const hunks: Hunk[] = [];
    const n = this.lines.length;
    for (;;) {
      // Tolerate blank lines between hunks of one file.
      let k = this.i;
      while (k < n && isBlank(this.lines[k]!)) k++;
      if (k >= n || !stripCr(this.lines[k]!).startsWith("@@")) break;
      if (hunks.length > 0) {
        const prev = hunks[hunks.length - 1]!;
        if (prev.old_no_newline || prev.new_no_newline) {
          fail(
            "invalid_hunk_line",
            `hunk ${hunks.length} of ${path} marks the end of the file, but another hunk follows`,
            "'\\ No newline at end of file' may only appear in the last hunk, after the file's last line",
            { line: k + 1, path, hunk: hunks.length },
          );
        }
      }
      this.i = k;
      hunks.push(this.parseHunk(path, hunks.length + 1, diagnostics));
    }
    if (hunks.length === 0) {
      const lineNo = Math.min(this.i + 1, n);
      fail("missing_hunk", `file patch for ${path} has no hunks`, HEADER_HINT, {
        line: lineNo,
        path,
      });
    }
    return hunks;
  }

  private parseHunk(path: string, index: number, diagnostics: PatchDiagnostic[]): Hunk {
    const headerLineNo = this.i + 1;
    const header = stripCr(this.lines[this.i]!);
    if (header.startsWith("@@@")) {
      fail(
        "unsupported_git_patch_feature",
        `line ${headerLineNo}: combined (merge) diffs are not supported`,
        UNSUPPORTED_HINT,
        {
          line: headerLineNo,
          path,
          hunk: index,
        },
      );
    }
    const m = HUNK_HEADER.exec(header);
    if (!m) {
      fail(
        "invalid_hunk_header",
        `line ${headerLineNo}: '${header}' is not a valid hunk header`,
        "write hunk headers as '@@ -old_start,old_count +new_start,new_count @@' with numbers; counts may be omitted when they are 1",
        { line: headerLineNo, path, hunk: index },
      );
    }
    const hunk: Hunk = {
      old_start: Number(m[1]),
      old_count: m[2] === undefined ? 1 : Number(m[2]),
      new_start: Number(m[3]),
      new_count: m[4] === undefined ? 1 : Number(m[4]),
      section: m[5]!.trim(),
      lines: [],
      old_no_newline: false,
      new_no_newline: false,
      patch_line: headerLineNo,
    };
    this.i++;
    let oldRem = hunk.old_count;
    let newRem = hunk.new_count;
    const n = this.lines.length;
    let lastKind: HunkLine["kind"] | "marker" | null = null;

    const push = (kind: HunkLine["kind"], text: string, lineNo: number) => {
      if ((kind !== "add" && hunk.old_no_newline) || (kind !== "remove" && hunk.new_no_newline)) {
        fail(
          "invalid_hunk_line",
          `line ${lineNo}: a line follows one marked '\\ No newline at end of file' on the same side`,
          "put '\\ No newline at end of file' directly after the file's last line, and only there",
          { line: lineNo, path, hunk: index },
        );
      }
      hunk.lines.push({ kind, text });
      if (kind !== "add") oldRem--;
      if (kind !== "remove") newRem--;
      lastKind = kind;
    };

    while (this.i < n) {
      const raw = this.lines[this.i]!;
      const lineNo = this.i + 1;
      const satisfied = oldRem <= 0 && newRem <= 0;
      if (isBlank(raw)) {
        // An empty line is an empty context line when more hunk lines follow;
        // trailing blank lines only count when the header counts need them.
        let k = this.i;
        while (k < n && isBlank(this.lines[k]!)) k++;
        const run = k - this.i;
        const follower = this.lines[k];
        const bodyFollows =
          follower !== undefined && /^[ +\-\\]/.test(follower) && !this.endsHunk(k, oldRem, newRem);
        let take = 0;
        if (bodyFollows) take = run;
        else if (oldRem === newRem && oldRem > 0 && oldRem <= run) take = oldRem;
        for (let t = 0; t < take; t++) push("context", "", lineNo + t);
        if (take < run) {
          this.i += take;
          break;
        }
        this.i = k;
        continue;
      }
      const c = raw[0];
      if (c === "\\") {
        if (lastKind === null || lastKind === "marker") {
          fail(
            "invalid_hunk_line",
            `line ${lineNo}: '\\ No newline at end of file' must follow a '+', '-' or ' ' line`,
            "put '\\ No newline at end of file' directly after the file's last line",
            { line: lineNo, path, hunk: index },
          );
        }
        if (lastKind !== "add") hunk.old_no_newline = true;
        if (lastKind !== "remove") hunk.new_no_newline = true;
        lastKind = "marker";
        this.i++;
        continue;
      }
      if (c === " " || c === "+" || c === "-") {
        if (this.endsHunk(this.i, oldRem, newRem)) break;
        if (satisfied && raw === "-- ") break; // mail signature after a format-patch diff
        push(c === " " ? "context" : c === "+" ? "add" : "remove", raw.slice(1), lineNo);
        this.i++;
        continue;
      }
      // Not a hunk line: the hunk ends here. Inside the announced line count
      // that is only fine at a real boundary; otherwise the line lost its prefix.
      const line = stripCr(raw);
      const boundary =
        line.startsWith("@@") || line.startsWith("diff --git ") || OLD_DSL.test(line);
      if (!satisfied && !boundary) {
        fail(
          "invalid_hunk_line",
          `line ${lineNo}: hunk line does not start with ' ', '+', '-' or '\\': '${line.slice(0, 80)}'`,
          "prefix context lines with a single space (also blank ones), removed lines with '-', added lines with '+'",
          { line: lineNo, path, hunk: index },
        );
      }
      break;
    }

    if (hunk.lines.length === 0) {
      fail(
        "invalid_hunk_line",
        `line ${headerLineNo}: hunk has no lines`,
        "give each hunk its context, '-' and '+' lines",
        {
          line: headerLineNo,
          path,
          hunk: index,
        },
      );
    }
    const oldActual = hunk.lines.filter((l) => l.kind !== "add").length;
    const newActual = hunk.lines.filter((l) => l.kind !== "remove").length;
    if (oldActual !== hunk.old_count || newActual !== hunk.new_count) {
      diagnostics.push({
        kind: "hunk_count_mismatch",
        message: `hunk header says -${hunk.old_count} +${hunk.new_count} lines, body has -${oldActual} +${newActual}; the body was used`,
        path,
        hunk: index,
      });
    }
    return hunk;
  }

  /**
   * Whether line k opens the next file patch ("--- x", "+++ y") rather than
   * being a removed "-- x" followed by an added "++ y". Once the header counts
   * are used up it is a header. Before that it is a header only when a hunk
   * header follows and the counts do not say exactly these two lines remain
   * (a miscounted hunk from a model, rather than a git diff of such lines).
   */
  private endsHunk(k: number, oldRem: number, newRem: number): boolean {
    const raw = this.lines[k]!;
    if (!raw.startsWith("--- ")) return false;
    const next = this.lines[k + 1];
    if (next === undefined || !next.startsWith("+++ ")) return false;
    if (oldRem <= 0 && newRem <= 0) return true;
    const after = this.lines[k + 2];
    return after !== undefined && after.startsWith("@@") && !(oldRem === 1 && newRem === 1);
  }
}

/** Parse unified diff text into file patches. Never throws for bad input. */
export function parsePatch(text: string): ParsePatchResult {
  try {
    return { ok: true, patch: new Parser(text).parse() };
  } catch (e) {
    if (e instanceof PatchSyntaxError) return { ok: false, error: e.error };
    throw e;
  }
}
