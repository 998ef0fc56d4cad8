/**
 * `value` as JSON with every object's keys sorted (and `undefined` members left out), so two
 * equal values give the same text whatever order their keys were written in: how an edited
 * input is told apart from the asked one, or an approved input from a signed one.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null)
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`
}
