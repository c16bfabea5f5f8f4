// ApplyPatch across a crash: a real process applying a multi-file patch is SIGKILLed at each
// point of its commit, and recovery (as the host runs it at start) leaves every file old or
// every file new, with no temp files and no journal left behind.
import { spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, REPO_ROOT, startRuntime, tempHome } from "./helpers/home.ts";
import {
  applyPatch,
  patchJournalDir,
  recoverPatchJournals,
} from "../src/tools/workspace/apply-patch-engine.ts";

afterAll(cleanupHomes);

const ENGINE = pathToFileURL(
  path.join(REPO_ROOT, "src/tools/workspace/apply-patch-engine.ts"),
).href;

const CHILD = `
import { applyPatch } from ${JSON.stringify(ENGINE)};
const { root, journalDir, patch, point, failAt } = JSON.parse(process.argv[2]);
// At its point the child stops until the parent kills it. The interval is what keeps it
// there: a promise that never settles holds nothing open, so without a ref'd handle Node
// would exit by itself (code 13, unsettled top-level await) whenever the kill came late.
const hang = async (p) => {
  if (p !== point) return;
  setInterval(() => {}, 1 << 30);
  process.stdout.write("AT " + p + "\\n");
  await new Promise(() => {});
};
const outcome = await applyPatch(
  { root, patch, journalDir },
  {
    journalPoint: hang,
    beforeCommitStep: async (s) => {
      await hang("step:" + s.index);
      if (s.index === failAt) throw Object.assign(new Error("disk full"), { code: "ENOSPC" });
    },
  },
);
process.stdout.write("DONE " + JSON.stringify(outcome.ok) + "\\n");
`;

const PATCH =
  "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n" +
  "--- /dev/null\n+++ b/new/dir/n.txt\n@@ -0,0 +1 @@\n+n\n" +
  "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n" +
  "diff --git a/r.txt b/moved/r.txt\nrename from r.txt\nrename to moved/r.txt\n";

const OLD = { "a.txt": "a\n", "b.txt": "b\n", "r.txt": "r\n" };
const NEW = { "a.txt": "A\n", "moved/r.txt": "r\n", "new/dir/n.txt": "n\n" };

/** Regular files only (a rollback may leave an empty directory it had created). */
function files(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[path.relative(root, p)] = readFileSync(p, "utf8");
    }
  };
  walk(root);
  return out;
}

function setup() {
  const home = tempHome("holon-patch-crash-");
  const root = path.join(home, "ws");
  mkdirSync(root);
  for (const [name, content] of Object.entries(OLD)) writeFileSync(path.join(root, name), content);
  chmodSync(path.join(root, "a.txt"), 0o640);
  const script = path.join(home, "child.ts");
  writeFileSync(script, CHILD);
  return { home, root, script, journalDir: patchJournalDir(path.join(home, "agent")) };
}

/** Run the child until it reports `point`, then SIGKILL it. */
function killAt(
  script: string,
  args: { root: string; journalDir: string; point: string; failAt?: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [script, JSON.stringify({ patch: PATCH, failAt: -1, ...args })],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes(`AT ${args.point}`)) child.kill("SIGKILL");
    });
    child.on("close", (_code, signal) => {
      if (signal !== "SIGKILL")
        reject(new Error(`child was not killed at ${args.point}: ${out}${err}`));
      else resolve(out);
    });
  });
}

describe("ApplyPatch killed mid-commit", () => {
  const cases: [string, string, number | undefined, "old" | "new"][] = [
    ["after saving contents, before the journal record", "staged", undefined, "old"],
    ["right after the journal record", "journaled", undefined, "new"],
    ["after the first file was written", "step:1", undefined, "new"],
    ["with a temp file written but not renamed", "temp:1", undefined, "new"],
    ["between the removals", "step:4", undefined, "new"],
    ["while rolling back a failed step", "rolling-back", 3, "old"],
  ];
  for (const [name, point, failAt, expected] of cases) {
    it(`${name}: every file ends ${expected}`, async () => {
      const { root, script, journalDir } = setup();
      await killAt(script, {
        root,
        journalDir,
        point,
        ...(failAt !== undefined ? { failAt } : {}),
      });
      if (point === "temp:1") {
        const tmps = readdirSync(path.join(root, "new", "dir")).filter((n) =>
          n.endsWith(".holon-patch.tmp"),
        );
        expect(tmps.length).toBe(1); // the crash really left one behind
      }
      const recovered = recoverPatchJournals(journalDir);
      expect(
        recovered.rolled_forward.length + recovered.rolled_back.length + recovered.discarded.length,
      ).toBe(1);
      expect(files(root)).toEqual(expected === "old" ? OLD : NEW);
      expect(statSync(path.join(root, "a.txt")).mode & 0o777).toBe(0o640);
      expect(readdirSync(journalDir)).toEqual([]);
      // Nothing else to do on a second start.
      expect(recoverPatchJournals(journalDir)).toEqual({
        rolled_forward: [],
        rolled_back: [],
        discarded: [],
      });
    });
  }

  it.each([0, 1, 2, 3, 4])(
    "a journaled patch failing at step %i is undone in process, journal and temp files gone",
    async (failAt) => {
      const { root, journalDir } = setup();
      const outcome = await applyPatch(
        { root, patch: PATCH, journalDir },
        {
          beforeCommitStep: (st) => {
            if (st.index === failAt)
              throw Object.assign(new Error("disk full"), { code: "ENOSPC" });
          },
        },
      );
      expect(outcome.ok).toBe(false);
      expect(files(root)).toEqual(OLD);
      expect(statSync(path.join(root, "a.txt")).mode & 0o777).toBe(0o640);
      expect(readdirSync(journalDir)).toEqual([]);
    },
  );

  it("an uninterrupted journaled patch leaves no journal", async () => {
    const { root, script, journalDir } = setup();
    const out = await new Promise<string>((resolve) => {
      const child = spawn(process.execPath, [
        script,
        JSON.stringify({ root, journalDir, patch: PATCH, point: "never", failAt: -1 }),
      ]);
      let s = "";
      child.stdout.on("data", (d) => (s += d));
      child.on("close", () => resolve(s));
    });
    expect(out).toContain("DONE true");
    expect(files(root)).toEqual(NEW);
    expect(readdirSync(journalDir)).toEqual([]);
  });

  it("the host finishes a journal left in an agent's home when it starts", async () => {
    const home = tempHome("holon-patch-host-");
    const first = await startRuntime({ home });
    const agentHome = (await first.host.agents.get("main")).agent_home;
    await first.close();
    const root = path.join(home, "ws");
    mkdirSync(root);
    for (const [name, content] of Object.entries(OLD))
      writeFileSync(path.join(root, name), content);
    chmodSync(path.join(root, "a.txt"), 0o640);
    const script = path.join(home, "child.ts");
    writeFileSync(script, CHILD);
    const journalDir = patchJournalDir(agentHome);
    await killAt(script, { root, journalDir, point: "step:2" });
    expect(files(root)).not.toEqual(NEW); // a mix of old and new right now
    const rt = await startRuntime({ home });
    try {
      expect(files(root)).toEqual(NEW);
      expect(existsSync(journalDir) ? readdirSync(journalDir) : []).toEqual([]);
      expect(statSync(journalDir).mode & 0o777).toBe(0o700);
    } finally {
      await rt.close();
    }
  });
});
