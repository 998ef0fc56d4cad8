import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import type { Parking } from '../src/parking/parking.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'
import { resetTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { postJson, serveApp } from './helpers/http.js'

/** An AG-UI door served under `base`, and the parking service the admin decides through. */
interface Door {
  base: string
  parking: Parking
  settled: () => Promise<void>
}

const runner = () => scriptedAgent({ steps: ['read', 'approval'] })

const transports: { name: string; open: (cleanup: any) => Promise<Door> }[] = [
  {
    name: 'AdonisJS routes',
    async open() {
      const { url, app, agentStream } = await serveApp({ runner: runner() })
      await resetTables(await app.container.make('lucid.db'))
      return {
        base: `${url}/agui`,
        parking: agentStream.parking,
        settled: () => agentStream.driver.settled(),
      }
    },
  },
  {
    name: 'Fetch handler',
    async open(cleanup) {
      const served = await serveRuntime({ runner: runner() }, (runtime, principal) =>
        createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
      )
      cleanup(served.close)
      return {
        base: `${served.url}/agui`,
        parking: served.runtime.parking,
        settled: () => served.runtime.driver.settled(),
      }
    },
  },
]

const eventsOf = async (response: Response) => parseSse(await response.text()).map((e) => e.event)
const textOf = (events: WireEvent[]) =>
  events
    .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
    .map((e) => e.delta)
    .join('')

/**
 * What the demo's chat page does when someone answered first: its resume is refused with
 * `interrupt_decided`, and it follows the thread (`GET <base>/threads/:threadId`) to the rest.
 */
async function decidedElsewhere(door: Door) {
  const threadId = `t-${randomUUID()}`
  const message = [{ id: 'u1', role: 'user', content: 'go' }]
  const first = await eventsOf(
    await postJson(door.base, { threadId, runId: randomUUID(), messages: message })
  )
  const [interrupt] = first.at(-1)!.outcome.interrupts as WireEvent[]
  const [item] = await door.parking.queries.list({ threadId })
  await door.parking.decisions.approve(item.runId, item.itemId, {
    principal: { id: 'alice' },
    via: 'admin',
  })
  await door.settled()
  const refused = await eventsOf(
    await postJson(door.base, {
      threadId,
      runId: randomUUID(),
      messages: message,
      resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: false } }],
    })
  )
  const followed = await eventsOf(
    await fetch(`${door.base}/threads/${threadId}`, { headers: { 'x-user': 'alice' } })
  )
  return { first, refused, followed }
}

test.group('AG-UI door, a decision made elsewhere first: both transports answer alike', () => {
  test('the resume is refused with interrupt_decided; the thread shows the continuation', async ({
    assert,
    cleanup,
  }) => {
    const answers = []
    for (const transport of transports) {
      const { first, refused, followed } = await decidedElsewhere(await transport.open(cleanup))
      assert.equal(first.at(-1)!.outcome.type, 'interrupt', transport.name)
      assert.deepEqual(
        refused.map((e) => [e.type, e.code]),
        [['RUN_ERROR', 'interrupt_decided']],
        transport.name
      )
      await assertConforms(assert, refused)
      await assertConforms(assert, followed)
      // The thread's current run is the continuation of the approved call, to its end.
      assert.equal(textOf(followed), 'Sent. All done.', transport.name)
      assert.deepEqual(followed.at(-1)!.outcome, { type: 'success' }, transport.name)
      answers.push({
        refused: refused.map((e) => [e.type, e.code, e.message]),
        followed: followed.map((e) => e.type),
      })
    }
    assert.deepEqual(answers[1], answers[0])
  })
})
