import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { schemaIssue } from '../src/core/json_schema.js'
import { resetTables } from './helpers/db.js'
import { jsonClient, serveApp } from './helpers/http.js'
import { parseSse } from './helpers/agui.js'
import { headlessChat, toolParts } from './helpers/ui_chat.js'
import { adminForm, aguiInput, emailAgent, tablesSnapshot } from './helpers/decisions.js'

/**
 * Issue 21, item 2: whatever reaches a tool's `execute` is what its schema allows, whoever edited
 * it. `send_email` declares `{ to: string }`; an edit `{"to":42,"extra":"..."}` is refused on
 * every route that can edit (the decision API, the admin form, an AG-UI resume), naming the
 * field and the rule, never the value, with no row changed and the tool never run; the AI SDK
 * runner checks again before the tool runs (a call approved through useChat with an input its
 * tool's schema does not allow).
 */

const BAD = { to: 42, extra: 'do-not-echo' }

/** An app on fresh tables whose agent asks approval for `send_email` with `input`. */
async function setup(input: unknown = { to: 'team@example.com' }) {
  const { runner, ran } = await emailAgent([input])
  const served = await serveApp({ runner })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const request = jsonClient(served.url)
  /** Start a run through the native route; parked on its approval: the item. */
  const parkNative = async () => {
    const started = await request('POST', '/runs', { message: 'send it' })
    await served.agentStream.driver.settled()
    const [item] = await served.agentStream.parking.queries.pendingOf(started.json.runId)
    return item
  }
  return { ...served, db, ran, request, parkNative, snapshot: () => tablesSnapshot(db) }
}

