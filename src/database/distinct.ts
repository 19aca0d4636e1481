import type { Db } from "./sqlite.ts";

/**
 * The distinct values of an index's leading column that sort after `after`, at most `limit` of them,
 * in order: one index seek per value (a "skip scan"), so the cost grows with the values returned,
 * not with the table's rows. `table` and `column` are the caller's constants, never input.
 */
export function distinctLeadingValues(
  db: Db,
  table: string,
  column: string,
  after: string,
  limit: number,
): string[] {
  const rows = db
    .prepare<[string, number], { value: string }>(
      `WITH RECURSIVE next(value, n) AS (
         SELECT (SELECT MIN(${column}) FROM ${table} WHERE ${column} > ?), 1
         UNION ALL
         SELECT (SELECT MIN(${column}) FROM ${table} WHERE ${column} > next.value), n + 1
         FROM next WHERE next.value IS NOT NULL AND n < ?
       )
       SELECT value FROM next WHERE value IS NOT NULL`,
    )
    .all(after, limit);
  return rows.map((row) => row.value);
}
