// The CLI as an esbuild bundle (`dist/bundle/`), what an installed `holon` runs. Node resolves,
// reads and links every module it loads, one at a time, and `holon run` loaded some 300 of
// them from tsc's output and the packages before its first model request: that loader work
// was a large share of its start-up. The bundle packs the same code into a few dozen files.
//
// It is built from the sources (src/, TypeScript that is erasable syntax only, so esbuild's
// output is what Node's type stripping runs from a checkout), by scripts/build.mjs and by
// test/perf-budget-startup.test.ts (into a scratch package) with the same function, so the
// test measures what ships. `splitting` keeps every lazy `await import()` lazy: the code only
// it reaches becomes chunks loaded at its first use, never before.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

// Packages the bundle leaves to Node, each for a reason of its own:
//  - @lydell/node-pty (a native addon), web-tree-sitter and tree-sitter-bash (WebAssembly
//    files found relative to the package), pino (its transports run files of the package in
//    worker threads): each needs its own files where npm installed them;
//  - ink and react: only the TUI uses them (its own process and bundle, dist/tui/main.js);
//  - @opentelemetry/*: loaded only when traces or metrics export is on: dozens of modules
//    that only those pay for, from the package as it is (with its own package.json reads);
//  - pg: only the Postgres connection's worker thread (dist/store/pg-worker.js) loads it,
//    and only on a home configured with a database URL;
//  - yaml and gpt-tokenizer: loaded with `createRequire()` at their first use, out of the
//    bundler's sight anyway; listed so the choice is written down.
// Everything else is bundled, the provider and MCP SDKs included (each in chunks of its own,
// loaded with the code that imports them lazily).
export const BUNDLE_EXTERNAL = [
  "@lydell/node-pty",
  "web-tree-sitter",
  "tree-sitter-bash",
  "pino",
  "ink",
  "react",
  "@opentelemetry/*",
  "yaml",
  "gpt-tokenizer",
  "pg",
];

// Every chunk starts with this. Bundled CommonJS packages (commander and others) call
// `require("events")`, which an ES module lacks; the other two serve the module paths below.
// Node's modules are taken with process.getBuiltinModule(), not an ES import: Node answers
// the first ES import of a builtin with a facade module it fills by reading every export.
const BANNER = [
  'const require = process.getBuiltinModule("node:module").createRequire(import.meta.url);',
  'const { dirname: __holonDirname } = process.getBuiltinModule("node:path");',
  'const { fileURLToPath: __holonFileURLToPath } = process.getBuiltinModule("node:url");',
].join("\n");

/**
 * Copies every file of `src` that is not TypeScript (prompt and tool-description Markdown,
 * templates, the plain-JS helpers that are spawned) to the same place under `out`, except the
 * web console's sources (built on their own). Returns how many it copied.
 */
export function copySourceAssets(src, out) {
  let copied = 0;
  for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name.endsWith(".ts")) continue;
    const from = join(entry.parentPath, entry.name);
    if (relative(src, from).startsWith("web" + sep)) continue;
    const to = join(out, relative(src, from));
    mkdirSync(join(to, ".."), { recursive: true });
    copyFileSync(from, to);
    copied++;
  }
  return copied;
}

/**
 * Bundles `src/cli/main.ts` into `out/bundle/` (entry `main.js`, chunks beside it), and
 * writes the built-in tools' argument schemas beside their modules (writeToolParameters).
 * Returns esbuild's metafile: which source and package files (paths relative to the directory
 * that holds `src`) went into which chunk, for the start-up guard
 * (test/perf-budget-startup.test.ts). `sourcemap` ("linked") writes a map beside each chunk,
 * for reading a CPU profile of the bundle by source file; the build ships none.
 */
