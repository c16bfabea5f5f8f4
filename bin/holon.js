#!/usr/bin/env node
// Entry point for the `holon` binary. Sources run directly on Node 24's type stripping; the
// compile cache keeps the stripped and compiled modules between runs, which makes start-up
// (and every later spawn from a smaller process) much cheaper. The import is dynamic so the
// cache is on before any source module loads.
import { enableCompileCache } from "node:module";

enableCompileCache?.();
await import("../src/cli/main.ts");
