// One-off migration tool (issue 33): propagates the async store seam through the callers.
// Each pass type-checks the program, awaits every call that newly returns a Promise (a store
// face method, or a function an earlier pass made async), makes its enclosing function
// async (and its declared return type a Promise), and carries that to the interface members
// and function types the function implements. What it cannot do safely it lists for a human.
// Run from the repository root with the project's Node: node scripts/store-async-codemod.mjs
// After merging new synchronous-store code into this branch, run it again: it converts what
// the merge brought (store-async-keys.json remembers which declarations it made async), then
// fix what `tsc` and the store rule check (test/architecture.test.ts) still report.
import ts from "typescript";
import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";

const root = process.cwd();
const cfg = ts.getParsedCommandLineOfConfigFile(
  "tsconfig.json",
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic() {} },
);
const files = cfg.fileNames.filter((f) => !f.includes("/src/web/"));
const fileSet = new Set(files);
const rel = (f) => relative(root, f);

/** Declarations (by stable key) whose calls now return a Promise. */
const KEYS = new URL("./store-async-keys.json", import.meta.url);
const asyncKeys = new Set(readJson(KEYS, []));
const manual = new Map();
const ARRAY_METHODS = new Set([
  "map", "forEach", "filter", "some", "every", "find", "findIndex", "findLast", "flatMap",
  "reduce", "sort", "toSorted",
]);

function readJson(p, d) {
  try {
    return JSON.parse(readFileSync(p, "utf8"));
  } catch {
    return d;
  }
}

function nameOf(n) {
  if (n.name && ts.isIdentifier(n.name)) return n.name.text;
  if (n.name && ts.isPrivateIdentifier(n.name)) return n.name.text;
  if (n.name && (ts.isStringLiteral(n.name) || ts.isNumericLiteral(n.name))) return n.name.text;
  if (ts.isConstructorDeclaration(n)) return "constructor";
  return undefined;
}

/** A key that survives edits: the file plus the chain of enclosing names. */
function keyOf(decl) {
  const parts = [];
  for (let n = decl; n && !ts.isSourceFile(n); n = n.parent) {
    const name = nameOf(n);
    if (name !== undefined) parts.unshift(name);
    else if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name)) parts.unshift(n.name.text);
  }
  return `${rel(decl.getSourceFile().fileName)}#${parts.join(".")}`;
}

function isPromiseType(t) {
  if (!t) return false;
  if (t.isUnion()) return t.types.some(isPromiseType);
  const s = t.getSymbol();
  return s?.getName() === "Promise";
}

function enclosingFunction(n) {
  for (let p = n.parent; p; p = p.parent) {
    if (ts.isFunctionLike(p)) return p;
    if (ts.isPropertyDeclaration(p) || ts.isSourceFile(p)) return p;
  }
  return undefined;
}

function loc(n) {
  const sf = n.getSourceFile();
  const { line } = sf.getLineAndCharacterOfPosition(n.getStart());
  return `${rel(sf.fileName)}:${line + 1}`;
}

