import {
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  sign,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto'

/**
 * The server's webhook signing key (PROTOCOL.md 6.5 and 7.1): an Ed25519 key derived from the
 * app's secret (its `APP_KEY`), so every replica signs with the same key and it survives restarts
 * without a table; its `kid` is the JWK thumbprint (RFC 7638) of the public key. The same secret
 * signs the callback and claim tokens (HMAC-SHA256), which name the subscription, its generation
 * and wake, and expire.
 */
export class WebhookSigning {
  readonly #privateKey: KeyObject
  readonly #tokenKey: Buffer
  readonly jwk: Record<string, string>
  readonly kid: string

  constructor(secret: string) {
    const seed = createHmac('sha256', secret).update('durable-streams webhook signing').digest()
    // PKCS#8 of an Ed25519 private key: a fixed prefix and the 32-byte seed.
    const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed])
    this.#privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })
    const publicJwk = createPublicKey(this.#privateKey).export({ format: 'jwk' }) as {
      x: string
    }
    const thumbprint = createHash('sha256')
      .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x: publicJwk.x }))
      .digest('base64url')
    this.kid = `ds_${thumbprint.slice(0, 22)}`
    this.jwk = {
      kty: 'OKP',
      crv: 'Ed25519',
      x: publicJwk.x,
      kid: this.kid,
      use: 'sig',
      alg: 'EdDSA',
    }
    this.#tokenKey = createHmac('sha256', secret).update('durable-streams wake tokens').digest()
  }

  /** The JWK Set served at `__ds/jwks.json`. */
  jwks() {
    return { keys: [this.jwk] }
  }

  /** The `Webhook-Signature` header of `body` sent at `seconds` (Unix time). */
  signature(body: string, seconds: number): string {
    const signed = sign(null, Buffer.from(`${seconds}.${body}`), this.#privateKey)
    return `t=${seconds},kid=${this.kid},ed25519=${signed.toString('base64url')}`
  }

  /** A bearer token for one wake of one subscription, valid until `expiresAt` (epoch ms). */
  token(claims: WakeClaims): string {
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url')
    return `${payload}.${this.#mac(payload)}`
  }

  /** The claims of a token this server minted, or `null` (forged, malformed or expired at `now`). */
  verify(token: string | undefined, now: number): WakeClaims | null {
    if (!token) return null
    const [payload, mac, extra] = token.split('.')
    if (!payload || !mac || extra !== undefined) return null
    const want = Buffer.from(this.#mac(payload))
    const got = Buffer.from(mac)
    if (want.length !== got.length || !timingSafeEqual(want, got)) return null
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as WakeClaims
      return claims.exp > now ? claims : null
    } catch {
      return null
    }
  }

  #mac(payload: string) {
    return createHmac('sha256', this.#tokenKey).update(payload).digest('base64url')
  }
}

/** What a wake token names. */
export interface WakeClaims {
  sub: string
  gen: number
  wake: string
  exp: number
}
