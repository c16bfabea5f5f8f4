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