for (let pass = 1; pass <= 60; pass++) {
  const program = ts.createProgram(files, cfg.options);
  const checker = program.getTypeChecker();
  /** file -> Map(pos -> text) insertions; replacements as [start,end,text]. */
  const inserts = new Map();
  const replaces = new Map();
  let awaited = 0;
  let made = 0;
  const madeAsync = new Set();
  const wrapped = new Set();
  const insert = (sf, pos, text) => {
    if (!inserts.has(sf.fileName)) inserts.set(sf.fileName, []);
    inserts.get(sf.fileName).push([pos, text]);
  };
  const replace = (sf, start, end, text) => {
    if (!replaces.has(sf.fileName)) replaces.set(sf.fileName, []);
    const list = replaces.get(sf.fileName);
    if (list.some(([s, e]) => s === start && e === end)) return;
    list.push([start, end, text]);
  };
  const wrapReturnType = (typeNode) => {
    if (!typeNode) return;
    const text = typeNode.getText();
    if (/\bPromise</.test(text)) return; // already a Promise (or a value-or-Promise union)
    const sf = typeNode.getSourceFile();
    // two insertions, so a member type wrapped inside it in the same pass composes
    if (wrapped.has(typeNode)) return;
    wrapped.add(typeNode);
    insert(sf, typeNode.getStart(), "Promise<");
    insert(sf, typeNode.getEnd(), ">");
  };

  /** Make the function-like `f` async; true when it now returns a Promise. */
  const makeAsync = (f, why) => {
    if (madeAsync.has(f)) return true;
    if (f && ts.isSourceFile(f)) return true; // an ES module awaits at its top level
    if (!f || ts.isPropertyDeclaration(f)) {
      manual.set(loc(why), "store call outside any function (module top level or field initializer)");
      return false;
    }
    if (ts.isConstructorDeclaration(f) || ts.isGetAccessor(f) || ts.isSetAccessor(f)) {
      manual.set(loc(why), `store call in a ${ts.SyntaxKind[f.kind]}`);
      return false;
    }
    if (f.asteriskToken) {
      manual.set(loc(why), "store call in a generator");
      return false;
    }
    // A callback whose caller cannot wait for it.
    if ((ts.isArrowFunction(f) || ts.isFunctionExpression(f)) && ts.isCallExpression(f.parent)) {
      const callee = f.parent.expression;
      if (ts.isPropertyAccessExpression(callee) && ARRAY_METHODS.has(callee.name.text)) {
        manual.set(loc(why), `store call in an array callback (.${callee.name.text})`);
        return false;
      }
      if (ts.isIdentifier(callee) && (callee.text === "describe" || callee.text === "describe.each")) {
        manual.set(loc(why), "store call directly in a describe block");
        return false;
      }
    }
    madeAsync.add(f);
    const sf = f.getSourceFile();
    const isAsync = f.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword);
    if (!isAsync) {
      if (ts.isArrowFunction(f)) insert(sf, f.getStart(), "async ");
      else if (ts.isFunctionDeclaration(f) || ts.isFunctionExpression(f)) {
        const kw = f.getChildren().find((c) => c.kind === ts.SyntaxKind.FunctionKeyword);
        insert(sf, kw.getStart(), "async ");
      } else if (ts.isMethodDeclaration(f)) insert(sf, f.name.getStart(), "async ");
      else {
        manual.set(loc(why), `cannot make a ${ts.SyntaxKind[f.kind]} async`);
        return false;
      }
      made++;
    }
    wrapReturnType(f.type);
    // A function that was async already changes nothing for its callers.
    if (!isAsync) asyncKeys.add(keyOf(f));
    // What this function implements must now return a Promise too.
    const targets = [];
    const ctx = ts.isMethodDeclaration(f) && ts.isClassLike(f.parent) ? undefined : contextualTarget(f);
    if (ctx) targets.push(...ctx);
    if (ts.isMethodDeclaration(f) && ts.isClassLike(f.parent)) targets.push(...implemented(f));
    for (const d of targets) {
      const dsf = d.getSourceFile();
      if (!fileSet.has(dsf.fileName)) {
        manual.set(loc(f), `async function where ${rel(dsf.fileName).replace(/.*node_modules\//, "")} expects a synchronous one`);
        continue;
      }
      convertDeclaration(d, f);
    }
    return true;
  };

  /** Declarations of the function type `f` is assigned to (argument, property, variable). */
  function contextualTarget(f) {
    const expr = ts.isMethodDeclaration(f) ? f : f;
    let t;
    try {
      t = ts.isMethodDeclaration(f) && ts.isObjectLiteralExpression(f.parent)
        ? contextualOfMember(f)
        : checker.getContextualType(expr);
    } catch {
      return [];
    }
    if (!t) return [];
    const out = [];
    for (const sig of t.getCallSignatures()) {
      const d = sig.getDeclaration?.() ?? sig.declaration;
      if (!d) continue;
      const rt = checker.getReturnTypeOfSignature(sig);
      if (isPromiseType(rt) || (rt.flags & ts.TypeFlags.Any) || (rt.flags & ts.TypeFlags.Unknown)) continue;
      out.push(d);
    }
    return out;
  }

  function contextualOfMember(m) {
    const objType = checker.getContextualType(m.parent);
    if (!objType) return undefined;
    const prop = objType.getProperty(nameOf(m));
    if (!prop) return undefined;
    return checker.getTypeOfSymbolAtLocation(prop, m);
  }

  /** Interface and base-class members the class method `m` implements. */
  function implemented(m) {
    const cls = m.parent;
    const out = [];
    const name = nameOf(m);
    for (const h of cls.heritageClauses ?? []) {
      for (const t of h.types) {
        const type = checker.getTypeAtLocation(t);
        const prop = type.getProperty(name);
        for (const d of prop?.declarations ?? []) {
          const rt = ts.isFunctionLike(d) ? d.type : ts.isPropertySignature(d) ? d.type : undefined;
          if (rt && /^Promise</.test(rt.getText())) continue;
          out.push(d);
        }
      }
    }
    return out;
  }

  /** Give an interface member / function type / method a Promise return type. */
  function convertDeclaration(d, from) {
    const key = keyOf(d);
    if (ts.isMethodSignature(d) || ts.isCallSignatureDeclaration(d)) {
      if (d.type) wrapReturnType(d.type);
      else manual.set(loc(d), "member without a return type");
      asyncKeys.add(key);
    } else if (ts.isPropertySignature(d) || ts.isPropertyDeclaration(d)) {
      const ft = d.type;
      if (ft && ts.isFunctionTypeNode(ft)) wrapReturnType(ft.type);
      else manual.set(loc(d), `property whose type is not a function type (${ft?.getText().slice(0, 40)})`);
      asyncKeys.add(key);
    } else if (ts.isFunctionTypeNode(d)) {
      wrapReturnType(d.type);
      asyncKeys.add(key);
    } else if (ts.isMethodDeclaration(d) || ts.isFunctionDeclaration(d)) {
      // a base class's implementation: it must become async as well
      makeAsync(d, from);
    } else manual.set(loc(d), `cannot convert ${ts.SyntaxKind[d.kind]}`);
  }

  function calleeDeclaration(c) {
    const sig = checker.getResolvedSignature(c);
    const d = sig?.getDeclaration?.() ?? sig?.declaration;
    if (d) return d;
    const sym = checker.getSymbolAtLocation(ts.isPropertyAccessExpression(c.expression) ? c.expression.name : c.expression);
    return sym?.declarations?.[0];
  }

  const isNewlyAsync = (c) => {
    const d = calleeDeclaration(c);
    if (!d) return false;
    const file = rel(d.getSourceFile().fileName);
    if (file === "src/store/async.ts") return true;
    if (file === "src/store/db.ts") {
      const k = keyOf(d);
      return /#(Store\.(tx|appendEvent)|.*atomically)$/.test(k) ;
    }
    return asyncKeys.has(keyOf(d));
  };

  const visit = (sf, n) => {
    if (ts.isCallExpression(n) && isPromiseType(checker.getTypeAtLocation(n)) && isNewlyAsync(n)) {
      const p = n.parent;
      const handled =
        ts.isAwaitExpression(p) ||
        ts.isVoidExpression(p) ||
        (ts.isArrayLiteralExpression(p) && ts.isCallExpression(p.parent) && /Promise\.(all|allSettled|race)/.test(p.parent.expression.getText())) ||
        (ts.isPropertyAccessExpression(p) && /^(then|catch|finally)$/.test(p.name.text));
      if (!handled) {
        const f = enclosingFunction(n);
        if (makeAsync(f, n)) {
          const needParens =
            (ts.isPropertyAccessExpression(p) && p.expression === n) ||
            (ts.isElementAccessExpression(p) && p.expression === n) ||
            (ts.isCallExpression(p) && p.expression === n) ||
            ts.isNonNullExpression(p);
          if (needParens) {
            insert(sf, n.getStart(), "(await ");
            insert(sf, n.getEnd(), ")");
          } else insert(sf, n.getStart(), "await ");
          awaited++;
        }
      }
    }
    ts.forEachChild(n, (c) => visit(sf, c));
  };
  for (const sf of program.getSourceFiles()) {
    if (!fileSet.has(sf.fileName)) continue;
    if (/\/src\/store\//.test(sf.fileName)) continue;
    visit(sf, sf);
  }
  let changedFiles = 0;
  for (const f of new Set([...inserts.keys(), ...replaces.keys()])) {
    let text = readFileSync(f, "utf8");
    const ops = [
      ...(inserts.get(f) ?? []).map(([pos, t], i) => ({ start: pos, end: pos, text: t, i })),
      ...(replaces.get(f) ?? []).map(([s, e, t], i) => ({ start: s, end: e, text: t, i: 1e6 + i })),
    ];
    // apply from the end; at one position, replacements before insertions, insertions in reverse
    ops.sort((a, b) => b.start - a.start || (a.end === a.start ? 1 : 0) - (b.end === b.start ? 1 : 0) || b.i - a.i);
    for (const op of ops) text = text.slice(0, op.start) + op.text + text.slice(op.end);
    writeFileSync(f, text);
    changedFiles++;
  }
  writeFileSync(KEYS, JSON.stringify([...asyncKeys]));
  console.log(`pass ${pass}: ${awaited} awaits, ${made} functions made async, ${changedFiles} files`);
  if (awaited === 0 && made === 0 && changedFiles === 0) break;
}
writeFileSync("/tmp/codemod-manual.txt", [...manual].map(([k, v]) => `${k}\t${v}`).sort().join("\n") + "\n");
console.log(`manual: ${manual.size} (/tmp/codemod-manual.txt)`);
