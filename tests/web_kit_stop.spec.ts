import { test } from '@japa/runner'
import { talkerUntilStopped } from './helpers/held_runner.js'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { tableNames } from '../src/store/schema.js'
import { readResponse } from './helpers/http.js'
import { cookieClient, serveWebKit } from './helpers/web_kit.js'
import { sleep } from './helpers/sink.js'

/**
 * Issue 22 in the web-kit app (session auth, shield with CSRF on, `tests/helpers/web_kit.ts`):
 * the stop routes are writes like any other. Without shield's token 403 and nothing changes;
 * another member's stop is the 404 of a missing thread; the person's own stop (a door's route)
 * and the admin's (`/runs/:runId/cancel`) stop the run, which ends `cancelled` for its reader.
 */

const tables = tableNames()

const talker = talkerUntilStopped

test.group('Stop in an AdonisJS web app (session auth, shield)', () => {
  test('the token is asked, another member gets 404, the person and the admin stop the run', async ({
    assert,
  }) => {
    const { url, app } = await serveWebKit({ runner: talker })
    const db = await app.container.make('lucid.db')
    const alice = cookieClient(url)
    await alice.signIn('alice@example.com')
    const bob = cookieClient(url)
    await bob.signIn('bob@example.com')
    const root = cookieClient(url)
    await root.signIn('root@example.com')
    const stop = (
      who: ReturnType<typeof cookieClient>,
      path: string,
      headers: Record<string, string>
    ) =>
      who
        .fetch(`/agent${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ mode: 'keep' }),
        })
        .then(readResponse)

    const startTalking = async () => {
      const threadId = `thread-${randomUUID()}`
      const agent = new HttpAgent({
        url: `${url}/agent/agui`,
        threadId,
        // The official 1.0 client, declared: a stopped run ends `cancelled`.
        headers: {
          'cookie': alice.cookie(),
          'X-XSRF-TOKEN': alice.xsrf()!,
          'X-AG-UI-Client-Version': '1.0.0',
        },
        initialMessages: [{ id: `u-${randomUUID()}`, role: 'user', content: 'hi' }],
      })
      const events: any[] = []
      const running = agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) })
      for (let i = 0; i < 250 && !events.some((e) => e.type === 'TEXT_MESSAGE_CONTENT'); i++) {
        await sleep(20)
      }
      return { threadId, events, running }
    }

    const first = await startTalking()
    const snapshot = async () =>
      JSON.stringify(
        await db.from(tables.streams).select('run_id', 'status', 'stop_mode').orderBy('run_id')
      )
    const before = await snapshot()
    // Without shield's token: 403, nothing changes.
    for (const path of [`/agui/threads/${first.threadId}/stop`, `/chat/${first.threadId}/stop`]) {
      const refused = await stop(alice, path, {})
      assert.equal(refused.status, 403, path)
      assert.equal(refused.json.code, 'invalid_csrf_token')
    }
    // Another member, with a token of their own: the 404 of a missing thread.
    const foreign = await stop(bob, `/agui/threads/${first.threadId}/stop`, {
      'x-xsrf-token': bob.xsrf()!,
    })
    assert.equal(foreign.status, 404)
    assert.equal(await snapshot(), before)
    // The person, with the page's token: stopped.
    const own = await stop(alice, `/agui/threads/${first.threadId}/stop`, {
      'x-csrf-token': await alice.pageToken('/chat'),
    })
    assert.deepEqual([own.status, own.json], [200, { status: 'cancelled' }])
    await first.running
    assert.deepEqual(first.events.at(-1).outcome, { type: 'cancelled' })

    // The admin (the app's `admin` hook) stops the person's run by its id; the doors' thread
    // routes are the person's own (another's thread is the 404 of a missing one).
    const second = await startTalking()
    const runId = second.events.find((e) => e.type === 'RUN_STARTED').runId
    const notTheirs = await stop(root, `/chat/${second.threadId}/stop`, {
      'x-xsrf-token': root.xsrf()!,
    })
    assert.equal(notTheirs.status, 404)
    const byAdmin = await stop(root, `/runs/${runId}/cancel`, { 'x-xsrf-token': root.xsrf()! })
    assert.deepEqual([byAdmin.status, byAdmin.json], [200, { status: 'cancelled' }])
    await second.running
    assert.deepEqual(second.events.at(-1).outcome, { type: 'cancelled' })
    const text = second.events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta)
    assert.equal(text.join(''), 'Hello')
  }).timeout(60_000)
})
