// Types of scripts/bundle.mjs, for the tests that build the bundle with it.
import type { Metafile } from "esbuild";

export declare const BUNDLE_EXTERNAL: string[];
export declare function copySourceAssets(src: string, out: string): number;
export declare function bundleCli(opts: { src: string; out: string }): Promise<Metafile>;
export declare function builtinImports(code: string): string;
