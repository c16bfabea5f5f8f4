#!/usr/bin/env node
// Entry point for the `holon` binary. Its first job is to fail cleanly on a Node too old to
// run Holon, so this file is written in the oldest JavaScript there is: no arrows, no
// let/const, no optional chaining, no import statements, no top-level await. Any Node can
// parse it, reach the version check and print one line instead of a SyntaxError.
//
// On a new enough Node, the sources run directly on its type stripping; the compile cache
// keeps the stripped and compiled modules between runs, which makes start-up (and every
// later spawn from a smaller process) much cheaper. It is switched on before any source
// module loads, and the CLI is then imported by absolute URL.
var REQUIRED_MAJOR = 24; // keep in step with "engines" in package.json

var major = Number(String(process.versions.node).split(".")[0]);
if (!(major >= REQUIRED_MAJOR)) {
  process.stderr.write(
    "holon: needs Node.js " +
      REQUIRED_MAJOR +
      " or newer, but this is Node.js " +
      process.versions.node +
      "; install Node " +
      REQUIRED_MAJOR +
      " (https://nodejs.org, or `nvm install " +
      REQUIRED_MAJOR +
      "`), or run `npx holon` inside the holon repository, which brings its own\n",
  );
  process.exit(1);
}

var moduleApi = process.getBuiltinModule("node:module");
if (moduleApi.enableCompileCache) moduleApi.enableCompileCache();
var fs = process.getBuiltinModule("node:fs");
var path = process.getBuiltinModule("node:path");
var url = process.getBuiltinModule("node:url");
// A checkout runs its sources; an installed package ships only the build (dist/), which
// HOLON_DIST=1 also selects in a checkout (after `npm run build`).
var root = path.join(path.dirname(fs.realpathSync(process.argv[1])), "..");
var main = path.join(root, "src", "cli", "main.ts");
if (process.env.HOLON_DIST === "1" || !fs.existsSync(main)) {
  main = path.join(root, "dist", "cli", "main.js");
}
// `import()` inside a Function body: old parsers never see the syntax.
new Function("u", "return import(u)")(url.pathToFileURL(main).href).catch(function (err) {
  process.stderr.write("holon: " + (err && err.stack ? err.stack : String(err)) + "\n");
  process.exit(1);
});
