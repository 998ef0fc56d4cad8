import type { Principal } from '../../core/run.js'
import type { DurableRecord, DurableStore } from '../../store/durable_store.js'
import type { RawReply } from '../answer.js'
import { dsRefusal } from '../read/headers.js'
import type { ChangeSource } from './waits.js'
import { expired } from './rules.js'

/** What may be done to a stream: the `authorize` hook's `action`. */
export type DurableAction = 'create' | 'append' | 'read' | 'delete'

/** Config `durableStreams.authorize`: who may act on which stream (default: its owner only). */
export type DurableAuthorize = (request: {
  principal: Principal | null
  path: string
  action: DurableAction
  /** The stream's owner (its creator's principal id, `null`: anonymous); none for a new stream. */
  owner?: string | null
}) => boolean | Promise<boolean>

/** What the write path works with. */
export interface WriteContext {
  store: DurableStore
  changes: ChangeSource
  authorize?: DurableAuthorize
  /**
   * Messages were appended to the stream at `path` (its door path, `/v1/stream/...`) after
   * row `afterSeq`, and committed (the subscriptions' hook). Never throws.
   */
  appended?: (path: string, afterSeq: number) => void
}

/** A request of the write path, as its handlers take it. */
export interface WriteRequest {
  path: string
  principal: Principal | null
  headers: Record<string, string | undefined>
  bytes: Uint8Array
  /** The full URL asked (a new stream's `Location`). */
  url?: string
}

export const notFound = () => dsRefusal(404, 'not_found', 'No such stream.')
export const gone = () =>
  dsRefusal(410, 'stream_gone', 'The stream was deleted; forks of it remain.')

/**
 * Whether `principal` may do `action` on the stream at `path`: the config's hook, else the
 * rule of every door (the stream belongs to whoever created it; anonymous streams to every
 * anonymous caller).
 */
export async function allowed(
  ctx: WriteContext,
  request: Pick<WriteRequest, 'path' | 'principal'>,
  action: DurableAction,
  owner?: string | null
): Promise<boolean> {
  if (ctx.authorize) {
    return (
      (await ctx.authorize({ principal: request.principal, path: request.path, action, owner })) ===
      true
    )
  }
  if (owner === undefined) return true
  return owner === (request.principal?.id ?? null)
}

/**
 * The stream `runId` as a request may use it: 404 when there is none, it expired (an expired
 * stream without forks is removed here, one with forks is soft-deleted) or it is another's (like
 * a missing one); 410 when it is soft-deleted.
 */
export async function usable(
  ctx: WriteContext,
  request: Pick<WriteRequest, 'path' | 'principal'>,
  runId: string,
  action: DurableAction
): Promise<DurableRecord | RawReply> {
  const record = await ctx.store.find(runId)
  if (!record) return notFound()
  if (!(await allowed(ctx, request, action, record.owner))) return notFound()
  if (record.softDeleted) return gone()
  if (expired(record.expiresAt)) {
    await expire(ctx, runId)
    return notFound()
  }
  return record
}

/** Remove an expired stream (soft-delete it while forks read it). */
export async function expire(ctx: WriteContext, runId: string) {
  await ctx.store.transaction(async (tx) => {
    const locked = await tx.lock(runId)
    if (!locked || !expired(locked.expiresAt)) return
    await removeStream(tx, locked)
  })
}

/**
 * Delete a stream: soft while forks of it remain (410 from then on), else for good, and then
 * its source too when that was soft-deleted and this was its last fork (cascading).
 */
export async function removeStream(
  tx: Parameters<Parameters<DurableStore['transaction']>[0]>[0],
  record: DurableRecord
) {
  if (await tx.hasForks(record.runId)) {
    await tx.update(record.runId, { soft_deleted: true })
    await tx.notify(record.runId)
    return
  }
  await tx.remove(record.runId)
  let source = record.forkSource
  while (source) {
    const parent = await tx.lock(source)
    if (!parent || !parent.softDeleted || (await tx.hasForks(parent.runId))) return
    await tx.remove(parent.runId)
    source = parent.forkSource
  }
}
