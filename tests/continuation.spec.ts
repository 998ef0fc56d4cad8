import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from '@japa/runner'
import { jsonSchema, tool } from 'ai'
import { appendFileSync } from 'node:fs'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import { INTERRUPTED_TOOL_ERROR } from '../src/runner/contract.js'
import { LeaseLostError } from '../src/errors.js'
import { sinkInternals, LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { FrameTranslator } from '../src/agui/translate/index.js'
import { UiMessageTranslator } from '../src/ui_message/translate/index.js'
import { parseCursor, type Cursor } from '../src/core/cursor.js'
import type { DeliveredFrame, StreamFrame } from '../src/core/frames.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'
import { finish, scriptedModel, text, type Turn } from './helpers/ai_sdk.js'
import { Replica } from './helpers/replica.js'
import { assertConforms } from './helpers/agui.js'
import { createDatabase, DIALECT } from './helpers/db.js'

const alice = { id: 'alice' }
const LEASE_MS = 1500

/** The model messages of a prompt, content parts as sent. */
const promptOf = (call: { prompt: any[] }) =>
  (JSON.parse(JSON.stringify(call.prompt)) as any[]).map((m) => ({
    role: m.role as string,
    parts: m.content,
  }))

const before = (a: Cursor, b: Cursor) =>
  a.seq < b.seq || (a.seq === b.seq && (a.offset ?? Infinity) < (b.offset ?? Infinity))

/** The tool both replicas run: one line `<pid> <input>` per run in `log`. */
function sendEmail(log: string) {
  return tool({
    inputSchema: jsonSchema<{ to: string }>({
      type: 'object',
      properties: { to: { type: 'string' } },
    }),
    needsApproval: true,
    execute: async (input) => {
      appendFileSync(log, `${process.pid} ${JSON.stringify(input)}\n`)
      return { sent: true }
    },
  })
}

/**
 * The last segment's frames through both doors: the AG-UI events pass the official checks
 * (one run, no id started twice), the useChat chunks start every part once.
 */
async function assertDoors(assert: any, frames: DeliveredFrame[], streamRunId: string) {
  const translator = new FrameTranslator({ streamRunId })
  const run = { threadId: streamRunId, runId: `${streamRunId}-2` }
  const events: any[] = translator.open(run)
  for (const { cursor, ...body } of frames) {
    events.push(...translator.push(body as StreamFrame, parseCursor(cursor)))
  }
  events.push(...translator.close(run))
  await assertConforms(assert, events)
  const ui = new UiMessageTranslator({})
  const chunks: any[] = []
  for (const { cursor, ...body } of frames)
    chunks.push(...ui.push(body as StreamFrame, parseCursor(cursor)))
  chunks.push(...ui.end(true))
  const starts = chunks.filter((c) => c.type === 'text-start').map((c) => c.id)
  assert.deepEqual(starts, [...new Set(starts)])
  const outputs = chunks
    .filter((c) => String(c.type).startsWith('tool-output'))
    .map((c) => c.toolCallId)
  assert.deepEqual(outputs, [...new Set(outputs)])
}

/**
 * Replica A (a second process) parks the email run, takes the approval and resumes it, and is
 * killed (-9) at `dieAt`; this process (replica B) continues the segment once A's lease lapses.
 */
async function killDuringResume(
  assert: any,
  fs: any,
  dieAt: 'resume-opened' | 'mid-text' | 'tool-started',
  turns: Turn[],
  { reader }: { reader: boolean }
) {
  const log = join(fs.basePath, 'tool.log')
  await fs.create('tool.log', '')
  const model = scriptedModel(turns)
  const stack = await setupRunner(aiSdkAgent({ model, tools: { send_email: sendEmail(log) } }), {
    leaseMs: LEASE_MS,
  })
  const replica = await Replica.start({ leaseMs: LEASE_MS } as any, {
    script: 'continuation',
    env: { TOOL_LOG: log, DIE_AT: dieAt },
  })
  const id = runId()
  assert.equal((await replica.call({ op: 'start', runId: id, principal: alice })).result, 'parked')
  const parkedAt = (await stack.sink.head(id))!.lastSeq
  const dying = new Promise<void>((resolve) =>
    replica.child.on('message', (message: any) => message.at === dieAt && resolve())
  )
  const exited = new Promise((resolve) => replica.child.once('exit', resolve))
  replica.child.send({ id: 50, op: 'approve', runId: id, itemId: 'call_9', principal: alice })
  await dying
  // A reader attached to the open segment, on this replica, follows it through the takeover.
  const live = reader
    ? collect(stack.sink.subscribe(id, { after: String(parkedAt) }), { timeoutMs: 30_000 })
    : null
  if (live) await sleep(100)
  replica.kill('SIGKILL')
  await exited
  if (!live) {
    // Nobody reads it: the sweeper finds the lapsed lease and continues the segment.
    const deadline = Date.now() + 20_000
    while ((await stack.sink.head(id))!.status === 'open' && Date.now() < deadline) {
      await stack.parking.sweeper.settleLapsed()
      await sleep(200)
    }
  }
  const seen = live ? await live : []
  await stack.driver.settled()
  assert.equal((await stack.sink.head(id))!.status, 'ended')
  const stored = (await collect(stack.sink.subscribe(id))) as DeliveredFrame[]
  const segment = stored.filter((frame) => parseCursor(frame.cursor).seq > parkedAt)
  const continued = stored.filter(
    (frame) => frame.t === 'event' && (frame.event.kind as string) === 'segment-continued'
  )
  assert.lengthOf(continued, 1)
  if (live) {
    // One continuous stream: every cursor once, in order, and the same text as stored.
    for (let i = 1; i < seen.length; i++) {
      assert.isTrue(before(parseCursor(seen[i - 1].cursor), parseCursor(seen[i].cursor)))
    }
    assert.equal(textOf(seen), textOf(segment))
    assert.equal(seen.at(-1)!.cursor, segment.at(-1)!.cursor)
  }
  await assertDoors(assert, segment, id)
  const lines = (await readFile(log, 'utf8')).trim().split('\n').filter(Boolean)
  return { model, stored, segment, lines, pid: replica.child.pid! }
}

test.group('Continuation | a replica killed mid-segment', (group) => {
  group.each.timeout(60_000)

  test('(a) killed as the resume opened, before the tool ran: another replica runs the approved tool once', async ({
    assert,
    fs,
  }) => {
    const { model, stored, lines } = await killDuringResume(
      assert,
      fs,
      'resume-opened',
      [[...text('Sent.'), ...finish()]],
      { reader: false }
    )
    assert.deepEqual(lines, [`${process.pid} {"to":"team@example.com"}`])
    assert.equal(textOf(stored), 'I will send it. Sent.')
    assert.lengthOf(model.doStreamCalls, 1)
    // The model was told the tool's result, from this replica's run of it.
    const prompt = promptOf(model.doStreamCalls[0])
    assert.deepInclude(prompt.at(-1)!.parts[0], {
      type: 'tool-result',
      toolCallId: 'call_9',
      output: { type: 'json', value: { sent: true } },
    })
  })

  test('(b) killed mid-text after the tool ran: continued from the stored text, the tool not run again', async ({
    assert,
    fs,
  }) => {
    const { model, stored, lines, pid } = await killDuringResume(
      assert,
      fs,
      'mid-text',
      [[...text('Done.'), ...finish()]],
      { reader: true }
    )
    assert.deepEqual(lines, [`${pid} {"to":"team@example.com"}`])
    assert.equal(textOf(stored), 'I will send it. Sending the report to the team Done.')
    assert.lengthOf(model.doStreamCalls, 1)
    // The model is sent what it had said, the tool's result and the text cut mid-way.
    const prompt = promptOf(model.doStreamCalls[0])
    assert.deepEqual(prompt.at(-1), {
      role: 'assistant',
      parts: [{ type: 'text', text: 'Sending the report to the team ' }],
    })
  })

  test('(c) killed after the tool started: not run again, its fate recorded for the model', async ({
    assert,
    fs,
  }) => {
    const { model, stored, lines, pid } = await killDuringResume(
      assert,
      fs,
      'tool-started',
      [[...text('I could not confirm it was sent.'), ...finish()]],
      { reader: true }
    )
    assert.deepEqual(lines, [`${pid} {"to":"team@example.com"}`])
    const fates = stored.filter(
      (frame) => frame.t === 'event' && frame.event.kind.startsWith('tool-output')
    )
    assert.deepEqual(
      fates.map((frame: any) => frame.event),
      [{ kind: 'tool-output-error', id: 'call_9', error: INTERRUPTED_TOOL_ERROR }]
    )
    assert.equal(textOf(stored), 'I will send it. I could not confirm it was sent.')
    const prompt = promptOf(model.doStreamCalls[0])
    assert.deepInclude(prompt.at(-1)!.parts[0], {
      type: 'tool-result',
      toolCallId: 'call_9',
      output: { type: 'error-text', value: INTERRUPTED_TOOL_ERROR },
    })
  })
})

test.group('Continuation | the takeover', () => {
  test('the first replica to claim wins; the old writer finds its lease lost and writes nothing more', async ({
    assert,
  }) => {
    const { db, sink } = await setupSink({ leaseMs: 60_000 })
    const otherDb = createDatabase()
    const other = new LucidTokenStreamSink(otherDb, { leaseMs: 60_000 })
    const id = runId()
    const old = await sink.open(id, {}, undefined, { meta: { runId: id }, input: null })
    await old.write({ t: 'text', v: 'Hello ' })
    await old.flush()
    // The lease lapses (as when the writer's process is gone).
    const { tables } = sink
    await db.connection().from(tables.streams).where('run_id', id).update({ lease_expires_at: 1 })
    const frame: StreamFrame = { t: 'event', event: { kind: 'title', title: 'taken' } }
    // Two replicas' sinks at once, each with its own pool (on SQLite two connections of one
    // process would wait on each other's lock in one thread: there the claims race on one sink).
    const second = DIALECT === 'sqlite' ? sink : other
    const claims = await Promise.all([
      sink.takeOver(id, [frame], () => ({})),
      second.takeOver(id, [frame], () => ({})),
      sink.takeOver(id, [frame], () => ({})),
    ])
    const won = claims.filter((claim) => claim !== null)
    assert.lengthOf(won, 1)
    assert.deepEqual(won[0]!.segment, { meta: { runId: id }, input: null })
    // The old writer's next commits are refused (text through a group commit, an event alone).
    await assert.rejects(async () => {
      await old.write({ t: 'event', event: { kind: 'title', title: 'late' } })
    }, LeaseLostError as any)
    assert.isTrue(old.leaseLost)
    const renewed = await sinkInternals(sink).store.renewLease(id, 60_000, 0)
    assert.isFalse(renewed)
    await won[0]!.writer.write({ t: 'text', v: 'world' })
    await won[0]!.writer.end()
    const frames = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'Hello world')
    assert.notInclude(JSON.stringify(frames), 'late')
    assert.lengthOf(
      frames.filter((f) => f.t === 'event' && f.event.kind === 'title'),
      1
    )
    await other.shutdown()
    await otherDb.manager.closeAll()
  })

  test('a stream whose segment was not recorded (a writer opened outside the driver) is not taken over', async ({
    assert,
  }) => {
    const { db, sink } = await setupSink({ leaseMs: 60_000 })
    const id = runId()
    await sink.open(id)
    await db
      .connection()
      .from(sink.tables.streams)
      .where('run_id', id)
      .update({ lease_expires_at: 1 })
    assert.isNull(await sink.takeOver(id, [], () => ({})))
    assert.deepEqual(await sink.lapsedSegments(10), [])
  })
})