export async function bundleCli({ src, out, sourcemap = false }) {
  const bundleDir = join(out, "bundle");
  rmSync(bundleDir, { recursive: true, force: true }); // no chunk of an earlier build stays
  const result = await build({
    entryPoints: { main: join(src, "cli", "main.ts") },
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node22",
    outdir: bundleDir,
    chunkNames: "chunk-[hash]",
    external: BUNDLE_EXTERNAL,
    banner: { js: BANNER },
    plugins: [moduleUrls({ src, out, bundleDir })],
    metafile: true,
    absWorkingDir: join(src, ".."),
    logLevel: "warning",
    legalComments: "inline",
    sourcemap,
  });
  await writeToolParameters({ src, out });
  return result.metafile;
}

/**
 * The JSON Schema the model sees for each built-in tool's arguments, converted from its zod
 * schema here as the turn would convert it at its first use (providers/schema.ts), into
 * `out/tools/parameters.json`: src/tools/builtin.ts hands these to the registry, so a run from
 * the build does not convert twenty schemas before its first provider request (some 3% of
 * its CPU to that request). A checkout has no such file and converts them at run time.
 * Imports the sources, so it runs on a Node that strips types (the build's Node 24).
 */
export async function writeToolParameters({ src, out }) {
  const { buildRegistry } = await import(pathToFileURL(join(src, "tools", "builtin.ts")).href);
  const { sourceSchema } = await import(pathToFileURL(join(src, "providers", "schema.ts")).href);
  const parameters = {};
  for (const tool of buildRegistry().list()) {
    parameters[tool.name] = tool.parameters ?? sourceSchema(tool.input);
  }
  mkdirSync(join(out, "tools"), { recursive: true });
  writeFileSync(join(out, "tools", "parameters.json"), JSON.stringify(parameters));
}

/**
 * The programs the CLI starts as processes of their own from a file of the build, each
 * bundled into one file at the place the code that starts it computes: the TUI
 * (cli/tui.ts starts `dist/tui/main.js`), the PTY supervisor (tasks/process.ts starts
 * `dist/tasks/pty-supervisor.js`) and the Postgres connection's worker thread (store/pg.ts
 * starts `dist/store/pg-worker.js`). No splitting: each process loads its own file whole.
 */
export const PROCESS_ENTRIES = ["tui/main", "tasks/pty-supervisor", "store/pg-worker"];

export async function bundleProcesses({ src, out }) {
  // Every entry sits one directory below `out`, so a module's URL relative to any of them
  // is the same text (`../x/y.js`), whichever of them the module is bundled into.
  if (!PROCESS_ENTRIES.every((e) => e.split("/").length === 2)) {
    throw new Error("build: process entries must sit one directory below dist/");
  }
  const result = await build({
    entryPoints: Object.fromEntries(PROCESS_ENTRIES.map((e) => [e, join(src, `${e}.ts`)])),
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node22",
    outdir: out,
    external: BUNDLE_EXTERNAL,
    banner: { js: BANNER },
    plugins: [moduleUrls({ src, out, bundleDir: join(out, PROCESS_ENTRIES[0].split("/")[0]) })],
    metafile: true,
    absWorkingDir: join(src, ".."),
    logLevel: "warning",
    legalComments: "inline",
  });
  return result.metafile;
}

// Builtins whose every export is a plain function and whose load costs more than the
// functions are worth before a run's first request: each imported function calls through to
// the builtin, which loads at the first call. node:fs/promises loads Node's readline and
// file watchers (8 of its modules) for `FileHandle.readLines()`; the run's modules that
// import it (retention, apply_patch) call it only later.
const AT_FIRST_CALL = new Set(["node:fs/promises"]);

/**
 * A source module's imports of Node's own modules (`import { readFileSync } from "node:fs"`)
 * as reads of the module object (`const { readFileSync } = process.getBuiltinModule("node:fs")`).
 * Node answers the first ES import of each builtin with a facade module that it fills by
 * reading every export, getters included: for node:fs that reads `ReadStream` and its
 * siblings, which loads Node's file streams, and for node:crypto `webcrypto`, whether or not
 * anything uses them. The facades and what their getters loaded were some 5% of a profile of
 * `holon run` up to its first provider request (paired, its CPU to that request fell to
 * 0.98×); read this way, a module reads only the names it imports (and node:fs/promises'
 * functions load it at their first call, see AT_FIRST_CALL). Type-only imports go as they
 * are (esbuild drops them); an import form this does not know is left alone, so it stays an
 * ES import, which is still correct.
 */
