import { randomUUID } from 'node:crypto'
import type { UIMessage } from 'ai'
import { compareCursors, parseCursor, START, type Cursor } from '../../core/cursor.js'
import { isRunId } from '../../core/frames.js'
import type { Principal } from '../../core/run.js'
import {
  DoorBase,
  admitMessage,
  multitaskStrategyOf,
  doorDeps,
  guardInput,
  checkedPosition,
  notFound,
  openItems,
  ownedBy,
  ownerOf,
  readAfterSegmentEnd,
  refused,
  judgeForTurn,
  type DoorCore,
  type MultitaskStrategy,
  type PositionGrammar,
} from '../../door/index.js'
import { startRun, THREAD_TAKEN, TURN_TAKEN } from '../../runner/door_runs.js'
import type { DoorRun } from '../../store/door_runs.js'
import type { StreamState } from '../../store/rows.js'
import { applyPlan, planDecisions } from './decide.js'
import { bodyFields, userMessage, userText, validateChatInput, type ChatInput } from './input.js'
import type { UiChunkItem, UiDoorReply, UiMessageDoorOptions } from './reply.js'
import { UI_MESSAGE_STATE } from './state_codec.js'
import { resumeReads, turnChunks, type TurnRead } from './turn.js'
import type { PrimedFollow } from '../../sink/primed_follow.js'
import { chatMessages } from './messages.js'
import { enqueueTurn } from './queued.js'
import { recordReattach } from '../../telemetry/metrics/index.js'
import { pageState } from '../../core/agent_state.js'

/** The refusal sentence of a chat request (the page's state too: `pageState`). */
const SUBJECT = 'Invalid chat request'

/** The body's `state` (the page's state): the transport's field, not the app's own. */
const stateOf = (input: ChatInput) => (input as Record<string, unknown>).state

