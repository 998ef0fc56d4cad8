import { test } from '@japa/runner'
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider'
import type { AgentRunner } from '../src/runner/contract.js'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import { resetTables } from './helpers/db.js'
import { jsonClient, serveApp } from './helpers/http.js'
import { collect } from './helpers/sink.js'
import { adminForm, tablesSnapshot } from './helpers/decisions.js'
import { scriptedModel } from './helpers/ai_sdk.js'
import { SECRET, searchThenSend, tools } from './helpers/ai_sdk_approval.js'
import { call, finish, lastResult, mailer, words } from './helpers/mastra.js'

/**
 * An edit a runner cannot apply is refused where it is made (the approval frame says
 * `inputSchema: false`): the decision API answers 422 with the refusal (`{ code, message }`),
 * the admin form says nothing was decided, no row changes; the unedited approval then runs the
 * tool once. Mastra runs a call with the input it stored; the AI SDK verifies a signed approval
 * (`experimental_toolApprovalSecret`) against the input it signed.
 */

type Prompt = LanguageModelV4CallOptions['prompt']

/** The email scenario for Mastra: a request parks on send_email; then "Sent."/"Not sent.". */
const email = (prompt: Prompt) => {
  const result = lastResult(prompt)
  if (result) {
    const sent = result.type === 'json' && (result.value as any)?.sent === true
    return [...words(sent ? 'Sent.' : 'Not sent.'), finish()]
  }
  return [
    ...words('I will send it. '),
    call('call_2', 'send_email', { to: 'team@example.com' }),
    finish('tool-calls'),
  ]
}

/** Each runner that cannot run an edit: built on the app's database; the sends it made. */
const RUNNERS: Record<string, (db: any) => { runner: AgentRunner; sends: () => unknown[] }> = {
  'Mastra': (db) => {
    const agent = mailer(db, email)
    return { runner: agent.runner, sends: () => agent.ran }
  },
  'aiSdkAgent with experimental_toolApprovalSecret': () => {
    const built = tools()
    const runner = aiSdkAgent({
      model: scriptedModel(searchThenSend()),
      tools: built.tools,
      toolApproval: { send_email: 'user-approval' },
      experimental_toolApprovalSecret: SECRET,
    })
    const sends = () => built.ran.filter((r) => r.tool === 'send_email').map((r) => r.input)
    return { runner, sends }
  },
}

/** An app on fresh tables with `make`'s runner, parked on its send_email approval. */
async function parked(make: (typeof RUNNERS)[string]) {
  let real: ReturnType<typeof make> | undefined
  const served = await serveApp({
    runner: {
      start: (ctx) => real!.runner.start(ctx),
      resume: (ctx) => real!.runner.resume(ctx),
    },
  })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  real = make(db)
  const request = jsonClient(served.url)
  const started = await request('POST', '/runs', { message: 'Send the weekly report' })
  await served.agentStream.driver.settled()
  const [item] = await served.agentStream.parking.queries.pendingOf(started.json.runId)
  const frames: any[] = []
  for await (const frame of served.agentStream.sink.replay(item.streamRunId)) frames.push(frame)
  return {
    ...served,
    item,
    request,
    approval: frames.find((f) => f.t === 'approval'),
    sends: () => real!.sends(),
    snapshot: () => tablesSnapshot(db),
  }
}

test.group('Edits a runner cannot apply are refused up front', () => {
  for (const [name, make] of Object.entries(RUNNERS)) {
    test(`${name}: the decision API refuses an edit (422), nothing changes; unedited, the tool runs once`, async ({
      assert,
    }) => {
      const ctx = await parked(make)
      assert.equal(ctx.item.itemId, 'call_2')
      const before = await ctx.snapshot()
      const path = `/items/${ctx.item.runId}/${ctx.item.itemId}/approve`
      const refused = await ctx.request('POST', path, { input: { to: 'boss@example.com' } })
      assert.equal(refused.status, 422)
      assert.deepEqual(Object.keys(refused.json).sort(), ['code', 'message'])
      assert.equal(refused.json.code, 'E_INVALID_DECISION')
      // The approval frame said so: no input can be edited (what every route checks).
      assert.strictEqual(ctx.approval.inputSchema, false)
      assert.notInclude(refused.text, 'boss@example.com')
      await ctx.agentStream.driver.settled()
      assert.equal(await ctx.snapshot(), before)
      assert.deepEqual(ctx.sends(), [])

      const ok = await ctx.request('POST', path, {})
      assert.deepEqual(ok.json, { status: 'approved' })
      await ctx.agentStream.driver.settled()
      assert.deepEqual(ctx.sends(), [{ to: 'team@example.com' }])
      const frames: any[] = await collect(ctx.agentStream.sink.subscribe(ctx.item.streamRunId))
      assert.notExists(frames.find((f) => f.t === 'error'))
      assert.notExists(frames.find((f) => f.event?.kind === 'tool-output-error'))
    }).timeout(30_000)

    test(`${name}: the admin form refuses an edit (nothing was decided); unedited, the tool runs once`, async ({
      assert,
    }) => {
      const ctx = await parked(make)
      const form = await adminForm(ctx.url, ctx.item)
      const before = await ctx.snapshot()
      const park = String(ctx.item.park)
      const input = JSON.stringify({ to: 'boss@example.com' })
      const refused = await form.post('approve', form.form({ park, input }))
      assert.equal(refused.status, 303)
      assert.include(refused.location, 'notice=E_INVALID_DECISION')
      await ctx.agentStream.driver.settled()
      assert.equal(await ctx.snapshot(), before)
      assert.deepEqual(ctx.sends(), [])

      const ok = await form.post('approve', form.form({ park }))
      assert.include(ok.location, 'notice=approved')
      await ctx.agentStream.driver.settled()
      assert.deepEqual(ctx.sends(), [{ to: 'team@example.com' }])
    }).timeout(30_000)
  }
})
