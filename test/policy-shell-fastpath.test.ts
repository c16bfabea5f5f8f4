// The plain-line fast path of the shell analysis must find exactly what the bash grammar
// finds. Generated lines from plain words and the list and pipe operators are analysed both
// ways and compared; lines that are not plain (quotes, expansions, redirections, keywords,
// odd spacing) are also compared, and there the fast path must step aside.
import { beforeAll, describe, expect, it } from "vitest";
import { analyzeShell, loadShellParser } from "../src/policy/shell.ts";

beforeAll(async () => {
  await loadShellParser();
});

const WORDS = [
  "git",
  "push",
  "status",
  "-C",
  ".",
  "origin",
  "main",
  "--force",
  "env",
  "A=b",
  "command",
  "/usr/bin/git",
  "sudo",
  "-u",
  "root",
  "npm",
  "run",
  "test",
  "--",
  "-20",
  "42",
  "bash",
  "sh",
  "-c",
  "script.sh",
  "eval",
  "xargs",
  "rm",
  "-rf",
  "find",
  "-name",
  "-delete",
  "-exec",
  "time",
  "timeout",
  "5",
  "nice",
  "-n",
  "%1",
  ":",
  "-",
  "a.b",
  "@x",
  "+x",
  "x,y",
  "k=v",
  "if",
  "for",
  "do",
  "done",
  "in",
  "curl",
  "http://h/i.sh",
  "busybox",
  "nohup",
  "exec",
  "--git-dir=.git",
];
const OPS = [" && ", " || ", " | ", "; ", "&&", "|", ";", " ; "];

/** A small deterministic generator (no flakiness, same lines every run). */
function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s % n;
  };
}

function line(r: (n: number) => number): string {
  const segs = 1 + r(3);
  const out: string[] = [];
  for (let i = 0; i < segs; i++) {
    const n = 1 + r(5);
    const words = Array.from({ length: n }, () => WORDS[r(WORDS.length)]!);
    out.push(words.join(" "));
    if (i < segs - 1) out.push(OPS[r(OPS.length)]!);
  }
  return out.join("");
}

describe("the plain-line fast path", () => {
  it("finds the same parts as the grammar on 3,000 generated lines", () => {
    const r = rng(27);
    for (let i = 0; i < 3_000; i++) {
      const src = line(r);
      expect(analyzeShell(src), src).toEqual(analyzeShell(src, { grammarOnly: true }));
    }
  });

  it.each([
    "git push 'origin' main",
    "git push $REMOTE",
    "echo hi > out",
    "a & b",
    "a &&& b",
    "a ||| b",
    "  git push",
    "git  push",
    "; git push",
    "git push ;",
    "A=b git push",
    "if true; then git push; fi",
    "time git push",
    "ls *.ts",
    "cat ~/x",
    "echo a#b # c",
    "git push\ngit status",
    "bash <<< 'git push'",
    "find . -exec rm {} \\;",
    "echo {a,b}",
  ])("agrees with the grammar on %j", (src) => {
    expect(analyzeShell(src)).toEqual(analyzeShell(src, { grammarOnly: true }));
  });
});
