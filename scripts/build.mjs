// `npm run build`: the package's dist/, what an installed `holon` runs, on any supported Node
// without type stripping (a checkout runs src/ directly):
//  - every file of src/ that is not TypeScript (prompt and tool-description Markdown,
//    templates, the plain-JS helpers that are spawned) is copied to the same place under dist/;
//  - the CLI is bundled into dist/bundle/ (main.js and the chunks it loads), and the two
//    programs it starts as processes from a file of their own, the TUI and the PTY supervisor,
//    into dist/tui/main.js and dist/tasks/pty-supervisor.js (scripts/bundle.mjs). Their
//    modules find the files they read at the places the copy put them;
//  - the web console (src/web/, browser code) is bundled into dist/ui/.
// Type errors do not stop the build (esbuild only strips types): `npm run typecheck` (CI)
// enforces them.
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildUi } from "./build-ui.mjs";
import { bundleCli, bundleProcesses, copySourceAssets } from "./bundle.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const out = join(root, "dist");

rmSync(out, { recursive: true, force: true });
const copied = copySourceAssets(src, out);
const meta = await bundleCli({ src, out });
await bundleProcesses({ src, out });
const ui = await buildUi({ outDir: join(out, "ui") });
process.stderr.write(
  `build: dist/ written (${copied} asset files copied; CLI bundle: ${Object.keys(meta.inputs).length} modules in ${Object.keys(meta.outputs).length} files; console script ${(ui.gzipBytes / 1024).toFixed(1)} KiB gzipped)\n`,
);
