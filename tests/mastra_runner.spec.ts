import { test } from '@japa/runner'
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { FAILURE_SENTENCES, type StreamFrame } from '../src/core/frames.js'
import type { AgentRunner, ResumeContext } from '../src/runner/contract.js'
import { EDITED_INPUT_REASON } from '../src/runners/mastra/agent.js'
import { writeChunks } from '../src/runners/mastra/chunks.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf, waitUntil } from './helpers/sink.js'
import { call, finish, lastResult, mailer, words } from './helpers/mastra.js'
import { withoutInputSchemas } from './helpers/decisions.js'
import { InvalidDecisionError } from '../src/errors.js'

/**
 * `mastraAgent` (adonis-agent-stream/mastra): a Mastra `Agent` with the AI SDK's test model, its
 * paused runs in Mastra's storage on the test's database (`lucidMastraStore`).
 */

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }
const TABLE = 'agent_mastra_snapshots'
type Prompt = LanguageModelV4CallOptions['prompt']

/** The email scenario: a request parks on send_email; its result is answered "Sent."/"Not sent.". */
const email = (prompt: Prompt) => {
  const result = lastResult(prompt)
  if (result) {
    const sent = result.type === 'json' && (result.value as any)?.sent === true
    return [...words(sent ? 'Sent.' : 'Not sent.'), finish()]
  }
  return [
    ...words('I will send it. '),
    call('call_1', 'send_email', { to: 'team@example.com' }),
    finish('tool-calls'),
  ]
}

const kinds = (frames: any[]) =>
  frames.map((f) => (f.t === 'event' ? f.event.kind : f.t)).filter((k) => k !== 'text')

/**
 * A runtime on the suite's database whose runner is a Mastra agent on the SAME Lucid database
 * (as an app gives it `db`); `swap` replaces the agent with a fresh one (a restart: nothing in
 * memory, only what Mastra stored).
 */
async function setup(answer: (prompt: Prompt) => LanguageModelV4StreamPart[] = email) {
  let real: AgentRunner | undefined
  const stack = await setupRunner({
    start: (ctx) => real!.start(ctx),
    resume: (ctx) => real!.resume(ctx),
  })
  let agent = mailer(stack.db, answer)
  real = agent.runner
  return {
    ...stack,
    get agent() {
      return agent
    },
    swap(next = mailer(stack.db, answer)) {
      agent = next
      real = next.runner
      return next
    },
  }
}

async function park(stack: Awaited<ReturnType<typeof setup>>, message = 'Send the report') {
  const id = runId('mastra')
  const outcome = await (
    await stack.driver.start({ runId: id, input: { message }, principal: alice })
  ).done
  return { id, outcome }
}

const rows = (stack: Awaited<ReturnType<typeof setup>>) =>
  stack.db.from(TABLE).select('workflow_name', 'run_id')

