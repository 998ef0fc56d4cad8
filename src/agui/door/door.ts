import { createHash } from 'node:crypto'
import { EventType, type Message } from '@ag-ui/core'
import vine from '@vinejs/vine'
import type { LucidTokenStreamSink } from '../../sink/lucid_sink.js'
import { formatCursor, parseCursor, compareCursors, type Cursor } from '../../core/cursor.js'
import { isRunId, type StreamFrame } from '../../core/frames.js'
import type { RunDriver } from '../../runner/driver.js'
import type { ParkingService } from '../../parking/service.js'
import type { ItemRow } from '../../parking/parking_store.js'
import type { PendingItem } from '../../parking/types.js'
import type { Principal } from '../../core/run.js'
import { validateDecision, validateReply } from '../../parking/replies.js'
import { decodeAgUiId, encodeAgUiId } from '../ids.js'
import { FrameTranslator, type AgUiEvent, type TranslatorOptions } from '../translate/translator.js'
import {
  InvalidAgUiInputError,
  newInput,
  resumeHash,
  validateAgUiInput,
  type AgUiInput,
  type AgUiResumeEntry,
} from './input.js'
import type { AgUiRun, AgUiRunStore } from './runs.js'

/** Options of the AG-UI door: the translator's, plus input and connection settings. */
export interface AgUiDoorOptions extends Omit<TranslatorOptions, 'streamRunId'> {
  /** Cap on a `RunAgentInput` body, in bytes. Default 1048576 (1 MiB). */
  maxBodyBytes?: number
  /** Cancel the run when its client disconnects (off: it runs on, re-attach later). Default false. */
  abortOnDisconnect?: boolean
  /**
   * Frontend tools: the client's `tools` reach the runner (`input.tools`); a call the agent makes
   * to one ends the run with `pendingToolCallIds`, and the next input's `tool` message is accepted
   * for such a call only (`input.toolResults`). Default false.
   */
  frontendTools?: boolean
  /**
   * Send `MESSAGES_SNAPSHOT` before each `RUN_FINISHED`: the thread's whole transcript (each
   * run's user message, under the client's id, and what the agent wrote). The 1.0 client drops
   * local messages a snapshot leaves out. Default false.
   */
  messagesSnapshot?: boolean
}

/** One event to send, with the SSE `id:` (the stream cursor) when it is a frame's last event. */
export interface SseItem {
  event: AgUiEvent
  id?: string
}

/**
 * The stable codes of refusals sent as `RUN_ERROR` once the stream is open (AG-UI interrupts
 * rules 1-8, agui-conformance.md 2c/2d). A refused input changes no row.
 */
export type AgUiRefusalCode =
  | 'interrupt_pending'
  | 'no_pending_interrupt'
  | 'unknown_interrupt'
  | 'duplicate_interrupt'
  | 'incomplete_resume'
  | 'invalid_resume_payload'
  | 'interrupt_expired'
  | 'not_allowed'
  | 'run_id_used'
  | 'run_active'
  | 'decision_conflict'
  | 'interrupt_decided'
  | 'unknown_tool_call'

const REFUSALS: Record<AgUiRefusalCode, string> = {
  interrupt_pending: 'This thread is waiting for answers: resume it with every open interrupt.',
  no_pending_interrupt: 'This thread has no open interrupt to resume.',
  unknown_interrupt: 'A resume entry names an interrupt this thread does not have open.',
  duplicate_interrupt: 'A resume entry names the same interrupt twice.',
  incomplete_resume: 'A resume must answer every open interrupt of the thread.',
  invalid_resume_payload: "A resume payload does not match its interrupt's responseSchema.",
  interrupt_expired: 'An interrupt expired: it can only be cancelled.',
  not_allowed: 'You may not answer one of these interrupts.',
  run_id_used: 'This run id is already used.',
  run_active: 'The run is still writing: resume once it has finished.',
  decision_conflict: 'Someone else answered these interrupts first.',
  unknown_tool_call: 'A tool message answers no call this thread is waiting for.',
  interrupt_decided:
    'These interrupts were answered elsewhere: attach to the thread to follow the run.',
}

/** What the door answers: a refusal before the stream opens, or the stream of events. */
export type DoorReply =
  | { kind: 'refused'; status: 400 | 404 | 413; code: string; message: string }
  | { kind: 'stream'; events: AsyncIterable<SseItem>; streamRunId?: string }

