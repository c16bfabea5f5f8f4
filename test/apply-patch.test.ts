// Table tests for the ApplyPatch engine: one case per rule of the unified-diff
// RFC, checking the outcome and the exact bytes on disk (and, on failure, that
// nothing on disk changed).
import { afterAll, describe, expect, it } from "vitest";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  applyPatch,
  parsePatch,
  type ApplyPatchOutcome,
  type FileChange,
} from "../src/tools/workspace/apply-patch-engine.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Tree = Record<string, string | Buffer>;

function workspace(files: Tree): string {
  const root = mkdtempSync(path.join(tmpdir(), "holon-patch-"));
  dirs.push(root);
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
  return root;
}

/** Every regular file and symlink under dir, as bytes (links as "-> target"), plus directories. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(path.join(dir, r));
      if (st.isSymbolicLink()) out[r] = `-> ${readlinkSync(path.join(dir, r))}`;
      else if (st.isDirectory()) {
        out[`${r}/`] = "<dir>";
        walk(r);
      } else out[r] = readFileSync(path.join(dir, r)).toString("latin1");
    }
  };
  walk("");
  return out;
}

function read(root: string, rel: string): string {
  return readFileSync(path.join(root, rel), "utf8");
}

async function run(files: Tree, patch: string, cwd?: string) {
  const root = workspace(files);
  const before = snapshot(root);
  const outcome = await applyPatch(cwd === undefined ? { root, patch } : { root, patch, cwd });
  return { root, before, after: snapshot(root), outcome };
}

function ok(outcome: ApplyPatchOutcome): FileChange[] {
  if (!outcome.ok)
    throw new Error(`expected success, got ${JSON.stringify(outcome.error, null, 2)}`);
  return outcome.files;
}

function err(outcome: ApplyPatchOutcome) {
  if (outcome.ok) throw new Error(`expected failure, got ${outcome.summary_text}`);
  expect(outcome.error.message.length).toBeGreaterThan(0);
  expect(outcome.error.recovery_hint.length).toBeGreaterThan(0);
  return outcome.error;
}

const ten = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";

// ---------------------------------------------------------------------------

describe("modify: context-first application", () => {
  it("applies a hunk at its header line", async () => {
    const { root, outcome } = await run(
      { "a.txt": ten },
      "--- a/a.txt\n+++ b/a.txt\n@@ -4,3 +4,4 @@\n line 4\n-line 5\n+line five\n+line 5b\n line 6\n",
    );
    const [f] = ok(outcome);
    expect(f).toMatchObject({
      path: "a.txt",
      operation: "modify",
      hunks_applied: 1,
      lines_added: 2,
      lines_removed: 1,
      max_offset: 0,
    });
    expect(read(root, "a.txt")).toBe(ten.replace("line 5\n", "line five\nline 5b\n"));
  });

  it.each([
    ["drifted down", 1, 2],
    ["drifted up", 8, -5],
    ["header beyond end of file", 400, -397],
  ])("tolerates line-number drift (%s)", async (_name, header, offset) => {
    const { root, outcome } = await run(
      { "a.txt": ten },
      `--- a/a.txt\n+++ b/a.txt\n@@ -${header},3 +${header},3 @@\n line 3\n-line 4\n+LINE 4\n line 5\n`,
    );
    const [f] = ok(outcome);
    expect(f!.hunks[0]).toMatchObject({ matched_line: 3, offset });
    expect(f!.max_offset).toBe(Math.abs(offset));
    expect(read(root, "a.txt")).toBe(ten.replace("line 4\n", "LINE 4\n"));
  });

  it("applies several hunks in order and carries drift from one hunk to the next", async () => {
    const body = ["x", "x", ...ten.trimEnd().split("\n"), "tail a", "tail b"].join("\n") + "\n";
    const { root, outcome } = await run(
      { "a.txt": body },
      [
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,2 +1,2 @@",
        " line 1",
        "-line 2",
        "+line two",
        "@@ -9,2 +9,3 @@",
        " line 9",
        "+line 9.5",
        " line 10",
        "",
      ].join("\n"),
    );
    const [f] = ok(outcome);
    expect(f!.hunks.map((h) => h.offset)).toEqual([2, 2]);
    expect(f!.hunks_applied).toBe(2);
    expect(read(root, "a.txt")).toBe(
      body.replace("line 2\n", "line two\n").replace("line 9\n", "line 9\nline 9.5\n"),
    );
  });

  it("prefers the header location when the context repeats", async () => {
    const body = "a\nx\nb\na\nx\nb\n";
    const { root, outcome } = await run(
      { "r.txt": body },
      "--- a/r.txt\n+++ b/r.txt\n@@ -4,3 +4,3 @@\n a\n-x\n+y\n b\n",
    );
    expect(ok(outcome)[0]!.hunks[0]!.matched_line).toBe(4);
    expect(read(root, "r.txt")).toBe("a\nx\nb\na\ny\nb\n");
  });

  it("rejects an ambiguous match when the header does not pick one", async () => {
    const body = "a\nx\nb\nmid\na\nx\nb\n";
    const { before, after, outcome } = await run(
      { "r.txt": body },
      "--- a/r.txt\n+++ b/r.txt\n@@ -3,3 +3,3 @@\n a\n-x\n+y\n b\n",
    );
    const e = err(outcome);
    expect(e).toMatchObject({ kind: "ambiguous_context", path: "r.txt", hunk: 1 });
    expect(e.details).toMatchObject({ candidate_lines: [1, 5] });
    expect(after).toEqual(before);
  });

  it("reports missing context with the closest mismatching line", async () => {
    const { before, after, outcome } = await run(
      { "a.txt": ten },
      "--- a/a.txt\n+++ b/a.txt\n@@ -3,3 +3,3 @@\n line 3\n-line four\n+line 4!\n line 5\n",
    );
    const e = err(outcome);
    expect(e).toMatchObject({ kind: "context_not_found", path: "a.txt", hunk: 1 });
    expect(e.details).toMatchObject({ mismatch_line: 4, expected: "line four", found: "line 4" });
    expect(after).toEqual(before);
  });

  it("compares whitespace exactly, and says so when only whitespace differs", async () => {
    const { before, after, outcome } = await run(
      { "w.py": "def f():\n    return 1\n" },
      "--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n def f():\n-  return 1\n+  return 2\n",
    );
    const e = err(outcome);
    expect(e.kind).toBe("context_not_found");
    expect(e.details).toMatchObject({ whitespace_only_match_line: 1 });
    expect(after).toEqual(before);
  });

  it("trailing whitespace in the file must be matched too", async () => {
    const { outcome } = await run(
      { "t.txt": "a \nb\n" },
      "--- a/t.txt\n+++ b/t.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
    );
    expect(err(outcome).kind).toBe("context_not_found");
  });

  it("rejects hunks that are out of order", async () => {
    const { before, after, outcome } = await run(
      { "a.txt": ten },
      "--- a/a.txt\n+++ b/a.txt\n@@ -8,1 +8,1 @@\n-line 8\n+L8\n@@ -2,1 +2,1 @@\n-line 2\n+L2\n",
    );
    const e = err(outcome);
    expect(e).toMatchObject({ kind: "context_not_found", hunk: 2 });
    expect(e.message).toMatch(/before or inside the previous hunk/);
    expect(after).toEqual(before);
  });

  it("treats an empty line inside a hunk as an empty context line", async () => {
    const { root, outcome } = await run(
      { "e.txt": "a\n\nb\nc\n" },
      "--- a/e.txt\n+++ b/e.txt\n@@ -1,4 +1,4 @@\n a\n\n b\n-c\n+C\n",
    );
    ok(outcome);
    expect(read(root, "e.txt")).toBe("a\n\nb\nC\n");
  });

  it("treats hunk line counts as advisory and records the mismatch", async () => {
    const { root, outcome } = await run(
      { "a.txt": ten },
      "--- a/a.txt\n+++ b/a.txt\n@@ -2,7 +2,9 @@\n line 2\n-line 3\n+three\n line 4\n",
    );
    if (!outcome.ok) throw new Error(outcome.error.message);
    expect(outcome.diagnostics).toEqual([
      expect.objectContaining({ kind: "hunk_count_mismatch", path: "a.txt", hunk: 1 }),
    ]);
    expect(read(root, "a.txt")).toBe(ten.replace("line 3\n", "three\n"));
  });

  it("places a context-free insertion by its header (diff -U0)", async () => {
    const { root, outcome } = await run(
      { "a.txt": ten },
      "--- a/a.txt\n+++ b/a.txt\n@@ -0,0 +1 @@\n+top\n@@ -5,0 +7,2 @@\n+after 5\n+after 5 again\n@@ -10 +12 @@\n-line 10\n+last\n",
    );
    ok(outcome);
    expect(read(root, "a.txt")).toBe(
      "top\n" +
        ten.replace("line 5\n", "line 5\nafter 5\nafter 5 again\n").replace("line 10\n", "last\n"),
    );
  });

  it("preserves the file mode and follows a symlink that stays inside the workspace", async () => {
    const root = workspace({ "bin/run.sh": "#!/bin/sh\necho hi\n" });
    chmodSync(path.join(root, "bin/run.sh"), 0o754);
    symlinkSync("bin/run.sh", path.join(root, "link.sh"));
    const outcome = await applyPatch({
      root,
      patch: "--- a/link.sh\n+++ b/link.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo hi\n+echo bye\n",
    });
    ok(outcome);
    expect(statSync(path.join(root, "bin/run.sh")).mode & 0o7777).toBe(0o754);
    expect(read(root, "bin/run.sh")).toBe("#!/bin/sh\necho bye\n");
    expect(lstatSync(path.join(root, "link.sh")).isSymbolicLink()).toBe(true);
  });

  it("keeps bytes that are not UTF-8 and a UTF-8 byte-order mark", async () => {
    const latin = Buffer.from("caf\xe9\nna\xefve\nend\n", "latin1");
    const bom = Buffer.from("\ufeffhello\nworld\n", "utf8");
    const { root, outcome } = await run(
      { "l.txt": latin, "b.txt": bom },
      "--- a/l.txt\n+++ b/l.txt\n@@ -3 +3 @@\n-end\n+fin\n--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-hello\n+héllo\n world\n",
    );
    ok(outcome);
    expect(readFileSync(path.join(root, "l.txt"))).toEqual(
      Buffer.from("caf\xe9\nna\xefve\nfin\n", "latin1"),
    );
    expect(readFileSync(path.join(root, "b.txt"))).toEqual(
      Buffer.from("\ufeffhéllo\nworld\n", "utf8"),
    );
  });
});

describe("line endings", () => {
  const crlf = "one\r\ntwo\r\nthree\r\n";

  it("keeps CRLF when an LF patch edits a CRLF file, including added lines", async () => {
    const { root, outcome } = await run(
      { "w.txt": crlf },
      "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n+two and a half\n three\n",
    );
    expect(ok(outcome)[0]!.line_endings).toBe("added_cr");
    expect(read(root, "w.txt")).toBe("one\r\nTWO\r\ntwo and a half\r\nthree\r\n");
  });

  it("applies a git-style patch whose lines carry the CR literally", async () => {
    const { root, outcome } = await run(
      { "w.txt": crlf },
      "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n one\r\n-two\r\n+2\r\n three\r\n",
    );
    expect(ok(outcome)[0]!.line_endings).toBe("none");
    expect(read(root, "w.txt")).toBe("one\r\n2\r\nthree\r\n");
  });

  it("applies a CRLF patch (pasted from Windows) to an LF file without adding CRs", async () => {
    const patch = "--- a/u.txt\n+++ b/u.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n".replace(/\n/g, "\r\n");
    const { root, outcome } = await run({ "u.txt": "a\nb\n" }, patch);
    expect(ok(outcome)[0]!.line_endings).toBe("stripped_cr");
    expect(read(root, "u.txt")).toBe("a\nB\n");
  });

  it("writes CRs literally into an empty file (nothing to adapt to)", async () => {
    const { root, outcome } = await run(
      { "e.txt": "" },
      "--- a/e.txt\n+++ b/e.txt\n@@ -0,0 +1,2 @@\n+a\r\n+b\r\n",
    );
    expect(ok(outcome)[0]!.line_endings).toBe("none");
    expect(read(root, "e.txt")).toBe("a\r\nb\r\n");
  });

  it("leaves a mixed-ending file's untouched lines alone", async () => {
    const { root, outcome } = await run(
      { "m.txt": "a\r\nb\nc\r\n" },
      "--- a/m.txt\n+++ b/m.txt\n@@ -2 +2 @@\n-b\n+B\n",
    );
    ok(outcome);
    expect(read(root, "m.txt")).toBe("a\r\nB\nc\r\n");
  });

  it("keeps the CRLF file's missing final newline", async () => {
    const { root, outcome } = await run(
      { "w.txt": "one\r\ntwo" },
      "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n\\ No newline at end of file\n",
    );
    ok(outcome);
    expect(read(root, "w.txt")).toBe("ONE\r\ntwo");
  });
});

describe("\\ No newline at end of file", () => {
  it.each([
    [
      "removes the final newline",
      "a\nb\n",
      "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
      "a\nb",
    ],
    [
      "adds a final newline",
      "a\nb",
      "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
      "a\nb\n",
    ],
    [
      "keeps a missing newline on an unchanged last context line",
      "a\nb",
      "@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n",
      "A\nb",
    ],
    [
      "appends after a last line that had no newline",
      "a\nb",
      "@@ -2 +2,2 @@\n-b\n\\ No newline at end of file\n+b\n+c\n",
      "a\nb\nc\n",
    ],
    [
      "changes the last line and keeps it unterminated",
      "a\nb",
      "@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n",
      "a\nB",
    ],
    [
      "removes trailing lines; the new last line keeps its newline",
      "a\nb\nc",
      "@@ -1,3 +1 @@\n a\n-b\n-c\n\\ No newline at end of file\n",
      "a\n",
    ],
    [
      "tolerates a patch that omits the marker for a file without final newline",
      "a\nb",
      "@@ -1,2 +1,2 @@\n-a\n+A\n b\n",
      "A\nb",
    ],
  ])("%s", async (_name, before, hunks, expected) => {
    const { root, outcome } = await run({ "f.txt": before }, `--- a/f.txt\n+++ b/f.txt\n${hunks}`);
    ok(outcome);
    expect(read(root, "f.txt")).toBe(expected);
  });

  it("rejects a marker whose hunk does not sit at the end of the file", async () => {
    const { before, after, outcome } = await run(
      { "f.txt": "a\nb\nc\n" },
      "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n\\ No newline at end of file\n",
    );
    expect(err(outcome).kind).toBe("context_not_found");
    expect(after).toEqual(before);
  });

  it.each([
    ["a marker before any line", "@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n"],
    ["a line after a new-side marker", "@@ -1 +1,2 @@\n-a\n+b\n\\ No newline at end of file\n+c\n"],
    [
      "a marker in a hunk that is not the last",
      "@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n@@ -3 +3 @@\n-c\n+d\n",
    ],
  ])("rejects %s", async (_name, hunks) => {
    const { before, after, outcome } = await run(
      { "f.txt": "a\nb\nc\n" },
      `--- a/f.txt\n+++ b/f.txt\n${hunks}`,
    );
    expect(err(outcome).kind).toBe("invalid_hunk_line");
    expect(after).toEqual(before);
  });
});

describe("add, delete, rename", () => {
  it("adds a file, creating parent directories", async () => {
    const { root, outcome } = await run(
      {},
      "--- /dev/null\n+++ b/docs/deep/new.md\n@@ -0,0 +1,3 @@\n+line 1\n+line 2\n+line 3\n",
    );
    const [f] = ok(outcome);
    expect(f).toMatchObject({
      path: "docs/deep/new.md",
      operation: "add",
      lines_added: 3,
      lines_removed: 0,
    });
    expect(read(root, "docs/deep/new.md")).toBe("line 1\nline 2\nline 3\n");
  });

  it("adds a file without a final newline; mode metadata is recorded, not applied", async () => {
    const { root, outcome } = await run(
      {},
      "diff --git a/n.sh b/n.sh\nnew file mode 100755\nindex 0000000..1111111\n--- /dev/null\n+++ b/n.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+exit 0\n\\ No newline at end of file\n",
    );
    const [f] = ok(outcome);
    expect(f!.ignored_metadata).toEqual(["new file mode 100755", "index 0000000..1111111"]);
    expect(read(root, "n.sh")).toBe("#!/bin/sh\nexit 0");
    expect(statSync(path.join(root, "n.sh")).mode & 0o111).toBe(0);
  });

  it("refuses to add a file that exists", async () => {
    const { before, after, outcome } = await run(
      { "x.txt": "x\n" },
      "--- /dev/null\n+++ b/x.txt\n@@ -0,0 +1 @@\n+y\n",
    );
    expect(err(outcome)).toMatchObject({ kind: "file_exists", path: "x.txt" });
    expect(after).toEqual(before);
  });

  it("deletes a file whose whole content the hunk lists", async () => {
    const { after, outcome } = await run(
      { "old.md": "one\ntwo\n", "keep.md": "k\n" },
      "--- a/old.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n",
    );
    expect(ok(outcome)[0]).toMatchObject({ path: "old.md", operation: "delete", lines_removed: 2 });
    expect(after).toEqual({ "keep.md": "k\n" });
  });

  it("refuses a deletion that does not cover the whole file", async () => {
    const { before, after, outcome } = await run(
      { "old.md": "one\ntwo\nthree\n" },
      "--- a/old.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n",
    );
    expect(err(outcome)).toMatchObject({ kind: "delete_content_mismatch", path: "old.md" });
    expect(after).toEqual(before);
  });

  it.each([
    ["modify", "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n"],
    ["delete", "--- a/nope.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"],
    ["rename", "diff --git a/nope.txt b/new.txt\nrename from nope.txt\nrename to new.txt\n"],
  ])("reports a missing file (%s)", async (_op, patch) => {
    const { outcome } = await run({ "other.txt": "a\n" }, patch);
    expect(err(outcome)).toMatchObject({ kind: "file_not_found", path: "nope.txt" });
  });

  it("renames without content changes, keeping bytes and mode", async () => {
    const root = workspace({ "old.txt": "same\r\nbytes\n" });
    chmodSync(path.join(root, "old.txt"), 0o640);
    const outcome = await applyPatch({
      root,
      patch:
        "diff --git a/old.txt b/sub/new.txt\nsimilarity index 100%\nrename from old.txt\nrename to sub/new.txt\n",
    });
    const [f] = ok(outcome);
    expect(f).toMatchObject({
      path: "sub/new.txt",
      old_path: "old.txt",
      operation: "rename",
      hunks_applied: 0,
    });
    expect(f!.ignored_metadata).toEqual(["similarity index 100%"]);
    expect(snapshot(root)).toEqual({ "sub/": "<dir>", "sub/new.txt": "same\r\nbytes\n" });
    expect(statSync(path.join(root, "sub/new.txt")).mode & 0o7777).toBe(0o640);
  });

  it("renames with edits", async () => {
    const { after, outcome } = await run(
      { "old.txt": "line 1\nold line\nline 3\n" },
      "diff --git a/old.txt b/new.txt\nsimilarity index 60%\nrename from old.txt\nrename to new.txt\n--- a/old.txt\n+++ b/new.txt\n@@ -1,3 +1,3 @@\n line 1\n-old line\n+new line\n line 3\n",
    );
    expect(ok(outcome)[0]).toMatchObject({ operation: "rename", lines_added: 1, lines_removed: 1 });
    expect(after).toEqual({ "new.txt": "line 1\nnew line\nline 3\n" });
  });

  it("refuses a rename onto the same file spelled differently", async () => {
    const { outcome } = await run(
      { "a.txt": "a\n" },
      "diff --git a/a.txt b/a.txt\nrename from a.txt\nrename to ./a.txt\n",
    );
    expect(err(outcome)).toMatchObject({ kind: "invalid_path" });
  });

  it("refuses a rename onto an existing file", async () => {
    const { before, after, outcome } = await run(
      { "a.txt": "a\n", "b.txt": "b\n" },
      "diff --git a/a.txt b/b.txt\nrename from a.txt\nrename to b.txt\n",
    );
    expect(err(outcome)).toMatchObject({ kind: "file_exists", path: "b.txt" });
    expect(after).toEqual(before);
  });

  it("refuses rename headers that disagree with --- / +++", async () => {
    const { outcome } = await run(
      { "a.txt": "a\n" },
      "diff --git a/a.txt b/b.txt\nrename from a.txt\nrename to b.txt\n--- a/a.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-a\n+b\n",
    );
    expect(err(outcome).kind).toBe("rename_path_mismatch");
  });

  it("adds and deletes empty files through git headers without hunks", async () => {
    const { after, outcome } = await run(
      { "gone.txt": "" },
      "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\nindex 0000000..e69de29\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex e69de29..0000000\n",
    );
    expect(ok(outcome).map((f) => [f.operation, f.path])).toEqual([
      ["add", "empty.txt"],
      ["delete", "gone.txt"],
    ]);
    expect(after).toEqual({ "empty.txt": "" });
  });

  it("refuses a hunk-less deletion of a non-empty file", async () => {
    const { outcome } = await run(
      { "full.txt": "x\n" },
      "diff --git a/full.txt b/full.txt\ndeleted file mode 100644\n",
    );
    expect(err(outcome).kind).toBe("delete_content_mismatch");
  });

  it("fills an empty file and empties a full one", async () => {
    const { root, outcome } = await run(
      { "empty.txt": "", "full.txt": "a\nb\n" },
      "--- a/empty.txt\n+++ b/empty.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n--- a/full.txt\n+++ b/full.txt\n@@ -1,2 +0,0 @@\n-a\n-b\n",
    );
    ok(outcome);
    expect(read(root, "empty.txt")).toBe("x\ny\n");
    expect(read(root, "full.txt")).toBe("");
  });
});

describe("one call, one file patch per path", () => {
  it.each([
    [
      "the same path twice",
      "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n--- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-b\n+c\n",
    ],
    [
      "two spellings of one path",
      "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n--- a/./x/../a.txt\n+++ b/./x/../a.txt\n@@ -2 +2 @@\n-b\n+c\n",
    ],
    [
      "a rename and an edit of its target",
      "diff --git a/a.txt b/n.txt\nrename from a.txt\nrename to n.txt\ndiff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+n\n",
    ],
    [
      "chained renames",
      "diff --git a/a.txt b/b.txt\nrename from a.txt\nrename to b.txt\ndiff --git a/b.txt b/c.txt\nrename from b.txt\nrename to c.txt\n",
    ],
  ])("rejects %s", async (_name, patch) => {
    const { before, after, outcome } = await run({ "a.txt": "a\nb\n", "b.txt": "b\n" }, patch);
    expect(err(outcome).kind).toBe("duplicate_file_patch");
    expect(after).toEqual(before);
  });

  it("applies a patch across several files, or none of them", async () => {
    const files = { "a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n" };
    const good = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n";
    const bad = "--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-nope\n+C\n";
    const added = "--- /dev/null\n+++ b/d/new.txt\n@@ -0,0 +1 @@\n+new\n";
    const deleted = "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n";
    const fail = await run(files, good + added + deleted + bad);
    expect(err(fail.outcome)).toMatchObject({ kind: "context_not_found", path: "c.txt" });
    expect(fail.after).toEqual(fail.before);

    const pass = await run(files, good + added + deleted);
    if (!pass.outcome.ok) throw new Error(pass.outcome.error.message);
    expect(pass.outcome.summary_text).toBe(
      "applied patch to 3 files: modified a.txt (+1 -1); added d/new.txt (+1); deleted b.txt (-1)",
    );
    expect(pass.after).toEqual({
      "a.txt": "A\n",
      "c.txt": "c\n",
      "d/": "<dir>",
      "d/new.txt": "new\n",
    });
  });

  it.each([0, 1, 2, 3, 4])(
    "rolls back every change when the commit fails at step %i",
    async (failAt) => {
      const root = workspace({ "a.txt": "a\n", "b.txt": "b\n", "r.txt": "r\n" });
      chmodSync(path.join(root, "a.txt"), 0o700);
      const before = snapshot(root);
      const patch =
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n" +
        "--- /dev/null\n+++ b/new/dir/n.txt\n@@ -0,0 +1 @@\n+n\n" +
        "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n" +
        "diff --git a/r.txt b/moved/r.txt\nrename from r.txt\nrename to moved/r.txt\n";
      const steps: string[] = [];
      const outcome = await applyPatch(
        { root, patch },
        {
          beforeCommitStep: (s) => {
            steps.push(`${s.action} ${s.path}`);
            if (s.index === failAt) throw Object.assign(new Error("disk full"), { code: "ENOSPC" });
          },
        },
      );
      const e = err(outcome);
      expect(e).toMatchObject({ kind: "io_error", retryable: true });
      expect(e.message).toMatch(/nothing was changed/);
      expect(snapshot(root)).toEqual(before);
      expect(statSync(path.join(root, "a.txt")).mode & 0o7777).toBe(0o700);
      expect(steps.at(-1)).toBe(
        ["write a.txt", "write new/dir/n.txt", "write moved/r.txt", "remove b.txt", "remove r.txt"][
          failAt
        ],
      );
    },
  );
});

describe("workspace confinement", () => {
  const outside = workspace({ "secret.txt": "secret\n" });

  it.each([
    ["a ../ escape", "--- a/../x.txt\n+++ b/../x.txt\n@@ -1 +1 @@\n-a\n+b\n"],
    ["a deeper ../ escape", "--- a/sub/../../x.txt\n+++ b/sub/../../x.txt\n@@ -1 +1 @@\n-a\n+b\n"],
    [
      "an absolute path outside",
      `--- ${outside}/secret.txt\n+++ ${outside}/secret.txt\n@@ -1 +1 @@\n-secret\n+pwned\n`,
    ],
    ["an added file outside", "--- /dev/null\n+++ b/../new.txt\n@@ -0,0 +1 @@\n+x\n"],
    [
      "a symlinked directory that points outside",
      "--- /dev/null\n+++ b/out/new.txt\n@@ -0,0 +1 @@\n+x\n",
    ],
    [
      "a symlinked file that points outside",
      "--- a/leak.txt\n+++ b/leak.txt\n@@ -1 +1 @@\n-secret\n+pwned\n",
    ],
    [
      "a rename target outside",
      "diff --git a/in.txt b/../in.txt\nrename from in.txt\nrename to ../in.txt\n",
    ],
  ])("rejects %s", async (_name, patch) => {
    const root = workspace({ "in.txt": "a\n" });
    symlinkSync(outside, path.join(root, "out"));
    symlinkSync(path.join(outside, "secret.txt"), path.join(root, "leak.txt"));
    const before = snapshot(root);
    const outsideBefore = snapshot(outside);
    const outcome = await applyPatch({ root, patch });
    expect(err(outcome).kind).toBe("path_escape");
    expect(snapshot(root)).toEqual(before);
    expect(snapshot(outside)).toEqual(outsideBefore);
  });

  it("accepts an absolute path inside the workspace and paths relative to cwd", async () => {
    const root = workspace({ "pkg/src/a.txt": "a\n", "b.txt": "b\n" });
    const outcome = await applyPatch({
      root,
      cwd: "pkg",
      patch: `--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- ${root}/b.txt\n+++ ${root}/b.txt\n@@ -1 +1 @@\n-b\n+B\n`,
    });
    expect(ok(outcome).map((f) => f.path)).toEqual(["pkg/src/a.txt", "b.txt"]);
    expect(read(root, "pkg/src/a.txt")).toBe("A\n");
    expect(read(root, "b.txt")).toBe("B\n");
  });

  it("rejects a cwd outside the workspace", async () => {
    const { outcome } = await run(
      { "a.txt": "a\n" },
      "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n",
      "..",
    );
    expect(err(outcome).kind).toBe("path_escape");
  });

  it("refuses to delete a symlink or patch a directory", async () => {
    const root = workspace({ "t.txt": "t\n", "d/x": "x\n" });
    symlinkSync("t.txt", path.join(root, "l.txt"));
    const del = await applyPatch({
      root,
      patch: "--- a/l.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-t\n",
    });
    expect(err(del).kind).toBe("not_a_file");
    const dir = await applyPatch({ root, patch: "--- a/d\n+++ b/d\n@@ -1 +1 @@\n-x\n+y\n" });
    expect(err(dir).kind).toBe("not_a_file");
  });

  it("reports a missing workspace root", async () => {
    const outcome = await applyPatch({
      root: "/nonexistent/holon-root",
      patch: "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n",
    });
    expect(err(outcome).kind).toBe("workspace_unavailable");
  });
});

describe("parsing", () => {
  it.each([
    ["an empty patch", "", "empty_patch"],
    ["prose only", "please change the file\n", "empty_patch"],
    [
      "the old *** Begin Patch format",
      "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n",
      "unsupported_patch_format",
    ],
    ["--- without +++", "--- a/a.txt\n@@ -1 +1 @@\n-a\n+b\n", "missing_file_header"],
    ["+++ without ---", "+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n", "missing_file_header"],
    ["a hunk before any header", "@@ -1 +1 @@\n-a\n+b\n", "missing_file_header"],
    ["a header with no hunks", "--- a/a.txt\n+++ b/a.txt\n", "missing_hunk"],
    ["a bare @@ header", "--- a/a.txt\n+++ b/a.txt\n@@\n-a\n+b\n", "invalid_hunk_header"],
    [
      "a hunk header without numbers",
      "--- a/a.txt\n+++ b/a.txt\n@@ -x +y @@\n-a\n+b\n",
      "invalid_hunk_header",
    ],
    [
      "a hunk line without prefix",
      "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a\nb\n-c\n+C\n",
      "invalid_hunk_line",
    ],
    [
      "an empty hunk",
      "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-a\n+b\n",
      "invalid_hunk_line",
    ],
    [
      "context in an added file",
      "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n a\n+b\n",
      "invalid_hunk_line",
    ],
    [
      "additions in a deleted file",
      "--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n+b\n",
      "invalid_hunk_line",
    ],
    ["both sides /dev/null", "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "invalid_path"],
    [
      "different paths without rename",
      "--- a/a.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-a\n+b\n",
      "path_mismatch",
    ],
    [
      "a binary patch",
      "diff --git a/x.png b/x.png\nindex 1..2 100644\nGIT binary patch\nliteral 1\n",
      "unsupported_git_patch_feature",
    ],
    [
      "a binary notice",
      "diff --git a/x.png b/x.png\nBinary files a/x.png and b/x.png differ\n",
      "unsupported_git_patch_feature",
    ],
    [
      "a copy",
      "diff --git a/a.txt b/b.txt\nsimilarity index 100%\ncopy from a.txt\ncopy to b.txt\n",
      "unsupported_git_patch_feature",
    ],
    [
      "a mode-only change",
      "diff --git a/a.txt b/a.txt\nold mode 100644\nnew mode 100755\n",
      "unsupported_git_patch_feature",
    ],
    [
      "a submodule",
      "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit 1234567\n",
      "unsupported_git_patch_feature",
    ],
    [
      "a symlink",
      "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n",
      "unsupported_git_patch_feature",
    ],
    [
      "a combined diff",
      "--- a/a.txt\n+++ b/a.txt\n@@@ -1 -1 +1 @@@\n- a\n+ b\n",
      "unsupported_git_patch_feature",
    ],
    [
      "a rename without rename to",
      "diff --git a/a.txt b/b.txt\nrename from a.txt\n",
      "missing_file_header",
    ],
  ])("rejects %s", async (_name, patch, kind) => {
    const { before, after, outcome } = await run({ "a.txt": "a\nb\nc\n" }, patch);
    const e = err(outcome);
    expect(e.kind).toBe(kind);
    expect(after).toEqual(before);
    const parsed = parsePatch(patch);
    expect(parsed.ok).toBe(false);
  });

  it("reports the patch line of a syntax error", () => {
    const r = parsePatch("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a\nb\n");
    expect(r).toMatchObject({
      ok: false,
      error: { kind: "invalid_hunk_line", details: { patch_line: 5 } },
    });
  });

  it("parses modify, add, delete and rename into file patches", () => {
    const r = parsePatch(
      [
        "diff --git a/m.txt b/m.txt",
        "index 1111111..2222222 100644",
        "--- a/m.txt",
        "+++ b/m.txt",
        "@@ -1,2 +1,2 @@ function f() {",
        " x",
        "-y",
        "+z",
        "--- /dev/null",
        "+++ b/n.txt",
        "@@ -0,0 +1 @@",
        "+n",
        "--- a/d.txt",
        "+++ /dev/null",
        "@@ -1 +0,0 @@",
        "-d",
        "\\ No newline at end of file",
        "diff --git a/o.txt b/p.txt",
        "similarity index 100%",
        "rename from o.txt",
        "rename to p.txt",
        "",
      ].join("\n"),
    );
    if (!r.ok) throw new Error(r.error.message);
    expect(r.patch.files.map((f) => [f.operation, f.old_path, f.new_path, f.hunks.length])).toEqual(
      [
        ["modify", "m.txt", "m.txt", 1],
        ["add", null, "n.txt", 1],
        ["delete", "d.txt", null, 1],
        ["rename", "o.txt", "p.txt", 0],
      ],
    );
    expect(r.patch.files[0]!.hunks[0]).toMatchObject({
      old_start: 1,
      old_count: 2,
      new_start: 1,
      new_count: 2,
      section: "function f() {",
      lines: [
        { kind: "context", text: "x" },
        { kind: "remove", text: "y" },
        { kind: "add", text: "z" },
      ],
    });
    expect(r.patch.files[2]!.hunks[0]).toMatchObject({
      old_no_newline: true,
      new_no_newline: false,
    });
    expect(r.patch.files[0]!.ignored_metadata).toEqual(["index 1111111..2222222 100644"]);
  });

  it("ignores preamble, mail signature and fences; tells a removed '-- x' line from a header by the counts", async () => {
    const { root, outcome } = await run(
      { "q.sql": "select 1;\n-- x\n++ y\nselect 2;\n", "a.txt": "a\n" },
      [
        "From 123 Mon Sep 17 00:00:00 2001",
        "Subject: [PATCH] fix",
        "---",
        " q.sql | 2 +-",
        "",
        "```diff",
        "diff --git a/q.sql b/q.sql",
        "--- a/q.sql",
        "+++ b/q.sql",
        "@@ -1,4 +1,4 @@",
        " select 1;",
        "--- x",
        "+++ y",
        " ++ y",
        " select 2;",
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1 +1 @@",
        "-a",
        "+b",
        "```",
        "-- ",
        "2.39.5",
        "",
      ].join("\n"),
    );
    ok(outcome);
    expect(read(root, "q.sql")).toBe("select 1;\n++ y\n++ y\nselect 2;\n");
    expect(read(root, "a.txt")).toBe("b\n");
  });

  it("reads '--- x' / '+++ y' as hunk lines when the counts say exactly those two remain", async () => {
    const { root, outcome } = await run(
      { "s.sql": "a\n-- x\n" },
      "--- a/s.sql\n+++ b/s.sql\n@@ -1,2 +1,2 @@\n a\n--- x\n+++ y\n@@ -9,0 +10 @@\n+z\n",
    );
    // The second hunk inserts after line 9 of a 2-line file, so it cannot apply; the point is how the first parsed.
    expect(err(outcome)).toMatchObject({ kind: "context_not_found", hunk: 2 });
    const parsed = parsePatch(
      "--- a/s.sql\n+++ b/s.sql\n@@ -1,2 +1,2 @@\n a\n--- x\n+++ y\n@@ -2 +2 @@\n-y\n+z\n",
    );
    if (!parsed.ok) throw new Error(parsed.error.message);
    expect(parsed.patch.files).toHaveLength(1);
    expect(parsed.patch.files[0]!.hunks[0]!.lines).toEqual([
      { kind: "context", text: "a" },
      { kind: "remove", text: "-- x" },
      { kind: "add", text: "++ y" },
    ]);
    expect(read(root, "s.sql")).toBe("a\n-- x\n");
  });

  it("starts the next file patch when a hunk over-counts its lines", async () => {
    const { root, outcome } = await run(
      { "a.txt": "a\n", "b.txt": "b\n" },
      "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n",
    );
    ok(outcome);
    expect(read(root, "a.txt")).toBe("A\n");
    expect(read(root, "b.txt")).toBe("B\n");
  });

  it("reads quoted and tab-terminated paths", async () => {
    const { root, outcome } = await run(
      { "with space.txt": "a\n", "caf\u00e9.txt": "c\n" },
      '--- a/with space.txt\t2024-01-01 00:00:00\n+++ b/with space.txt\t2024-01-01 00:00:00\n@@ -1 +1 @@\n-a\n+A\n--- "a/caf\\303\\251.txt"\n+++ "b/caf\\303\\251.txt"\n@@ -1 +1 @@\n-c\n+C\n',
    );
    ok(outcome);
    expect(read(root, "with space.txt")).toBe("A\n");
    expect(read(root, "caf\u00e9.txt")).toBe("C\n");
  });
});
