import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner, ResumeContext } from '../src/runner/contract.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'
import { setupRunner } from './helpers/parking.js'
import { DEFAULTS } from '../src/defaults.js'
import { InvalidFrameError } from '../src/errors.js'
import { collect, runId, sleep } from './helpers/sink.js'

const alice = { id: 'alice' }

/**
 * `start` delegates to two sub-agents, `c1` and `c2`; each asks approval for its own call, then
 * the run parks once. `resume` records what it was given, closes the children and finishes.
 */
function siblings(resumes: { runId: string; items: [string, string, string][] }[]): AgentRunner {
  return {
    async start(ctx) {
      for (const name of ['c1', 'c2']) {
        const child = ctx.child(`${ctx.runId}.${name}`, { name })
        await child.writer.write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: `${name}-call`,
            name: 'act',
            input: { who: name },
            toolKind: 'action',
          },
        })
        await child.writer.write({
          t: 'approval',
          runId: child.runId,
          id: `${name}-call`,
          toolName: 'act',
          input: { who: name },
        })
      }
      return { status: 'parked', checkpoint: { children: ['c1', 'c2'] } }
    },
    async resume(ctx: ResumeContext) {
      resumes.push({ runId: ctx.runId, items: ctx.items.map((i) => [i.runId, i.id, i.status]) })
      for (const item of ctx.items) {
        if (item.status === 'approved') {
          await ctx.writer.write({
            t: 'event',
            event: { kind: 'tool-output', id: item.id, output: { done: true } },
          })
        }
      }
      for (const name of ['c2', 'c1']) {
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'subagent-finish', runId: `${ctx.streamRunId}.${name}` },
        })
      }
      await ctx.writer.write({ t: 'text', v: 'Both done.' })
      return { status: 'finished' }
    },
  }
}

/** `count` approvals in one park (a fan-out the model asked for at once). */
function many(count: number): AgentRunner {
  return {
    async start(ctx) {
      for (let i = 0; i < count; i++) {
        await ctx.writer.write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: `c${i}`,
            name: 'act',
            input: {},
            toolKind: 'action',
          },
        })
        await ctx.writer.write({
          t: 'approval',
          runId: ctx.runId,
          id: `c${i}`,
          toolName: 'act',
          input: { i },
        })
      }
      return { status: 'parked', checkpoint: {} }
    },
    async resume(ctx) {
      await ctx.writer.write({
        t: 'text',
        v: `${ctx.items.filter((i) => i.status === 'approved').length} approved.`,
      })
      return { status: 'finished' }
    },
  }
}

async function until(check: () => Promise<boolean> | boolean, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(20)
  }
}

async function serve(runner: AgentRunner) {
  const served = await serveApp({ runner })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const sse = async (body: unknown) => {
    const response = await postJson(`${served.url}/agui`, body)
    return parseSse(await response.text()).map((e) => e.event)
  }
  return { ...served, db, sse }
}

test.group('Parking | sibling sub-agents park in one segment (issue 10, item 12)', () => {
  test('approving one sibling resumes nothing; the last decision resumes once, with every item', async ({
    assert,
  }) => {
    const resumes: { runId: string; items: [string, string, string][] }[] = []
    const { driver, parking, sink } = await setupRunner(siblings(resumes))
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    const pending = await parking.queries.list({ streamRunId: id })
    assert.sameMembers(
      pending.map((i) => i.runId),
      [`${id}.c1`, `${id}.c2`]
    )
    await parking.decisions.approve(`${id}.c1`, 'c1-call', { principal: alice })
    await driver.settled()
    await sleep(100)
    assert.lengthOf(resumes, 0, 'resumed while c2 still waits')
    await parking.decisions.reject(`${id}.c2`, 'c2-call', { principal: alice })
    await driver.settled()
    await until(() => resumes.length === 1)
    await sleep(100)
    await driver.settled()
    assert.lengthOf(resumes, 1)
    // Several runs parked: `resume` is the run whose segment it was, items tell theirs apart.
    assert.deepEqual(resumes[0], {
      runId: id,
      items: [
        [`${id}.c1`, 'c1-call', 'approved'],
        [`${id}.c2`, 'c2-call', 'rejected'],
      ],
    })
    const frames = await collect(sink.subscribe(id))
    assert.include(frames.at(-1) as any, { t: 'text', v: 'Both done.' })
    // The sweeper finds nothing more to resume.
    assert.equal(await parking.sweeper.resumeReady(), 0)
  })

  test('one AG-UI resume answering both siblings: one continuation, served whole', async ({
    assert,
  }) => {
    const resumes: { runId: string; items: [string, string, string][] }[] = []
    const { sse, agentStream } = await serve(siblings(resumes))
    const threadId = `t-${randomUUID()}`
    const first = await sse({
      threadId,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: 'go' }],
    })
    await assertConforms(assert, first)
    const interrupts = first.at(-1)!.outcome.interrupts as WireEvent[]
    assert.lengthOf(interrupts, 2)
    const second = await sse({
      threadId,
      runId: randomUUID(),
      messages: [],
      resume: interrupts.map((i) => ({
        interruptId: i.id,
        status: 'resolved',
        payload: { approved: true },
      })),
    })
    await agentStream.driver.settled()
    await assertConforms(assert, second)
    assert.lengthOf(resumes, 1)
    assert.deepEqual(second.at(-1)!.outcome, { type: 'success' })
    assert.lengthOf(
      second.filter((e) => e.type === 'TOOL_CALL_RESULT'),
      2
    )
    assert.include(
      second
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
      'Both done.'
    )
  })

  test('cancelling a sibling cancels the segment: both calls declined, never resumed', async ({
    assert,
  }) => {
    const resumes: { runId: string; items: [string, string, string][] }[] = []
    const { driver, parking, sink, db } = await setupRunner(siblings(resumes))
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    await parking.decisions.cancel(`${id}.c2`, { principal: alice })
    const frames = (await collect(sink.subscribe(id))) as any[]
    assert.sameMembers(
      frames.filter((f) => f.event?.kind === 'tool-output-denied').map((f) => f.event.id),
      ['c1-call', 'c2-call']
    )
    const statuses = await db.connection().from('agent_suspensions').where('stream_run_id', id)
    assert.deepEqual(
      statuses.map((s: any) => s.status),
      ['cancelled', 'cancelled']
    )
    await driver.settled()
    assert.lengthOf(resumes, 0)
  })
})