test.group('Mastra runner', () => {
  test("a tool with requireApproval parks: its frames, one approval, the checkpoint is Mastra's run id, its snapshot in the database", async ({
    assert,
  }) => {
    const stack = await setup()
    const { id, outcome } = await park(stack)
    assert.equal(outcome.status, 'parked')
    const checkpoint = (outcome as { checkpoint: any }).checkpoint
    assert.deepEqual(Object.keys(checkpoint), ['runner', 'runId', 'waiting'])
    assert.equal(checkpoint.runner, 'mastra')
    assert.deepEqual(checkpoint.waiting, ['call_1'])
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.deepEqual(kinds(frames), ['step-start', 'tool-input-available', 'approval'])
    assert.equal(textOf(frames), 'I will send it. ')
    assert.equal(frames[2].event.toolKind, 'action')
    const approval = frames.find((f) => f.t === 'approval')
    assert.deepInclude(approval, {
      runId: id,
      id: 'call_1',
      toolName: 'send_email',
      input: { to: 'team@example.com' },
      approver: 'requester',
      confirmation: { title: 'Run send_email?' },
    })
    assert.lengthOf(stack.agent.ran, 0)
    // Mastra's own snapshots of the paused run, under its run id, in the package's table.
    const stored = await rows(stack)
    assert.isAbove(stored.length, 0)
    assert.isTrue(stored.every((row: any) => row.run_id === checkpoint.runId))
  }).timeout(30_000)

  test('approved after a restart (a fresh Mastra agent): the tool runs once, the model sees its result, the snapshots are gone', async ({
    assert,
  }) => {
    const stack = await setup()
    const { id } = await park(stack)
    const first = stack.agent
    const fresh = stack.swap()
    await stack.parking.decisions.approve(id, 'call_1', decider)
    await stack.driver.settled()
    assert.deepEqual([first.ran, fresh.ran], [[], [{ to: 'team@example.com' }]])
    assert.deepEqual(fresh.errors, [])
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.deepInclude(frames.map((f) => f.event).filter(Boolean), {
      kind: 'tool-output',
      id: 'call_1',
      output: { sent: true },
    })
    // The model was called once more, with the tool's result (not again for what it said).
    assert.lengthOf(fresh.prompts, 1)
    assert.deepEqual(lastResult(fresh.prompts[0]), { type: 'json', value: { sent: true } })
    assert.lengthOf(await rows(stack), 0)
  }).timeout(30_000)

  test('rejected: the tool never runs, the model is told the reason', async ({ assert }) => {
    const stack = await setup()
    const { id } = await park(stack)
    await stack.parking.decisions.reject(id, 'call_1', decider, { reason: 'not today' })
    await stack.driver.settled()
    assert.lengthOf(stack.agent.ran, 0)
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Not sent.')
    assert.deepEqual(lastResult(stack.agent.prompts.at(-1)!), { type: 'text', value: 'not today' })
    // The denial is stored once (by the decision), not again from Mastra's chunk.
    assert.lengthOf(
      frames.filter((f) => f.event?.kind === 'tool-output-denied'),
      1
    )
  }).timeout(30_000)

  test('an edit is refused where it is made (inputSchema: false); one stored before that is declined, never run', async ({
    assert,
  }) => {
    const stack = await setup()
    const { id } = await park(stack)
    const edit = { input: { to: 'boss@example.com' } }
    const refused = await stack.parking.decisions
      .approve(id, 'call_1', decider, edit)
      .catch((error: unknown) => error)
    assert.instanceOf(refused, InvalidDecisionError)
    // An approval frame written before edits were refused: the edit is accepted, then declined.
    assert.equal(await withoutInputSchemas(stack.db, id), 1)
    await stack.parking.decisions.approve(id, 'call_1', decider, {
      input: { to: 'boss@example.com' },
    })
    await stack.driver.settled()
    assert.lengthOf(stack.agent.ran, 0)
    assert.deepEqual(lastResult(stack.agent.prompts.at(-1)!), {
      type: 'text',
      value: EDITED_INPUT_REASON,
    })
    assert.equal(textOf(await collect(stack.sink.subscribe(id))), 'I will send it. Not sent.')
  }).timeout(30_000)

  test('a snapshot that no longer resumes: checkpoint_unreadable, its fixed sentence, no tool, no loop; a changed agent whose snapshot resumes goes on', async ({
    assert,
  }) => {
    const stack = await setup()
    const gone = await park(stack)
    await stack.db.from(TABLE).delete()
    await stack.parking.decisions.approve(gone.id, 'call_1', decider)
    await stack.driver.settled()
    const frames: any[] = await collect(stack.sink.subscribe(gone.id))
    assert.deepEqual(
      frames.filter((f) => f.t === 'error').map(({ cursor: _c, ...f }) => f),
      [
        {
          t: 'error',
          code: 'checkpoint_unreadable',
          message:
            "The run's checkpoint could not be read: the agent changed since the run paused.",
        },
      ]
    )
    assert.equal(
      frames.find((f) => f.t === 'error').message,
      FAILURE_SENTENCES.checkpoint_unreadable
    )
    assert.lengthOf(stack.agent.errors, 1, 'the app is told why')
    assert.lengthOf(stack.agent.ran, 0)

    // An agent that changed but whose snapshot still resumes (the tool it paused on is gone):
    // Mastra goes on, the call's result is its error, and the model answers it.
    const other = await park(stack)
    const changed = stack.swap(mailer(stack.db, email, {}, 'mailer', ['send_email']))
    await stack.parking.decisions.approve(other.id, 'call_1', decider)
    await stack.driver.settled()
    const after: any[] = await collect(stack.sink.subscribe(other.id))
    assert.equal(after.find((f) => f.event?.kind === 'tool-output-error')?.event.id, 'call_1')
    assert.equal(textOf(after), 'I will send it. Not sent.')
    assert.isUndefined(after.find((f) => f.t === 'error'))
    assert.lengthOf(changed.ran, 0)

    // A checkpoint of another shape (another runner's, or none) fails the same way.
    for (const checkpoint of [
      null,
      { runner: 'ai-sdk', waiting: [] },
      { runner: 'mastra', runId: 7 },
    ]) {
      const outcome = await stack.agent.runner.resume({
        checkpoint,
        items: [],
      } as unknown as ResumeContext)
      assert.deepEqual(outcome, { status: 'failed', code: 'checkpoint_unreadable' })
    }
  }).timeout(30_000)

  test('two calls that need approval in one step: Mastra asks one at a time, a park each, each decision handed to Mastra', async ({
    assert,
  }) => {
    const stack = await setup((prompt) =>
      lastResult(prompt)
        ? [...words('Done.'), finish()]
        : [
            call('call_a', 'send_email', { to: 'a@example.com' }),
            call('call_b', 'send_email', { to: 'b@example.com' }),
            finish('tool-calls'),
          ]
    )
    const { id, outcome } = await park(stack, 'Send both')
    assert.equal(outcome.status, 'parked')
    const parked: any[] = await collect(stack.sink.subscribe(id))
    assert.deepEqual(kinds(parked), [
      'step-start',
      'tool-input-available',
      'tool-input-available',
      'approval',
    ])
    assert.deepEqual((outcome as any).checkpoint.waiting, ['call_a'])
    await stack.parking.decisions.approve(id, 'call_a', decider)
    await stack.driver.settled()
    const middle: any[] = await collect(stack.sink.subscribe(id))
    assert.deepEqual(
      middle.filter((f) => f.t === 'approval').map((f) => f.id),
      ['call_a', 'call_b']
    )
    assert.deepEqual(stack.agent.ran, [{ to: 'a@example.com' }])
    await stack.parking.decisions.reject(id, 'call_b', decider)
    await stack.driver.settled()
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.deepEqual(stack.agent.ran, [{ to: 'a@example.com' }])
    const events = frames.map((f) => f.event).filter(Boolean)
    assert.deepInclude(events, { kind: 'tool-output', id: 'call_a', output: { sent: true } })
    assert.equal(events.filter((e: any) => e.kind === 'tool-output-denied')[0]?.id, 'call_b')
    assert.equal(textOf(frames), 'Done.')
  }).timeout(30_000)

  test('an unknown chunk is skipped; a chunk without a payload writes nothing unsafe', async ({
    assert,
  }) => {
    const written: StreamFrame[] = []
    const ctx = {
      runId: 'r',
      signal: new AbortController().signal,
      writer: { write: async (frame: StreamFrame) => void written.push(frame) },
    } as any
    async function* chunks() {
      yield { type: 'text-delta', payload: { id: 't', text: 'a' } }
      yield { type: 'made-up-chunk', payload: { secret: 'x' } }
      yield { type: 'data-custom', data: { y: 1 } }
      yield { type: 'text-delta' }
      yield { type: 'text-delta', payload: { id: 't', text: 'b' } }
    }
    const outcome = await writeChunks(ctx, chunks(), {
      approval: {},
      toolKind: () => 'read',
      known: new Set(),
    })
    assert.deepEqual(written, [
      { t: 'text', v: 'a' },
      { t: 'text', v: 'b' },
    ])
    assert.deepEqual(outcome, { asked: [], failed: null, aborted: false })
  })

  test('a tool without approval runs in the segment: read calls, their output, the answer', async ({
    assert,
  }) => {
    const stack = await setup((prompt) =>
      lastResult(prompt)
        ? [...words('Found 42.'), finish()]
        : [call('call_s', 'search', { q: 'numbers' }), finish('tool-calls')]
    )
    const { id, outcome } = await park(stack, 'Search')
    assert.equal(outcome.status, 'finished')
    const frames: any[] = await collect(stack.sink.subscribe(id))
    const events = frames.map((f) => f.event).filter(Boolean)
    assert.deepInclude(events, {
      kind: 'tool-input-available',
      id: 'call_s',
      name: 'search',
      input: { q: 'numbers' },
      toolKind: 'read',
    })
    assert.deepInclude(events, { kind: 'tool-output', id: 'call_s', output: { found: 42 } })
    assert.equal(textOf(frames), 'Found 42.')
    assert.isTrue(events.some((e: any) => e.kind === 'step-finish' && e.model === 'scripted'))
  }).timeout(30_000)

  test("a stop aborts Mastra's stream (the model sees the abort): cancelled, what was said stays", async ({
    assert,
  }) => {
    let modelAborted = false
    let real: AgentRunner | undefined
    const stack = await setupRunner({
      start: (ctx) => real!.start(ctx),
      resume: (ctx) => real!.resume(ctx),
    })
    const agent = mailer(stack.db, () => [])
    real = agent.runner
    agent.model.doStream = async (options: LanguageModelV4CallOptions) => ({
      stream: new ReadableStream<LanguageModelV4StreamPart>({
        async start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] })
          for (const part of words('Hello ')) controller.enqueue(part)
          await new Promise<void>((resolve) => {
            if (options.abortSignal?.aborted) resolve()
            options.abortSignal?.addEventListener('abort', () => resolve())
          })
          modelAborted = true
          controller.error(options.abortSignal?.reason ?? new Error('aborted'))
        },
      }),
    })
    const id = runId('mastra-stop')
    await stack.door.startRun(
      { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
      { message: 'hi' },
      alice
    )
    const stored = async () =>
      (await collect(stack.sink.replay(id) as AsyncIterable<any>)).filter((f: any) => f.t !== 'end')
    await waitUntil(async () => textOf(await stored()) === 'Hello ', 'the first word')
    const outcome = await stack.control.stop(id, decider)
    assert.equal(outcome.status, 'cancelled')
    await stack.driver.settled()
    assert.isTrue(modelAborted)
    const frames = await stored()
    assert.equal(textOf(frames), 'Hello ')
    assert.deepEqual((frames.at(-1) as any)?.event, { kind: 'cancelled' })
  }).timeout(30_000)
})
