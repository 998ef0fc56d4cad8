/**
 * A subscription's `pattern` (PROTOCOL.md 6.2) over stream-root-relative paths: `*` matches one
 * path segment (never empty), `**` zero or more segments; any other segment matches itself.
 * Matched segment by segment over the positions of the path reachable so far (time linear in
 * the pattern times the path, whatever the `**`s: no backtracking).
 */
export function globMatch(pattern: string, path: string): boolean {
  const got = path.split('/')
  /** `reach[g]`: the pattern's segments so far match the path's first `g` segments. */
  let reach = got.map(() => false).concat(false)
  reach[0] = true
  for (const part of pattern.split('/')) {
    const next = reach.map(() => false)
    if (part === '**') {
      let any = false
      for (let g = 0; g <= got.length; g++) next[g] = any ||= reach[g]
    } else {
      for (const [g, segment] of got.entries()) {
        if (reach[g] && (part === '*' ? segment !== '' : part === segment)) next[g + 1] = true
      }
    }
    reach = next
  }
  return reach[got.length]
}
