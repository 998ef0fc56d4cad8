/**
 * What an AG-UI client can parse, by the `@ag-ui/client` version it runs (its `@ag-ui/core`
 * schemas, checked side by side in tests/agui_client_versions.spec.ts):
 *
 * | from version | what its `EventSchema` takes that an older one refuses |
 * | --- | --- |
 * | 0.0.57 | the oldest served: no `SUBAGENT_*` event; `RUN_FINISHED.outcome` strictly `success` (no other key) or `interrupt` |
 * | 0.0.59 | `SUBAGENT_STARTED` / `SUBAGENT_FINISHED` / `SUBAGENT_ERROR` |
 * | 1.0.0 | `outcome.pendingToolCallIds` on a success, the `cancelled` outcome |
 *
 * CopilotKit 1.61 runs on 0.0.57, 1.75 on 0.0.59. A version below 0.0.57 is served as 0.0.57.
 */

/** What the door leaves out or maps for one client (`forClient`). */
export interface ClientProfile {
  /** The version the profile is for, as declared (or configured). */
  version: string
  /** `SUBAGENT_*` events are sent (0.0.59 and later); else left out. */
  subagentEvents: boolean
  /** `outcome: { type: 'cancelled' }` is sent (1.0.0); else the run ends as a plain `RUN_FINISHED`. */
  cancelledOutcome: boolean
  /** `outcome.pendingToolCallIds` is sent (1.0.0); else the success outcome goes without it. */
  pendingToolCallIds: boolean
}

/** The request header a client declares its `@ag-ui/client` version in. */
export const CLIENT_VERSION_HEADER = 'x-ag-ui-client-version'

/** The version served when a request declares none and the door is not told otherwise. */
export const DEFAULT_CLIENT_VERSION = '0.0.57'

const VERSION = /^v?(\d{1,6})\.(\d{1,6})\.(\d{1,6})(?:[-+][0-9A-Za-z.+-]{0,64})?$/

/** `a` compared with `b`, each `[major, minor, patch]`. */
function compare(a: number[], b: number[]) {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i]
  return 0
}

/**
 * The profile of `@ag-ui/client` `version` (`MAJOR.MINOR.PATCH`, a pre-release or build suffix
 * ignored); `null` when `version` is not one.
 */
export function clientProfile(version: string): ClientProfile | null {
  const match = VERSION.exec(version.trim())
  if (!match) return null
  const at = match.slice(1, 4).map(Number)
  const since = (v: number[]) => compare(at, v) >= 0
  return {
    version: version.trim(),
    subagentEvents: since([0, 0, 59]),
    cancelledOutcome: since([1, 0, 0]),
    pendingToolCallIds: since([1, 0, 0]),
  }
}

/** `version`'s `MAJOR.MINOR.PATCH` (its suffix dropped), `null` when it is not a version. */
const numbersOf = (version: string) =>
  VERSION.exec(version.trim())?.slice(1, 4).map(Number).join('.')

/**
 * The profile a request's `X-AG-UI-Client-Version` header declares. A header sent more than once
 * reaches the door as one value joined with `, ` (Node and the Fetch API alike: a proxy, or a page
 * whose `fetch` appends it to headers that had it already, sends it twice): the same version
 * declared more than once (by its `MAJOR.MINOR.PATCH`) is that version, the first as declared.
 * Else the rule the header breaks: `invalid` (a value that is not a version, or none),
 * `conflicting` (two different versions: which one the client runs is not known).
 */
export function declaredProfile(header: string): ClientProfile | 'invalid' | 'conflicting' {
  const values = header.split(',')
  const numbers = values.map(numbersOf)
  if (numbers.some((n) => n === undefined)) return 'invalid'
  if (numbers.some((n) => n !== numbers[0])) return 'conflicting'
  return clientProfile(values[0]) ?? 'invalid'
}
