import { isIP } from 'node:net'

/**
 * Whether a webhook URL may be called (PROTOCOL.md 6.2 and 12.8, SSRF): `https://` to a public
 * host; with `localWebhooks` (development) also `http://localhost` and `http://127.0.0.x`. Private
 * (RFC 1918), link-local (the cloud metadata address among them), loopback, unspecified,
 * carrier-grade NAT and IPv6 local addresses are refused, whatever the scheme.
 */
export function webhookUrlAllowed(value: string, localWebhooks: boolean): boolean {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  if (url.username || url.password) return false
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  const local = host === 'localhost' || /^127\.0\.0\.\d{1,3}$/.test(host)
  if (local) return localWebhooks && (url.protocol === 'http:' || url.protocol === 'https:')
  if (url.protocol !== 'https:') return false
  if (host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) {
    return false
  }
  const kind = isIP(host)
  if (kind === 4) return !privateV4(host)
  if (kind === 6) return !privateV6(host)
  return true
}

function privateV4(host: string): boolean {
  const [a, b] = host.split('.').map(Number)
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    a >= 224
  )
}

function privateV6(host: string): boolean {
  if (host === '::' || host === '::1') return true
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host)
  if (mapped) return privateV4(mapped[1])
  return /^(fc|fd|fe8|fe9|fea|feb)/.test(host)
}
