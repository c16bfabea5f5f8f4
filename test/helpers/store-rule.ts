// The one rule of the store, checked with the TypeScript compiler API on the real program
// (types, not text): (a) no floating store promise: an expression statement whose value is
// a Promise and whose call is a method of `Store` or of a repository class under src/store/
// must be awaited, returned, assigned or marked `void`; (b) a transaction body (the callback
// given to a store's `tx` or `txAsync`) awaits only store calls, and the synchronous `tx`
// never gets a body that returns a Promise. Floating promises of any
// kind are collected too, as information. test/architecture.test.ts runs it over src/ and
// over the planted violations in test/fixtures/store-rule/.
import { dirname, relative, resolve, sep } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "../..");
const STORE_DIR = resolve(ROOT, "src/store") + sep;

export type Finding = { file: string; line: number; text: string };

export type StoreRuleReport = {
  /** (a) Floating promises whose call is a store method. */
  floatingStore: Finding[];
  /** (b) Awaits inside a transaction body of something other than a store call. */
  awaitInTx: Finding[];
  /** Floating promises of any kind whose rejection nothing handles (information). */
  floatingAny: Finding[];
  /** (b) A synchronous `tx` given a body that returns a Promise: it would commit too early. */
  asyncInSyncTx: Finding[];
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
    if (!owner || !(ts.isClassDeclaration(owner) || ts.isInterfaceDeclaration(owner))) {
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

  const isStoreCall = (e: ts.Expression): boolean => {
    const x = unwrap(e);
    return ts.isCallExpression(x) && storeMethod(x) !== undefined;
  };

  /** Awaits in a transaction body, not descending into other functions (their own business). */
  const checkTxBody = (body: ts.Node): void => {
    const visit = (node: ts.Node): void => {
      if (ts.isAwaitExpression(node) && !isStoreCall(node.expression)) {
        report.awaitInTx.push(finding(node));
      }
      if (ts.isForOfStatement(node) && node.awaitModifier) report.awaitInTx.push(finding(node));
      if (ts.isFunctionLike(node)) return;
      ts.forEachChild(node, visit);
    };
    ts.forEachChild(body, visit);
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
      ["tx", "txAsync"].includes(node.expression.name.text) &&
      storeMethod(node)
    ) {
      const body = node.arguments[0];
      if (
        node.expression.name.text === "tx" &&
        body &&
        isPromise(checker.getResolvedSignature(node)!.getReturnType())
      ) {
        report.asyncInSyncTx.push(finding(node));
      }
      if (body && (ts.isArrowFunction(body) || ts.isFunctionExpression(body))) {
        report.txBodies++;
        checkTxBody(body);
      }
    }
    ts.forEachChild(node, visit);
  };

  for (const sf of program.getSourceFiles()) {
    if (sf.isDeclarationFile || !include(sf.fileName)) continue;
    visit(sf);
  }
  return report;
}
