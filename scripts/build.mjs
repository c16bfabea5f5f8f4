// `npm run build`: compile src/ to dist/ with tsc (relative `.ts` imports rewritten to `.js`,
// see tsconfig.build.json), then copy every file of src/ that is not TypeScript (prompt and
// tool-description Markdown, the plain-JS spawn helper) to the same place under dist/, so
// the package runs from dist/ on any supported Node without type stripping. Then the web
// console (src/web/, browser code, not compiled by tsc) is bundled into dist/ui/.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildUi } from "./build-ui.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const out = join(root, "dist");

rmSync(out, { recursive: true, force: true });
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
try {
  execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
    stdio: "inherit",
  });
} catch (err) {
  // tsc still emits on type errors; `npm run typecheck` (CI) is what enforces them. Fail
  // only when nothing usable was emitted.
  if (!existsSync(join(out, "cli", "main.js"))) throw err;
  process.stderr.write(
    "build: tsc reported type errors (see `npm run typecheck`); dist/ emitted\n",
  );
}

let copied = 0;
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith(".ts")) continue;
  const from = join(entry.parentPath, entry.name);
  // The console's sources are bundled below, not shipped as they are.
  if (relative(src, from).startsWith("web/")) continue;
  const to = join(out, relative(src, from));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  copied++;
}
const ui = await buildUi({ outDir: join(out, "ui") });
process.stderr.write(
  `build: dist/ written (${copied} asset files copied; console script ${(ui.gzipBytes / 1024).toFixed(1)} KiB gzipped)\n`,
);
