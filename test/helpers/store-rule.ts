// The one rule of the store, checked with the TypeScript compiler API on the real program
// (types, not text). test/architecture.test.ts runs it over src/ and over the planted
// violations in test/fixtures/store-rule/.
//
// A store call: a method of `Store`, of a repository or interface under src/store/, or of a
// repository's async face (a member of the `Async<Repo>` mapped type, src/store/async.ts).
//
// (a) No floating store promise: an expression statement whose value is a Promise and whose
//     call is a store call is awaited, returned, assigned or marked `void`.
// (b) A transaction body (the callback given to `tx`/`txSync`) awaits only store calls,
//     transitively: an await (or a returned / expression-body Promise) is allowed when it is
//     a store call (its callbacks checked the same way), a value that is no Promise,
//     `Promise.all/allSettled` of allowed calls or of `xs.map(allowed callback)`, or a call
//     of a project function whose own awaits are allowed in turn (the greatest fixpoint over
//     the functions reachable from the bodies, so recursion is fine). A call through an
//     interface or a callback type counts as all of its implementations in the project:
//     the classes whose instances are assignable to the interface, and the function
//     literals, object-literal methods and named functions the project hands over where
//     that type is expected (a function stored in a variable of that type first is not
//     seen). Nothing found behind a call: flagged. `for await` is always flagged. And the
//     synchronous `txSync` never gets a body that returns a Promise.
// (c) No floating callback: a function that returns a Promise (async, or a named one such as
//     `setTimeout(finish, ms)`), handed where the contextual type expects a function whose
//     result is void or unknown, so nobody awaits it or handles its rejection; an async
//     class method implementing a member typed to return void, likewise. Not flagged:
//     - the store's own hooks (`afterCommit`, `onEvents` listeners: typed under src/store/
//       to return unknown), which catch a returned Promise on purpose without waiting;
//     - a callback for setTimeout / setInterval / setImmediate / queueMicrotask / nextTick
//       whose body catches (each of its statements is a `try` with a `catch`);
//     - `() => void f()`: as in (a), `void` says the drop is deliberate (for a timer, a
//       rejection then surfaces as an unhandled rejection, as a throw did as an uncaught
//       exception when the callback was synchronous).
//
// Floating promises of any kind are collected too, as information.
import { dirname, relative, resolve, sep } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "../..");
const STORE_DIR = resolve(ROOT, "src/store") + sep;
const STORE_ASYNC = resolve(ROOT, "src/store/async.ts");

export type Finding = {
  file: string;
  line: number;
  text: string;
  /** Why it is flagged, when that is not the line itself (the chain of calls to the culprit). */
  why?: string;
};

export type StoreRuleReport = {
  /** (a) Floating promises whose call is a store method. */
  floatingStore: Finding[];
  /** (b) Awaits inside a transaction body of something other than a store call. */
  awaitInTx: Finding[];
  /** Floating promises of any kind whose rejection nothing handles (information). */
  floatingAny: Finding[];
  /** (b) A synchronous `tx` given a body that returns a Promise: it would commit too early. */
  asyncInSyncTx: Finding[];
  /**
   * (c) An async function (or one returning a Promise) given where the type expects a function
   * returning void or unknown: nobody awaits its promise nor handles its rejection.
   */
  floatingCallback: Finding[];
  /** How many transaction bodies were checked (a scan that found none proves nothing). */
  txBodies: number;
};

/** One program over `roots`, with the project's compiler options (tsconfig.json). */
export function storeRuleProgram(roots: string[]): ts.Program {
  const configPath = resolve(ROOT, "tsconfig.json");
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  if (config.error)
    throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, dirname(configPath));
  return ts.createProgram({ rootNames: roots, options: { ...parsed.options, noEmit: true } });
}