test.group('Item 2: an edited tool input is checked against its tool schema', () => {
  test('the one validator: the field and the rule, never the value', ({ assert }) => {
    const schema = { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] }
    assert.deepEqual(schemaIssue(schema, BAD, 'input'), { field: 'input/to', rule: 'type' })
    assert.deepEqual(schemaIssue(schema, {}, 'input'), { field: 'input/to', rule: 'required' })
    assert.isNull(schemaIssue(schema, { to: 'a@b.c' }, 'input'))
    assert.isNull(schemaIssue(undefined, BAD, 'input'))
    // An extra field is named when its name is plain; a key the client chose is not repeated.
    const closed = { ...schema, additionalProperties: false }
    assert.deepEqual(schemaIssue(closed, { to: 'a@b.c', extra: 1 }, 'input'), {
      field: 'input/extra',
      rule: 'additionalProperties',
    })
    assert.deepEqual(schemaIssue(closed, { 'to': 'a@b.c', 'evil key<>': 1 }, 'input'), {
      field: 'input',
      rule: 'additionalProperties',
    })
    const open = { type: 'object', additionalProperties: { type: 'string' } }
    assert.deepEqual(schemaIssue(open, { 'evil key<>': 1 }, 'input'), {
      field: 'input',
      rule: 'type',
    })
    // A schema that does not compile lets nothing through.
    assert.deepEqual(schemaIssue({ type: 'nonsense' }, {}, 'input'), {
      field: 'input',
      rule: 'inputSchema',
    })
  })

  test('the approval frame carries the tool schema (the AI SDK runner sets it)', async ({
    assert,
  }) => {
    const ctx = await setup()
    const item = await ctx.parkNative()
    const frames: any[] = []
    for await (const frame of ctx.agentStream.sink.replay(item.streamRunId)) frames.push(frame)
    const approval = frames.find((frame) => frame.t === 'approval')
    assert.deepInclude(approval.inputSchema, {
      type: 'object',
      properties: { to: { type: 'string' } },
    })
  })

  test('the decision API: 422 naming input/to, nothing changed, the tool never ran; a fitting edit runs', async ({
    assert,
  }) => {
    const ctx = await setup()
    const item = await ctx.parkNative()
    const before = await ctx.snapshot()
    const path = `/items/${item.runId}/${item.itemId}/approve`
    for (const [input, field, rule] of [
      [BAD, 'input/to', 'type'],
      [{ extra: 'do-not-echo' }, 'input/to', 'required'],
      [[1, 2], 'input', 'type'],
    ] as const) {
      const refused = await ctx.request('POST', path, { input })
      assert.equal(refused.status, 422, JSON.stringify(input))
      assert.equal(refused.json.code, 'E_INVALID_DECISION')
      assert.include(refused.json.message, `"${field}" fails the "${rule}" rule`)
      assert.notInclude(refused.text, 'do-not-echo')
      assert.notInclude(refused.text, '42')
    }
    await ctx.agentStream.driver.settled()
    assert.equal(await ctx.snapshot(), before)
    assert.deepEqual(ctx.ran, [])

    const ok = await ctx.request('POST', path, { input: { to: 'boss@example.com' } })
    assert.deepEqual(ok.json, { status: 'approved' })
    await ctx.agentStream.driver.settled()
    assert.deepEqual(ctx.ran, [{ to: 'boss@example.com' }])
  })

  test('the admin form: refused (E_INVALID_DECISION notice), nothing changed, the tool never ran', async ({
    assert,
  }) => {
    const ctx = await setup()
    const item = await ctx.parkNative()
    const form = await adminForm(ctx.url, item)
    const before = await ctx.snapshot()
    const refused = await form.post(
      'approve',
      form.form({ park: String(item.park), input: JSON.stringify(BAD) })
    )
    assert.equal(refused.status, 303)
    assert.include(refused.location, 'notice=E_INVALID_DECISION')
    await ctx.agentStream.driver.settled()
    assert.equal(await ctx.snapshot(), before)
    assert.deepEqual(ctx.ran, [])
    // The item page says nothing was decided.
    const page = await fetch(`${ctx.url}${refused.location}`, {
      headers: { 'x-admin': 'yes', 'x-user': 'alice' },
    })
    assert.include(await page.text(), 'nothing was decided')

    const ok = await form.post(
      'approve',
      form.form({ park: String(item.park), input: JSON.stringify({ to: 'boss@example.com' }) })
    )
    assert.include(ok.location, 'notice=approved')
    await ctx.agentStream.driver.settled()
    assert.deepEqual(ctx.ran, [{ to: 'boss@example.com' }])
  })

  test('an AG-UI resume with editedArgs: RUN_ERROR naming editedArgs/to, nothing changed, the tool never ran', async ({
    assert,
  }) => {
    const ctx = await setup()
    const threadId = `t-${randomUUID()}`
    const started = await ctx.request('POST', '/agui', aguiInput(threadId))
    const interrupt = parseSse(started.text).at(-1)!.event.outcome.interrupts[0]
    await ctx.agentStream.driver.settled()
    const before = await ctx.snapshot()
    const resume = (editedArgs: unknown) =>
      ctx.request(
        'POST',
        '/agui',
        aguiInput(threadId, {
          resume: [
            {
              interruptId: interrupt.id,
              status: 'resolved',
              payload: { approved: true, editedArgs },
            },
          ],
        })
      )
    const refused = await resume(BAD)
    const events = parseSse(refused.text).map((e) => e.event)
    assert.deepEqual(
      events.map((e) => [e.type, e.code]),
      [['RUN_ERROR', 'invalid_resume_payload']]
    )
    assert.include(events[0].message, '"editedArgs/to" fails the "type" rule')
    assert.notInclude(refused.text, 'do-not-echo')
    await ctx.agentStream.driver.settled()
    assert.equal(await ctx.snapshot(), before)
    assert.deepEqual(ctx.ran, [])

    const ok = await resume({ to: 'boss@example.com' })
    assert.equal(parseSse(ok.text).at(-1)!.event.type, 'RUN_FINISHED')
    await ctx.agentStream.driver.settled()
    assert.deepEqual(ctx.ran, [{ to: 'boss@example.com' }])
  })

  test('useChat approves a call whose input breaks the schema: the runner does not run it, the call ends in an error', async ({
    assert,
  }) => {
    // The model's own input breaks the schema (`jsonSchema()` has no validator: the SDK lets it
    // through); the person approves it as it is, through the useChat door.
    const ctx = await setup(BAD)
    const page = headlessChat(ctx.url, `chat-${randomUUID()}`)
    const asked = await page.send('send it')
    assert.equal(toolParts(asked)[0].state, 'approval-requested')
    await ctx.agentStream.driver.settled()
    const done = await page.answerApprovals(true)
    await ctx.agentStream.driver.settled()
    assert.deepEqual(ctx.ran, [])
    const [call] = toolParts(done)
    assert.equal(call.state, 'output-error')
    // Stored for the model: the field and the rule, never the value.
    const frames: any[] = []
    for await (const frame of ctx.agentStream.sink.replay(done.id)) frames.push(frame)
    const error = frames.find((f) => f.t === 'event' && f.event.kind === 'tool-output-error')
    assert.equal(
      error.event.error,
      'Invalid input for tool send_email: "input/to" fails the "type" rule'
    )
  })
})