const approvalPayload = vine.compile(
  vine.object({
    approved: vine.boolean({ strict: true }),
    reason: vine.string().maxLength(2000).optional(),
    editedArgs: vine.record(vine.any()).optional(),
  })
)

interface Planned {
  item: PendingItem
  entry: AgUiResumeEntry
  /** The reply, validated, as the parking service takes it. */
  apply: () => Promise<unknown>
}

/**
 * The AG-UI 1.0 door (DESIGN.md section 5): a `RunAgentInput` starts a run or resumes a parked
 * one; any AG-UI run re-attaches from a cursor. Each AG-UI run is one segment of a stream (the
 * frames between two parks), translated by {@link FrameTranslator}. Everything is checked before
 * anything is written: a refusal changes no row.
 */
export class AgUiDoor {
  constructor(
    readonly sink: LucidTokenStreamSink,
    readonly driver: RunDriver,
    readonly parking: ParkingService,
    readonly runs: AgUiRunStore,
    readonly options: AgUiDoorOptions = {}
  ) {}

  /**
   * `POST`: a new run (the newest user message is its input) or a resume (`resume[]` answers
   * every open interrupt of the thread). `signal` ends the stream when the client goes away.
   */
  async run(body: unknown, principal: Principal | null, signal?: AbortSignal): Promise<DoorReply> {
    let input: AgUiInput
    let fresh: ReturnType<typeof newInput> = { text: null, toolResults: [] }
    try {
      input = await validateAgUiInput(body, this.options.maxBodyBytes)
      if (!input.resume?.length) fresh = newInput(input)
      if (fresh.toolResults.length > 0 && !this.options.frontendTools) {
        throw new InvalidAgUiInputError(400, 'invalid_input', 'Frontend tools are off')
      }
    } catch (error) {
      if (error instanceof InvalidAgUiInputError)
        return { kind: 'refused', status: error.status, code: error.code, message: error.message }
      throw error
    }
    const owner = principal?.id ?? null
    const thread = await this.thread(input.threadId, principal)
    if (!thread) return notFound()
    const { latest, pending } = thread
    const hash = input.resume?.length ? resumeHash(input.threadId, input.resume) : null
    const used = await this.runs.find(input.runId)
    if (used) {
      if (hash && used.resumeHash === hash && used.ownerId === owner)
        return this.#stream(used, undefined, signal)
      return refusal('run_id_used')
    }
    if (!input.resume?.length) {
      if (pending.length > 0) return refusal('interrupt_pending')
      // A tool result answers only a call to a client tool the server recorded as pending.
      const toolResults: { id: string; name: string; content: string }[] = []
      if (fresh.toolResults.length > 0) {
        const open = new Map(
          (latest ? await this.#pendingClientCalls(latest) : []).map((c) => [c.toolCallId, c])
        )
        for (const result of fresh.toolResults) {
          const call = open.get(result.toolCallId)
          if (!call) return refusal('unknown_tool_call')
          open.delete(result.toolCallId)
          toolResults.push({ id: call.callId, name: call.name, content: result.content })
        }
      }
      return this.#start(input, fresh.text, toolResults, principal, signal)
    }
    if (pending.length === 0) {
      // The same resume again: the run it started is replayed, nothing runs twice.
      if (latest && hash && latest.resumeHash === hash)
        return this.#stream(latest, undefined, signal)
      if (await this.#decidedElsewhere(input.threadId, input.resume)) {
        return refusal('interrupt_decided')
      }
      return refusal('no_pending_interrupt')
    }
    return this.#resume(input, hash!, latest!, pending, principal, signal)
  }

  /**
   * A thread as a principal sees it: its newest run and the items waiting for answers in that
   * run's stream; `null` when it is another principal's (answer it like a missing one).
   */
  async thread(
    threadId: string,
    principal: Principal | null
  ): Promise<{ latest: AgUiRun | null; pending: PendingItem[] } | null> {
    const latest = await this.runs.latest(threadId)
    if (latest && latest.ownerId !== (principal?.id ?? null)) return null
    const pending = latest
      ? await this.parking.list({ streamRunId: latest.streamRunId, perPage: 100 })
      : []
    return { latest, pending }
  }

  /**
   * Record a new run (its own stream) and start it, for `POST /agui` and the native route alike.
   * Returns the recorded run, or `null`, changing nothing, when the run id is taken, by a run or
   * by a stream the host opened itself (not a client's to take over).
   */
  async startRun(
    run: Omit<AgUiRun, 'createdAt' | 'streamRunId' | 'afterSeq' | 'kind' | 'resumeHash'>,
    input: unknown,
    principal: Principal | null
  ) {
    if (await this.sink.has(run.runId)) return null
    const recorded = {
      ...run,
      streamRunId: run.runId,
      afterSeq: 0,
      kind: 'start' as const,
      resumeHash: null,
    }
    if (!(await this.runs.insert(recorded))) return null
    try {
      await this.driver.start({ runId: run.runId, threadId: run.threadId, input, principal })
    } catch (error) {
      await this.runs.remove(run.runId)
      throw error
    }
    return recorded
  }

  /**
   * `GET` re-attach to an AG-UI run after `after` (the SSE `Last-Event-ID` or `?after=`): the run
   * from its `RUN_STARTED`, a join prelude, then the rest. 404 when there is no such run (or it
   * is someone else's).
   */
  async reattach(
    runId: string,
    after: string | undefined,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<DoorReply> {
    const run = isRunId(runId) ? await this.runs.find(runId) : null
    if (!run || run.ownerId !== (principal?.id ?? null)) return notFound()
    if (!(await this.sink.has(run.streamRunId))) return notFound()
    let cursor: Cursor | undefined
    try {
      cursor = after === undefined ? undefined : parseCursor(after)
    } catch {
      return { kind: 'refused', status: 400, code: 'invalid_cursor', message: 'Invalid cursor' }
    }
    return this.#stream(run, cursor, signal)
  }

  /**
   * `GET` by thread (what a `connect(threadId)` client asks): the thread's current AG-UI run from
   * `after`. When its segment parked and the run went on because someone answered elsewhere (the
   * admin page, the decision API), the continuation becomes an AG-UI run of its own (a run id
   * derived from the stream and the park's end, the same on every replica) and that is served.
   * 404 when the thread has no run (or it is someone else's).
   */
  async attachThread(
    threadId: string,
    after: string | undefined,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<DoorReply> {
    let run = isRunId(threadId) ? await this.runs.latest(threadId) : null
    if (!run || run.ownerId !== (principal?.id ?? null)) return notFound()
    while (true) {
      const end = await this.sink.store.segmentEnd(run.streamRunId, run.afterSeq)
      if (end === null) break
      if (!(await this.#continued(run.streamRunId, end))) break
      const runId: string = `${createHash('sha256').update(run.streamRunId).digest('hex').slice(0, 40)}.r${end}`
      const next = {
        runId,
        threadId: run.threadId,
        streamRunId: run.streamRunId,
        afterSeq: end,
        kind: 'resume' as const,
        resumeHash: null,
        ownerId: run.ownerId,
        clientTools: run.clientTools,
      }
      await this.runs.insert(next)
      const found = await this.runs.find(runId)
      if (!found || found.streamRunId !== run.streamRunId) return notFound()
      run = found
    }
    return this.reattach(run.runId, after, principal, signal)
  }

  /**
   * Whether the stream goes on after the segment that ended at `end`: reopened, ended again
   * later, or decided and about to be resumed (its answers are stored after the end, nothing is
   * pending and it was not cancelled), so a reader waits for the continuation instead of being
   * served the decided interrupt again.
   */
  async #continued(streamRunId: string, end: number) {
    const head = await this.sink.store.head(streamRunId)
    if (head?.status === 'open') return true
    if ((await this.sink.store.segmentEnd(streamRunId, end)) !== null) return true
    // Not reopened yet: the park was claimed by a replica about to resume it, or decided and
    // waiting for a claim (the sweeper's, if no replica took it). A resumed park has reopened
    // the stream, which the checks above see; a cancelled one never continues.
    const suspension = await this.parking.store.newestInStream(streamRunId)
    if (suspension?.status === 'claimed') return true
    const pending = await this.parking.list({ streamRunId, perPage: 1 })
    return suspension?.status === 'parked' && pending.length === 0
  }

  /**
   * A new run: its own stream. The runner's input is `{ message, context }`, plus, with frontend
   * tools on, `tools` (what the client offers) and `toolResults` (`{ id, name, content }`, `id`
   * being the provider's call id the agent wrote).
   */
  async #start(
    input: AgUiInput,
    message: string | null,
    toolResults: { id: string; name: string; content: string }[],
    principal: Principal | null,
    signal?: AbortSignal
  ) {
    const tools = this.options.frontendTools ? (input.tools ?? []) : []
    const run = {
      runId: input.runId,
      threadId: input.threadId,
      ownerId: principal?.id ?? null,
      clientTools: tools.map((tool) => tool.name),
      inputMessage: this.#userMessage(input, message),
    }
    const started = await this.startRun(
      run,
      {
        message,
        context: input.context ?? [],
        ...(this.options.frontendTools
          ? {
              tools: tools.map(({ name, description, parameters }) => ({
                name,
                description,
                parameters,
              })),
              toolResults,
            }
          : {}),
      },
      principal
    )
    if (!started) return refusal('run_id_used')
    return this.#stream({ ...started, createdAt: 0 }, undefined, signal)
  }

  /** Check every rule first (nothing written), then record the run and apply the answers. */
  async #resume(
    input: AgUiInput,
    hash: string,
    latest: AgUiRun,
    pending: PendingItem[],
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<DoorReply> {
    const byId = new Map(pending.map((item) => [this.#interruptId(item), item]))
    const seen = new Set<string>()
    const plan: Planned[] = []
    for (const entry of input.resume!) {
      if (seen.has(entry.interruptId)) return refusal('duplicate_interrupt')
      seen.add(entry.interruptId)
      const item = byId.get(entry.interruptId)
      if (!item) {
        const decided = await this.#decidedElsewhere(input.threadId, [entry])
        return refusal(decided ? 'interrupt_decided' : 'unknown_interrupt')
      }
      const planned = await this.#plan(item, entry, principal)
      if (typeof planned === 'string') return refusal(planned)
      plan.push(planned)
    }
    if (seen.size !== byId.size) return refusal('incomplete_resume')
    const lastAsked = Math.max(...pending.map((item) => item.streamSeq))
    const afterSeq = await this.sink.store.segmentEnd(latest.streamRunId, lastAsked)
    if (afterSeq === null) return refusal('run_active')
    const run: Omit<AgUiRun, 'createdAt'> = {
      runId: input.runId,
      threadId: input.threadId,
      streamRunId: latest.streamRunId,
      afterSeq,
      kind: 'resume',
      resumeHash: hash,
      ownerId: principal?.id ?? null,
      clientTools: latest.clientTools,
    }
    if (!(await this.runs.insert(run))) return refusal('run_id_used')
    let applied = 0
    try {
      for (const step of plan) {
        await step.apply()
        applied++
      }
    } catch (error) {
      // Only a race gets here (every rule was checked): someone decided first.
      if (applied === 0) await this.runs.remove(input.runId)
      // Answers apply one item at a time: a race lost after the first leaves that one decided.
      const status = (error as { status?: number }).status
      if (status === 409 || applied > 0) return refusal('decision_conflict')
      if (status === 410) return refusal('interrupt_expired')
      if (status === 403) return refusal('not_allowed')
      if (status === 422) return refusal('invalid_resume_payload')
      throw error
    }
    return this.#stream({ ...run, createdAt: 0 }, undefined, signal)
  }

  /** Validate one resume entry against its item; a refusal code, or how to apply it. */
  async #plan(
    item: PendingItem,
    entry: AgUiResumeEntry,
    principal: Principal | null
  ): Promise<Planned | AgUiRefusalCode> {
    const stored = (await this.parking.store.findItem(
      item.runId,
      item.itemId,
      item.park
    )) as ItemRow
    const allowed = await this.parking.policy(principal, {
      approver: stored.approver,
      requester: stored.principal,
      kind: stored.kind,
      runId: stored.runId,
    })
    if (!allowed) return 'not_allowed'
    const decider = { principal, via: 'chat' }
    const cancelled = entry.status === 'cancelled'
    const lapsed = stored.expiresAt !== null && stored.expiresAt < Date.now()
    if (lapsed && !cancelled) return 'interrupt_expired'
    // A lapsed item cancelled: it settles as expired, as the sweeper would settle it.
    if (lapsed) {
      return { item, entry, apply: () => this.parking.expire(item.runId, item.itemId, item.park) }
    }
    const at = { park: item.park }
    if (item.kind === 'elicitation') {
      let reply: { answers: Record<string, string[]>; skipped: boolean }
      try {
        reply = cancelled
          ? { answers: {}, skipped: true }
          : await validateReply(entry.payload, item.request!)
      } catch {
        return 'invalid_resume_payload'
      }
      return {
        item,
        entry,
        apply: () => this.parking.answer(item.runId, item.itemId, decider, { ...reply, ...at }),
      }
    }
    if (cancelled) {
      return {
        item,
        entry,
        apply: () =>
          this.parking.reject(item.runId, item.itemId, decider, { reason: 'cancelled', ...at }),
      }
    }
    let decision: { approved: boolean; reason?: string; editedArgs?: Record<string, unknown> }
    try {
      decision = await approvalPayload.validate(entry.payload)
      await validateDecision({ reason: decision.reason, input: decision.editedArgs })
    } catch {
      return 'invalid_resume_payload'
    }
    const body = {
      ...(decision.reason ? { reason: decision.reason } : {}),
      ...(decision.approved && decision.editedArgs ? { input: decision.editedArgs } : {}),
      ...at,
    }
    return {
      item,
      entry,
      apply: () =>
        decision.approved
          ? this.parking.approve(item.runId, item.itemId, decider, body)
          : this.parking.reject(item.runId, item.itemId, decider, body),
    }
  }

  /**
   * Whether every entry names an interrupt of this thread that was already decided (the admin
   * page, the decision API, another tab): the client should follow the run, not answer again.
   */
  async #decidedElsewhere(threadId: string, resume: AgUiResumeEntry[]) {
    for (const entry of resume) {
      const parts = decodeAgUiId(entry.interruptId)
      if (!parts || parts.kind !== 'int' || parts.address.length !== 2) return false
      const [runId, itemId] = parts.address
      const item = await this.parking.store.findItem(runId, itemId)
      if (!item || item.threadId !== threadId) return false
      // Cancelled means the run will not continue: nothing to follow.
      if (item.status === 'pending' || item.status === 'cancelled') return false
    }
    return resume.length > 0
  }

  /** The fresh user message's id and text (for `MESSAGES_SNAPSHOT`). */
  #userMessage(input: AgUiInput, text: string | null) {
    if (text === null || !this.options.messagesSnapshot) return null
    const message = input.messages.findLast((m) => m.role === 'user')
    return message ? { id: message.id, content: text } : null
  }

  /**
   * The thread's transcript up to `run`'s stream: for each stream of the thread, its user
   * message, then what the agent wrote (the current stream's from `current`).
   */
  async #transcript(run: AgUiRun, current: FrameTranslator) {
    const messages: Record<string, unknown>[] = []
    for (const stream of await this.runs.streams(run.threadId)) {
      if (stream.ownerId !== run.ownerId) continue
      if (stream.inputMessage) {
        messages.push({
          id: stream.inputMessage.id,
          role: 'user',
          content: stream.inputMessage.content,
        })
      }
      if (stream.streamRunId === run.streamRunId) {
        messages.push(...current.messages())
        break
      }
      const earlier = new FrameTranslator({ ...this.options, streamRunId: stream.streamRunId })
      await this.#replay(earlier, stream.streamRunId, { seq: Number.MAX_SAFE_INTEGER })
      messages.push(...earlier.messages())
    }
    return messages
  }

  /** `close()`'s events, with `MESSAGES_SNAPSHOT` before `RUN_FINISHED` when configured. */
  async #closing(
    run: AgUiRun,
    translator: FrameTranslator,
    identity: { threadId: string; runId: string }
  ) {
    const events = translator.close(identity)
    if (this.options.messagesSnapshot && events.at(-1)?.type === 'RUN_FINISHED') {
      const snapshot: AgUiEvent = {
        type: EventType.MESSAGES_SNAPSHOT,
        messages: (await this.#transcript(run, translator)) as Message[],
      }
      events.splice(events.length - 1, 0, snapshot)
    }
    return events
  }

  /** Calls to the client's tools still waiting for their result at the end of `run`'s stream. */
  async #pendingClientCalls(run: AgUiRun) {
    if (!run.clientTools?.length) return []
    const translator = new FrameTranslator({
      streamRunId: run.streamRunId,
      clientTools: run.clientTools,
    })
    await this.#replay(translator, run.streamRunId, { seq: Number.MAX_SAFE_INTEGER })
    return translator.pendingClientCalls()
  }

  /** The id the translator gave this item's interrupt (same grammar, same stored position). */
  #interruptId(item: PendingItem) {
    return encodeAgUiId({
      runId: item.streamRunId,
      kind: 'int',
      n: item.streamSeq,
      address: [item.runId, item.itemId],
    })
  }

