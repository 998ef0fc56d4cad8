import type { ParkedItem } from '../../parking/types.js'
import type { Principal } from '../../core/run.js'
import type { TranslatorCheckpoint } from '../translate/index.js'
import type { UserMessage } from '../../core/user_message.js'
import {
  InvalidAgUiInputError,
  newInput,
  resumeHash,
  userMessageOf,
  validateAgUiInput,
  type AgUiInput,
} from './input.js'
import type { DoorRun } from '../../store/door_runs.js'
import { refusal } from './refusals.js'
import {
  busyWith,
  DoorBase,
  doorDeps,
  guardInput,
  admitMessage,
  multitaskStrategyOf,
  notFound,
  openItems,
  ownedBy,
  judgeForTurn,
  type DoorCore,
  type MultitaskStrategy,
} from '../../door/index.js'
import type { AgUiDoorOptions, AgUiDeps, AgUiReply } from './reply.js'
import { attachThread, continuationRun, reattach } from './attach.js'
import type { Cursor } from '../../core/cursor.js'
import { AGUI_STATE } from './state_codec.js'
import { SegmentCache } from './segment_cache.js'
import { resume, settledElsewhere, settledRefusal } from './resume.js'
import { serveRun } from './serve.js'
import { prepareStart, startPrepared, startRun, type TURN_TAKEN, type NewRun } from './start.js'
import { enqueueRun } from './queued.js'
import { pageState } from '../../core/agent_state.js'

/** The refusal sentence of an input this door refuses (the page's state too: `pageState`). */
const SUBJECT = 'Invalid RunAgentInput'

/**
 * The AG-UI 1.0 door, protocol logic with no HTTP in it, on the door kernel (`src/door/`): a
 * `RunAgentInput` starts a run or resumes a parked one; any AG-UI run re-attaches from a cursor.
 * Each AG-UI run is one segment of a stream (the frames between two parks). Every answer is a
 * {@link AgUiReply}: a refusal, or the run as an async iterable of AG-UI events that any
 * transport can serve (`src/http/` frames it as SSE or protobuf). Everything is checked before
 * anything is written: a refusal changes no row.
 *
 * One file per use case: `start.ts`, `resume.ts`, `attach.ts` (re-attach by run or thread),
 * `serve.ts` (one AG-UI run as events, over the kernel's serve loop), `transcript.ts`
 * (`MESSAGES_SNAPSHOT`); its translator as the kernel drives it (`translation.ts`) and its
 * state codec (`state_codec.ts`).
 */
export class AgUiDoor extends DoorBase<AgUiDoorOptions, TranslatorCheckpoint, AgUiDeps> {
  /** A door on `core`; its checkpoints are stored under `agui` ({@link AGUI_STATE}). */
  constructor(core: DoorCore, options: AgUiDoorOptions = {}) {
    super({ ...doorDeps(core, options, AGUI_STATE), segments: new SegmentCache() })
  }

  /**
   * `POST`: a new run (the newest user message is its input) or a resume (`resume[]` answers
   * every open interrupt of the thread). `signal` ends the stream when the client goes away.
   * A draining replica (a graceful shutdown) refuses either: 503 `replica_shutdown`; a refused
   * input: 400 `invalid_input` (the kernel's input guard). The body's size is the transport's
   * rule (413 `body_too_large` before the door is asked, counted in bytes as received). Two
   * messages at once on one thread: the one whose run was recorded second is judged again
   * (`judgeForTurn`).
   */
  run(body: unknown, principal: Principal | null, signal?: AbortSignal): Promise<AgUiReply> {
    const threadId = () => (body as { threadId: string }).threadId
    return guardInput(this.driver, () =>
      judgeForTurn(
        (strategyOf) => this.#run(body, principal, signal, strategyOf),
        () => this.runs.latest(threadId())
      )
    )
  }

