// Every test file runs with a HOME of its own (a vitest setup file), so nothing a host writes
// under `~` (the builtin agent templates it seeds into ~/.agents/templates, user-scope skills)
// reaches the real home of whoever runs the suite. Spawned `holon` processes inherit it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

const home = mkdtempSync(join(tmpdir(), "holon-test-user-"));
process.env.HOME = home;
afterAll(() => rmSync(home, { recursive: true, force: true }));

// The spawn helper and the spare wrappers it keeps warm (unconfined ones, and bubblewraps per
// sandbox profile: src/tasks/spawner.ts, sandbox-spares.ts) are off for a test file unless it
// turns them on (useSpawnHelper below): every host of the file would otherwise start a Node
// helper and bubblewraps in the background, which compete for the CPU with the test and with
// the other file running beside it. Commands then start cold, the path a miss takes. The files
// about the helper, the spares, the sandbox, what commands inherit and the budgets of a
// default host turn them on. Spawned `holon` processes inherit the setting.
if (process.env.HOLON_SPAWN_HELPER === undefined) process.env.HOLON_SPAWN_HELPER = "0";
