import { randomUUID } from 'node:crypto'
import vine from '@vinejs/vine'
import type { HttpContext } from '@adonisjs/core/http'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { AgUiDoor } from '../agui/door/index.js'
import { clientRunId } from '../agui/door/input.js'
import { ownedBy, ownerOf } from '../core/owner.js'
import type { ResolvedAgentStreamConfig } from '../define_config.js'
import { RUN_ID, isRunId, type StreamFrame } from '../core/frames.js'
import { parseCursor, type Cursor } from '../core/cursor.js'
import { publicFrame } from '../core/projection.js'
import { isWellFormedDeep } from '../core/text.js'
import { describeIssues, issuesOf } from '../errors.js'
import { DEPTH_ISSUE, tooDeep } from '../core/json_depth.js'
import { REPLICA_SHUTDOWN, sendRefusal } from './refusal.js'
import { resolvePrincipal, type PrincipalResolver } from './principal.js'
import { cursorOf } from './cursor_of.js'
import { admit, type RequestLimits } from './limits.js'
import { serveChunks } from './sse.js'
import { notFound } from '../door/refusals.js'
import { THREAD_TAKEN, TURN_TAKEN } from '../runner/door_runs.js'
import { NO_QUEUE } from '../runner/run_queue.js'
import { MULTITASK_STRATEGIES, queueFull, threadBusy, turnLost } from '../door/multitask.js'
import type { Chunk } from './agui_encoding.js'

/** Another person's thread, or one claimed first by another: answered like a missing one. */
const NO_SUCH_THREAD = notFound('No such thread')

const startValidator = vine.compile(
  vine.object({
    message: vine.string().minLength(1).maxLength(32_768),
    threadId: vine.string().regex(RUN_ID).optional(),
    runId: clientRunId().optional(),
    multitaskStrategy: vine.enum(MULTITASK_STRATEGIES).optional(),
  })
)

/** What the native stream routes need of the package's service. */
export interface StreamRoutesDeps {
  sink: LucidTokenStreamSink
  door: AgUiDoor
  config: ResolvedAgentStreamConfig
}

/**
 * The native stream routes of the sink SPI (docs/design.md, "The native HTTP surface"): start a
 * run (`POST`, JSON `{ message, threadId?, runId? }` -> 201 `{ runId, threadId }`; 503
 * `replica_shutdown` with `Retry-After` on a draining replica; the body guard's 415, 413 and 400
 * for a body that is not JSON, `body_guard.ts`; 422 `invalid_input` naming the rule, also
 * `maxDepth`), and read it
 * as SSE from a cursor (`GET ...?after=` or `Last-Event-ID`, the query wins): every frame with
 * `id:` = its cursor, errors as `event: error` with `{ code, message }`; 404 when there is
 * nothing to resume (or it is someone else's run); 400 `invalid_cursor` for a cursor this
 * package did not mint or one past the stream's stored head.
 */
export class StreamController {
  constructor(
    readonly agentStream: StreamRoutesDeps,
    readonly options: {
      principal?: PrincipalResolver
      heartbeatMs?: number
      limits?: RequestLimits
    } = {}
  ) {}

