// `npm run build`: compile src/ to dist/ with tsc (relative `.ts` imports rewritten to `.js`,
// see tsconfig.build.json), then copy every file of src/ that is not TypeScript (prompt and
// tool-description Markdown, the plain-JS spawn helper) to the same place under dist/, so
// the package runs from dist/ on any supported Node without type stripping. Then the web
// console (src/web/, browser code, not compiled by tsc) is bundled into dist/ui/.
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { build as esbuild } from "esbuild";
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
// The OpenAI SDK is some 150 modules; Node resolves, reads and links each one, which was the
// largest share of `holon run`'s start-up before its first model request. The build ships
// it as one module under dist/vendor/ and points the SDK loader (providers/sdk.js) at it;
// a checkout's sources keep importing the package itself. The Anthropic SDK stays as it is:
// it has dependencies of its own and loads only for that family.
const vendored = [{ pkg: "openai", file: "openai.js" }];
const sdkLoader = join(out, "providers", "sdk.js");
let loader = readFileSync(sdkLoader, "utf8");
for (const { pkg, file } of vendored) {
  await esbuild({
    entryPoints: [pkg],
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node22",
    outfile: join(out, "vendor", file),
    logLevel: "warning",
    legalComments: "inline",
  });
  const call = `import("${pkg}")`;
  if (!loader.includes(call)) throw new Error(`build: ${sdkLoader} no longer has ${call}`);
  loader = loader.replace(call, `import("../vendor/${file}")`);
}
writeFileSync(sdkLoader, loader);

const ui = await buildUi({ outDir: join(out, "ui") });
process.stderr.write(
  `build: dist/ written (${copied} asset files copied; console script ${(ui.gzipBytes / 1024).toFixed(1)} KiB gzipped)\n`,
);
