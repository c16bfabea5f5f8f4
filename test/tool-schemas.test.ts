// Every built-in tool's schema, emitted in Strict mode, is a shape OpenAI's strict
// function calling accepts; Relaxed mode keeps optional fields optional.
import { describe, expect, it } from "vitest";
import { buildRegistry } from "../src/tools/builtin.ts";
import { toolSpecs } from "../src/turn/turn.ts";
import { assertOpenAiStrictCompatible, emitToolSchema } from "../src/providers/schema.ts";

const specs = toolSpecs(buildRegistry());

describe("built-in tool schemas", () => {
  it("the catalog has the command, workspace and agent tools", () => {
    const names = specs.map((s) => s.name);
    for (const n of ["ExecCommand", "ExecCommandBatch", "ApplyPatch", "Sleep"])
      expect(names).toContain(n);
    for (const s of specs) expect(s.description.length).toBeGreaterThan(40);
  });

  for (const spec of specs) {
    it(`${spec.name} is OpenAI strict-compatible in Strict mode`, () => {
      const strict = emitToolSchema(spec.parameters, "strict");
      expect(() => assertOpenAiStrictCompatible(strict, spec.name)).not.toThrow();
      expect(strict.additionalProperties).toBe(false);
      const props = Object.keys((strict.properties ?? {}) as Record<string, unknown>);
      expect([...(strict.required as string[])].sort()).toEqual(props.sort());
    });

    it(`${spec.name} keeps optional fields optional in Relaxed mode`, () => {
      const relaxed = emitToolSchema(spec.parameters, "relaxed");
      expect(relaxed.additionalProperties).toBe(false);
      expect(relaxed.$schema).toBeUndefined();
    });
  }

  it("ApplyPatch carries a freeform grammar with a JSON {patch} fallback", () => {
    const patch = specs.find((s) => s.name === "ApplyPatch")!;
    expect(patch.freeform).toMatchObject({ syntax: "lark", input_field: "patch" });
    expect(patch.parameters.required as string[]).toEqual(["patch"]);
  });
});
