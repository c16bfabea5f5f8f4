// `npm run build`: compile src/ to dist/ with tsc (relative `.ts` imports rewritten to `.js`,
// see tsconfig.build.json), then copy every file of src/ that is not TypeScript (prompt and
// tool-description Markdown, templates, the plain-JS spawn helpers) to the same place under
// dist/, so the package runs from dist/ on any supported Node without type stripping. The
// CLI itself, what `holon` runs from a build, is bundled into dist/bundle/ (scripts/bundle.mjs);
// its modules still find their files at the places tsc and the copy put them, and the
// processes it starts from a file of their own (the TUI, the PTY supervisor) run tsc's
// output. Then the web console (src/web/, browser code, not compiled by tsc) is bundled
// into dist/ui/.
import { execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildUi } from "./build-ui.mjs";
import { bundleCli, copySourceAssets } from "./bundle.mjs";

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

const copied = copySourceAssets(src, out);
const meta = await bundleCli({ src, out });

const ui = await buildUi({ outDir: join(out, "ui") });
process.stderr.write(
  `build: dist/ written (${copied} asset files copied; CLI bundle: ${Object.keys(meta.inputs).length} modules in ${Object.keys(meta.outputs).length} files; console script ${(ui.gzipBytes / 1024).toFixed(1)} KiB gzipped)\n`,
);
