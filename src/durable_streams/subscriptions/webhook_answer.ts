/** The most of a webhook's answer that is read: its `{ "done": true }` fits many times over. */
export const WEBHOOK_ANSWER_MAX_BYTES = 64 * 1024

/**
 * A webhook's answer as JSON (PROTOCOL.md 7.1: `{ done }`), read up to
 * {@link WEBHOOK_ANSWER_MAX_BYTES}: a longer one is cut off (the connection cancelled) and reads
 * as `{}`, as does one that is not a JSON object. The receiver is anyone's; memory is the replica's.
 */
export async function webhookAnswer(response: Response): Promise<{ done?: unknown }> {
  const reader = response.body?.getReader()
  if (!reader) return {}
  const parts: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > WEBHOOK_ANSWER_MAX_BYTES) {
        await reader.cancel().catch(() => {})
        return {}
      }
      parts.push(value)
    }
    const value: unknown = JSON.parse(Buffer.concat(parts).toString('utf8'))
    return value !== null && typeof value === 'object' ? (value as { done?: unknown }) : {}
  } catch {
    return {}
  }
}
