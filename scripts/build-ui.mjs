// Builds the web console (src/web/) into its scripts, one style sheet and one page under
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

/**
 * The page: the boot script first (it spends the login secret and asks for the first data
 * while the rest loads), the page's script, and a modulepreload link for every script those
 * two import statically, so the browser fetches them all at once instead of one after the
 * other. No inline script: the CSP allows only the console's own files.
 */
function indexHtml(preload) {
  const links = preload.map((f) => `<link rel="modulepreload" href="/ui/assets/${f}">`).join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Holon console</title>
<link rel="icon" href="/ui/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/assets/app.css">
${links}
<script type="module" src="/ui/assets/boot.js"></script>
<script type="module" src="/ui/assets/app.js"></script>
</head>
<body>
<div id="root"></div>
<noscript>The Holon console needs JavaScript.</noscript>
</body>
</html>
`;
}

/** The scripts `entry` loads before it runs: itself and its static imports, transitively. */
function staticClosure(outputs, entry) {
  const seen = new Set();
  const walk = (path) => {
    if (seen.has(path) || !outputs[path]) return;
    seen.add(path);
    for (const i of outputs[path].imports) if (i.kind === "import-statement") walk(i.path);
  };
  walk(entry);
  return seen;
}

/** Build into `outDir` (default dist/ui). Returns the script's size, raw and gzipped. */
export async function buildUi({ outDir = join(root, "dist", "ui") } = {}) {
  const tmp = `${outDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, "assets"), { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { boot: join(root, "src/web/boot.ts"), app: join(root, "src/web/main.tsx") },
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
  const outputs = result.metafile.outputs;
  const key = (name) => Object.keys(outputs).find((k) => k.endsWith(`/assets/${name}`));
  const first = new Set([
    ...staticClosure(outputs, key("boot.js")),
    ...staticClosure(outputs, key("app.js")),
  ]);
  const preload = [...first].map((k) => k.slice(k.lastIndexOf("/") + 1));
  writeFileSync(join(tmp, "index.html"), indexHtml(preload));
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
  return {
    outDir,
    // Every script the console may load, and those the first screen needs (boot, app and
    // what they import statically).
    bytes: sizes.reduce((n, s) => n + s.bytes, 0),
    gzipBytes: sizes.reduce((n, s) => n + s.gzipBytes, 0),
    firstGzipBytes: sizes
      .filter((s) => preload.includes(s.file))
      .reduce((n, s) => n + s.gzipBytes, 0),
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