test.group('Parking | "all" is every item, not a page (issue 10, item 13)', () => {
  test('a park of 101 items: resumed over AG-UI with all of them; cancel declines all', async ({
    assert,
  }) => {
    const { sse, agentStream, url } = await serve(many(101))
    const threadId = `t-${randomUUID()}`
    const first = await sse({
      threadId,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: 'go' }],
    })
    const interrupts = first.at(-1)!.outcome.interrupts as WireEvent[]
    assert.lengthOf(interrupts, 101)
    // A new message is refused while any of them waits (the native route too).
    const native = await postJson(`${url}/runs`, { message: 'x', threadId })
    assert.equal(native.status, 409)
    const second = await sse({
      threadId,
      runId: randomUUID(),
      messages: [],
      resume: interrupts.map((i) => ({
        interruptId: i.id,
        status: 'resolved',
        payload: { approved: true },
      })),
    })
    await agentStream.driver.settled()
    assert.deepEqual(second.at(-1)?.outcome, { type: 'success' })
    assert.include(
      second
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
      '101 approved.'
    )

    // Cancel: every one of 101 pending calls gets its denial.
    const other = `t-${randomUUID()}`
    const parked = await sse({
      threadId: other,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: 'go' }],
    })
    const streamRunId = parked[0].runId as string
    const cancel = await postJson(`${url}/runs/${streamRunId}/cancel`, {})
    assert.equal(cancel.status, 200)
    const frames = (await collect(agentStream.sink.subscribe(streamRunId))) as any[]
    assert.lengthOf(
      frames.filter((f) => f.event?.kind === 'tool-output-denied'),
      101
    )
  })

  test('a segment parks on at most maxItemsPerSegment items: the next is refused, nothing stored', async ({
    assert,
  }) => {
    const max = DEFAULTS.maxItemsPerSegment
    let refused: unknown = null
    const runner: AgentRunner = {
      async start(ctx) {
        for (let i = 0; i < max; i++) {
          await ctx.writer.write({
            t: 'approval',
            runId: ctx.runId,
            id: `c${i}`,
            toolName: 'act',
            input: {},
          })
        }
        // A child's too: the cap is the segment's.
        const child = ctx.child(`${ctx.runId}.sub`)
        try {
          await child.writer.write({
            t: 'approval',
            runId: child.runId,
            id: 'over',
            toolName: 'act',
            input: {},
          })
        } catch (error) {
          refused = error
        }
        return { status: 'parked', checkpoint: {} }
      },
      async resume() {
        return { status: 'finished' }
      },
    }
    const { driver, parking, sink } = await setupRunner(runner)
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    assert.instanceOf(refused, InvalidFrameError)
    assert.deepEqual((refused as InvalidFrameError).issues, [
      { field: 'approval', rule: 'maxItemsPerSegment' },
    ])
    assert.lengthOf(await parking.queries.pendingOf(id), max)
    const frames = (await collect(sink.subscribe(id))) as any[]
    assert.notInclude(
      frames.map((f) => f.id),
      'over'
    )
  }).timeout(120_000)

  test('the admin page pages through every pending item', async ({ assert }) => {
    const { url, agentStream } = await serve(many(101))
    await postJson(`${url}/runs`, { message: 'go' })
    await agentStream.driver.settled()
    const headers = { 'x-admin': 'yes', 'x-user': 'alice' }
    const rows = (html: string) => [...html.matchAll(/<tr data-key=/g)].length
    const first = await (await fetch(`${url}/admin`, { headers })).text()
    assert.equal(rows(first), 50)
    const next = /<a href="([^"]*)" rel="next">/.exec(first)
    assert.isNotNull(next, 'no link to the next page')
    const second = await (
      await fetch(new URL(next![1].replaceAll('&amp;', '&'), url), { headers })
    ).text()
    assert.equal(rows(second), 50)
    const third = await (
      await fetch(
        new URL(/<a href="([^"]*)" rel="next">/.exec(second)![1].replaceAll('&amp;', '&'), url),
        { headers }
      )
    ).text()
    assert.equal(rows(third), 1)
    assert.notMatch(third, /rel="next"/)
  })
})
