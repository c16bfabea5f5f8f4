// Types of scripts/build-ui.mjs for the TypeScript that imports it (tests, the host).
export function buildUi(opts?: { outDir?: string }): Promise<{
  outDir: string;
  bytes: number;
  gzipBytes: number;
  firstGzipBytes: number;
  files: { file: string; bytes: number; gzipBytes: number }[];
  metafile: unknown;
}>;
