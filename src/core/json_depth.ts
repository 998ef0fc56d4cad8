/**
 * The one depth rule for every body the package takes (AG-UI `RunAgentInput`, the native start,
 * decisions and answers, the admin form, the Fetch handler): arrays and objects nest at most
 * {@link MAX_JSON_DEPTH} levels. Code that walks a value recursively (canonical hashing,
 * `JSON.stringify`, AdonisJS's `cloneDeep` of a request body) then never exhausts the stack.
 * PURE: no I/O.
 */

/** How deep arrays and objects may nest in a body (the body itself is level 1). */
export const MAX_JSON_DEPTH = 64

/** The issue a too-deep body is refused with: the whole body, the `maxDepth` rule. */
export const DEPTH_ISSUE = Object.freeze({ field: '', rule: 'maxDepth' })

/**
 * What a transport keeps in place of a body it found too deep before anything else could walk
 * it (the AdonisJS body guard, `src/http/body_guard.ts`): every validator reads it as breaking
 * the rule, so each route still answers its own refusal.
 */
export const TOO_DEEP_BODY: Readonly<Record<string, never>> = Object.freeze({})

/**
 * Whether `value` nests arrays or objects deeper than `max` levels (a scalar is level 0, `{}`
 * level 1). Iterative, so it cannot overflow the stack itself whatever the depth; a value seen
 * again (shared or cyclic references, from code rather than JSON) is walked again only when met
 * deeper, so a cycle reads as too deep and the walk always ends.
 */
export function tooDeep(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (value === TOO_DEEP_BODY) return true
  const seen = new Map<object, number>()
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (node === null || typeof node !== 'object') continue
    if (depth > max) return true
    if ((seen.get(node) ?? 0) >= depth) continue
    seen.set(node, depth)
    for (const child of Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
    }
  }
  return false
}

/**
 * Whether JSON text nests arrays or objects deeper than `max` levels, read in one linear scan of
 * the text (brackets outside strings counted; no parse, no recursion, no allocation), so a body
 * can be refused by the depth rule before anything parses or walks it. Text that is not JSON is
 * only judged by its brackets: the parse that follows refuses it.
 */
export function textTooDeep(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash escapes the next character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}
