// Finds awaits the codemod added in front of calls to functions that were async before the
// conversion (their callers already handled the Promise): a deferred `const p = f()` or an
// argument that is a Promise must stay as it was. Usage: node scripts/store-async-spurious.mjs <base-tree>
import ts from "typescript";
import { relative, resolve } from "node:path";

function program(root) {
  const cfg = ts.getParsedCommandLineOfConfigFile(resolve(root, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic() {} });
  return { p: ts.createProgram(cfg.fileNames.filter((f) => !f.includes("/src/web/")), cfg.options), root };
}
function nameOf(n) {
  if (n.name && (ts.isIdentifier(n.name) || ts.isPrivateIdentifier(n.name) || ts.isStringLiteral(n.name))) return n.name.text;
  if (ts.isConstructorDeclaration(n)) return "constructor";
  return undefined;
}
function keyOf(decl, root) {
  const parts = [];
  for (let n = decl; n && !ts.isSourceFile(n); n = n.parent) {
    const name = nameOf(n);
    if (name !== undefined) parts.unshift(name);
  }
  return `${relative(root, decl.getSourceFile().fileName)}#${parts.join(".")}`;
}
const isPromise = (c, t) => (t.isUnion() ? t.types : [t]).some((x) => x.getSymbol()?.getName() === "Promise");
const base = program(process.argv[2]);
const bc = base.p.getTypeChecker();
const wasAsync = new Set();
for (const sf of base.p.getSourceFiles()) {
  if (sf.isDeclarationFile || sf.fileName.includes("node_modules")) continue;
  const visit = (n) => {
    if (ts.isFunctionLike(n) && (ts.isMethodDeclaration(n) || ts.isFunctionDeclaration(n) || ts.isMethodSignature(n) || ts.isPropertySignature(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n))) {
      const sig = bc.getSignatureFromDeclaration(n);
      if (sig && isPromise(bc, bc.getReturnTypeOfSignature(sig))) wasAsync.add(keyOf(n, base.root));
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
const cur = program(process.cwd());
const cc = cur.p.getTypeChecker();
for (const sf of cur.p.getSourceFiles()) {
  if (sf.isDeclarationFile || sf.fileName.includes("node_modules")) continue;
  const visit = (n) => {
    if (ts.isAwaitExpression(n) && ts.isCallExpression(n.expression)) {
      const p = n.parent;
      const risky = ts.isExpressionStatement(p) || ts.isReturnStatement(p) || ts.isArrowFunction(p) || ts.isVariableDeclaration(p) || (ts.isCallExpression(p) && p.arguments.includes(n)) || ts.isPropertyAssignment(p) || ts.isArrayLiteralExpression(p) || (ts.isBinaryExpression(p) && p.operatorToken.kind === ts.SyntaxKind.EqualsToken);
      if (risky) {
        const d = cc.getResolvedSignature(n.expression)?.declaration;
        if (d && !ts.isJSDocSignature(d) && wasAsync.has(keyOf(d, cur.root))) {
          const { line } = sf.getLineAndCharacterOfPosition(n.getStart());
          console.log(`${relative(cur.root, sf.fileName)}:${line + 1}\t${n.getText().split("\n")[0].slice(0, 110)}`);
        }
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
