// The project's docs stand alone: a user with only this repository (or the installed
// package) can follow every link and path they give. Nothing points outside the repository
// (a sibling checkout such as ../shared), and every relative link names a file that exists.
import { describe, expect, it } from "vitest";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { REPO_ROOT } from "./helpers/home.ts";

const DOCS = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

const outside = (from: string, target: string) =>
  relative(REPO_ROOT, resolve(dirname(join(REPO_ROOT, from)), target)).startsWith("..");

describe("the docs stand alone", () => {
  it.each(DOCS)("%s points at nothing outside the repository", (doc) => {
    const text = readFileSync(join(REPO_ROOT, doc), "utf8");
    // Relative paths in links and in code spans (`../x/y`).
    const paths = [
      ...[...text.matchAll(/\]\(([^)#\s]+)[^)]*\)/g)].map((m) => m[1]!),
      ...[...text.matchAll(/`(\.\.\/[^`\s]+)`/g)].map((m) => m[1]!),
    ].filter((p) => !/^[a-z]+:/i.test(p) && !p.startsWith("/"));
    for (const p of paths) {
      expect(outside(doc, p), `${doc} points outside the repository: ${p}`).toBe(false);
      expect(existsSync(resolve(dirname(join(REPO_ROOT, doc)), p)), `${doc} → ${p}`).toBe(true);
    }
    expect(text, doc).not.toMatch(/\.\.\/shared\b/);
  });

  it("the docs describe the product, not the machine it was developed on", () => {
    for (const doc of DOCS) {
      const text = readFileSync(join(REPO_ROOT, doc), "utf8");
      expect(text, doc).not.toMatch(/shared 2-core|development machine/i);
    }
  });
});
