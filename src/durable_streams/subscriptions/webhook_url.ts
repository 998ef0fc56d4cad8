import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

/**
 * The addresses no webhook may reach (PROTOCOL.md 6.2 and 12.8, SSRF): unspecified, private
 * (RFC 1918), loopback, link-local (the cloud metadata address among them), carrier-grade NAT,
 * multicast and reserved; in IPv6 also the forms that carry an IPv4 address (compatible,
 * translated, NAT64; an IPv4-mapped address is checked as its IPv4 address by `BlockList`),
 * unique-local, link-local and site-local.
 */
const LOCAL = new BlockList()
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 3],
] as const) {
  LOCAL.addSubnet(net, bits, 'ipv4')
}
for (const [net, bits] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  LOCAL.addSubnet(net, bits, 'ipv6')
}

/** Whether an IP address (either family) is one no webhook may reach. */
function localAddress(address: string): boolean {
  const kind = isIP(address)
  return kind === 0 || LOCAL.check(address, kind === 4 ? 'ipv4' : 'ipv6')
}

interface Target {
  url: URL
  /** The host name or address, without IPv6 brackets or a trailing dot, lower-case. */
  host: string
  /** `localhost` or `127.0.0.x`: the development exception. */
  development: boolean
}

function targetOf(value: string): Target | null {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return null
  }
  if (url.username || url.password) return null
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.+$/, '')
    .toLowerCase()
  return { url, host, development: host === 'localhost' || /^127\.0\.0\.\d{1,3}$/.test(host) }
}

/**
 * Whether a webhook URL may be called, by its text: `https://` to a public host; with
 * `localWebhooks` (development) also `http://localhost` and `http://127.0.0.x`. Local addresses
 * are refused whatever the scheme or spelling; a host name is checked by
 * {@link webhookUrlReachable}.
 */
export function webhookUrlAllowed(value: string, localWebhooks: boolean): boolean {
  const target = targetOf(value)
  if (!target) return false
  const { url, host } = target
  if (target.development) {
    return localWebhooks && (url.protocol === 'http:' || url.protocol === 'https:')
  }
  if (url.protocol !== 'https:') return false
  if (host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) {
    return false
  }
  return isIP(host) === 0 || !localAddress(host)
}

/**
 * Whether a webhook URL may be called now: {@link webhookUrlAllowed}, and a host name resolves
 * only to public addresses (a name pointing at a local address is refused; checked again before
 * every delivery, as what a name resolves to changes).
 */
export async function webhookUrlReachable(value: string, localWebhooks: boolean) {
  if (!webhookUrlAllowed(value, localWebhooks)) return false
  const target = targetOf(value)!
  if (target.development || isIP(target.host) !== 0) return true
  try {
    const addresses = await lookup(target.host, { all: true, verbatim: true })
    return addresses.length > 0 && addresses.every((entry) => !localAddress(entry.address))
  } catch {
    return false
  }
}
