import { createHash } from 'node:crypto'
import { RUN_ID } from '../core/frames.js'
import { InvalidAgUiIdError } from '../errors.js'

/**
 * The one grammar for every id the AG-UI door mints (docs/design.md, "Ids"):
 *
 *   <runId>/<kind>/<n>/<address>
 *
 * - `runId`: the stream's run id (`[A-Za-z0-9_:.-]{1,191}`, never a `/`);
 * - `kind`: one of {@link AGUI_ID_KINDS};
 * - `n`: a canonical decimal (no leading zeros): an ordinal derived from stored positions;
 * - `address`: where the entity lives (a sub-agent path, a tool-call id), each segment with every
 *   UTF-8 byte outside `[A-Za-z0-9._-]` percent-encoded in upper-case hex, joined by `/`; the
 *   empty address is `~`, which no encoded segment can be.
 *
 * Injective: the first three fields hold no `/`, the address's `/` are exactly its separators,
 * and {@link decodeAgUiId} is a left inverse of {@link encodeAgUiId}. Ids are derived from stored
 * positions only, so one entity has one id live, on replay, on every replica, after a restart.
 */
export const AGUI_ID_KINDS = ['msg', 'tool', 'res', 'step', 'sub', 'rsn', 'int', 'act'] as const
export type AgUiIdKind = (typeof AGUI_ID_KINDS)[number]

/** Longest id minted, in characters. Longer is refused, never truncated (truncation collides). */
export const AGUI_ID_MAX_LENGTH = 1024

export interface AgUiIdParts {
  runId: string
  kind: AgUiIdKind
  n: number
  address: string[]
}

const UNRESERVED = /^[A-Za-z0-9._-]$/
const N = /^(0|[1-9][0-9]{0,15})$/
const EMPTY = '~'
const utf8 = new TextEncoder()
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

function encodeSegment(segment: string) {
  if (!segment.isWellFormed()) throw new InvalidAgUiIdError('an address holds a lone surrogate')
  let out = ''
  for (const char of segment) {
    if (UNRESERVED.test(char)) {
      out += char
      continue
    }
    for (const byte of utf8.encode(char))
      out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/**
 * Spell an id.
 *
 * @throws InvalidAgUiIdError for a run id outside the grammar, an ordinal that is not a safe
 *   non-negative integer, a lone surrogate in the address, or a result over
 *   {@link AGUI_ID_MAX_LENGTH} characters (the error names the rule, never the value)
 */
export function encodeAgUiId(parts: AgUiIdParts): string {
  if (!RUN_ID.test(parts.runId)) throw new InvalidAgUiIdError('the run id is outside the grammar')
  if (!AGUI_ID_KINDS.includes(parts.kind)) throw new InvalidAgUiIdError('unknown kind')
  if (!Number.isSafeInteger(parts.n) || parts.n < 0)
    throw new InvalidAgUiIdError('the ordinal must be a non-negative integer')
  const address = parts.address.length === 0 ? EMPTY : parts.address.map(encodeSegment).join('/')
  const id = `${parts.runId}/${parts.kind}/${parts.n}/${address}`
  if (id.length > AGUI_ID_MAX_LENGTH) {
    throw new InvalidAgUiIdError(`longer than ${AGUI_ID_MAX_LENGTH} characters`)
  }
  return id
}

function decodeSegment(segment: string): string | null {
  const bytes: number[] = []
  for (let i = 0; i < segment.length; i++) {
    const char = segment[i]
    if (char === '%') {
      const hex = segment.slice(i + 1, i + 3)
      if (!/^[0-9A-F]{2}$/.test(hex)) return null
      bytes.push(Number.parseInt(hex, 16))
      i += 2
    } else if (UNRESERVED.test(char)) {
      bytes.push(char.charCodeAt(0))
    } else {
      return null
    }
  }
  try {
    return strictUtf8.decode(new Uint8Array(bytes))
  } catch {
    return null
  }
}

/**
 * Read an id back; `null` for anything {@link encodeAgUiId} cannot have produced (so decoding
 * never accepts two spellings of one id).
 */
export function decodeAgUiId(id: string): AgUiIdParts | null {
  if (typeof id !== 'string' || id.length > AGUI_ID_MAX_LENGTH) return null
  const first = id.indexOf('/')
  const second = id.indexOf('/', first + 1)
  const third = id.indexOf('/', second + 1)
  if (first < 0 || second < 0 || third < 0) return null
  const runId = id.slice(0, first)
  const kind = id.slice(first + 1, second) as AgUiIdKind
  const n = id.slice(second + 1, third)
  const rest = id.slice(third + 1)
  if (!RUN_ID.test(runId) || !AGUI_ID_KINDS.includes(kind) || !N.test(n)) return null
  let address: string[]
  if (rest === EMPTY) {
    address = []
  } else {
    address = []
    for (const segment of rest.split('/')) {
      const decoded = decodeSegment(segment)
      if (decoded === null) return null
      address.push(decoded)
    }
  }
  const parts = { runId, kind, n: Number(n), address }
  // Canonical form only: re-encoding must give the same string.
  try {
    return encodeAgUiId(parts) === id ? parts : null
  } catch {
    return null
  }
}

/**
 * The prefix of every AG-UI run id the door mints for itself (a parked run's continuation). No
 * client may start a run with an id that has it (`input.ts`, the native start route), so an id
 * the server will need can never be taken first.
 */
export const MINTED_RUN_ID_PREFIX = 'agent-stream:'

/** Whether `runId` is in the door's own namespace ({@link MINTED_RUN_ID_PREFIX}). */
export const isMintedRunId = (runId: string) => runId.startsWith(MINTED_RUN_ID_PREFIX)

/**
 * The AG-UI run id of the continuation of a stream's segment that ended at seq `end` (the run
 * went on because someone answered elsewhere): the same on every replica, in the door's own
 * namespace, within the run id grammar (at most 70 characters).
 */
export function continuationRunId(streamRunId: string, end: number): string {
  const digest = createHash('sha256').update(streamRunId).digest('hex').slice(0, 40)
  return `${MINTED_RUN_ID_PREFIX}${digest}.r${end}`
}
