// Shell-command analysis for permission rules: a command line becomes the list of simple
// commands it would run, found by a real bash grammar (tree-sitter-bash on web-tree-sitter,
// wasm shipped inside the npm packages), never by pattern matching on the text. Every part
// counts: both sides of `&&`, `;` and pipes, `$(…)` and backticks, process substitutions,
// function bodies, `bash -c` / `sh -c` scripts, `eval` arguments, shell here-docs and
// here-strings, and the command `xargs` or `find -exec` would start.
//
// A part whose program or script is not known before it runs (`$CMD push`, `sh` reading its
// script from a pipe, `eval "$X"`) is `dynamic`: it can never be allowed by a rule, and the
// rule engine asks about it rather than guess. Each part has two views: `words`, as written
// (what an allow rule must match exactly), and `loose`, with wrappers (`env`, `command`,
// `sudo`…), program paths and git's global options removed (what deny and ask rules see, so
// `/usr/bin/git -C . push` still meets `git push:*`). The parser loads once, asynchronously.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Node, Parser } from "web-tree-sitter";

/** One simple command a shell line would run. A null word is not known before it runs. */
export type CommandPart = {
  words: (string | null)[];
  loose: (string | null)[];
  /** The program or its script is unknown until run time. */
  dynamic: boolean;
  /** More arguments are appended at run time (`xargs cmd`, `find -exec cmd {} +`). */
  open: boolean;
  /** The source text of the part, for reasons shown to the model and the operator. */
  text: string;
};

export type ShellAnalysis = { parts: CommandPart[]; parse_error: boolean };

/** Bounds so a hostile command cannot make analysis expensive. */
const MAX_SOURCE_CHARS = 64 * 1024;
const MAX_DEPTH = 8;
const MAX_PARTS = 512;

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"]);

let parserPromise: Promise<Parser> | undefined;
let parser: Parser | undefined;

/** Loads the grammar (once per process); later calls resolve at once. */
export function loadShellParser(): Promise<Parser> {
  parserPromise ??= (async () => {
    // The grammar's runtime (150 KB of JavaScript) loads at the first command a policy
    // looks at, not with every process that merely could run one (`holon run`'s start-up).
    const { Language, Parser } = await import("web-tree-sitter");
    await Parser.init();
    const require = createRequire(import.meta.url);
    const wasm = readFileSync(require.resolve("tree-sitter-bash/tree-sitter-bash.wasm"));
    const lang = await Language.load(new Uint8Array(wasm));
    const p = new Parser();
    p.setLanguage(lang);
    parser = p;
    return p;
  })();
  return parserPromise;
}

/** Whether `analyzeShell` can run synchronously now. */
export function shellParserReady(): boolean {
  return parser !== undefined;
}

/**
 * The simple commands `source` would run. Call `loadShellParser()` first. `grammarOnly`
 * skips the plain-line fast path (tests compare the two).
 */
export function analyzeShell(source: string, opts: { grammarOnly?: boolean } = {}): ShellAnalysis {
  if (!parser) throw new Error("shell parser not loaded: await loadShellParser() first");
  const out: ShellAnalysis = { parts: [], parse_error: false };
  if (source.length > MAX_SOURCE_CHARS) {
    out.parse_error = true;
    out.parts.push(dynamicPart(source.slice(0, 200)));
    return out;
  }
  analyzeScript(parser, source, 0, out, opts.grammarOnly === true);
  return out;
}

/**
 * Characters of a plain line: words of these characters, separated by single spaces and the
 * list and pipe operators, mean the same to bash as they read (no quoting, expansion, glob,
 * redirection, comment, grouping or tilde). Anything else goes to the grammar.
 */
const PLAIN_LINE = /^[A-Za-z0-9_./:,+@%= &|;-]+$/;
const PLAIN_WORD = /^[A-Za-z0-9_./:,+@%=-]+$/;
const PLAIN_PROGRAM = /^[A-Za-z0-9_./][A-Za-z0-9_./-]*$/;
const OPERATOR = /(&&|\|\||\||;)/;
/** Words bash reads as syntax at the start of a command. */
const RESERVED = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "for",
  "while",
  "until",
  "do",
  "done",
  "case",
  "esac",
  "function",
  "select",
  "time",
  "coproc",
  "in",
]);

/**
 * A plain line's simple commands without the grammar (the common case, at a fraction of
 * the cost): undefined when the line is not plain. The parts are those the grammar finds.
 */
