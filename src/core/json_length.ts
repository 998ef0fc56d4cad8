/**
 * About the length of `value` as JSON (what `JSON.stringify(value).length` is, within a few
 * characters per value: numbers count 8, escapes are not counted; a Map or a Set as the array of
 * what it holds), without making the string: a memory bound needs a size, not the text (issue
 * 26: a stringify per live event, and per checkpoint kept, duplicated the encoder's work).
 */
export function jsonLength(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return value.length + 2
    case 'number':
    case 'bigint':
      return 8
    case 'boolean':
      return value ? 4 : 5
    case 'object': {
      if (value === null) return 4
      let length = 2
      if (Array.isArray(value) || value instanceof Set || value instanceof Map) {
        // (A Map's entries as `[key, value]` arrays.)
        for (const each of value) length += jsonLength(each) + 1
        return length
      }
      for (const key in value) {
        const each = (value as Record<string, unknown>)[key]
        if (each !== undefined && typeof each !== 'function') {
          length += key.length + 4 + jsonLength(each)
        }
      }
      return length
    }
    default:
      return 0
  }
}
