// The benchmark contract shared by bench/run.ts and every bench/*.bench.ts module.
// See the header of bench/run.ts for how a benchmark module is written.

/** One measured figure. `label` is what the report prints; the key in `metrics` is the stable id. */
export type Metric = { value: number; unit: string; label?: string };

/** A target from the issue, checked against one metric. Reported, never fatal. */
export type TargetCheck = {
  label: string;
  metric: string;
  op: "<" | "<=" | ">" | ">=";
  threshold: number;
  actual: number;
  pass: boolean;
};

/** A correctness check made during the run (e.g. "stored == acknowledged"). */
export type Check = { label: string; ok: boolean; detail?: string };

export type Result = {
  metrics: Record<string, Metric>;
  targets: TargetCheck[];
  checks: Check[];
  notes: string[];
};

export type BenchContext = {
  /** The checkout under test: holds bin/holon.js and src/. */
  root: string;
  /** Shorter phases and fewer iterations, for trying the harness out; figures are rougher. */
  quick: boolean;
  /** Progress output (stderr), so the report on stdout stays readable. */
  log(message: string): void;
  /** `--key=value` flags from the command line (e.g. `--duration=90`), by key. */
  options: Record<string, string>;
};

export type Benchmark = {
  name: string;
  description?: string;
  /** Runs only when named on the command line (long runs such as the soak). */
  explicit?: boolean;
  run(ctx: BenchContext): Promise<Result>;
};

/** Small builder so benchmark modules read as "measure, then record". */
export class ResultBuilder {
  readonly result: Result = { metrics: {}, targets: [], checks: [], notes: [] };

  metric(key: string, value: number, unit: string, label?: string): this {
    this.result.metrics[key] = label === undefined ? { value, unit } : { value, unit, label };
    return this;
  }

  target(label: string, metric: string, op: TargetCheck["op"], threshold: number): this {
    const m = this.result.metrics[metric];
    if (!m) throw new Error(`target '${label}' refers to unknown metric '${metric}'`);
    const actual = m.value;
    const pass =
      Number.isFinite(actual) &&
      (op === "<"
        ? actual < threshold
        : op === "<="
          ? actual <= threshold
          : op === ">"
            ? actual > threshold
            : actual >= threshold);
    this.result.targets.push({ label, metric, op, threshold, actual, pass });
    return this;
  }

  check(label: string, ok: boolean, detail?: string): this {
    this.result.checks.push(detail === undefined ? { label, ok } : { label, ok, detail });
    return this;
  }

  note(text: string): this {
    this.result.notes.push(text);
    return this;
  }
}