/** Check the program's source files that `include` accepts (absolute paths). */
export function checkStoreRule(
  program: ts.Program,
  include: (file: string) => boolean,
): StoreRuleReport {
  const checker = program.getTypeChecker();
  const report: StoreRuleReport = {
    floatingStore: [],
    awaitInTx: [],
    floatingAny: [],
    asyncInSyncTx: [],
    floatingCallback: [],
    txBodies: 0,
  };

  const finding = (node: ts.Node): Finding => {
    const sf = node.getSourceFile();
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    const text = node.getText(sf).split("\n")[0]!.slice(0, 120);
    return { file: relative(ROOT, sf.fileName), line, text };
  };

  /**
   * The method a call resolves to, when it belongs to a class or interface declared under
   * src/store/ (`Store`, the repositories, and a future interface the services see).
   */
  const storeMethod = (call: ts.CallExpression): ts.Declaration | undefined => {
    if (!ts.isPropertyAccessExpression(call.expression)) return undefined;
    const decl = checker.getResolvedSignature(call)?.declaration;
    if (!decl || ts.isJSDocSignature(decl)) return undefined;
    const owner =
      ts.isMethodDeclaration(decl) || ts.isMethodSignature(decl)
        ? decl.parent
        : ts.isArrowFunction(decl) || ts.isFunctionExpression(decl) || ts.isFunctionTypeNode(decl)
          ? decl.parent.parent
          : undefined;
    // A repository's async face: a member of the `Async<Repo>` mapped type (src/store/async.ts).
    if (decl.getSourceFile().fileName === STORE_ASYNC) return decl;
    if (
      !owner ||
      !(
        ts.isClassDeclaration(owner) ||
        ts.isInterfaceDeclaration(owner) ||
        ts.isTypeLiteralNode(owner)
      )
    ) {
      return undefined;
    }
    return decl.getSourceFile().fileName.startsWith(STORE_DIR) ? decl : undefined;
  };

  const isPromise = (type: ts.Type): boolean =>
    (type.isUnion() ? type.types : [type]).some((t) => {
      const then = t.getProperty("then");
      return then !== undefined && checker.getTypeOfSymbol(then).getCallSignatures().length > 0;
    });

  const unwrap = (e: ts.Expression): ts.Expression => {
    let x = e;
    while (ts.isParenthesizedExpression(x) || ts.isNonNullExpression(x)) x = x.expression;
    return x;
  };

  /** The call at the root of `a.b().then(…).catch(…)`: the one whose promise floats. */
  const rootCall = (e: ts.Expression): ts.CallExpression | undefined => {
    let x = unwrap(e);
    for (;;) {
      if (!ts.isCallExpression(x)) return undefined;
      const callee = x.expression;
      if (
        ts.isPropertyAccessExpression(callee) &&
        ["then", "catch", "finally"].includes(callee.name.text) &&
        ts.isCallExpression(unwrap(callee.expression))
      ) {
        x = unwrap(callee.expression);
        continue;
      }
      return x;
    }
  };

  /** A function with a body: what a call resolves to when it is the project's own code. */
  type Fn = ts.FunctionLikeDeclaration & { body: ts.Node };
  const projectFn = (decl: ts.Node | undefined): Fn | undefined => {
    if (
      !decl ||
      !(
        ts.isFunctionDeclaration(decl) ||
        ts.isMethodDeclaration(decl) ||
        ts.isArrowFunction(decl) ||
        ts.isFunctionExpression(decl)
      ) ||
      !decl.body
    )
      return undefined;
    const sf = decl.getSourceFile();
    return sf.isDeclarationFile || sf.fileName.includes(`${sep}node_modules${sep}`)
      ? undefined
      : (decl as Fn);
  };

  /**
   * What an awaited expression needs to be allowed inside a transaction body: `bad` (it may
   * yield to timers or I/O), or the project functions it runs (allowed when each of them is).
   */
  type Verdict = { bad: string | undefined; deps: Fn[] };
  const bad = (why: string): Verdict => ({ bad: why, deps: [] });
  const verdict = (operand: ts.Expression): Verdict => {
    const e = unwrap(operand);
    const ok: Verdict = { bad: undefined, deps: [] };
    if (
      ts.isBinaryExpression(e) &&
      [ts.SyntaxKind.QuestionQuestionToken, ts.SyntaxKind.BarBarToken].includes(
        e.operatorToken.kind,
      )
    ) {
      const parts = [verdict(e.left), verdict(e.right)];
      const why = parts.find((p) => p.bad)?.bad;
      return why ? bad(why) : { bad: undefined, deps: parts.flatMap((p) => p.deps) };
    }
    if (ts.isConditionalExpression(e)) {
      const parts = [verdict(e.whenTrue), verdict(e.whenFalse)];
      const why = parts.find((p) => p.bad)?.bad;
      return why ? bad(why) : { bad: undefined, deps: parts.flatMap((p) => p.deps) };
    }
    // `const r = hook(); if (r) await r;`: the awaited constant is judged by what made it.
    if (ts.isIdentifier(e)) {
      const d = checker.getSymbolAtLocation(e)?.valueDeclaration;
      if (
        d &&
        ts.isVariableDeclaration(d) &&
        d.initializer &&
        ts.isVariableDeclarationList(d.parent) &&
        (d.parent.flags & ts.NodeFlags.Const) !== 0
      ) {
        return verdict(d.initializer);
      }
    }
    if (!ts.isCallExpression(e)) {
      // Awaiting a value that is no Promise costs a microtask only.
      if (!isPromise(checker.getTypeAtLocation(e))) return ok;
      return bad(ts.isNewExpression(e) ? e.getText().slice(0, 60) : "a promise made elsewhere");
    }
    if (!promiseValued(e)) return ok;
    const literals = e.arguments.filter(
      (a): a is ts.ArrowFunction | ts.FunctionExpression =>
        ts.isArrowFunction(a) || ts.isFunctionExpression(a),
    );
    // A store call (a nested `tx`, `memory.atomically`) runs the callbacks it is given.
    if (storeMethod(e)) return { bad: undefined, deps: literals as Fn[] };
    const callee = e.expression;
    if (
      ts.isPropertyAccessExpression(callee) &&
      ts.isIdentifier(callee.expression) &&
      callee.expression.text === "Promise"
    ) {
      const name = callee.name.text;
      const arg = e.arguments[0] ? unwrap(e.arguments[0]) : undefined;
      if (name === "resolve") return arg ? verdict(arg) : ok;
      if (name === "reject") return ok; // settled already: no timer, no I/O
      if (["all", "allSettled"].includes(name) && arg) {
        if (ts.isArrayLiteralExpression(arg)) {
          const parts = arg.elements.map((x) => verdict(x as ts.Expression));
          const why = parts.find((p) => p.bad)?.bad;
          return why ? bad(why) : { bad: undefined, deps: parts.flatMap((p) => p.deps) };
        }
        // Promise.all(xs.map(async (x) => …)): the callback is what runs.
        if (
          ts.isCallExpression(arg) &&
          ts.isPropertyAccessExpression(arg.expression) &&
          arg.expression.name.text === "map" &&
          arg.arguments[0] &&
          (ts.isArrowFunction(arg.arguments[0]) || ts.isFunctionExpression(arg.arguments[0]))
        ) {
          return { bad: undefined, deps: [arg.arguments[0] as Fn] };
        }
      }
      return bad(`Promise.${name}`);
    }
    const decl = checker.getResolvedSignature(e)?.declaration;
    const fn = projectFn(decl);
    if (fn) return { bad: undefined, deps: [fn, ...(literals as Fn[])] };
    const impls =
      decl && !ts.isJSDocSignature(decl) && inProject(decl)
        ? [...(implementations(decl) ?? []), ...(callbacks().get(decl) ?? [])]
        : [];
    if (impls.length > 0) return { bad: undefined, deps: [...impls, ...(literals as Fn[])] };
    return bad(e.expression.getText().slice(0, 60));
  };

  const inProject = (n: ts.Node): boolean => {
    const sf = n.getSourceFile();
    return !sf.isDeclarationFile && !sf.fileName.includes(`${sep}node_modules${sep}`);
  };

  /**
   * The function literals the project passes where a callback type is expected, by the
   * declaration of that type's signature (`begin: () => Promise<…>`, a handler type, an
   * interface method an object literal implements). Built once, on first need: it asks for
   * the contextual type of every function literal.
   */
  let byType: Map<ts.Node, Fn[]> | undefined;
  const callbacks = (): Map<ts.Node, Fn[]> => {
    if (byType) return byType;
    const map = (byType = new Map());
    const add = (decl: ts.Node | undefined, fn: Fn) => {
      if (!decl) return;
      const list = map.get(decl) ?? [];
      list.push(fn);
      map.set(decl, list);
    };
    for (const sf of program.getSourceFiles()) {
      if (!inProject(sf)) continue;
      const visit = (n: ts.Node): void => {
        if (ts.isArrowFunction(n) || ts.isFunctionExpression(n)) {
          const ctx = checker.getContextualType(n);
          for (const sig of ctx?.getNonNullableType().getCallSignatures() ?? []) {
            add(sig.declaration, n as Fn);
          }
        }
        // A named function handed over: `{ begin }`, `{ end: this.finish }`, `run(begin)`.
        const named = namedFn(n);
        if (named) {
          if (
            (ts.isShorthandPropertyAssignment(n) || ts.isPropertyAssignment(n)) &&
            ts.isObjectLiteralExpression(n.parent) &&
            ts.isIdentifier(n.name)
          ) {
            const prop = checker
              .getContextualType(n.parent)
              ?.getNonNullableType()
              .getProperty(n.name.text);
            for (const d of prop?.declarations ?? []) {
              add(d, named);
              for (const sig of checker
                .getTypeOfSymbol(prop!)
                .getNonNullableType()
                .getCallSignatures())
                add(sig.declaration, named);
            }
          } else if (ts.isExpression(n)) {
            const ctx = checker.getContextualType(n);
            for (const sig of ctx?.getNonNullableType().getCallSignatures() ?? []) {
              add(sig.declaration, named);
            }
          }
        }
        if (ts.isMethodDeclaration(n) && ts.isObjectLiteralExpression(n.parent) && n.body) {
          const prop = ts.isIdentifier(n.name)
            ? checker.getContextualType(n.parent)?.getNonNullableType().getProperty(n.name.text)
            : undefined;
          for (const d of prop?.declarations ?? []) add(d, n as Fn);
        }
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    return map;
  };

  /** The function a symbol names: a function, a method, or a `const` holding a function literal. */
  const fnOfSymbol = (sym: ts.Symbol | undefined): Fn | undefined => {
    if (!sym) return undefined;
    const s = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
    const decl = s.valueDeclaration;
    if (decl && ts.isVariableDeclaration(decl) && decl.initializer) {
      return projectFn(unwrap(decl.initializer));
    }
    return projectFn(decl);
  };

  /** The project function an object property or a call argument names, if it is one. */
  const namedFn = (n: ts.Node): Fn | undefined => {
    if (ts.isShorthandPropertyAssignment(n)) {
      return fnOfSymbol(checker.getShorthandAssignmentValueSymbol(n));
    }
    const passed = ts.isPropertyAssignment(n)
      ? n.initializer
      : n.parent && ts.isCallExpression(n.parent) && n.parent.expression !== n
        ? (n as ts.Expression)
        : undefined;
    if (!passed || !(ts.isIdentifier(passed) || ts.isPropertyAccessExpression(passed))) {
      return undefined;
    }
    return fnOfSymbol(checker.getSymbolAtLocation(passed));
  };

  /** The project's classes (for the implementations of an interface's method). */
  let classes: ts.ClassDeclaration[] | undefined;
  const projectClasses = (): ts.ClassDeclaration[] => {
    if (classes) return classes;
    classes = [];
    for (const sf of program.getSourceFiles()) {
      if (sf.isDeclarationFile || sf.fileName.includes(`${sep}node_modules${sep}`)) continue;
      const visit = (n: ts.Node): void => {
        if (ts.isClassDeclaration(n) && n.name) classes!.push(n);
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    return classes;
  };

  /**
   * A method of a project interface (a service's narrow view of another: `SleepDeadlines`,
   * `AskDeadlines`): its bodies in the project's classes whose instances are assignable to
   * the interface (structurally; `implements` is not required). None found: unknown, so bad.
   */
  const implementations = (decl: ts.SignatureDeclaration): Fn[] | undefined => {
    const member = ts.isFunctionTypeNode(decl) ? decl.parent : decl;
    if (!(ts.isMethodSignature(member) || ts.isPropertySignature(member))) return undefined;
    const owner = member.parent;
    if (
      !(ts.isInterfaceDeclaration(owner) || ts.isTypeLiteralNode(owner)) ||
      !ts.isIdentifier(member.name)
    )
      return undefined;
    const sf = owner.getSourceFile();
    if (sf.isDeclarationFile || sf.fileName.includes(`${sep}node_modules${sep}`)) return undefined;
    const name = member.name.text;
    const iface = checker.getTypeAtLocation(owner);
    const found: Fn[] = [];
    for (const c of projectClasses()) {
      const m = c.members.find((x) => x.name && ts.isIdentifier(x.name) && x.name.text === name);
      if (!m) continue;
      if (!checker.isTypeAssignableTo(checker.getTypeAtLocation(c), iface)) continue;
      const body = ts.isPropertyDeclaration(m) && m.initializer ? unwrap(m.initializer) : m;
      const f = projectFn(body);
      if (!f) return undefined;
      found.push(f);
    }
    return found.length > 0 ? found : undefined;
  };

  /** The awaits of one function body, not descending into other functions (their own business). */
  const awaitsOf = (body: ts.Node): { node: ts.Node; operand: ts.Expression | undefined }[] => {
    const out: { node: ts.Node; operand: ts.Expression | undefined }[] = [];
    if (!ts.isBlock(body)) {
      // An expression body's value is what the caller awaits.
      out.push({ node: body, operand: body as ts.Expression });
    }
    const visit = (node: ts.Node): void => {
      if (ts.isAwaitExpression(node)) out.push({ node, operand: node.expression });
      if (ts.isForOfStatement(node) && node.awaitModifier) out.push({ node, operand: undefined });
      // A returned promise is awaited by whoever awaits this function.
      if (ts.isReturnStatement(node) && node.expression && !ts.isAwaitExpression(node.expression))
        out.push({ node, operand: node.expression });
      if (ts.isFunctionLike(node)) return;
      ts.forEachChild(node, visit);
    };
    ts.forEachChild(body, visit);
    return out;
  };

  /**
   * Whether each project function awaits (transitively) only store calls: the greatest
   * fixpoint (recursion is fine), over the functions reachable from the transaction bodies.
   */
  const fnVerdicts = new Map<Fn, { why: string | undefined; deps: Fn[] }>();
  const explore = (fn: Fn): void => {
    const stack = [fn];
    while (stack.length > 0) {
      const f = stack.pop()!;
      if (fnVerdicts.has(f)) continue;
      const entry = { why: undefined as string | undefined, deps: [] as Fn[] };
      fnVerdicts.set(f, entry);
      for (const a of awaitsOf(f.body)) {
        const v = a.operand ? verdict(a.operand) : bad("for await");
        if (v.bad && !entry.why)
          entry.why = `${finding(a.node).file}:${finding(a.node).line} ${v.bad}`;
        entry.deps.push(...v.deps);
        stack.push(...v.deps);
      }
    }
  };
  const settle = (): void => {
    for (let changed = true; changed;) {
      changed = false;
      for (const entry of fnVerdicts.values()) {
        if (entry.why) continue;
        const failing = entry.deps.find((d) => fnVerdicts.get(d)!.why);
        if (failing) {
          const f = finding(failing);
          entry.why = `${f.file}:${f.line} → ${fnVerdicts.get(failing)!.why}`;
          changed = true;
        }
      }
    }
  };

  /** The awaits of the transaction bodies, judged once every reachable function is known. */
  const txAwaits: { node: ts.Node; v: Verdict }[] = [];
  const checkTxBody = (body: ts.Node): void => {
    for (const a of awaitsOf(body)) {
      if (!a.operand) {
        txAwaits.push({ node: a.node, v: bad("for await") });
        continue;
      }
      // The body's own value (an expression body, a `return x`) counts only when it is a
      // Promise the transaction then waits for.
      if (a.node === body || ts.isReturnStatement(a.node)) {
        const op = unwrap(a.operand);
        if (!(ts.isCallExpression(op) ? promiseValued(op) : false)) continue;
      }
      const v = verdict(a.operand);
      v.deps.forEach(explore);
      txAwaits.push({ node: a.node, v });
    }
  };

  /**
   * Whether a statement's value is a Promise. For a call, from the callee's declared return
   * type, which costs no checking of the arguments (callbacks included): most of src/ is
   * calls with callbacks, and checking them all would take the whole program's check.
   */
  const promiseValued = (e: ts.Expression): boolean => {
    if (!ts.isCallExpression(e)) return isPromise(checker.getTypeAtLocation(e));
    const signatures = checker.getTypeAtLocation(e.expression).getCallSignatures();
    return signatures.length > 0 && signatures.some((sig) => isPromise(sig.getReturnType()));
  };

  /** A chain with `.catch(handler)` or `.then(ok, handler)` in it handles rejection (as eslint). */
  const handled = (e: ts.Expression): boolean => {
    let x = unwrap(e);
    while (ts.isCallExpression(x) && ts.isPropertyAccessExpression(x.expression)) {
      const name = x.expression.name.text;
      if (
        (name === "catch" && x.arguments.length > 0) ||
        (name === "then" && x.arguments.length > 1)
      )
        return true;
      x = unwrap(x.expression.expression);
    }
    return false;
  };

  const visit = (node: ts.Node): void => {
    if (ts.isExpressionStatement(node)) {
      const e = unwrap(node.expression);
      const marked =
        ts.isVoidExpression(e) ||
        ts.isAwaitExpression(e) ||
        (ts.isBinaryExpression(e) &&
          e.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
          e.operatorToken.kind <= ts.SyntaxKind.LastAssignment);
      if (!marked && promiseValued(e)) {
        const call = rootCall(e);
        if (call && storeMethod(call)) report.floatingStore.push(finding(node));
        if (!handled(e)) report.floatingAny.push(finding(node));
      }
    }
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      ["tx", "txSync"].includes(node.expression.name.text) &&
      storeMethod(node)
    ) {
      const sync = node.expression.name.text === "txSync";
      const body = node.arguments[0];
      if (sync && body && isPromise(checker.getResolvedSignature(node)!.getReturnType())) {
        report.asyncInSyncTx.push(finding(node));
      }
      if (body && (ts.isArrowFunction(body) || ts.isFunctionExpression(body))) {
        report.txBodies++;
        if (!sync) checkTxBody(body.body);
      }
    }
    ts.forEachChild(node, visit);
  };

  /** A signature's return type is void or unknown: what it returns is dropped. */
  const dropsResult = (sig: ts.Signature): boolean =>
    (checker.getReturnTypeOfSignature(sig).flags & (ts.TypeFlags.Void | ts.TypeFlags.Unknown)) !==
    0;
  const returnsPromise = (fn: ts.SignatureDeclaration): boolean => {
    if (ts.getCombinedModifierFlags(fn as ts.Declaration) & ts.ModifierFlags.Async) return true;
    const sig = checker.getSignatureFromDeclaration(fn);
    return sig !== undefined && isPromise(checker.getReturnTypeOfSignature(sig));
  };
  /** The call signatures of a callback type (of each member of a union that has some). */
  const callSignatures = (t: ts.Type | undefined): readonly ts.Signature[] => {
    if (!t) return [];
    const nn = t.getNonNullableType();
    return (nn.isUnion() ? nn.types : [nn]).flatMap((m) => m.getCallSignatures());
  };
  /** The contextual signatures a function literal or object-literal method is given to. */
  const expected = (fn: ts.Node): readonly ts.Signature[] => {
    if (ts.isMethodDeclaration(fn)) {
      if (!ts.isObjectLiteralExpression(fn.parent) || !ts.isIdentifier(fn.name)) return [];
      const prop = checker
        .getContextualType(fn.parent)
        ?.getNonNullableType()
        .getProperty(fn.name.text);
      return prop ? checker.getTypeOfSymbol(prop).getNonNullableType().getCallSignatures() : [];
    }
    return (
      checker
        .getContextualType(fn as ts.Expression)
        ?.getNonNullableType()
        .getCallSignatures() ?? []
    );
  };
  /**
   * A hook of the store (`afterCommit`, an `onEvents` listener: typed under src/store/ to
   * return unknown): the store catches a Promise it returns (db.ts, `committed`), on purpose
   * without waiting for it.
   */
  const storeHook = (sig: ts.Signature): boolean =>
    sig.declaration !== undefined &&
    sig.declaration.getSourceFile().fileName.startsWith(STORE_DIR) &&
    (checker.getReturnTypeOfSignature(sig).flags & ts.TypeFlags.Unknown) !== 0;
  const TIMERS = ["setTimeout", "setInterval", "setImmediate", "queueMicrotask", "nextTick"];
  /**
   * Handled: a callback for a timer, an immediate or a tick (nobody waits for those anyway)
   * whose body cannot reject: each of its statements is a `try` with a `catch`.
   */
  const handledCallback = (fn: ts.Node): boolean => {
    const call = fn.parent;
    if (!call || !ts.isCallExpression(call) || !call.arguments.includes(fn as ts.Expression)) {
      return false;
    }
    const callee = ts.isPropertyAccessExpression(call.expression)
      ? call.expression.name.text
      : ts.isIdentifier(call.expression)
        ? call.expression.text
        : "";
    if (!TIMERS.includes(callee)) return false;
    const body = (fn as ts.ArrowFunction | ts.FunctionExpression).body;
    return (
      ts.isBlock(body) &&
      body.statements.length > 0 &&
      body.statements.every((st) => ts.isTryStatement(st) && st.catchClause !== undefined)
    );
  };
  const checkCallback = (fn: ts.Node): void => {
    if (
      ts.isArrowFunction(fn) ||
      ts.isFunctionExpression(fn) ||
      (ts.isMethodDeclaration(fn) && ts.isObjectLiteralExpression(fn.parent))
    ) {
      const sigs = returnsPromise(fn) ? expected(fn) : [];
      if (
        sigs.length > 0 &&
        sigs.every(dropsResult) &&
        !sigs.every(storeHook) &&
        !handledCallback(fn)
      ) {
        report.floatingCallback.push(finding(fn));
      }
    }
    // A named async function handed over the same way: `setTimeout(finish, ms)`.
    if (
      (ts.isIdentifier(fn) || ts.isPropertyAccessExpression(fn)) &&
      fn.parent &&
      ts.isCallExpression(fn.parent) &&
      fn.parent.arguments.includes(fn)
    ) {
      const named = namedFn(fn);
      const sigs =
        named && returnsPromise(named) ? callSignatures(checker.getContextualType(fn)) : [];
      if (sigs.length > 0 && sigs.every(dropsResult) && !sigs.every(storeHook)) {
        const f = finding(named!);
        report.floatingCallback.push({ ...finding(fn), why: `${f.file}:${f.line}` });
      }
    }
    // An async method of a class that implements (or extends) a member typed to return void.
    if (
      ts.isMethodDeclaration(fn) &&
      ts.isClassDeclaration(fn.parent) &&
      ts.isIdentifier(fn.name) &&
      returnsPromise(fn)
    ) {
      for (const clause of fn.parent.heritageClauses ?? []) {
        for (const t of clause.types) {
          const prop = checker.getTypeAtLocation(t).getProperty(fn.name.text);
          if (!prop) continue;
          const sigs = checker.getTypeOfSymbol(prop).getNonNullableType().getCallSignatures();
          if (sigs.length > 0 && sigs.every(dropsResult)) {
            report.floatingCallback.push({ ...finding(fn), why: `${t.getText()}.${fn.name.text}` });
          }
        }
      }
    }
    ts.forEachChild(fn, checkCallback);
  };

  for (const sf of program.getSourceFiles()) {
    if (sf.isDeclarationFile || !include(sf.fileName)) continue;
    visit(sf);
    checkCallback(sf);
  }
  settle();
  for (const { node, v } of txAwaits) {
    const failing = v.deps.find((d) => fnVerdicts.get(d)!.why);
    const why =
      v.bad ??
      (failing &&
        `${finding(failing).file}:${finding(failing).line} → ${fnVerdicts.get(failing)!.why}`);
    if (why) report.awaitInTx.push({ ...finding(node), why });
  }
  return report;
}