/** The refusals of this door's protocol (besides the kernel's and parking's decision errors). */
const REFUSED = {
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

const refusal = (code: keyof typeof REFUSED) =>
  refused(REFUSED[code].status, code, REFUSED[code].message)

/** The useChat door's SSE ids: the native cursor grammar (`core/cursor.ts`). */
const CURSORS: PositionGrammar<Cursor> = { parse: parseCursor, cursor: (cursor) => cursor }

/** No such chat, or another principal's (answered alike). */
const noChat = () => notFound('No such chat')

/**
 * The AI SDK UI message stream door (`ai` 7's protocol, as `useChat` and `DefaultChatTransport`
 * speak it), protocol logic with no HTTP in it, on the same core as the AG-UI door: the same
 * run rows (a chat is a thread; each turn a run with its own stream), driver, parking,
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
export class UiMessageDoor extends DoorBase<UiMessageDoorOptions, string> {
  /** A door on `core`; its checkpoints are stored under `ui-message` ({@link UI_MESSAGE_STATE}). */
  constructor(core: DoorCore, options: UiMessageDoorOptions = {}) {
    super(doorDeps(core, options, UI_MESSAGE_STATE))
  }

  /**
   * `POST` a chat request (its size is the transport's rule: 413 `body_too_large` before the
   * door is asked). Refusals (nothing written): 400 `invalid_input`, 404 `not_found` (no such chat, or another principal's), 409
   * `interrupt_pending` (a new message while approvals are open), 409 `thread_busy` (a new
   * message while a turn streams, under `multitaskStrategy: 'reject'`; `runId` names the turn),
   * 409 `queue_full` (under `'enqueue'`, the chat's queue full), 409 `not_current_turn`, 422
   * `no_decision`, and parking's decision errors with their status and code (never for an
   * item settled first: that answer is the continuation); 503 `replica_shutdown` on a draining
   * replica (a graceful shutdown).
   */
  chat(body: unknown, principal: Principal | null, signal?: AbortSignal): Promise<UiDoorReply> {
    // The kernel's input guard; parking's decision errors answer with their status and code.
    const chatId = () => (body as { id: string }).id
    return guardInput(
      this.driver,
      () =>
        judgeForTurn(
          (strategyOf) => this.#chat(body, principal, signal, strategyOf),
          () => this.runs.latest(chatId())
        ),
      { packageErrors: true }
    )
  }

  async #chat(
    body: unknown,
    principal: Principal | null,
    signal: AbortSignal | undefined,
    strategyOf: (asked: MultitaskStrategy) => MultitaskStrategy
  ): Promise<UiDoorReply | typeof TURN_TAKEN> {
    const input = await validateChatInput(body)
    const asked = (input as Record<string, unknown>).multitaskStrategy
    const fallback = this.options.multitaskStrategy ?? 'enqueue'
    const judged = multitaskStrategyOf(asked, fallback, SUBJECT, 'multitaskStrategy')
    const strategy = strategyOf(judged)
    const latest = await this.runs.latest(input.id)
    if (latest && !ownedBy(latest, principal)) return noChat()
    const last = input.messages[input.messages.length - 1]
    if (last.role === 'assistant') {
      if (!latest) return noChat()
      return this.#decide(input, latest, principal, signal)
    }
    const message = userText(last)
    const said = userMessage(last, this.sink.options.maxFrameBytes)
    const extras = bodyFields(input)
    const state = pageState(stateOf(input), this.sink.options.maxStateBytes, SUBJECT)
    const open = latest ? await openItems(this.deps, latest.streamRunId) : []
    const admitted = await admitMessage(
      this.deps,
      this.control,
      latest,
      open.length > 0,
      principal,
      strategy
    )
    if ('refused' in admitted) {
      const why = admitted.refused
      return why === 'interrupt_pending' ? refusal('interrupt_pending') : why
    }
    const busy = admitted.behind
    const runId = randomUUID()
    const run = {
      runId,
      threadId: input.id,
      ownerId: ownerOf(principal),
      clientTools: [],
      // What the person said (the chat list's title, AG-UI's `MESSAGES_SNAPSHOT` of the thread).
      inputMessage: message === '' ? null : { id: last.id, content: message },
    }
    const runnerInput = {
      message,
      context: [],
      ...(extras ? { body: extras } : {}),
      ...(state !== undefined ? { state } : {}),
    }
    if (busy && strategy === 'enqueue') {
      return enqueueTurn(this.deps, { run, input: runnerInput, said }, busy, principal, signal)
    }
    const started = await startRun(
      this.deps,
      run,
      runnerInput,
      principal,
      said,
      latest?.runId ?? null
    )
    if (started === TURN_TAKEN) return TURN_TAKEN
    // A fresh UUID is never taken: `null` would mean a host stream of that id. THREAD_TAKEN:
    // another principal's first message of this chat id landed first.
    if (!started || started === THREAD_TAKEN) return noChat()
    // Served from the stream's row as the start created it: nothing is read before `start`.
    return this.#serve(runId, START, signal, started.stream)
  }

  /**
   * Apply the decisions the client's assistant message carries, then serve what follows its
   * asks. A message that answers none of its open asks (a page checking whether someone decided
   * elsewhere: `sendMessage()` with no message) decides nothing and gets the same answer.
   */
  async #decide(
    input: ChatInput,
    latest: DoorRun,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<UiDoorReply> {
    const stream = latest.streamRunId
    const last = input.messages[input.messages.length - 1]
    if (last.id !== stream) return refusal('not_current_turn')
    // The page's state sent with the answers: the resumed segment's `ctx.input.state`.
    const state = pageState(stateOf(input), this.sink.options.maxStateBytes, SUBJECT)
    const pending = await openItems(this.deps, stream)
    const plan = await planDecisions(this.deps, stream, last, pending)
    if (plan.length === 0) return refusal('no_decision')
    // All at once, or none. An item someone settled first (the admin page, another tab, its
    // expiry) is no error: the continuation served from its row carries what was decided
    // (`tool-approval-response`, `tool-output-*`), then the rest of the turn. Any other refusal
    // (403, 404, a lapsed item nobody settled yet: 410, an item decided twice: 422) is the
    // answer, and nothing was applied.
    await applyPlan(this.deps, plan, principal, state)
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
    if (!isRunId(chatId)) return noChat()
    // The chat's newest run with its stream's row: the cursor is checked against that row.
    const found = await this.runs.latestWithStream(chatId)
    if (!found) return { kind: 'none' }
    const { run: latest, stream: row } = found
    if (!ownedBy(latest, principal)) return noChat()
    const stream = latest.streamRunId
    // A resume inside the turn: the stored checkpoint its replay will want and its follow's
    // first reads start now, beside the cursor's check (`resumeReads`).
    const primed = resumeReads(this.deps, stream, after, row, signal)
    // The cursor checked, and whether a turn is active, read at once (one round trip, not two).
    // A turn is active when it streams, is parked, or decided and about to go on: after its
    // newest segment end the stream goes on or waits (the kernel's one verdict, one snapshot).
    const [checked, { verdict, after: now }] = await Promise.all([
      checkedPosition(this.sink, stream, after, CURSORS, row ?? undefined),
      readAfterSegmentEnd(this.deps, stream),
    ]).catch((error: unknown) => {
      primed?.release()
      throw error
    })
    const active = now && (verdict === 'goes-on' || verdict === 'waits')
    const from = 'kind' in checked ? null : (checked.position ?? START)
    const fits = primed && from && compareCursors(primed.start, from) === 0
    if (!active || !fits) primed?.release()
    if ('kind' in checked) return checked
    if (!active) return { kind: 'none' }
    recordReattach('ui_message')
    return this.#serve(stream, from!, signal, now.stream, fits ? primed : undefined)
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
    const messages = await chatMessages(this.deps, chatId, principal)
    if (!messages) return noChat()
    return { kind: 'messages', messages }
  }

  /** The turn from `from`; `stream`: its row as just read (else `turnChunks` reads it). */
  #serve(
    streamRunId: string,
    from: Cursor,
    signal?: AbortSignal,
    stream?: StreamState | null,
    primed?: PrimedFollow
  ): UiDoorReply {
    return {
      kind: 'stream',
      streamRunId,
      from,
      events: turnChunks(this.deps, streamRunId, from, signal, stream, {}, primed),
    }
  }

  /**
   * A turn's chunks from `from`, as every answer of this door serves them, for a Durable Streams
   * read of it (`src/durable_streams/dialects/`): `read.until` and `read.settle` as `turnChunks`
   * takes them.
   */
  turn(
    streamRunId: string,
    from: Cursor,
    read: TurnRead & { signal?: AbortSignal } = {}
  ): AsyncGenerator<UiChunkItem> {
    return turnChunks(this.deps, streamRunId, from, read.signal, undefined, read)
  }
}