  async #run(
    body: unknown,
    principal: Principal | null,
    signal: AbortSignal | undefined,
    strategyOf: (asked: MultitaskStrategy) => MultitaskStrategy
  ): Promise<AgUiReply | typeof TURN_TAKEN> {
    // Checked before anything is written; a refused input is the guard's refusal.
    const input: AgUiInput = await validateAgUiInput(body)
    // The page's state (`RunAgentInput.state`): the runner's `ctx.input.state`, on a start or a
    // resume alike.
    const state = pageState(input.state, this.sink.options.maxStateBytes, SUBJECT)
    const strategy = strategyOf(this.#strategy(input))
    let fresh: ReturnType<typeof newInput> = { text: null, toolResults: [], user: null }
    if (!input.resume?.length) fresh = newInput(input)
    // What the person said, checked before anything is written (stored as the run's frame).
    let said: UserMessage | null = null
    if (fresh.user) said = userMessageOf(fresh.user, this.sink.options.maxFrameBytes)
    if (fresh.toolResults.length > 0 && !this.options.frontendTools) {
      throw new InvalidAgUiInputError('Frontend tools are off')
    }
    // The thread's newest run and the run of this id, in one read.
    const { latest, used } = await this.runs.latestWith(input.threadId, input.runId)
    // A resume names interrupts of a thread that exists: on none, the same 404 as on another
    // person's thread (deciding must not tell whose threads exist).
    if (latest && !ownedBy(latest, principal)) return notFound()
    if (!latest && input.resume?.length) return notFound()
    // Every pending item: a resume must answer all of them (never a page of them).
    const pending = latest ? await openItems(this.deps, latest.streamRunId) : []
    const hash = input.resume?.length ? resumeHash(input.threadId, input.resume) : null
    // A resume under the id of a run of the thread's current stream: the id CopilotKit's
    // `useInterrupt` resolve() sends (the input runId of the run that ended with the interrupt,
    // so after one resume, still the first run's). Same rules; the resume is recorded under an
    // id of its own (`resume.ts`), so each id still re-attaches to its own run.
    if (used && hash && used.resumeHash === hash && ownedBy(used, principal))
      return serveRun(this.deps, used, undefined, signal)
    const reused = hash !== null && used !== null && reusable(used, latest, principal)
    if (used && !reused) return refusal('run_id_used')
    if (reused) {
      // The same resume again under the same reused id: its run is replayed, nothing runs twice.
      const same = await this.runs.byResume(input.threadId, hash)
      if (same && ownedBy(same, principal)) return serveRun(this.deps, same, undefined, signal)
    }
    if (!input.resume?.length) {
      const admitted = await admitMessage(
        this.deps,
        this.control,
        latest,
        pending.length > 0,
        principal,
        strategy
      )
      if ('refused' in admitted) {
        const why = admitted.refused
        return why === 'interrupt_pending' ? refusal('interrupt_pending') : why
      }
      const busy = admitted.behind
      const prepared = await prepareStart(
        this.deps,
        input,
        { ...fresh, said, state },
        latest,
        principal
      )
      if ('kind' in prepared) return prepared
      if (busy && strategy === 'enqueue') {
        return enqueueRun(this.deps, prepared, busy, principal, signal)
      }
      return startPrepared(this.deps, prepared, principal, latest?.runId ?? null, signal)
    }
    if (pending.length === 0) {
      // The same resume again: the run it started is replayed, nothing runs twice.
      if (latest && hash && latest.resumeHash === hash)
        return serveRun(this.deps, latest, undefined, signal)
      const settled = await settledElsewhere(this.deps, input.threadId, input.resume)
      return refusal(settledRefusal(settled, reused ? 'run_id_used' : 'no_pending_interrupt'))
    }
    return resume(this.deps, input, state, hash!, latest!, pending, principal, signal, reused)
  }

  /**
   * The busy-thread policy this input asks for (`forwardedProps.multitaskStrategy`), else the
   * door's (`multitaskStrategy`, default `reject`). @throws InvalidAgUiInputError
   */
  #strategy(input: AgUiInput): MultitaskStrategy {
    const props = input.forwardedProps as Record<string, unknown> | null | undefined
    const asked = props && typeof props === 'object' ? props.multitaskStrategy : undefined
    const field = 'forwardedProps.multitaskStrategy'
    const fallback = this.options.multitaskStrategy ?? 'reject'
    return multitaskStrategyOf(asked, fallback, SUBJECT, field)
  }

  /**
   * A thread as a principal sees it: its newest run and the items waiting for answers in that
   * run's stream; `null` when it is another principal's (answer it like a missing one).
   */
  async thread(
    threadId: string,
    principal: Principal | null
  ): Promise<{ latest: DoorRun | null; pending: ParkedItem[] } | null> {
    const latest = await this.runs.latest(threadId)
    if (latest && !ownedBy(latest, principal)) return null
    // Every pending item: a resume must answer all of them (never a page of them).
    const pending = latest ? await openItems(this.deps, latest.streamRunId) : []
    return { latest, pending }
  }

  /** The run `latest` keeps its thread busy with (`busyWith`), for the native start route. */
  busyWith(latest: DoorRun | null) {
    return busyWith(this.deps, latest)
  }

  /**
   * See `startRun` in `start.ts` (the native start route's), as the thread's turn after `after`
   * (its newest run the caller judged it by; read now when not given).
   */
  async startRun(run: NewRun, input: unknown, principal: Principal | null, after?: string | null) {
    const latest = after === undefined ? await this.runs.latest(run.threadId) : null
    return startRun(this.deps, run, input, principal, null, after ?? latest?.runId ?? null)
  }

  /**
   * One AG-UI run of a stream from `at` (its start when `undefined`), as the door serves it to
   * the client that started or resumed it (no transcript prelude), for a Durable Streams read
   * (`src/durable_streams/dialects/`): `read.until` caps the stored frames read (see
   * `serveRun`).
   */
  segment(
    run: DoorRun,
    at: Cursor | undefined,
    read: { signal?: AbortSignal; until?: Cursor } = {}
  ): Promise<AgUiReply> {
    return serveRun(this.deps, run, at && { cursor: at }, read.signal, { until: read.until })
  }

  /** The AG-UI run that continues `run`'s stream after its end at `end`; see `continuationRun`. */
  continuation(run: DoorRun, end: number): Promise<DoorRun | null> {
    return continuationRun(this.deps, run, end)
  }

  /** `GET` re-attach to an AG-UI run; see `reattach` in `attach.ts`. */
  reattach(
    runId: string,
    after: string | undefined,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<AgUiReply> {
    return reattach(this.deps, runId, after, principal, signal)
  }

  /** `GET` the thread's current run; see `attachThread` in `attach.ts`. */
  attachThread(
    threadId: string,
    after: string | undefined,
    principal: Principal | null,
    signal?: AbortSignal
  ): Promise<AgUiReply> {
    return attachThread(this.deps, threadId, after, principal, signal)
  }
}

/**
 * Whether a resume may name `used`, a recorded run: any AG-UI run of the thread's current stream
 * (the one parked, an earlier segment's, one a repeat of this resume already went on from), of
 * the same principal. The resume's own rules (every open interrupt, decide once) still apply.
 */
function reusable(used: DoorRun, latest: DoorRun | null, principal: Principal | null) {
  return (
    latest !== null &&
    ownedBy(used, principal) &&
    used.threadId === latest.threadId &&
    used.streamRunId === latest.streamRunId
  )
}
