/**
 * Text at code-point granularity. JavaScript strings count UTF-16 code units: an astral character
 * (😀) is a high surrogate followed by a low one. Text is cut, held, stored, addressed and sent
 * only between code points, so no reader, database or wire ever sees half a character.
 * PURE: no I/O.
 */

/** U+FFFD, what a half of a pair that never found its other half becomes. */
export const REPLACEMENT_CHARACTER = '\uFFFD'

/** Whether the UTF-16 unit is a high (leading) surrogate, U+D800 to U+DBFF. */
export function isHighSurrogate(unit: number) {
  return unit >= 0xd800 && unit <= 0xdbff
}

/** Whether the UTF-16 unit is a low (trailing) surrogate, U+DC00 to U+DFFF. */
export function isLowSurrogate(unit: number) {
  return unit >= 0xdc00 && unit <= 0xdfff
}

/**
 * `offset` (UTF-16 units into `text`) moved back to the start of the code point it falls in: an
 * offset between the two halves of a pair becomes the pair's start; any other offset is kept.
 */
export function codePointStart(text: string, offset: number): number {
  if (offset <= 0 || offset >= text.length) return offset
  const between =
    isHighSurrogate(text.charCodeAt(offset - 1)) && isLowSurrogate(text.charCodeAt(offset))
  return between ? offset - 1 : offset
}

/**
 * Join a pair split across two consecutive text writes (a tokenizer may cut inside a code
 * point): `held` is the high half the previous write ended with (`''` when none). Returns the text
 * to write now and the high half to hold for the next write (`''` when none). A half whose other
 * half does not come next becomes {@link REPLACEMENT_CHARACTER}: a held high half not followed by
 * a low one, a low half at the start with nothing held. An empty `text` changes nothing. A lone
 * surrogate INSIDE `text` is left as is (the frame validation refuses it: that is not a split).
 */
export function joinSplitPair(held: string, text: string): { text: string; held: string } {
  if (text.length === 0) return { text, held }
  let out = text
  if (isLowSurrogate(out.charCodeAt(0))) {
    out = held ? held + out : REPLACEMENT_CHARACTER + out.slice(1)
  } else if (held) {
    out = REPLACEMENT_CHARACTER + out
  }
  if (isHighSurrogate(out.charCodeAt(out.length - 1))) {
    return { text: out.slice(0, -1), held: out.slice(-1) }
  }
  return { text: out, held: '' }
}

/**
 * Whether every string in a JSON-like value, object keys included, is well-formed Unicode (no lone
 * surrogate, which `JSON.stringify` would send as a `\udXXX` escape that some clients reject and
 * PostgreSQL and MySQL would not store as written). Iterative: any depth, no stack overflow.
 */
export function isWellFormedDeep(value: unknown): boolean {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const item = stack.pop()
    if (typeof item === 'string') {
      if (!item.isWellFormed()) return false
    } else if (Array.isArray(item)) {
      for (const element of item) stack.push(element)
    } else if (item !== null && typeof item === 'object') {
      for (const [key, element] of Object.entries(item)) {
        if (!key.isWellFormed()) return false
        stack.push(element)
      }
    }
  }
  return true
}
