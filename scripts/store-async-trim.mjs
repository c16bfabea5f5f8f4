// One-off pass after the codemod: an async function whose only awaits are `return await x()`
// (outside any try) just forwards a promise; dropping its `async` and those `await`s saves one
// promise and one async frame per call. Only src/; run from the repository root.
import ts from "typescript";
import { readFileSync, writeFileSync } from "node:fs";

const cfg = ts.getParsedCommandLineOfConfigFile(
  "tsconfig.json",
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic() {} },
);
const files = cfg.fileNames.filter((f) => f.includes("/src/") && !f.includes("/src/web/"));
let trimmed = 0;
for (const file of files) {
  const text = readFileSync(file, "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const edits = [];
  const visit = (n) => {
    if (
      (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n)) &&
      n.body &&
      !n.asteriskToken &&
      n.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)
    ) {
      const awaits = [];
      const returns = [];
      let bad = false;
      const inner = (m, inTry) => {
        if (m !== n.body && ts.isFunctionLike(m)) return;
        if (ts.isForOfStatement(m) && m.awaitModifier) bad = true;
        if (ts.isTryStatement(m)) {
          inner(m.tryBlock, true);
          if (m.catchClause) inner(m.catchClause, true);
          if (m.finallyBlock) inner(m.finallyBlock, true);
          return;
        }
        if (ts.isReturnStatement(m)) returns.push(m);
        if (ts.isAwaitExpression(m)) {
          const p = m.parent;
          const tail =
            (ts.isReturnStatement(p) && !inTry) || (p === n.body && ts.isArrowFunction(n));
          if (!tail) bad = true;
          else awaits.push(m);
        }
        ts.forEachChild(m, (c) => inner(c, inTry));
      };
      if (ts.isBlock(n.body)) ts.forEachChild(n.body, (c) => inner(c, false));
      else inner(n.body, false);
      const allReturnsAwait = returns.every((r) => r.expression && ts.isAwaitExpression(r.expression));
      if (!bad && awaits.length > 0 && allReturnsAwait && (ts.isBlock(n.body) ? returns.length === awaits.length : true)) {
        const asyncMod = n.modifiers.find((m) => m.kind === ts.SyntaxKind.AsyncKeyword);
        edits.push([asyncMod.getStart(sf), asyncMod.getEnd() + 1, ""]);
        for (const a of awaits) edits.push([a.getStart(sf), a.expression.getStart(sf), ""]);
        trimmed++;
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  if (edits.length === 0) continue;
  edits.sort((a, b) => b[0] - a[0]);
  let out = text;
  for (const [s, e, t] of edits) out = out.slice(0, s) + t + out.slice(e);
  writeFileSync(file, out);
}
console.log(`trimmed ${trimmed} functions`);
