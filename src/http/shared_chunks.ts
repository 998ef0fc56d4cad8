/**
 * The SSE text of items a door shares between viewers (frozen: its live fan-out's,
 * `src/door/live_hub.ts`), made once for all of them; an item of one viewer's own is encoded
 * each time. One memo per encoding (`sharedChunks(encode)`): the same item may be sent by two.
 */
export function sharedChunks<T extends object>(encode: (item: T) => string) {
  const made = new WeakMap<T, string>()
  return (item: T): string => {
    if (!Object.isFrozen(item)) return encode(item)
    let chunk = made.get(item)
    if (chunk === undefined) made.set(item, (chunk = encode(item)))
    return chunk
  }
}
