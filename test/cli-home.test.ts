// A state directory that cannot be one: HOLON_HOME (or --home) naming a file, or a path
// below a file. Every command says so in one line naming the path, before doing anything,
// instead of a raw EEXIST / ENOTDIR or a misleading permissions hint.
import { afterAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupHomes, runCli, tempHome } from "./helpers/home.ts";

afterAll(() => cleanupHomes());

function aFile(): string {
  const file = join(tempHome(), "not-a-dir");
  writeFileSync(file, "keep me\n");
  return file;
}

describe("HOLON_HOME that is not a directory", () => {
  it.each([
    ["config set", ["config", "set", "model.default", "openai/gpt-5.4"]],
    ["config list", ["config", "list"]],
    ["daemon start", ["daemon", "start"]],
    ["status", ["status"]],
    ["agent list", ["agent", "list", "--all"]],
    ["run", ["run", "hello"]],
  ])("%s: one line naming the path", async (_name, args) => {
    const file = aFile();
    const r = await runCli(args, { env: { HOLON_HOME: file } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: HOLON_HOME ${file} is a file, not a directory; point it at a directory (it is created when missing)\n`,
    );
    expect(r.stdout).toBe("");
    expect(readFileSync(file, "utf8")).toBe("keep me\n");
  });

  it("--home naming a file, and a home below a file, are named the same way", async () => {
    const file = aFile();
    const flag = await runCli(["config", "list", "--home", file]);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain(`error: --home ${file} is a file, not a directory`);
    const below = await runCli(["config", "set", "model.default", "openai/gpt-5.4"], {
      env: { HOLON_HOME: join(file, "state") },
    });
    expect(below.code).toBe(1);
    expect(below.stderr).toBe(
      `error: HOLON_HOME ${join(file, "state")} cannot be created: ${file} is a file, not a directory\n`,
    );
  });
});
