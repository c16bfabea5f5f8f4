// What the repositories need of a database connection: prepared statements run
// synchronously, plain SQL, close. `node:sqlite`'s DatabaseSync is one; the Postgres
// backend (pg.ts) is the other, and marks itself with `dialect` so the few statements
// that must differ can tell.
import type { SQLInputValue, SQLOutputValue } from "node:sqlite";

export type SqlRow = Record<string, SQLOutputValue>;

export interface SqlStatement {
  get(...params: SQLInputValue[]): SqlRow | undefined;
  all(...params: SQLInputValue[]): SqlRow[];
  run(...params: SQLInputValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
}

export interface SqlDatabase {
  /** Absent on SQLite. */
  readonly dialect?: "postgres";
  readonly isOpen: boolean;
  prepare(sql: string): SqlStatement;
  exec(sql: string): void;
  close(): void;
}

export function isPostgres(db: SqlDatabase): boolean {
  return db.dialect === "postgres";
}

/**
 * SQL for one field of a JSON text column (a dotted path), as text; null when absent or
 * JSON null. SQLite's json_extract, or Postgres's `#>>` on the column cast to jsonb.
 */
export function jsonField(db: SqlDatabase): (column: string, path: string) => string {
  return isPostgres(db)
    ? (column, path) => `(${column}::jsonb #>> '{${path.split(".").join(",")}}')`
    : (column, path) => `json_extract(${column}, '$.${path}')`;
}
