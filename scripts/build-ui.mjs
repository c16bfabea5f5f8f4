// Builds the web console (src/web/) into one script, one style sheet and one page under
// dist/ui/ (gitignored; the package ships it). Run by `npm run build:ui`, by `prepare` in a
// checkout, by the test setup, by scripts/build.mjs for the package, and by `holon serve`
// from a checkout that has not built it yet. The browser gets nothing from elsewhere at run
// time: no CDN, no web fonts; the page's CSP would refuse them anyway.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const INDEX = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Holon console</title>
<link rel="icon" href="/ui/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/assets/app.css">
<script type="module" src="/ui/assets/app.js"></script>
</head>
<body>
<div id="root"></div>
<noscript>The Holon console needs JavaScript.</noscript>
</body>
</html>
`;

/** Build into `outDir` (default dist/ui). Returns the script's size, raw and gzipped. */
export async function buildUi({ outDir = join(root, "dist", "ui") } = {}) {
  const tmp = `${outDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, "assets"), { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: join(root, "src/web/main.tsx") },
    outdir: join(tmp, "assets"),
    // The conversation page (the presentation layer and the event catalog's schemas) is its
    // own chunk, loaded when first opened: the agents list does not wait for it.
    splitting: true,
    chunkNames: "chunk-[hash]",
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: ["es2022"],
    jsx: "automatic",
    legalComments: "none",
    // The presentation layer colours terminal text with node:util; the browser styles with CSS.
    alias: { "node:util": join(root, "src/web/node-util.ts") },
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
    metafile: true,
  });
  copyFileSync(join(root, "src/web/app.css"), join(tmp, "assets/app.css"));
  copyFileSync(join(root, "src/web/icon.svg"), join(tmp, "assets/icon.svg"));
  writeFileSync(join(tmp, "index.html"), INDEX);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(dirname(outDir), { recursive: true });
  // Swap in whole, so a server reading the old bundle never sees half a new one.
  const { renameSync } = await import("node:fs");
  renameSync(tmp, outDir);
  const { readFileSync, readdirSync } = await import("node:fs");
  const scripts = readdirSync(join(outDir, "assets")).filter((f) => f.endsWith(".js"));
  const sizes = scripts.map((f) => {
    const js = readFileSync(join(outDir, "assets", f));
    return { file: f, bytes: js.length, gzipBytes: gzipSync(js).length };
  });
  const app = sizes.find((s) => s.file === "app.js");
  return {
    outDir,
    // Every script the console may load, and the first one alone (what the first screen needs).
    bytes: sizes.reduce((n, s) => n + s.bytes, 0),
    gzipBytes: sizes.reduce((n, s) => n + s.gzipBytes, 0),
    firstGzipBytes: app ? app.gzipBytes : 0,
    files: sizes,
    metafile: result.metafile,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const out = process.argv[2];
  const r = await buildUi(out ? { outDir: out } : {});
  process.stderr.write(
    `build-ui: ${r.outDir} written (scripts ${(r.bytes / 1024).toFixed(1)} KiB, ${(r.gzipBytes / 1024).toFixed(1)} KiB gzipped; the first ${(r.firstGzipBytes / 1024).toFixed(1)} KiB)\n`,
  );
}
