import { randomUUID } from 'node:crypto'
import type { UIMessage } from 'ai'
import { parseCursor, START, type Cursor } from '../../core/cursor.js'
import { isRunId } from '../../core/frames.js'
import type { Principal } from '../../core/run.js'
import { StoredCheckpoints, TranslatorCheckpoints } from '../../checkpoints/index.js'
import { CheckpointRows } from '../../store/checkpoint_rows.js'
import {
  AgentStreamException,
  InvalidCursorError,
  isPackageErrorCode,
  replicaShutdownRefusal,
} from '../../errors.js'
import { sinkInternals, type LucidTokenStreamSink } from '../../sink/lucid_sink.js'
import type { RunDriver } from '../../runner/driver.js'
import type { Parking } from '../../parking/parking.js'
import { startRun } from '../../runner/door_runs.js'
import type { AgUiRun, AgUiRunStore } from '../../store/door_runs.js'
import type { StreamState } from '../../store/rows.js'
import { applyDecisions, planDecisions } from './decide.js'
import { bodyFields, userMessage, userText, validateChatInput, type ChatInput } from './input.js'
import type { UiDoorDeps, UiDoorReply, UiMessageDoorOptions } from './reply.js'
import { turnChunks } from './turn.js'
import { chatMessages } from './messages.js'

/** The refusals of this door that are not the parking service's errors. */
const REFUSED = {
  not_found: { status: 404, message: 'No such chat' },
  interrupt_pending: {
    status: 409,
    message: 'This chat is waiting for a decision: answer its open approvals first.',
  },
  no_decision: {
    status: 422,
    message: 'The assistant message names no approval or question set of this chat.',
  },
  not_current_turn: {
    status: 409,
    message: "The assistant message is not this chat's current turn.",
  },
} as const

const refused = (code: keyof typeof REFUSED): UiDoorReply => ({
  kind: 'refused',
  code,
  ...REFUSED[code],
})

/**
 * The AI SDK UI message stream door (`ai` 7's protocol, as `useChat` and `DefaultChatTransport`
 * speak it), protocol logic with no HTTP in it, on the same core as the AG-UI door: the same
 * run rows (a chat is a thread; each turn a run with its own stream), driver, parking service,
 * public projection and cursor rule, so one stored run is readable through both doors.
 *
 * - `chat` (`POST`): the newest message is the user's: a new turn (a run whose input is
 *   `{ message, context: [] }`, as the AG-UI door gives, plus `body`, the request's own fields;
 *   what the person said, text and files, is the run's first frame); it is the assistant's (the client
 *   answered approvals with `addToolApprovalResponse`, or a question set with `addToolOutput`):
 *   each answer decides its parked item once, and the continuation is served; an item settled
 *   first elsewhere keeps that outcome, which the continuation shows (no refusal). Asks it left
 *   unanswered decide nothing: the same continuation (a page learning of decisions made
 *   elsewhere), or, while they wait, the turn up to its `finish` again.
 * - `resume` (`GET`): the chat's active turn replayed from its start (what `useChat({ resume:
 *   true })` expects: `DefaultChatTransport` resets the message at the first `start`), or from a
 *   cursor (`?after=` / `Last-Event-ID`, the one rule); none when no turn is streaming or
 *   parked (204).
 *
 * The assistant message's id is the turn's stream run id, identical live and on every replay.
 */
export class UiMessageDoor {
  readonly #deps: UiDoorDeps

