// Front matter of a Markdown file (a SKILL.md): the YAML block between a first line `---`
// and the next `---` line, parsed as YAML by the `yaml` package, never by hand. The text is
// the file's author's, so its cost must stay linear: the block is capped at 64 KiB before it
// is parsed, duplicate keys are checked here with a set (the library's own check compares
// every key with every other), and alias expansion is bounded twice (how many aliases the
// block holds, and the library's `maxAliasCount` on how far they expand).
import { createRequire } from "node:module";
import type { YAMLError } from "yaml";

type Yaml = typeof import("yaml");
let yamlLib: Yaml | undefined;

/**
 * The YAML library (some 70 modules) loads at the first front matter there is to parse, not
 * with every process that might list skills (`holon run`'s start-up). Its CommonJS build is
 * required, so parsing stays synchronous.
 */
function yaml(): Yaml {
  return (yamlLib ??= createRequire(import.meta.url)("yaml") as Yaml);
}

/** The front matter block (between the delimiters) may hold at most this many bytes. */
export const MAX_FRONT_MATTER_BYTES = 64 * 1024;
/** Aliases (`*name`) one block may hold; each costs a scan of the block's anchors. */
export const MAX_FRONT_MATTER_ALIASES = 64;
/** The library's bound on alias expansion (its default, kept explicit). */
const MAX_ALIAS_EXPANSION = 100;

export type FrontMatter =
  | { ok: true; data: Record<string, unknown> }
  | { ok: false; error: string }
  /** The text does not start with a `---` line, or has no closing `---` line. */
  | null;

/**
 * Parse the front matter at the start of `text`. `truncated` says the text is only the
 * head of a longer file: a block still open at its end is then reported as too large.
 */
export function parseFrontMatter(text: string, opts: { truncated?: boolean } = {}): FrontMatter {
  const open = /^\uFEFF?---[ \t]*\r?\n/.exec(text);
  if (!open) return null;
  const start = open[0].length;
  const rest = text.slice(start);
  const m = /^---[ \t]*\r?$/m.exec(rest);
  if (!m) {
    return opts.truncated
      ? { ok: false, error: `front matter larger than ${MAX_FRONT_MATTER_BYTES} bytes` }
      : null;
  }
  const block = rest.slice(0, m.index);
  if (Buffer.byteLength(block, "utf8") > MAX_FRONT_MATTER_BYTES) {
    return { ok: false, error: `front matter larger than ${MAX_FRONT_MATTER_BYTES} bytes` };
  }
  return parseYamlBlock(block);
}

/** One YAML mapping, as plain data (every scalar a string: the failsafe schema). */
export function parseYamlBlock(block: string): FrontMatter & object {
  const { isMap, isScalar, parseDocument, visit } = yaml();
  try {
    const doc = parseDocument(block, {
      // Scalars stay strings: `name: 007` is "007", `description: yes` is "yes".
      schema: "failsafe",
      uniqueKeys: false,
      prettyErrors: false,
    });
    if (doc.errors.length > 0) return { ok: false, error: yamlError(block, doc.errors[0]!) };
    const contents = doc.contents;
    if (contents === null) return { ok: true, data: {} };
    if (!isMap(contents)) return { ok: false, error: "front matter is not a mapping of keys" };
    const seen = new Set<string>();
    for (const pair of contents.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : null;
      if (key === null) continue;
      if (seen.has(key)) return { ok: false, error: `front matter has the key '${key}' twice` };
      seen.add(key);
    }
    let aliases = 0;
    visit(doc, {
      Alias: () => {
        aliases++;
        return aliases > MAX_FRONT_MATTER_ALIASES ? visit.BREAK : undefined;
      },
    });
    if (aliases > MAX_FRONT_MATTER_ALIASES) {
      return {
        ok: false,
        error: `front matter uses more than ${MAX_FRONT_MATTER_ALIASES} aliases`,
      };
    }
    const data = doc.toJS({ maxAliasCount: MAX_ALIAS_EXPANSION }) as Record<string, unknown>;
    return { ok: true, data };
  } catch (err) {
    // The library's expansion bound, a nesting too deep for the stack, anything else: the
    // file is reported, never the host.
    return { ok: false, error: `front matter is not valid YAML (${oneLine(err)})` };
  }
}

/** The first error, with its line in the file (the block starts on the file's second line). */
function yamlError(block: string, e: YAMLError): string {
  let line = 2;
  for (let i = block.indexOf("\n"); i >= 0 && i < e.pos[0]; i = block.indexOf("\n", i + 1)) line++;
  return `front matter is not valid YAML (line ${line}): ${oneLine(e)}`;
}

function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String((err as { message?: unknown }).message);
  return msg.split("\n")[0]!.slice(0, 200);
}