export function builtinImports(code) {
  return code.replace(
    /^import\s+(?!type\s)([\w$]+\s*,\s*)?(\*\s+as\s+[\w$]+|\{[^}]*\}|[\w$]+)\s+from\s+"(node:[\w/]+)";/gm,
    (all, first, clause, name) => {
      const module = `process.getBuiltinModule(${JSON.stringify(name)})`;
      const lines = [];
      const bind = (c) => {
        if (c.startsWith("*"))
          return lines.push(`const ${c.replace(/^\*\s+as\s+/, "")} = ${module};`);
        if (!c.startsWith("{")) return lines.push(`const ${c} = ${module};`);
        const names = c
          .slice(1, -1)
          .split(",")
          .map((n) => n.trim())
          .filter((n) => n !== "" && !/^type\s/.test(n))
          .map((n) => n.replace(/^([\w$]+)\s+as\s+([\w$]+)$/, "$1: $2"))
          .filter(
            (n) => !n.startsWith("default: ") || !lines.push(`const ${n.slice(9)} = ${module};`),
          );
        if (names.some((n) => !/^[\w$]+(: [\w$]+)?$/.test(n))) return lines.push(null);
        if (names.length === 0) return;
        const calls = names.map((n) => n.split(": "));
        const atFirstCall =
          AT_FIRST_CALL.has(name) &&
          calls.every(([from]) => typeof process.getBuiltinModule(name)[from] === "function");
        if (!atFirstCall) return lines.push(`const { ${names.join(", ")} } = ${module};`);
        for (const [from, to = from] of calls) {
          lines.push(`const ${to} = (...args) => ${module}.${from}(...args);`);
        }
      };
      if (first) bind(first.replace(/\s*,\s*$/, ""));
      bind(clause);
      if (lines.includes(null)) return all;
      // Keep the line count, so a stack trace or a source map still names the right line.
      return lines.join(" ") + "\n".repeat(all.split("\n").length - 1);
    },
  );
}

/**
 * Modules read files relative to themselves (tool descriptions, prompts, templates,
 * package.json, the helpers and workers they start) through `import.meta.url`, `.dirname`
 * and `.filename`. Inside a chunk those would name the chunk, so each use in a source module
 * is rewritten to name the file that module is in the build (`src/x/y.ts` → `dist/x/y.js`),
 * as a URL relative to the chunk: every such read keeps finding what the build put beside
 * that file, with no list of special cases. Any other use of `import.meta`, or a bundled
 * package using it at all, fails the build instead of resolving somewhere else at run time.
 */
function moduleUrls({ src, out, bundleDir }) {
  return {
    name: "holon-module-urls",
    setup(b) {
      b.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
        const source = readFileSync(args.path, "utf8");
        const own = args.path.startsWith(src + sep) && args.path.endsWith(".ts");
        const code = own ? builtinImports(source) : source;
        if (!code.includes("import.meta")) {
          return code === source ? undefined : { contents: code, loader: "ts" };
        }
        if (!own) {
          return {
            errors: [{ text: `${args.path} uses import.meta: keep its package external` }],
          };
        }
        const built = join(out, relative(src, args.path)).replace(/\.ts$/, ".js");
        const rel = relative(bundleDir, built).split(sep).join("/");
        const url = `new URL(${JSON.stringify(rel)}, import.meta.url)`;
        const file = `__holonFileURLToPath(${url})`;
        const errors = [];
        const contents = code.replace(/\bimport\.meta\b(\.\w+)?/g, (all, prop) => {
          if (prop === ".url") return `${url}.href`;
          if (prop === ".filename") return file;
          if (prop === ".dirname") return `__holonDirname(${file})`;
          errors.push({ text: `${args.path} uses ${all}, which the bundle cannot keep` });
          return all;
        });
        return errors.length > 0 ? { errors } : { contents, loader: "ts" };
      });
    },
  };
}
