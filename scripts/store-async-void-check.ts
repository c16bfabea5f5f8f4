import ts from "typescript";
import { globSync } from "node:fs";
import { storeRuleProgram } from "../test/helpers/store-rule.ts";
const files = globSync("src/**/*.ts", { cwd: process.cwd() }).filter((f) => !f.startsWith("src/web")).map((f) => process.cwd() + "/" + f);
const p = storeRuleProgram(files);
const c = p.getTypeChecker();
const isPromise = (t: ts.Type): boolean => (t.isUnion() ? t.types : [t]).some((x) => x.getSymbol()?.getName() === "Promise");
const isVoid = (t: ts.Type) => (t.flags & ts.TypeFlags.Void) !== 0;
for (const sf of p.getSourceFiles()) {
  if (!sf.fileName.includes("/src/") || sf.isDeclarationFile) continue;
  const visit = (n: ts.Node) => {
    if (ts.isArrowFunction(n) || ts.isFunctionExpression(n) || (ts.isMethodDeclaration(n) && ts.isObjectLiteralExpression(n.parent))) {
      const sig = c.getSignatureFromDeclaration(n as ts.SignatureDeclaration);
      if (sig && isPromise(c.getReturnTypeOfSignature(sig))) {
        let ctx: ts.Type | undefined;
        if (ts.isMethodDeclaration(n)) {
          const obj = c.getContextualType(n.parent as ts.ObjectLiteralExpression);
          const prop = obj?.getProperty((n.name as ts.Identifier).text);
          ctx = prop ? c.getTypeOfSymbolAtLocation(prop, n) : undefined;
        } else ctx = c.getContextualType(n as ts.Expression);
        const sigs = ctx?.getNonNullableType().getCallSignatures() ?? [];
        if (sigs.length && sigs.every((s) => isVoid(c.getReturnTypeOfSignature(s)))) {
          const { line } = sf.getLineAndCharacterOfPosition(n.getStart());
          console.log(`${sf.fileName.replace(process.cwd() + "/", "")}:${line + 1}  ${n.getText().split("\n")[0]!.slice(0, 100)}`);
        }
      }
    }
    if (ts.isMethodDeclaration(n) && ts.isClassDeclaration(n.parent) && n.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) {
      for (const h of n.parent.heritageClauses ?? []) for (const t of h.types) {
        const prop = c.getTypeAtLocation(t).getProperty((n.name as ts.Identifier).text);
        if (!prop) continue;
        const sigs = c.getTypeOfSymbolAtLocation(prop, n).getNonNullableType().getCallSignatures();
        if (sigs.length && sigs.every((s) => isVoid(c.getReturnTypeOfSignature(s)))) {
          const { line } = sf.getLineAndCharacterOfPosition(n.getStart());
          console.log(`${sf.fileName.replace(process.cwd() + "/", "")}:${line + 1}  [implements] ${n.getText().split("\n")[0]!.slice(0, 90)}`);
        }
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
}
