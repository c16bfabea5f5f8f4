// Differential test: the ApplyPatch engine against real `git apply`.
//
// Real text files (this repo's sources and files under node_modules) get
// seeded random edits; real `git diff` / `diff -u` turn each edit into a
// patch; the engine applies it in one directory and `git apply` in another,
// and both results must equal the edited bytes. Renames, additions and
// deletions come from `git diff -M` in a throwaway repository.
//
// Every case is derived from SEED, and a failure names its case number, so a
// failure reproduces exactly.
import { afterAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import {
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { applyPatch } from "../src/tools/workspace/apply-patch-engine.ts";

const SEED = Number(process.env.APPLY_PATCH_SEED ?? 20260426);
const REPO = path.resolve(import.meta.dirname, "..");
const scratch = mkdtempSync(path.join(tmpdir(), "holon-patch-git-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// Keep git away from the user's configuration.
const GIT_ENV = {
  ...process.env,
  HOME: scratch,
  XDG_CONFIG_HOME: scratch,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
  LC_ALL: "C",
};

function sh(cmd: string, args: string[], cwd: string, input?: string) {
  const r = spawnSync(cmd, args, {
    cwd,
    env: GIT_ENV,
    input,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

// mulberry32: small, seedable, good enough to pick edits.
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
    chance: (p: number) => next() < p,
  };
}
type Rng = ReturnType<typeof prng>;

/** Text files to mutate, found in a fixed order so the seed decides everything. */
function corpus(): string[] {
  // Installed packages only: the repo's own sources change under concurrent work, which would move the seed's meaning.
  const roots = [
    "node_modules/zod",
    "node_modules/hono",
    "node_modules/commander",
    "node_modules/pino",
    "node_modules/vitest",
  ];
  const exts = /\.(ts|js|mjs|cjs|md|json|txt|d\.ts)$/;
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (out.length >= 600 || depth > 6) return;
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const p = path.join(dir, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p, depth + 1);
      else if (st.isFile() && exts.test(name) && st.size > 40 && st.size < 24_000) {
        // Valid UTF-8 only: patches reach the engine as strings.
        const buf = readFileSync(p);
        const text = buf.toString("utf8");
        if (!buf.includes(0) && Buffer.from(text, "utf8").equals(buf)) out.push(text);
      }
      if (out.length >= 600) return;
    }
  };
  for (const r of roots) walk(path.join(REPO, r), 0);
  return out;
}

const files = corpus();

/** Seeded edits of a file: inserts (often copies of nearby lines, to make repeated context), deletes, replacements. */
function mutate(rng: Rng, original: string): string {
  const endsWithNewline = original.endsWith("\n");
  const lines = original.split("\n");
  if (endsWithNewline) lines.pop();
  const edits = rng.int(1, 6);
  for (let e = 0; e < edits; e++) {
    const at = rng.int(0, lines.length);
    const op = rng.pick(["insert", "insert", "delete", "replace", "duplicate"] as const);
    if (op === "insert" || lines.length === 0) {
      const n = rng.int(1, 3);
      const fresh = Array.from({ length: n }, (_, i) =>
        rng.chance(0.5) && lines.length > 0
          ? lines[rng.int(0, lines.length - 1)]!
          : `inserted ${e}.${i} ${rng.int(0, 1e6)}`,
      );
      lines.splice(at, 0, ...fresh);
    } else if (op === "delete") {
      lines.splice(Math.min(at, lines.length - 1), rng.int(1, 4));
    } else if (op === "replace") {
      const start = Math.min(at, lines.length - 1);
      const n = Math.min(rng.int(1, 3), lines.length - start);
      const repl = lines
        .slice(start, start + n)
        .map((l) => (rng.chance(0.5) ? `${l} // edited` : l.toUpperCase() + "!"));
      lines.splice(start, n, ...repl);
    } else {
      const start = Math.min(at, lines.length - 1);
      const block = lines.slice(start, start + rng.int(2, 5));
      lines.splice(rng.int(0, lines.length), 0, ...block);
    }
  }
  let finalNewline = endsWithNewline;
  if (rng.chance(0.12)) finalNewline = !finalNewline;
  if (lines.length === 0) return "";
  return lines.join("\n") + (finalNewline ? "\n" : "");
}

const toCrlf = (s: string) => s.replace(/\r?\n/g, "\r\n");

interface Case {
  name: string;
  before: string;
  after: string;
  tool: "git" | "diff";
  context: number;
}

function makeCase(i: number): Case {
  const rng = prng(SEED + i * 7919);
  let before = files[rng.int(0, files.length - 1)]!;
  if (rng.chance(0.1)) before = before.replace(/\n$/, "");
  if (rng.chance(0.03)) before = "";
  let after = mutate(rng, before);
  if (rng.chance(0.03)) after = "";
  if (rng.chance(0.15)) {
    before = toCrlf(before);
    after = toCrlf(after);
  }
  const tool = rng.chance(0.5) ? "git" : "diff";
  const context = rng.pick([0, 1, 2, 3, 3, 3, 5]);
  return { name: `case ${i}`, before, after, tool, context };
}

/** Produce a patch with real tools; paths are a/<name> and b/<name>. */
function producePatch(dir: string, c: Case, name: string): string {
  mkdirSync(path.join(dir, "a"), { recursive: true });
  mkdirSync(path.join(dir, "b"), { recursive: true });
  writeFileSync(path.join(dir, "a", name), c.before);
  writeFileSync(path.join(dir, "b", name), c.after);
  const r =
    c.tool === "git"
      ? sh(
          "git",
          [
            "diff",
            "--no-index",
            "--no-prefix",
            "--no-color",
            "--no-ext-diff",
            `-U${c.context}`,
            `a/${name}`,
            `b/${name}`,
          ],
          dir,
        )
      : sh(
          "diff",
          [
            `-U${c.context}`,
            "--label",
            `a/${name}`,
            "--label",
            `b/${name}`,
            `a/${name}`,
            `b/${name}`,
          ],
          dir,
        );
  if (r.code !== 1) throw new Error(`${c.tool} diff exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

function gitApply(dir: string, patch: string, unidiffZero: boolean) {
  return sh("git", ["apply", ...(unidiffZero ? ["--unidiff-zero"] : []), "-"], dir, patch);
}

/** Files under dir as name -> latin1 bytes (directories ignored: git prunes empty ones, we keep them). */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      if (rel === "" && name === ".git") continue;
      const r = rel ? `${rel}/${name}` : name;
      if (statSync(path.join(dir, r)).isDirectory()) walk(r);
      else out[r] = readFileSync(path.join(dir, r)).toString("latin1");
    }
  };
  walk("");
  return out;
}

// Each case spawns git two or three times: on a loaded 2-core machine a few hundred cases
// take longer than the suite's default test timeout.
describe("ApplyPatch engine agrees with git apply", { timeout: 120_000 }, () => {
  it("has a corpus of real files", () => {
    expect(files.length).toBeGreaterThan(100);
  });

  it("single-file edits from git diff and diff -u (seeded)", async () => {
    const total = Number(process.env.APPLY_PATCH_CASES ?? 300);
    let checked = 0;
    for (let i = 0; i < total; i++) {
      const c = makeCase(i);
      if (c.before === c.after) continue;
      const dir = path.join(scratch, `single-${i}`);
      const patch = producePatch(dir, c, "file.txt");
      const enginedir = path.join(dir, "engine");
      const gitdir = path.join(dir, "git");
      mkdirSync(enginedir);
      mkdirSync(gitdir);
      writeFileSync(path.join(enginedir, "file.txt"), c.before);
      writeFileSync(path.join(gitdir, "file.txt"), c.before);

      const outcome = await applyPatch({ root: enginedir, patch });
      const g = gitApply(gitdir, patch, c.context === 0);
      const label = `${c.name} (seed ${SEED}, ${c.tool} -U${c.context}, ${patch.length} bytes of patch)`;
      if (!outcome.ok)
        throw new Error(`${label}: engine failed: ${JSON.stringify(outcome.error)}\n${patch}`);
      expect(g.code, `${label}: git apply failed: ${g.stderr}`).toBe(0);
      const mine = readFileSync(path.join(enginedir, "file.txt")).toString("latin1");
      const theirs = readFileSync(path.join(gitdir, "file.txt")).toString("latin1");
      const expected = Buffer.from(c.after, "utf8").toString("latin1");
      expect(mine, `${label}: engine and git apply disagree`).toBe(theirs);
      expect(mine, `${label}: result differs from the edited file`).toBe(expected);
      expect(
        outcome.files[0]!.hunks.every((h) => h.offset === 0),
        `${label}: unexpected drift`,
      ).toBe(true);
      checked++;
      rmSync(dir, { recursive: true, force: true });
    }
    expect(checked).toBeGreaterThan(total * 0.8);
  });

  it("the same patches on a file whose lines have drifted (unrelated lines prepended)", async () => {
    let applied = 0;
    let ambiguous = 0;
    let agreedWithGit = 0;
    let gitMisplaced = 0;
    for (let i = 0; i < 150; i++) {
      const c = makeCase(1000 + i);
      // Context-free (-U0) insertions can only be placed by line number, so drift cannot be detected there.
      if (c.before === c.after || c.context === 0 || c.before === "") continue;
      const rng = prng(SEED + 31 * i);
      const eol = c.before.includes("\r\n") ? "\r\n" : "\n";
      const prefix = Array.from(
        { length: rng.int(1, 40) },
        (_, k) => `prefix ${k} ${rng.int(0, 1e9)}${eol}`,
      ).join("");
      const dir = path.join(scratch, `drift-${i}`);
      const patch = producePatch(dir, c, "file.txt");
      const enginedir = path.join(dir, "engine");
      const gitdir = path.join(dir, "git");
      mkdirSync(enginedir);
      mkdirSync(gitdir);
      writeFileSync(path.join(enginedir, "file.txt"), prefix + c.before);
      writeFileSync(path.join(gitdir, "file.txt"), prefix + c.before);
      const outcome = await applyPatch({ root: enginedir, patch });
      const label = `drift case ${i} (seed ${SEED}, ${c.tool} -U${c.context})`;
      if (!outcome.ok) {
        expect(outcome.error.kind, `${label}: ${outcome.error.message}`).toBe("ambiguous_context");
        ambiguous++;
        continue;
      }
      const mine = readFileSync(path.join(enginedir, "file.txt"));
      expect(mine.equals(Buffer.from(prefix + c.after, "utf8")), `${label}: wrong result`).toBe(
        true,
      );
      expect(outcome.files[0]!.max_offset, label).toBe(prefix.split(eol).length - 1);
      applied++;
      // git refuses some of these (a hunk at line 1 must match at the start of the file), and
      // with repeated context it takes the copy nearest the header line, which can be the wrong
      // one; the engine must never do that. So git is only counted here, not trusted.
      if (gitApply(gitdir, patch, false).code === 0) {
        if (readFileSync(path.join(gitdir, "file.txt")).equals(mine)) agreedWithGit++;
        else gitMisplaced++;
      }
      rmSync(dir, { recursive: true, force: true });
    }
    expect(applied).toBeGreaterThan(80);
    expect(agreedWithGit).toBeGreaterThan(40);
    expect(gitMisplaced).toBeLessThan(agreedWithGit);
    expect(ambiguous).toBeLessThan(applied);
  });

  it("multi-file patches with added and deleted files (git diff --no-index of two trees)", async () => {
    for (let i = 0; i < 40; i++) {
      const rng = prng(SEED ^ (0x5eed + i));
      const dir = path.join(scratch, `tree-${i}`);
      const a = path.join(dir, "a");
      const b = path.join(dir, "b");
      const count = rng.int(2, 6);
      for (let f = 0; f < count; f++) {
        const name = `${rng.pick(["", "src/", "src/deep/", "docs/"])}f${f}.txt`;
        const before = files[rng.int(0, files.length - 1)]!;
        const fate = rng.pick(["modify", "modify", "modify", "add", "delete", "same"] as const);
        if (fate !== "add") {
          mkdirSync(path.dirname(path.join(a, name)), { recursive: true });
          writeFileSync(path.join(a, name), before);
        }
        if (fate !== "delete") {
          mkdirSync(path.dirname(path.join(b, name)), { recursive: true });
          writeFileSync(path.join(b, name), fate === "modify" ? mutate(rng, before) : before);
        }
      }
      mkdirSync(a, { recursive: true });
      mkdirSync(b, { recursive: true });
      const diff = sh(
        "git",
        [
          "diff",
          "--no-index",
          "--no-prefix",
          "--no-renames",
          "--no-color",
          "--no-ext-diff",
          "a",
          "b",
        ],
        dir,
      );
      if (diff.code === 0) continue;
      expect(diff.code).toBe(1);
      const patch = diff.stdout;
      const enginedir = path.join(dir, "engine");
      const gitdir = path.join(dir, "git");
      cpSync(a, enginedir, { recursive: true });
      cpSync(a, gitdir, { recursive: true });
      const outcome = await applyPatch({ root: enginedir, patch });
      if (!outcome.ok)
        throw new Error(`tree ${i}: engine failed: ${JSON.stringify(outcome.error)}\n${patch}`);
      const g = gitApply(gitdir, patch, false);
      expect(g.code, `tree ${i}: ${g.stderr}`).toBe(0);
      expect(tree(enginedir), `tree ${i}`).toEqual(tree(gitdir));
      expect(tree(enginedir), `tree ${i}`).toEqual(tree(b));
    }
  });

  it("renames (with and without edits), new and deleted files from git diff -M in a repository", async () => {
    for (let i = 0; i < 30; i++) {
      const rng = prng(SEED + 0xbeef + i);
      const dir = path.join(scratch, `repo-${i}`);
      const repo = path.join(dir, "repo");
      mkdirSync(repo, { recursive: true });
      expect(sh("git", ["init", "-q"], repo).code).toBe(0);
      const names: string[] = [];
      for (let f = 0; f < rng.int(3, 6); f++) {
        const name = `${rng.pick(["", "lib/", "lib/x/"])}file${f}.txt`;
        mkdirSync(path.dirname(path.join(repo, name)), { recursive: true });
        writeFileSync(path.join(repo, name), files[rng.int(0, files.length - 1)]!);
        names.push(name);
      }
      expect(sh("git", ["add", "-A"], repo).code).toBe(0);
      expect(sh("git", ["commit", "-q", "-m", "base"], repo).code).toBe(0);
      const base = path.join(dir, "base");
      cpSync(repo, base, { recursive: true, filter: (src) => !src.includes(`${path.sep}.git`) });

      for (const name of names) {
        const fate = rng.pick(["rename", "rename-edit", "edit", "delete", "keep"] as const);
        const abs = path.join(repo, name);
        if (fate === "delete") {
          expect(sh("git", ["rm", "-q", name], repo).code).toBe(0);
        } else if (fate === "rename" || fate === "rename-edit") {
          const to = `moved/${rng.int(0, 1e6)}-${path.basename(name)}`;
          mkdirSync(path.join(repo, "moved"), { recursive: true });
          expect(sh("git", ["mv", name, to], repo).code).toBe(0);
          if (fate === "rename-edit") {
            const text = readFileSync(path.join(repo, to), "utf8");
            // A small edit keeps the similarity high enough for rename detection.
            const lines = text.split("\n");
            lines.splice(rng.int(0, lines.length - 1), 0, `renamed and edited ${i}`);
            writeFileSync(path.join(repo, to), lines.join("\n"));
          }
        } else if (fate === "edit") {
          writeFileSync(abs, mutate(rng, readFileSync(abs, "utf8")));
        }
      }
      if (rng.chance(0.5))
        writeFileSync(path.join(repo, "brand-new.txt"), files[rng.int(0, files.length - 1)]!);
      if (rng.chance(0.3)) writeFileSync(path.join(repo, "empty-new.txt"), "");
      expect(sh("git", ["add", "-A"], repo).code).toBe(0);
      const diff = sh("git", ["diff", "--cached", "-M", "--no-color", "--no-ext-diff"], repo);
      expect(diff.code).toBe(0);
      const patch = diff.stdout;
      if (patch === "") continue;

      const enginedir = path.join(dir, "engine");
      const gitdir = path.join(dir, "git");
      cpSync(base, enginedir, { recursive: true });
      cpSync(base, gitdir, { recursive: true });
      const outcome = await applyPatch({ root: enginedir, patch });
      if (!outcome.ok)
        throw new Error(`repo ${i}: engine failed: ${JSON.stringify(outcome.error)}\n${patch}`);
      const g = gitApply(gitdir, patch, false);
      expect(g.code, `repo ${i}: ${g.stderr}`).toBe(0);
      expect(tree(enginedir), `repo ${i}`).toEqual(tree(gitdir));
      expect(tree(enginedir), `repo ${i}`).toEqual(tree(repo));
      if (patch.includes("\nrename from ")) {
        expect(outcome.files.some((f) => f.operation === "rename")).toBe(true);
      }
    }
  });
});