  async start(ctx: HttpContext) {
    // A draining replica starts nothing: the client retries on another one.
    if (this.agentStream.door.driver.draining) return sendRefusal(ctx.response, REPLICA_SHUTDOWN)
    const invalid = (issues: { field: string; rule: string }[]) =>
      ctx.response.status(422).json({
        code: 'invalid_input',
        message: describeIssues('Invalid start body', issues.slice(0, 1)),
      })
    let body: Awaited<ReturnType<typeof startValidator.validate>>
    try {
      if (tooDeep(ctx.request.body())) return invalid([DEPTH_ISSUE])
      // The message reaches the runner and may come back in frames: no lone surrogate.
      if (!isWellFormedDeep(ctx.request.body())) {
        return invalid([{ field: '', rule: 'wellFormedUnicode' }])
      }
      body = await startValidator.validate(ctx.request.body())
    } catch (error) {
      const issues = issuesOf(error)
      if (!issues) throw error
      return invalid(issues)
    }
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const limited = await admit(this.options.limits, principal, { runStart: true })
    if ('refused' in limited) return sendRefusal(ctx.response, limited.refused)
    const runId = body.runId ?? randomUUID()
    const threadId = body.threadId ?? runId
    const { door } = this.agentStream
    // A thread is its owner's: another person's answers like a missing one; a thread waiting
    // for answers takes no new run.
    const thread = await door.thread(threadId, principal)
    if (!thread) return sendRefusal(ctx.response, NO_SUCH_THREAD)
    if (thread.pending.length > 0) {
      return ctx.response
        .status(409)
        .json({ code: 'interrupt_pending', message: 'This thread is waiting for answers' })
    }
    const run = { runId, threadId, ownerId: ownerOf(principal) }
    // A thread whose run talks: the AG-UI door's busy-thread policy, or the body's.
    const busy = await door.busyWith(thread.latest)
    const strategy = body.multitaskStrategy ?? door.options.multitaskStrategy ?? 'reject'
    const enqueue = async () => {
      const start = { run, input: { message: body.message }, principal, said: null }
      const queued = await door.queue.enqueue(start)
      if (queued === NO_QUEUE) return null
      if ('full' in queued) return sendRefusal(ctx.response, queueFull(door.queue.maxPerThread))
      return ctx.response.status(202).json({ runId, threadId, queued: queued.position })
    }
    if (busy && strategy === 'enqueue' && !(await door.runs.find(runId))) {
      const queued = await enqueue()
      if (queued !== null) return queued
    }
    if (busy) return sendRefusal(ctx.response, threadBusy(busy))
    const after = thread.latest?.runId ?? null
    const started = await door.startRun(run, { message: body.message }, principal, after)
    // Another message's run started first: the thread is busy with it (queued behind it when
    // `enqueue` was asked).
    if (started === TURN_TAKEN) {
      const queued = strategy === 'enqueue' ? await enqueue() : null
      return queued ?? sendRefusal(ctx.response, turnLost(await door.runs.latest(threadId)))
    }
    // Another principal's claim on the thread landed first: answered like another's thread.
    if (started === THREAD_TAKEN) return sendRefusal(ctx.response, NO_SUCH_THREAD)
    if (!started) {
      return ctx.response
        .status(409)
        .json({ code: 'run_id_used', message: 'This run id is already used' })
    }
    return ctx.response.status(201).json({ runId, threadId })
  }

  async stream(ctx: HttpContext) {
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const runId = String(ctx.params.runId)
    const { runs } = this.agentStream.door
    const run = isRunId(runId) ? await runs.find(runId) : null
    if (
      !run ||
      run.streamRunId !== runId ||
      !ownedBy(run, principal) ||
      !(await this.agentStream.sink.has(runId))
    ) {
      return ctx.response.status(404).json({ code: 'not_found', message: 'Nothing to resume' })
    }
    const after = cursorOf(ctx)
    const invalid = () =>
      ctx.response.status(400).json({ code: 'invalid_cursor', message: 'Invalid cursor' })
    let start: Cursor
    try {
      start = parseCursor(after)
    } catch {
      return invalid()
    }
    // Past the stored head: no replica gave it; followed, it would skip what comes (the AG-UI
    // door answers alike).
    if (await this.agentStream.sink.beyondHead(runId, start)) return invalid()
    const limited = await admit(this.options.limits, principal, { stream: true })
    if ('refused' in limited) return sendRefusal(ctx.response, limited.refused)
    try {
      await this.#serve(ctx, runId, after)
    } finally {
      limited.admitted.release()
    }
  }

  async #serve(ctx: HttpContext, runId: string, after: string | undefined) {
    const controller = new AbortController()
    const frames = this.agentStream.sink.subscribe(runId, { after, signal: controller.signal })
    // The same projection as the AG-UI door (invariant 8, docs/design.md).
    const rules = this.agentStream.config.agui
    async function* chunks(): AsyncGenerator<Chunk> {
      for await (const { cursor, ...frame } of frames) {
        const served = publicFrame(frame as StreamFrame, rules)
        if (!served) continue
        yield served.t === 'error'
          ? `id: ${cursor}\nevent: error\ndata: ${JSON.stringify({ code: served.code, message: served.message })}\n\n`
          : `id: ${cursor}\ndata: ${JSON.stringify(served)}\n\n`
      }
    }
    await serveChunks(ctx.request.request, ctx.response.response, chunks(), {
      heartbeatMs: this.options.heartbeatMs,
      controller,
      headers: ctx.response.getHeaders(),
    })
  }
}