function plainLine(source: string): (string[] | null)[] | undefined {
  if (!PLAIN_LINE.test(source)) return undefined;
  const pieces = source.split(OPERATOR);
  const segments: string[][] = [];
  for (let i = 0; i < pieces.length; i += 2) {
    const text = pieces[i]!.trim();
    if (text === "") return undefined; // a leading, trailing or doubled operator
    const words = text.split(" ");
    if (!words.every((w) => PLAIN_WORD.test(w))) return undefined; // a stray & or |, two spaces
    // An assignment, a keyword or an unusual program name: the grammar decides.
    if (!PLAIN_PROGRAM.test(words[0]!) || RESERVED.has(words[0]!)) return undefined;
    segments.push(words);
  }
  return segments;
}

function analyzeScript(
  p: Parser,
  source: string,
  depth: number,
  out: ShellAnalysis,
  grammarOnly = false,
): void {
  if (depth > MAX_DEPTH) {
    out.parse_error = true;
    out.parts.push(dynamicPart(source.slice(0, 200)));
    return;
  }
  const plain = grammarOnly ? undefined : plainLine(source);
  if (plain) {
    for (const words of plain) {
      if (out.parts.length > MAX_PARTS) {
        out.parse_error = true;
        return;
      }
      wordsPart(p, words!, 0, words!.join(" "), undefined, depth, out, grammarOnly);
    }
    return;
  }
  const tree = p.parse(source);
  if (!tree) {
    out.parse_error = true;
    out.parts.push(dynamicPart(source.slice(0, 200)));
    return;
  }
  try {
    const root = tree.rootNode;
    if (root.hasError) out.parse_error = true;
    walk(p, root, depth, out, grammarOnly);
  } finally {
    tree.delete();
  }
}

function walk(
  p: Parser,
  node: Node,
  depth: number,
  out: ShellAnalysis,
  grammarOnly: boolean,
): void {
  // A cursor, not child arrays: it allocates a node object only where a command or an error
  // is found, and it cannot overflow the JS stack on deeply nested input.
  const cursor = node.walk();
  try {
    for (;;) {
      if (out.parts.length > MAX_PARTS) {
        out.parse_error = true;
        return;
      }
      const type = cursor.nodeType;
      if (type === "command") commandPart(p, cursor.currentNode, depth, out, grammarOnly);
      else if (type === "ERROR") out.parts.push(dynamicPart(cursor.currentNode.text.slice(0, 200)));
      if (cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) return;
      }
    }
  } finally {
    cursor.delete();
  }
}