test.group('Continuation | a writer taken for dead that comes back', () => {
  test('its outcome is not written and the continuation parks undisturbed', async ({ assert }) => {
    let openA!: () => void
    const gateA = new Promise<void>((resolve) => (openA = resolve))
    let openB!: () => void
    const gateB = new Promise<void>((resolve) => (openB = resolve))
    let asked!: () => void
    const approvalWritten = new Promise<void>((resolve) => (asked = resolve))
    const a = await setupRunner(
      {
        start: async (ctx) => {
          await ctx.writer.write({ t: 'text', v: 'Before ' })
          await ctx.writer.flush?.()
          await gateA
          return { status: 'finished' }
        },
        resume: async () => ({ status: 'finished' }),
      },
      { leaseMs: 60_000 }
    )
    const dbB = createDatabase()
    const { createRuntime } = await import('../src/runtime.js')
    const b = createRuntime(dbB, {
      leaseMs: 60_000,
      runner: {
        start: async () => ({ status: 'finished' }),
        resume: async () => ({ status: 'finished' }),
        continue: async (ctx) => {
          await ctx.writer.write({ t: 'text', v: 'after.' })
          await ctx.writer.write({
            t: 'approval',
            runId: ctx.runId,
            id: 'call_1',
            toolName: 'send',
            input: {},
          })
          asked()
          await gateB
          return { status: 'parked', checkpoint: { at: 'continued' } }
        },
      },
    })
    const id = runId()
    const started = await a.driver.start({ runId: id, input: 'go', principal: alice })
    await sleep(100)
    // A stalls past its lease (as a paused process does): B takes the segment over.
    await a.db
      .connection()
      .from(a.sink.tables.streams)
      .where('run_id', id)
      .update({ lease_expires_at: 1 })
    assert.isTrue(await b.driver.continueLapsed(id))
    await approvalWritten
    // A comes back and its agent finishes: nothing of it is written, B's approval stays pending.
    openA()
    assert.deepEqual(await started.done, { status: 'failed' })
    const pending = await a.db.connection().from(a.sink.tables.approvals).where('item_id', 'call_1')
    assert.deepEqual(
      pending.map((row: any) => row.status),
      ['pending']
    )
    openB()
    await b.driver.settled()
    const frames = await collect(a.sink.subscribe(id))
    assert.equal(textOf(frames), 'Before after.')
    assert.notInclude(
      frames.map((f) => f.t),
      'error'
    )
    const suspension = await a.db
      .connection()
      .from(a.sink.tables.suspensions)
      .where('stream_run_id', id)
      .first()
    assert.equal(suspension.status, 'parked')
    await b.sink.shutdown()
    await dbB.manager.closeAll()
  })
})