  constructor(
    readonly sink: LucidTokenStreamSink,
    readonly driver: RunDriver,
    readonly parking: Parking,
    readonly runs: AgUiRunStore,
    readonly options: UiMessageDoorOptions = {}
  ) {
    this.#deps = {
      sink,
      driver,
      parking,
      runs,
      options,
      checkpoints: uiMessageCheckpoints(sink, options),
    }
  }

  /** Resolves once this door's stored checkpoint writes in flight are done (tests, benchmarks). */
  async checkpointWrites() {
    await this.#deps.checkpoints?.stored?.settled()
  }

  /**
   * `POST` a chat request. Refusals (nothing written): 400 `invalid_input`, 413
   * `body_too_large`, 404 `not_found` (no such chat, or another principal's), 409
   * `interrupt_pending` (a new message while approvals are open), 409 `not_current_turn`, 422
   * `no_decision`, and the parking service's errors with their status and code (never for an
   * item settled first: that answer is the continuation); 503 `replica_shutdown` on a draining
   * replica (a graceful shutdown).
   */
  async chat(
    body: unknown,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<UiDoorReply> {
    // A draining replica starts and resumes nothing: the client retries on another one.
    if (this.driver.draining) return replicaShutdownRefusal()
    try {
      return await this.#chat(body, principal, signal)
    } catch (error) {
      const answer = asRefusal(error)
      if (answer) return answer
      throw error
    }
  }

  async #chat(body: unknown, principal: Principal | null, signal?: AbortSignal) {
    const input = await validateChatInput(body)
    const latest = await this.runs.latest(input.id)
    if (latest && latest.ownerId !== (principal?.id ?? null)) return refused('not_found')
    const last = input.messages[input.messages.length - 1]
    if (last.role === 'assistant') {
      if (!latest) return refused('not_found')
      return this.#decide(input, latest, principal, signal)
    }
    const message = userText(last)
    const said = userMessage(last, this.sink.options.maxFrameBytes)
    const extras = bodyFields(input)
    const open = latest ? await this.parking.queries.pendingOf(latest.streamRunId) : []
    if (open.length > 0) return refused('interrupt_pending')
    const runId = randomUUID()
    const started = await startRun(
      this.#deps,
      {
        runId,
        threadId: input.id,
        ownerId: principal?.id ?? null,
        clientTools: [],
        // What the person said (the chat list's title, AG-UI's `MESSAGES_SNAPSHOT` of the thread).
        inputMessage: message === '' ? null : { id: last.id, content: message },
      },
      { message, context: [], ...(extras ? { body: extras } : {}) },
      principal,
      said
    )
    // A fresh UUID is never taken: `null` would mean a host stream of that id.
    if (!started) return refused('not_found')
    return this.#serve(runId, START, signal)
  }

  /**
   * Apply the decisions the client's assistant message carries, then serve what follows its
   * asks. A message that answers none of its open asks (a page checking whether someone decided
   * elsewhere: `sendMessage()` with no message) decides nothing and gets the same answer.
   */
  async #decide(
    input: ChatInput,
    latest: AgUiRun,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<UiDoorReply> {
    const stream = latest.streamRunId
    const last = input.messages[input.messages.length - 1]
    if (last.id !== stream) return refused('not_current_turn')
    const pending = await this.parking.queries.pendingOf(stream)
    const plan = await planDecisions(this.#deps, stream, last, pending, principal)
    if (plan.length === 0) return refused('no_decision')
    // One at a time, in order. An item someone settled first (the admin page, another tab, its
    // expiry) is no error: the continuation served from its row carries what was decided
    // (`tool-approval-response`, `tool-output-*`), then the rest of the turn. Any other refusal
    // (403, 404, a lapsed item nobody settled yet: 410) is the answer.
    await applyDecisions(plan)
    return this.#serve(stream, { seq: Math.max(...plan.map((step) => step.seq)) }, signal)
  }

  /**
   * `GET` the chat's active turn, from the start (or `after`). 404 for another principal's chat,
   * 400 `invalid_cursor` for a cursor the sink never gave, none (204) when nothing is active.
   */
  async resume(
    chatId: string,
    after: string | undefined,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<UiDoorReply> {
    if (!isRunId(chatId)) return refused('not_found')
    const latest = await this.runs.latest(chatId)
    if (!latest) return { kind: 'none' }
    if (latest.ownerId !== (principal?.id ?? null)) return refused('not_found')
    let from: Cursor = START
    try {
      from = parseCursor(after)
    } catch (error) {
      if (error instanceof InvalidCursorError) return invalidCursor()
      throw error
    }
    const stream = latest.streamRunId
    if (await this.sink.beyondHead(stream, from)) return invalidCursor()
    // A turn is active when it streams, is parked, or decided and about to go on. Read in one
    // snapshot: a resume reopens the stream and marks its suspension resumed, and two reads
    // apart could see the stream from before (still ended) and the suspension from after.
    const now = await this.parking.queries.streamAfter(stream)
    const active =
      now !== null &&
      (now.stream.status === 'open' || now.suspension === 'parked' || now.suspension === 'claimed')
    if (!active) return { kind: 'none' }
    return this.#serve(stream, from, signal, now.stream)
  }

  /**
   * The chat's stored messages (`GET /chat/:chatId/messages`), for `useChat({ messages })`: the
   * person's and the assistant's, as the stream gave them (`chatMessages`). A refusal 404
   * `not_found` for a missing chat or another principal's, the same answer.
   */
  async messages(
    chatId: string,
    principal: Principal | null
  ): Promise<{ kind: 'messages'; messages: UIMessage[] } | UiDoorReply> {
    const messages = await chatMessages(this.#deps, chatId, principal)
    if (!messages) return refused('not_found')
    return { kind: 'messages', messages }
  }

  /** The turn from `from`; `stream`: its row as just read (else `turnChunks` reads it). */
  #serve(
    streamRunId: string,
    from: Cursor,
    signal?: AbortSignal,
    stream?: StreamState | null
  ): UiDoorReply {
    return {
      kind: 'stream',
      streamRunId,
      events: turnChunks(this.#deps, streamRunId, from, signal, stream),
    }
  }
}

function invalidCursor(): UiDoorReply {
  return { kind: 'refused', status: 400, code: 'invalid_cursor', message: 'Invalid cursor' }
}

/** One of the package's errors (the parking service's, input's) as a refusal. */
function asRefusal(error: unknown): UiDoorReply | null {
  if (!(error instanceof AgentStreamException) || !isPackageErrorCode(error.code)) return null
  return { kind: 'refused', status: error.status, code: error.code, message: error.message }
}

/**
 * The door's translator checkpoints (`UiMessageTranslator.checkpoint()`, already JSON), stored on
 * `sink`'s database too unless `storedCheckpointEvery` is 0.
 */
export function uiMessageCheckpoints(sink: LucidTokenStreamSink, options: UiMessageDoorOptions) {
  const checkpoints = new TranslatorCheckpoints<string>(options.checkpointEvery)
  if (options.storedCheckpointEvery !== 0) {
    checkpoints.stored = new StoredCheckpoints(
      new CheckpointRows(() => sinkInternals(sink).client, sink.tables),
      { encode: (state) => state, decode: (text) => text },
      'ui-message',
      { every: options.storedCheckpointEvery, onError: sink.onError }
    )
  }
  return checkpoints
}
