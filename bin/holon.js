#!/bin/sh
':' //; [ -n "$MALLOC_ARENA_MAX$MALLOC_TRIM_THRESHOLD_$MALLOC_MMAP_THRESHOLD_" ] || export MALLOC_ARENA_MAX=1 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=131072 HOLON_LAUNCHER_ENV="MALLOC_ARENA_MAX MALLOC_TRIM_THRESHOLD_ MALLOC_MMAP_THRESHOLD_"; [ "$1" != run ] || [ -n "$HOLON_NODE_OPTIONS" ] || exec node --max-semi-space-size=2 --max-old-space-size=512 --initial-old-space-size=32 --heap-growing-percent=20 "$0" "$@"; exec node ${HOLON_NODE_OPTIONS:---max-semi-space-size=2 --max-old-space-size=512} "$0" "$@"
// Entry point for the `holon` binary. Its first job is to fail cleanly on a Node too old to
// run Holon, so this file is written in the oldest JavaScript there is: no arrows, no
// let/const, no optional chaining, no import statements, no top-level await. Any Node can
// parse it, reach the version check and print one line instead of a SyntaxError.
//
// On a new enough Node, the sources run directly on its type stripping; the compile cache
// keeps the stripped and compiled modules between runs, which makes start-up (and every
// later spawn from a smaller process) much cheaper. It is switched on before any source
// module loads, and the CLI is then imported by absolute URL.
//
// The first two lines are read by sh and skipped by JavaScript (a string, then a comment): the
// shell starts Node with a small young generation and an old-space ceiling, so a host that
// runs for weeks keeps a small, flat footprint (the live heap is some 30-40 MB; the heap
// policy of the commands that run a runtime is set further down). `holon run` also starts
// with a 32 MB old generation: its start builds some 20 MB of heap that stays alive, and
// V8's smaller first limit ran a full collection (with concurrent marking on the other
// core) before the first provider request for nothing (7-8% of the CPU to that request,
// +1 MB of peak RSS); it also gets its heap policy (see below) there, which spares it
// loading node:v8 to set it. HOLON_NODE_OPTIONS replaces all of those flags. Unless the user set
// any of the MALLOC_* variables, it also tunes glibc's malloc for this one process: one
// arena for all threads instead of one per thread, and freed memory handed back to the
// system instead of kept (under load the default holds some 25 MB of free chunks, most of it
// in arenas of V8's helper threads, and the host's JavaScript runs on one thread anyway).
// It lists what it set in HOLON_LAUNCHER_ENV, and commands the agent runs get none of it
// (tasks/env.ts).
var REQUIRED_MAJOR = 22; // keep in step with "engines" in package.json (>=22.13.0)
var REQUIRED_MINOR = 13;

var version = String(process.versions.node).split(".");
var major = Number(version[0]);
var minor = Number(version[1]);
if (!(major > REQUIRED_MAJOR || (major === REQUIRED_MAJOR && minor >= REQUIRED_MINOR))) {
  process.stderr.write(
    "holon: needs Node.js " +
      REQUIRED_MAJOR +
      "." +
      REQUIRED_MINOR +
      " or newer, but this is Node.js " +
      process.versions.node +
      "; install Node 24 (https://nodejs.org, or `nvm install 24`), or run `npx holon`" +
      " inside the holon repository, which brings its own\n",
  );
  process.exit(1);
}

var fs = process.getBuiltinModule("node:fs");
var path = process.getBuiltinModule("node:path");
var root = path.join(path.dirname(fs.realpathSync(process.argv[1])), "..");

// `holon --version` answers from package.json without loading the CLI (start-up budget).
var args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-V")) {
  process.stdout.write(
    JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version + "\n",
  );
  process.exit(0);
}

var url = process.getBuiltinModule("node:url");
// A checkout runs its sources; an installed package ships only the build, which HOLON_DIST=1
// also selects in a checkout (after `npm run build`). The build's entry is the CLI bundled
// (dist/bundle/, see scripts/build.mjs): a few dozen files for Node to load instead of some
// 300 modules.
var main = path.join(root, "src", "cli", "main.ts");
var dist = path.join(root, "dist", "bundle", "main.js");
if (process.env.HOLON_DIST === "1" || !fs.existsSync(main)) {
  main = dist;
} else if (major < 24) {
  // Sources need Node 24's type stripping; an older Node can still run a build.
  if (!fs.existsSync(dist)) {
    process.stderr.write(
      "holon: the checkout's sources run on Node 24 (`npm ci` brings it: use `npx holon`);" +
        " on Node " +
        process.versions.node +
        " build first with `npm run build`\n",
    );
    process.exit(1);
  }
  main = dist;
}
// The compile cache goes on before any source module loads. Node keeps every cache entry it
// read in memory for the life of the process (to write changes back at exit), a few MB that a
// long-running host never uses again (2-3 MB). A build needs no type stripping, so the host
// an installed package starts (`serve`, which the daemon runs too) goes without the cache: it
// starts some 30 ms slower, once. A checkout's host keeps it: without the cache Node would
// load its TypeScript stripper (some 20 MB) into the host instead.
var moduleApi = process.getBuiltinModule("node:module");
if (moduleApi.enableCompileCache && !(main === dist && args[0] === "serve")) {
  moduleApi.enableCompileCache();
}
// The commands that run a runtime (`serve`, which the daemon runs too, and `run`) get a heap
// policy on top of the shell's flags. It is set here, before any of their modules loads,
// because Node 22 rejects the first flag on the command line; flags the user chose through
// HOLON_NODE_OPTIONS win. A busy V8 keeps every page its heap has needed lately: it gives
// its pool of freed pages back only in a collection that sets out to reduce memory, which it
// runs once the allocation rate drops, so never under steady load. V8's memory saver mode
// (Node 24) makes every full collection such a one: under the soak the host stays near
// 125 MB instead of 150 MB, for some 8% more CPU per turn and some 30 ms more to start,
// which a host pays once and `run` would pay on every call, so `run` goes without. Without
// it, the old space grows by a fifth over what survived the last full collection instead of
// by up to four times. The shell line already hands `run` that flag on the command line, so
// node:v8 (with Node's streams some 30 of Node's modules) loads here only for `serve` or a
// `run` started as `node bin/holon.js`.
if (args[0] === "serve" || args[0] === "run") {
  var chosen = process.execArgv.join(" ");
  if (args[0] === "serve" && major >= 24 && !/memory.saver.mode/.test(chosen)) {
    process.getBuiltinModule("node:v8").setFlagsFromString("--memory-saver-mode");
  } else if (!/heap.growing.percent/.test(chosen)) {
    process.getBuiltinModule("node:v8").setFlagsFromString("--heap-growing-percent=20");
  }
}
// Node 22 flags node:sqlite as experimental on every start; Holon pins what it uses.
var emitWarning = process.emitWarning;
process.emitWarning = function (warning) {
  if (String(warning).indexOf("SQLite is an experimental") >= 0) return;
  return emitWarning.apply(process, arguments);
};
// `import()` inside a Function body: old parsers never see the syntax.
new Function("u", "return import(u)")(url.pathToFileURL(main).href).catch(function (err) {
  process.stderr.write("holon: " + (err && err.stack ? err.stack : String(err)) + "\n");
  process.exit(1);
});
