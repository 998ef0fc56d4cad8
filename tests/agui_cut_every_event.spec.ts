import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import {
  HttpAgent,
  runHttpRequest,
  transformHttpEventStream,
  type RunAgentInput,
} from '@ag-ui/client'
import type { AgentRunner } from '../src/runner/contract.js'
import type { AgUiDoorOptions } from '../src/agui/door/index.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { postJson, runInput, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, recordingFetch, type WireEvent } from './helpers/agui.js'
import { SCENARIOS } from './helpers/scenarios.js'

type Item = { event: WireEvent; id?: string }

/**
 * What a join prelude may hold: the run's start, the thread before the run (a connection without
 * a cursor), a state snapshot, re-opened constructs.
 */
const PRELUDE = new Set([
  'RUN_STARTED',
  'MESSAGES_SNAPSHOT',
  'STATE_SNAPSHOT',
  'STEP_STARTED',
  'SUBAGENT_STARTED',
  'TEXT_MESSAGE_START',
  'TOOL_CALL_START',
  'REASONING_START',
  'REASONING_MESSAGE_START',
])

const get = (url: string, lastEventId?: string) =>
  fetch(url, {
    headers: { 'x-user': 'alice', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
  })

/** `HttpAgent` whose `connect()` reads `connectUrl` (a run, from a cursor). */
class Connector extends HttpAgent {
  connectUrl = ''
  protected connect(_input: RunAgentInput) {
    return transformHttpEventStream(
      runHttpRequest(() =>
        this.fetch(this.connectUrl, {
          method: 'GET',
          headers: { ...this.headers, Accept: 'text/event-stream' },
        })
      )
    )
  }
}

/** Drive a scenario to its end over `POST /agui`: its AG-UI run ids, in order. */
async function drive(url: string, answers: ('approve' | 'answer')[]) {
  const threadId = `t-${randomUUID()}`
  const runIds: string[] = []
  let body: Record<string, unknown> = runInput(threadId, randomUUID())
  for (let step = 0; ; step++) {
    const events = parseSse(await (await postJson(`${url}/agui`, body)).text()).map((e) => e.event)
    runIds.push(events[0].runId)
    const outcome = events.at(-1)!.outcome
    if (outcome?.type !== 'interrupt') break
    const [interrupt] = outcome.interrupts
    const payload =
      answers[step] === 'approve' ? { approved: true } : { answers: { format: ['csv'] } }
    body = {
      threadId,
      runId: randomUUID(),
      messages: [],
      resume: [{ interruptId: interrupt.id, status: 'resolved', payload }],
    }
  }
  return runIds
}

/**
 * Cut after every event of the stored run but its last, re-attach with the last id seen: the new
 * connection passes the official checks, starts with `RUN_STARTED` and a prelude (no ids), then
 * holds exactly the events after the cut, ids included.
 */
async function cutEverywhere(assert: any, url: string, runId: string) {
  const full: Item[] = parseSse(await (await get(`${url}/agui/runs/${runId}`)).text())
  await assertConforms(
    assert,
    full.map((e) => e.event)
  )
  assert.isTrue(full.slice(1).every((e) => e.id || PRELUDE.has(e.event.type)))
  for (let cut = 0; cut < full.length - 1; cut++) {
    const had = full.slice(0, cut + 1)
    const at = had.findLastIndex((e) => e.id)
    const lastId = at === -1 ? undefined : had[at].id
    const rest: Item[] = parseSse(await (await get(`${url}/agui/runs/${runId}`, lastId)).text())
    await assertConforms(
      assert,
      rest.map((e) => e.event)
    )
    // No id yet (only the run's start): the whole run again.
    if (at === -1) {
      assert.deepEqual(rest, full)
      continue
    }
    const tail = full.slice(at + 1)
    const prelude = rest.slice(0, rest.length - tail.length)
    assert.deepEqual(rest.slice(rest.length - tail.length), tail, `after ${lastId} (event ${cut})`)
    assert.equal(prelude[0]?.event.type, 'RUN_STARTED')
    assert.equal(prelude[0].event.runId, runId)
    for (const item of prelude) {
      assert.isUndefined(item.id)
      assert.isTrue(
        PRELUDE.has(item.event.type),
        `${item.event.type} in the prelude after ${lastId}`
      )
    }
  }
  return full.length
}

/** The same cuts through `HttpAgent.connectAgent()`: its messages and state end as uncut. */
async function cutEverywhereWithClient(assert: any, url: string, runId: string, events: number) {
  const client = (recorder: ReturnType<typeof recordingFetch>) => {
    const agent = new Connector({
      url: `${url}/agui`,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
    })
    agent.connectUrl = `${url}/agui/runs/${runId}`
    return agent
  }
  const whole = client(recordingFetch())
  await whole.connectAgent()
  for (let cut = 0; cut < events - 1; cut++) {
    let seen = 0
    const recorder = recordingFetch(() => seen++ === cut)
    const agent = client(recorder)
    await agent.connectAgent()
    if (recorder.lastId) agent.connectUrl += `?after=${encodeURIComponent(recorder.lastId)}`
    await agent.connectAgent()
    assert.deepEqual(agent.messages, whole.messages, `cut after event ${cut}`)
    assert.deepEqual(agent.state, whole.state, `cut after event ${cut}`)
  }
}

const CONFIGS: Record<string, AgUiDoorOptions> = {
  'plain': { reasoning: true },
  'state deltas, messages snapshot': { reasoning: true, stateDeltas: true, messagesSnapshot: true },
  'checkpoints at every row': {
    reasoning: true,
    stateDeltas: true,
    messagesSnapshot: true,
    checkpointEvery: 1,
  },
}

test.group('AG-UI door: a cut after ANY event, re-attached with the last id seen', () => {
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    for (const [configName, agui] of Object.entries(CONFIGS)) {
      test(`${name} (${configName}): exactly the events after it, every connection conforming`, async ({
        assert,
      }) => {
        const served = await serveApp({ runner: scenario.runner as AgentRunner, agui })
        await resetTables(await served.app.container.make('lucid.db'))
        const runIds = await drive(served.url, scenario.answers)
        await served.agentStream.driver.settled()
        assert.lengthOf(runIds, scenario.answers.length + 1)
        for (const runId of runIds) {
          const events = await cutEverywhere(assert, served.url, runId)
          if (!agui.messagesSnapshot)
            await cutEverywhereWithClient(assert, served.url, runId, events)
        }
      }).timeout(120_000)
    }
  }

  test('live: cut after the first TOOL_CALL_ARGS of search, Last-Event-ID: the arguments once', async ({
    assert,
  }) => {
    const served = await serveApp({
      runner: scriptedAgent({ steps: ['reasoning', 'read', 'approval'] }),
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const runId = randomUUID()
    const response = await postJson(`${served.url}/agui`, runInput('t', runId))
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let body = ''
    while (!parseSse(body).some((e) => e.event.type === 'TOOL_CALL_ARGS')) {
      const chunk = await reader.read()
      if (chunk.done) throw new Error('ended early')
      body += decoder.decode(chunk.value, { stream: true })
    }
    await reader.cancel()
    const events = parseSse(body)
    const had = events.slice(0, events.findIndex((e) => e.event.type === 'TOOL_CALL_ARGS') + 1)
    const lastId = had.findLast((e) => e.id)!.id!
    const rest = parseSse(await (await get(`${served.url}/agui/runs/${runId}`, lastId)).text())
    await assertConforms(
      assert,
      rest.map((e) => e.event)
    )
    const args = [...had, ...rest]
      .filter((e) => e.event.type === 'TOOL_CALL_ARGS')
      .map((e) => `${e.event.toolCallId} ${e.event.delta}`)
    assert.lengthOf(args, 2)
    assert.equal(new Set(args).size, 2)
    assert.include(args[0], '{"q":"weekly numbers"}')
    assert.include(args[1], '{"to":"team@example.com"}')
  })

  test('live: HttpAgent cut after every event of a POST and re-attached ends as uncut', async ({
    assert,
  }) => {
    const served = await serveApp({
      runner: SCENARIOS.everything.runner as AgentRunner,
      agui: { reasoning: true },
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const run = async (cut: number) => {
      let seen = 0
      const recorder = recordingFetch(() => seen++ === cut)
      const runId = randomUUID()
      const agent = new Connector({
        url: `${served.url}/agui`,
        headers: { 'x-user': 'alice' },
        fetch: recorder.fetch,
        initialMessages: [{ id: 'u1', role: 'user', content: 'go' }],
      })
      await agent.runAgent({ runId })
      const cutShort = seen <= cut ? null : recorder.events()
      if (cutShort) {
        await assertConforms(assert, cutShort.slice(0, 0))
        agent.connectUrl = `${served.url}/agui/runs/${runId}${recorder.lastId ? `?after=${encodeURIComponent(recorder.lastId)}` : ''}`
        await agent.connectAgent()
        await assertConforms(assert, recorder.events())
      }
      const normal = JSON.parse(
        JSON.stringify({ m: agent.messages, i: agent.pendingInterrupts }).replaceAll(runId, 'RUN')
      )
      return { normal, events: seen, cut: cutShort !== null }
    }
    const whole = await run(Number.MAX_SAFE_INTEGER)
    assert.isAbove(whole.events, 20)
    for (let cut = 0; cut < whole.events - 1; cut++) {
      const again = await run(cut)
      assert.isTrue(again.cut)
      assert.deepEqual(again.normal, whole.normal, `cut after event ${cut}`)
    }
  }).timeout(120_000)
})
