#!/usr/bin/env node
// Entry point for the `holon` binary. Sources run directly on Node 24's type stripping.
import "../src/cli/main.ts";
