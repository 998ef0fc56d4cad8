/**
 * A stored event frame's own fields read in SQL (PURE: SQL text only), the one way the package's
 * queries tell what an `event` row is. A frame is stored as `JSON.stringify(frame)`, and what a
 * tool returned, a person typed or a component's props hold is inside that text too: a `LIKE` on
 * it would take `{"event":{"kind":"cancelled"}}` in a tool's result for a cancelled run. These
 * read the frame's structure (`$.event.kind`, `$.event.name`) with the database's JSON functions
 * instead, and only on `event` rows (a text row's body is not JSON): a value nested anywhere
 * else in the frame is never its kind.
 */

/** The fields of an event frame a query may read: what it is, and the tool a call names. */
export type EventField = 'kind' | 'name'

const mysql = (dialect: string) => dialect === 'mysql' || dialect === 'mysql2'
const postgres = (dialect: string) => dialect === 'postgres' || dialect === 'pg'

/**
 * The SQL expression of `event.<field>` of the frames row aliased `alias` (a string, or `NULL`
 * for a row that is not an event, or an event without it), on Lucid's `dialect`.
 */
export function eventFieldSql(dialect: string, alias: string, field: EventField): string {
  const body = `${alias}.body`
  const value = postgres(dialect)
    ? `(${body}::jsonb -> 'event' ->> '${field}')`
    : mysql(dialect)
      ? `json_unquote(json_extract(${body}, '$.event.${field}'))`
      : `json_extract(${body}, '$.event.${field}')`
  // CASE keeps the order: the body is parsed only once the row is known to be an event.
  return `(case when ${alias}.kind = 'event' then ${value} end)`
}
