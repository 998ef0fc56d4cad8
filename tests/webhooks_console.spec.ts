import { test } from '@japa/runner'
import type { ApplicationService } from '@adonisjs/core/types'
import AgentStreamInspect from '../commands/inspect.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { runId, sleep } from './helpers/sink.js'
import { newSecret, signedReceiver } from './helpers/webhooks.js'

const ADMIN = { 'x-admin': 'yes', 'x-user': 'alice' }

async function inspect(app: ApplicationService, argv: string[]) {
  const ace = await app.container.make('ace')
  ace.ui.switchMode('raw')
  const command = await ace.create(AgentStreamInspect, argv)
  await command.exec()
  return { command, logs: command.ui.logger.getLogs().map((log) => log.message) }
}

async function until(check: () => Promise<boolean> | boolean, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(20)
  }
}

test.group('Webhooks | dead letters in the console and in inspect', () => {
  test('a dead delivery: listed by the console, retried by its form (CSRF), shown by inspect', async ({
    assert,
  }) => {
    let accept = false
    const secret = newSecret()
    const receiver = await signedReceiver(secret, () => (accept ? 200 : 500))
    const served = await serveApp({
      runner: scriptedAgent({ steps: [] }),
      webhooks: {
        endpoints: [{ url: `${receiver.url}?token=path-secret`, secret, events: ['run.finished'] }],
        maxAttempts: 2,
        backoff: 10,
        maxBackoff: 20,
        pollInterval: 20,
      },
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const { agentStream, url, app } = served
    agentStream.webhooks!.deliverer.start()
    const id = runId('hooked')
    await (
      await agentStream.driver.start({ runId: id })
    ).done
    const db = await app.container.make('lucid.db')
    const row = async () =>
      db.connection().from('agent_webhook_deliveries').where('stream_run_id', id).first()
    await until(async () => (await row())?.status === 'dead')
    const dead = await row()

    // The console's rule: nobody without the admin hook.
    assert.equal((await fetch(`${url}/admin/webhooks`)).status, 403)
    const page = await fetch(`${url}/admin/webhooks`, { headers: ADMIN })
    assert.equal(page.status, 200)
    assert.include(page.headers.get('content-security-policy') ?? '', "default-src 'none'")
    const html = await page.text()
    const listed = html.slice(html.indexOf(`data-delivery="${dead.id}"`))
    assert.isAbove(html.indexOf(`data-delivery="${dead.id}"`), 0)
    assert.include(listed, 'run.finished')
    assert.include(listed, new URL(receiver.url).host)
    assert.include(listed, '<td>2</td>')
    assert.include(listed, 'http_500')
    // The endpoint's path and query (a token) and the receiver's body are never shown.
    assert.notInclude(html, 'path-secret')
    assert.notInclude(html, 'receiver body')
    assert.include(html, 'href="/admin/webhooks" aria-current="page"')

    // A forged post (no token) retries nothing.
    const retryUrl = `${url}/admin/webhooks/${dead.id}/retry`
    const forged = await fetch(retryUrl, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
      redirect: 'manual',
    })
    assert.equal(forged.status, 403)
    assert.equal((await row()).status, 'dead')

    // Inspect shows it dead, with its attempts and code.
    const tables = await inspect(app, [id])
    tables.command.assertSucceeded()
    assert.includeMembers(tables.logs, [
      'bold(Webhook deliveries (1))',
      'Event|Endpoint|Status|Attempts|Last error|webhook-id',
      `run.finished|${new URL(receiver.url).host}|dead|2|http_500|${dead.id}`,
    ])
    const json = JSON.parse((await inspect(app, [id, '--json'])).logs[0])
    assert.deepInclude(json.webhookDeliveries[0], {
      id: dead.id,
      event: 'run.finished',
      status: 'dead',
      attempts: 2,
      lastError: 'http_500',
    })

    // The form with the console's token (cookie and field): retried, delivered.
    const cookie = (page.headers.getSetCookie() ?? []).map((c) => c.split(';')[0]).join('; ')
    const token = /name="agent_stream_csrf" value="([^"]+)"/.exec(html)![1]
    accept = true
    const posted = await fetch(retryUrl, {
      method: 'POST',
      headers: { ...ADMIN, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: `agent_stream_csrf=${encodeURIComponent(token)}`,
      redirect: 'manual',
    })
    assert.equal(posted.status, 303)
    assert.equal(posted.headers.get('location'), '/admin/webhooks?retried=queued')
    await until(async () => (await row()).status === 'delivered')
    assert.equal(receiver.received.at(-1)!.id, dead.id)
    const after = await (
      await fetch(`${url}/admin/webhooks?retried=queued`, { headers: ADMIN })
    ).text()
    assert.include(after, 'Queued again')
    assert.include(after, 'No dead deliveries.')
    const again = await fetch(retryUrl, {
      method: 'POST',
      headers: { ...ADMIN, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: `agent_stream_csrf=${encodeURIComponent(token)}`,
      redirect: 'manual',
    })
    assert.equal(again.headers.get('location'), '/admin/webhooks?retried=not_dead')
  })
})
