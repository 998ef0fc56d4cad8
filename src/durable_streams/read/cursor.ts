/**
 * `Stream-Cursor` (PROTOCOL.md section 10.1): the number of 20-second intervals since
 * 2024-10-09T00:00:00Z, so CDNs collapse clients waiting at one offset; when the client echoes
 * a cursor at or past the current interval, one strictly greater (jitter of 1 to 3600 seconds),
 * so a cached empty answer can never loop.
 */
const INTERVAL_MS = 20_000
const EPOCH_MS = Date.UTC(2024, 9, 9)

export function responseCursor(clientCursor: string | undefined, now = Date.now()): string {
  const current = Math.floor((now - EPOCH_MS) / INTERVAL_MS)
  const asked =
    clientCursor !== undefined && /^[0-9]{1,15}$/.test(clientCursor)
      ? Number(clientCursor)
      : Number.NaN
  if (Number.isNaN(asked) || asked < current) return String(current)
  const jitterSeconds = 1 + Math.floor(Math.random() * 3600)
  return String(asked + Math.max(1, Math.ceil(jitterSeconds / (INTERVAL_MS / 1000))))
}
