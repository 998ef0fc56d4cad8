/**
 * A subscription's `pattern` (PROTOCOL.md 6.2) over stream-root-relative paths: `*` matches one
 * path segment (never empty), `**` zero or more segments; any other segment matches itself.
 */
export function globMatch(pattern: string, path: string): boolean {
  return matchFrom(pattern.split('/'), 0, path.split('/'), 0)
}

function matchFrom(want: string[], w: number, got: string[], g: number): boolean {
  if (w === want.length) return g === got.length
  const part = want[w]
  if (part === '**') {
    for (let skip = g; skip <= got.length; skip++) {
      if (matchFrom(want, w + 1, got, skip)) return true
    }
    return false
  }
  if (g === got.length) return false
  if (part === '*' ? got[g] === '' : part !== got[g]) return false
  return matchFrom(want, w + 1, got, g + 1)
}
