import vine from '@vinejs/vine'
import { InvalidDecisionError, issuesOf, type ValidationIssue } from '../../errors.js'
import type { QueueFilter, QueueKey } from '../../parking/queue.js'

/**
 * The queue's and the history's filters as a query string, and back: validated with VineJS
 * before any query runs; a refused one names the field and rule, never the value.
 */

const HOUR = 3_600_000
const text = (max: number) => vine.string().trim().minLength(1).maxLength(max).optional()

const filterValidator = vine.compile(
  vine
    .object({
      order: vine.enum(['newest', 'oldest']).optional(),
      status: vine.enum(['approved', 'rejected', 'answered', 'expired', 'cancelled']).optional(),
      tool: text(191),
      approver: text(191),
      thread: text(191),
      run: text(191),
      age: vine.enum(['lt1h', '1h-1d', 'gt1d']).optional(),
      via: vine.enum(['chat', 'admin', 'api', 'expiry', 'cancel', 'system']).optional(),
      by: text(191),
      reason: text(200),
      after: vine
        .string()
        .regex(/^[A-Za-z0-9_-]{1,1400}$/)
        .optional(),
      notice: vine.string().maxLength(64).optional(),
    })
    // Unknown parameters (a tracker's `utm_*`) change nothing.
    .allowUnknownProperties()
)

/** The filters of a console list as the query string gave them (every field optional). */
export interface ListQuery {
  order: 'newest' | 'oldest'
  status?: 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled'
  tool?: string
  approver?: string
  thread?: string
  run?: string
  age?: 'lt1h' | '1h-1d' | 'gt1d'
  via?: 'chat' | 'admin' | 'api' | 'expiry' | 'cancel' | 'system'
  by?: string
  reason?: string
  after?: QueueKey
  notice?: string
}

/** The names of the fields that narrow a list (all but order, paging and notice). */
export const FILTER_FIELDS = [
  'status',
  'tool',
  'approver',
  'thread',
  'run',
  'age',
  'via',
  'by',
  'reason',
] as const

/** A page key as a URL-safe token (base64url JSON), and back. */
export const encodeKey = (key: QueueKey) =>
  Buffer.from(JSON.stringify([key.at, key.kind, key.runId, key.park, key.itemId])).toString(
    'base64url'
  )

function decodeKey(token: string): QueueKey {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'))
  } catch {
    value = null
  }
  const ok =
    Array.isArray(value) &&
    value.length === 5 &&
    Number.isSafeInteger(value[0]) &&
    (value[1] === 'approval' || value[1] === 'elicitation') &&
    typeof value[2] === 'string' &&
    value[2].length <= 191 &&
    Number.isSafeInteger(value[3]) &&
    typeof value[4] === 'string' &&
    value[4].length <= 191
  if (!ok) throw new InvalidDecisionError([{ field: 'after', rule: 'pageKey' }])
  const [at, kind, runId, park, itemId] = value as [
    number,
    QueueKey['kind'],
    string,
    number,
    string,
  ]
  return { at, kind, runId, park, itemId }
}

/**
 * A list's query string, validated.
 * @throws InvalidDecisionError naming each field and rule (`pageKey` for a forged page key)
 */
export async function parseListQuery(qs: Record<string, unknown>): Promise<ListQuery> {
  let out: Awaited<ReturnType<typeof filterValidator.validate>>
  // An empty field (a form's blank select) means no filter.
  const given = Object.fromEntries(Object.entries(qs).filter(([, v]) => v !== '' && v !== null))
  try {
    out = await filterValidator.validate(given)
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    throw new InvalidDecisionError(issues)
  }
  const { after, ...rest } = out
  return {
    ...rest,
    order: out.order ?? 'newest',
    ...(after === undefined ? {} : { after: decodeKey(after) }),
  } as ListQuery
}

/** The issues of a refused query string, or null for any other error. */
export const queryIssues = (error: unknown): ValidationIssue[] | null =>
  error instanceof InvalidDecisionError ? ((error as any).issues ?? null) : null

/** The store filter a query means, for `view`, at `now` (epoch ms). */
export function storeFilter(view: 'pending' | 'decided', q: ListQuery, now: number): QueueFilter {
  const age =
    q.age === 'lt1h'
      ? { askedFrom: now - HOUR }
      : q.age === '1h-1d'
        ? { askedFrom: now - 24 * HOUR, askedUntil: now - HOUR }
        : q.age === 'gt1d'
          ? { askedUntil: now - 24 * HOUR }
          : {}
  return {
    view,
    ...(view === 'decided' && q.status ? { status: q.status } : {}),
    ...(q.tool ? { tool: q.tool } : {}),
    ...(q.approver ? { approver: q.approver } : {}),
    ...(q.thread ? { threadId: q.thread } : {}),
    ...(q.run ? { runId: q.run } : {}),
    ...age,
    ...(q.age ? { age: q.age } : {}),
    ...(view === 'decided' && q.via ? { via: q.via } : {}),
    ...(view === 'decided' && q.by ? { decidedBy: q.by } : {}),
    ...(view === 'decided' && q.reason ? { reason: q.reason } : {}),
  }
}

/** The query string of `q` with `change` applied (undefined removes a field), paging reset unless given. */
export function listHref(
  path: string,
  q: ListQuery,
  change: Partial<Record<string, string | undefined>> = {}
) {
  const params = new URLSearchParams()
  const fields: Record<string, string | undefined> = {
    order: q.order === 'newest' ? undefined : q.order,
    ...Object.fromEntries(FILTER_FIELDS.map((f) => [f, q[f] as string | undefined])),
  }
  for (const [k, v] of Object.entries({ ...fields, ...change })) {
    if (v !== undefined && v !== '') params.set(k, v)
  }
  const query = params.toString()
  return query ? `${path}?${query}` : path
}