/** The literal value of a word node, or null when it depends on run time. */
function literal(n: Node): string | null {
  if (n.text === "{}") return "{}"; // find's placeholder, not a brace expansion
  switch (n.type) {
    case "word":
    case "command_name": {
      if (n.type === "command_name") {
        const c = n.firstNamedChild;
        return c ? literal(c) : null;
      }
      const t = n.text;
      // Brace expansion and globbing make a word into other words.
      if (/[{}*?[]/.test(t)) return null;
      return unescapeWord(t);
    }
    case "number":
      return n.text;
    case "raw_string":
      return n.text.slice(1, -1);
    case "string": {
      let s = "";
      for (const c of n.namedChildren) {
        if (c.type !== "string_content") return null;
        s += c.text.replace(/\\([$`"\\\n])/g, "$1");
      }
      return s;
    }
    case "concatenation": {
      let s = "";
      for (const c of n.namedChildren) {
        const v = literal(c);
        if (v === null) return null;
        s += v;
      }
      return s;
    }
    default:
      return null;
  }
}

function unescapeWord(t: string): string {
  let s = "";
  for (let i = 0; i < t.length; i++) {
    const ch = t[i]!;
    if (ch === "\\" && i + 1 < t.length) {
      s += t[++i]!;
      continue;
    }
    s += ch;
  }
  return s;
}

function dynamicPart(text: string): CommandPart {
  return { words: [null], loose: [null], dynamic: true, open: true, text };
}

function commandPart(
  p: Parser,
  n: Node,
  depth: number,
  out: ShellAnalysis,
  grammarOnly: boolean,
): void {
  const words: (string | null)[] = [];
  let firstProgram = -1;
  for (const c of n.namedChildren) {
    if (c.type.endsWith("redirect")) continue;
    if (c.type === "variable_assignment") {
      words.push(c.text); // kept in the strict view: `PATH=. git status` is not `git status`
      continue;
    }
    if (firstProgram < 0) firstProgram = words.length;
    words.push(literal(c));
  }
  if (firstProgram < 0) return; // assignments only
  wordsPart(p, words, firstProgram, n.text, n, depth, out, grammarOnly);
}

/** One simple command from its words (`node` when the grammar found it: here-docs). */
function wordsPart(
  p: Parser,
  words: (string | null)[],
  firstProgram: number,
  source: string,
  n: Node | undefined,
  depth: number,
  out: ShellAnalysis,
  grammarOnly: boolean,
): void {
  const text = source.length > 200 ? source.slice(0, 200) + "…" : source;
  const program = words.slice(firstProgram);
  const part: CommandPart = { words, loose: [null], dynamic: true, open: false, text };
  out.parts.push(part);
  if (program[0] === null) return;
  const loose = unwrap(program);
  part.loose = loose.words;
  part.open = loose.open;
  const name = loose.words[0];
  if (name === null || name === undefined) return;
  part.dynamic = false;
  // Commands that run other commands: their payload is a part of its own.
  if (SHELLS.has(name)) shellPayload(p, n, loose.words, part, depth, out, grammarOnly);
  else if (name === "eval") {
    const args = loose.words.slice(1);
    if (args.some((a) => a === null)) part.dynamic = true;
    else analyzeScript(p, args.join(" "), depth + 1, out, grammarOnly);
  } else if (name === "find") findExec(loose.words, part, out);
  else if (name === "xargs") {
    const inner = xargsCommand(loose.words);
    if (inner) out.parts.push({ ...innerPart(inner, part.text), open: true });
  }
}

function innerPart(words: (string | null)[], text: string): CommandPart {
  const u = unwrap(words);
  return {
    words,
    loose: u.words,
    dynamic: words[0] === null || u.words[0] === null,
    open: u.open,
    text,
  };
}

/** `bash -c SCRIPT`, `bash <<EOF`, `bash <<< SCRIPT`, or a shell reading a pipe. */
function shellPayload(
  p: Parser,
  n: Node | undefined,
  words: (string | null)[],
  part: CommandPart,
  depth: number,
  out: ShellAnalysis,
  grammarOnly: boolean,
): void {
  let i = 1;
  if (words[0] === "busybox") i = 2;
  let script: string | null | undefined;
  let hasFile = false;
  for (; i < words.length; i++) {
    const w = words[i];
    if (w === null) {
      part.dynamic = true;
      return;
    }
    if (w === "--") {
      hasFile = i + 1 < words.length;
      break;
    }
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(w)) {
      script = words[i + 1] ?? null;
      break;
    }
    if (w === "-o" || w === "+o" || w === "-O" || w === "+O") {
      i++;
      continue;
    }
    if (w.startsWith("-") || w.startsWith("+")) continue;
    hasFile = true; // `bash script.sh`: the file is the program
    break;
  }
  if (script !== undefined) {
    if (script === null) part.dynamic = true;
    else analyzeScript(p, script, depth + 1, out, grammarOnly);
    return;
  }
  if (hasFile) return;
  // No script argument: the shell runs its standard input. A literal here-doc or
  // here-string is analysed; anything else (a pipe, a file) is unknown.
  const stmt = n?.parent?.type === "redirected_statement" ? n.parent : undefined;
  const redirect = [...(n?.namedChildren ?? []), ...(stmt?.namedChildren ?? [])].find(
    (c) => c.type === "heredoc_redirect" || c.type === "herestring_redirect",
  );
  if (redirect?.type === "heredoc_redirect") {
    const body = redirect.namedChildren.find((c) => c.type === "heredoc_body");
    const start = redirect.namedChildren.find((c) => c.type === "heredoc_start")?.text ?? "";
    const quoted = /^['"\\]/.test(start);
    if (body && (quoted || body.namedChildren.every((c) => c.type === "heredoc_content"))) {
      analyzeScript(p, body.text, depth + 1, out, grammarOnly);
      return;
    }
  } else if (redirect?.type === "herestring_redirect") {
    const arg = redirect.namedChildren[0];
    const v = arg ? literal(arg) : null;
    if (v !== null) {
      analyzeScript(p, v, depth + 1, out, grammarOnly);
      return;
    }
  }
  part.dynamic = true;
}

/** `find … -exec CMD … ;` (and -execdir, -ok, -okdir): each CMD is a part. */
function findExec(words: (string | null)[], part: CommandPart, out: ShellAnalysis): void {
  for (let i = 1; i < words.length; i++) {
    const w = words[i];
    if (w !== "-exec" && w !== "-execdir" && w !== "-ok" && w !== "-okdir") continue;
    const cmd: (string | null)[] = [];
    let j = i + 1;
    for (; j < words.length && words[j] !== ";" && words[j] !== "+"; j++) {
      if (words[j] !== "{}") cmd.push(words[j]!);
    }
    if (cmd.length > 0) out.parts.push({ ...innerPart(cmd, part.text), open: true });
    i = j;
  }
}

const XARGS_WITH_VALUE = new Set([
  "-I",
  "-i",
  "-n",
  "-P",
  "-L",
  "-l",
  "-s",
  "-d",
  "-E",
  "-e",
  "-a",
]);

function xargsCommand(words: (string | null)[]): (string | null)[] | undefined {
  for (let i = 1; i < words.length; i++) {
    const w = words[i];
    if (w === null) return [null];
    if (XARGS_WITH_VALUE.has(w)) {
      i++;
      continue;
    }
    if (w.startsWith("-")) continue;
    return words.slice(i);
  }
  return undefined; // plain `xargs` runs echo
}

type Unwrapped = { words: (string | null)[]; open: boolean };

/** Option words of each wrapper that take a value. */
const WRAPPERS: Record<string, { withValue: Set<string>; positional?: number }> = {
  env: { withValue: new Set(["-u", "--unset", "-C", "--chdir", "-S", "--split-string"]) },
  command: { withValue: new Set() },
  builtin: { withValue: new Set() },
  exec: { withValue: new Set(["-a"]) },
  nohup: { withValue: new Set() },
  setsid: { withValue: new Set() },
  time: { withValue: new Set(["-f", "-o"]) },
  nice: { withValue: new Set(["-n", "--adjustment"]) },
  ionice: { withValue: new Set(["-c", "-n", "-p"]) },
  stdbuf: { withValue: new Set(["-i", "-o", "-e"]) },
  timeout: { withValue: new Set(["-s", "--signal", "-k", "--kill-after"]), positional: 1 },
  sudo: { withValue: new Set(["-u", "-g", "-h", "-p", "-C", "-U", "-r", "-t", "-D"]) },
  doas: { withValue: new Set(["-u", "-C"]) },
};

const GIT_WITH_VALUE = new Set([
  "-C",
  "-c",
  "--git-dir",
  "--work-tree",
  "--namespace",
  "--exec-path",
  "--config-env",
]);

/** The command a wrapper chain runs, with program paths reduced to their names. */
export function unwrap(input: (string | null)[]): Unwrapped {
  let words = input.slice();
  let open = false;
  for (let guard = 0; guard < 16; guard++) {
    const head = words[0];
    if (head === null || head === undefined) return { words, open };
    const name = basename(head);
    words[0] = name;
    const w = WRAPPERS[name];
    if (!w) break;
    let i = 1;
    let positional = w.positional ?? 0;
    for (; i < words.length; i++) {
      const a = words[i];
      if (a === null) return { words: [null], open: true };
      if (a === "--") {
        i++;
        break;
      }
      if (name === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(a)) continue;
      if (name === "env" && (a === "-S" || a.startsWith("--split-string"))) {
        return { words: [null], open: true }; // a command line in one word: unknown
      }
      if (w.withValue.has(a)) {
        i++;
        continue;
      }
      if (a.startsWith("-") && a.length > 1) continue;
      if (positional > 0) {
        positional--;
        continue;
      }
      break;
    }
    if (i >= words.length) return { words: [name], open }; // the wrapper alone
    words = words.slice(i);
  }
  if (words[0] === "git") words = stripGitGlobals(words);
  return { words, open };
}

function stripGitGlobals(words: (string | null)[]): (string | null)[] {
  const out: (string | null)[] = ["git"];
  let i = 1;
  for (; i < words.length; i++) {
    const a = words[i];
    if (a === null || !a.startsWith("-")) break;
    if (GIT_WITH_VALUE.has(a)) {
      i++;
      continue;
    }
  }
  return out.concat(words.slice(i));
}

function basename(word: string): string {
  const slash = word.lastIndexOf("/");
  return slash >= 0 && slash < word.length - 1 ? word.slice(slash + 1) : word;
}
