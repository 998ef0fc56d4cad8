import vine from '@vinejs/vine'
import { DateTime } from 'luxon'
import { isRunId } from '../core/frames.js'
import type { Principal } from '../core/run.js'
import { describeIssues, issuesOf, type ValidationIssue } from '../errors.js'
import type { ThreadKey, ThreadList, ThreadSummary } from '../store/thread_list.js'
import { UNAUTHENTICATED, type Refusal } from './refusal.js'
import type { JsonAnswer } from './door_routes.js'

/**
 * A person's chats (`GET <prefix>/chat`) and threads (`GET <prefix>/agui/threads`), the one rule
 * both transports (the AdonisJS routes and the Fetch-API handlers) answer with: who asks, the
 * query (`limit`, `cursor`), one keyset page of `ThreadList`, and its JSON body.
 */

/** Threads per page: `limit` when given (1 to `maxLimit`), else `limit` here. */
export const THREAD_PAGE_LIMITS = { limit: 20, maxLimit: 100 } as const

/** The headers of a list: it is one person's, never stored by a shared cache. */
export const THREAD_PAGE_HEADERS = { 'cache-control': 'private, no-store' } as const

const queryValidator = vine.compile(
  vine
    .object({
      limit: vine.number().withoutDecimals().range([1, THREAD_PAGE_LIMITS.maxLimit]).optional(),
      cursor: vine
        .string()
        .regex(/^[A-Za-z0-9_-]{1,400}$/)
        .optional(),
    })
    // Unknown parameters (a cache buster) change nothing.
    .allowUnknownProperties()
)

const invalidQuery = (issues: ValidationIssue[]): Refusal => ({
  status: 422,
  code: 'invalid_query',
  message: describeIssues('Invalid list query', issues, '(query)'),
})

/** A page's next cursor: the last thread's key as URL-safe base64 JSON. */
const encodeKey = (thread: ThreadSummary) =>
  Buffer.from(JSON.stringify([thread.updatedAt, thread.threadId])).toString('base64url')

function decodeKey(token: string): ThreadKey | null {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'))
  } catch {
    return null
  }
  if (!Array.isArray(value) || value.length !== 2) return null
  const [updatedAt, threadId] = value as unknown[]
  const ok = Number.isSafeInteger(updatedAt) && (updatedAt as number) >= 0 && isRunId(threadId)
  return ok ? { updatedAt: updatedAt as number, threadId } : null
}

/** One page of a person's threads, and the cursor of the next (`null` on the last page). */
export interface ThreadPage {
  threads: ThreadSummary[]
  next: string | null
}

/**
 * The page `query` asks for, of `principal`'s threads. Refused (nothing read): 401
 * `unauthenticated` without a principal; 422 `invalid_query` naming the field and rule (`limit`:
 * `number`, `withoutDecimals`, `range`; `cursor`: `regex`, or `pageKey` for one this list never
 * gave), never the value.
 */
export async function threadPage(
  list: ThreadList,
  query: Record<string, unknown>,
  principal: Principal | null
): Promise<{ refused: Refusal } | { page: ThreadPage }> {
  if (!principal) return { refused: UNAUTHENTICATED }
  let valid: { limit?: number; cursor?: string }
  try {
    valid = await queryValidator.validate(query)
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    return { refused: invalidQuery(issues.slice(0, 1)) }
  }
  const before = valid.cursor === undefined ? undefined : decodeKey(valid.cursor)
  if (before === null) return { refused: invalidQuery([{ field: 'cursor', rule: 'pageKey' }]) }
  const limit = valid.limit ?? THREAD_PAGE_LIMITS.limit
  const threads = await list.page(principal.id, { before, limit: limit + 1 })
  const more = threads.length > limit
  if (more) threads.length = limit
  return { page: { threads, next: more ? encodeKey(threads.at(-1)!) : null } }
}

const iso = (ms: number) => DateTime.fromMillis(ms, { zone: 'utc' }).toISO()!

/**
 * A page as JSON: `{ chats: [{ chatId, title?, createdAt, updatedAt, status }], next }` for the
 * useChat door, `{ threads: [{ threadId, ... }], next }` for AG-UI; times as ISO 8601 (UTC).
 */
export function threadPageBody(page: ThreadPage, door: 'chat' | 'agui') {
  const items = page.threads.map((thread) => ({
    ...(door === 'chat' ? { chatId: thread.threadId } : { threadId: thread.threadId }),
    ...(thread.title === null ? {} : { title: thread.title }),
    createdAt: iso(thread.createdAt),
    updatedAt: iso(thread.updatedAt),
    status: thread.status,
  }))
  return door === 'chat' ? { chats: items, next: page.next } : { threads: items, next: page.next }
}

/**
 * The whole answer, for either transport: the page as JSON, or the refusal as JSON `{ code,
 * message }` with its status; both with {@link THREAD_PAGE_HEADERS}.
 */
export async function threadPageAnswer(
  list: ThreadList,
  query: Record<string, unknown>,
  principal: Principal | null,
  door: 'chat' | 'agui'
): Promise<JsonAnswer> {
  const answer = await threadPage(list, query, principal)
  const headers = THREAD_PAGE_HEADERS
  if ('refused' in answer) {
    const { status, code, message } = answer.refused
    return { kind: 'json', status, body: { code, message }, headers }
  }
  return { kind: 'json', body: threadPageBody(answer.page, door), headers }
}