  #stream(run: AgUiRun, after: Cursor | undefined, signal?: AbortSignal): DoorReply {
    return {
      kind: 'stream',
      streamRunId: run.streamRunId,
      events: this.#events(run, after, signal),
    }
  }

  /**
   * One AG-UI run as events: the stream before its start cursor replayed silently into the
   * translator (so ids, open constructs and state are what they were), `RUN_STARTED` and the join
   * prelude, then the segment's frames until it ends.
   */
  async *#events(run: AgUiRun, after: Cursor | undefined, signal?: AbortSignal) {
    const translator = new FrameTranslator({
      ...this.options,
      streamRunId: run.streamRunId,
      clientTools: run.clientTools,
    })
    const identity = { threadId: run.threadId, runId: run.runId }
    let start: Cursor = { seq: run.afterSeq }
    if (after && compareCursors(after, start) > 0) start = after
    const end = await this.sink.store.segmentEnd(run.streamRunId, run.afterSeq)
    if (end !== null && start.seq >= end) {
      // The client had the whole run: it gets its start and its end again, nothing between.
      await this.#replay(translator, run.streamRunId, { seq: end - 1 })
      if (translator.failure) {
        yield { event: translator.open(identity)[0] }
        yield { event: translator.failure, id: String(end) }
        return
      }
      for (const event of translator.open(identity)) yield { event }
      const events = await this.#closing(run, translator, identity)
      for (const [i, event] of events.entries())
        yield i === events.length - 1 ? { event, id: String(end) } : { event }
      return
    }
    await this.#replay(translator, run.streamRunId, start)
    if (translator.failure) {
      // The client had the run's error: it gets its start and the error again.
      yield { event: translator.open(identity)[0] }
      yield { event: translator.failure, id: formatCursor(start) }
      return
    }
    for (const event of translator.open(identity)) yield { event }
    for await (const item of this.sink.segments(run.streamRunId, {
      after: formatCursor(start),
      signal,
    })) {
      const events =
        item.t === 'end'
          ? await this.#closing(run, translator, identity)
          : translator.push(item as StreamFrame, parseCursor(item.cursor))
      for (const [i, event] of events.entries()) {
        yield i === events.length - 1 ? { event, id: item.cursor } : { event }
      }
      if (item.t === 'end' || translator.terminal === 'failed') return
    }
  }

  /** Feed the stored frames up to `until` (inclusive) to the translator, emitting nothing. */
  async #replay(translator: FrameTranslator, streamRunId: string, until: Cursor) {
    let seq = 1
    const pageSize = this.sink.options.pageSize
    while (seq <= until.seq) {
      const rows = await this.sink.store.rows(
        streamRunId,
        seq,
        Math.min(pageSize, until.seq - seq + 1)
      )
      if (rows.length === 0) return
      for (const row of rows) {
        if (row.kind === 'end') translator.endSegment()
        else if (row.kind === 'text') {
          const v =
            row.seq === until.seq && until.offset !== undefined
              ? row.body.slice(0, until.offset)
              : row.body
          translator.push({ t: 'text', v }, { seq: row.seq, offset: v.length })
        } else if (!row.superseded) {
          translator.push(JSON.parse(row.body) as StreamFrame, { seq: row.seq })
        }
      }
      seq = rows.at(-1)!.seq + 1
    }
  }
}

function notFound(): DoorReply {
  return { kind: 'refused', status: 404, code: 'not_found', message: 'No such run' }
}

/** A refusal once the stream is open: one `RUN_ERROR` with a stable code, nothing else. */
function refusal(code: AgUiRefusalCode): DoorReply {
  async function* events(): AsyncGenerator<SseItem> {
    yield { event: { type: EventType.RUN_ERROR, code, message: REFUSALS[code] } }
  }
  return { kind: 'stream', events: events() }
}
