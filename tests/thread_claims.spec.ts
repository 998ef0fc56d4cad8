import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { tableNames } from '../src/store/schema.js'
import { serveDoors, TRANSPORTS } from './helpers/transports.js'

const PEOPLE = ['alice', 'bob', 'carol']
const ROUNDS = 12

type Door = 'agui' | 'chat'

/** The first message of `threadId` through `door`, as `user`; the answer read whole. */
async function firstPost(url: string, door: Door, threadId: string, user: string, text = 'hi') {
  const body =
    door === 'agui'
      ? {
          threadId,
          runId: `run-${randomUUID()}`,
          messages: [{ id: `u-${randomUUID()}`, role: 'user', content: text }],
        }
      : {
          id: threadId,
          messages: [{ id: `u-${randomUUID()}`, role: 'user', parts: [{ type: 'text', text }] }],
          trigger: 'submit-message',
        }
  const response = await fetch(`${url}/${door}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': user },
    body: JSON.stringify(body),
  })
  const raw = await response.text()
  let json: any = null
  try {
    json = JSON.parse(raw)
  } catch {}
  return { status: response.status, raw, json }
}

for (const transport of TRANSPORTS) {
  test.group(`Thread claims | first posts racing (${transport})`, () => {
    test('many people posting the first message of one thread at once: exactly one owns it, through either door', async ({
      assert,
      cleanup,
    }) => {
      const served = await serveDoors(transport, scriptedAgent({ steps: [] }))
      cleanup(served.close)
      const tables = tableNames()
      for (let round = 0; round < ROUNDS; round++) {
        const threadId = `thread-${randomUUID()}`
        // Each person through a door of their own, the doors alternating per round.
        const doors: Door[] = PEOPLE.map((_, i) => ((round + i) % 2 === 0 ? 'agui' : 'chat'))
        const answers = await Promise.all(
          PEOPLE.map((user, i) => firstPost(served.url, doors[i], threadId, user))
        )
        const won = answers.flatMap((answer, i) => (answer.status === 200 ? [PEOPLE[i]] : []))
        assert.lengthOf(won, 1, `round ${round}: ${answers.map((a) => a.status).join(' ')}`)
        for (const [i, answer] of answers.entries()) {
          if (PEOPLE[i] === won[0]) continue
          assert.equal(answer.status, 404, answer.raw)
          assert.equal(answer.json?.code, 'not_found', answer.raw)
          assert.isString(answer.json?.message)
        }
        const [winner] = won
        // Every run of the thread is the winner's, and so is its claim.
        const runs = await served.db
          .connection()
          .from(tables.aguiRuns)
          .where('thread_id', threadId)
          .select('owner_id')
        assert.deepEqual(
          runs.map((row: { owner_id: string }) => row.owner_id),
          [winner]
        )
        const claim = await served.db
          .connection()
          .from(tables.threads)
          .where('thread_id', threadId)
          .first()
        assert.equal(claim.owner_id, winner)
        // The winner keeps using it, through both doors; the others stay out.
        for (const door of ['agui', 'chat'] as const) {
          const again = await firstPost(served.url, door, threadId, winner, 'again')
          assert.equal(again.status, 200, again.raw)
        }
        for (const user of PEOPLE.filter((p) => p !== winner)) {
          const refused = await firstPost(served.url, 'chat', threadId, user, 'me too')
          assert.equal(refused.status, 404)
        }
      }
    }).timeout(120_000)
  })
}
