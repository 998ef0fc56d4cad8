import { test } from '@japa/runner'
import {
  DefaultChatTransport,
  InvalidToolApprovalSignatureError,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
} from 'ai'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import { TOOL_APPROVAL_REQUEST } from '../src/runners/ai_sdk/signed_approval.js'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import { InvalidDecisionError } from '../src/errors.js'
import { withoutInputSchemas } from './helpers/decisions.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { setupReplica, setupRunner } from './helpers/parking.js'
import { collect, runId } from './helpers/sink.js'
import { scriptedModel, type Turn } from './helpers/ai_sdk.js'
import { alice, decider, SECRET, searchThenSend, textOf, tools } from './helpers/ai_sdk_approval.js'

/** A runner whose tool set and approval are built anew, as a restarted process builds them. */
function signedRunner(turns: Turn[], onError?: (error: unknown) => void) {
  const built = tools()
  const model = scriptedModel(turns)
  return {
    ...built,
    model,
    runner: aiSdkAgent({
      model,
      tools: built.tools,
      toolApproval: { send_email: 'user-approval' },
      experimental_toolApprovalSecret: SECRET,
      onError,
    }),
  }
}

/** The stored row of a run's signed request, and a way to change its body. */
async function signedRow(db: any, id: string) {
  const rows = await db
    .connection()
    .from('agent_stream_frames')
    .where('run_id', id)
    .where('kind', 'event')
    .orderBy('seq')
  const row = rows.find((r: any) => JSON.parse(r.body).event?.kind === TOOL_APPROVAL_REQUEST)
  return {
    event: JSON.parse(row.body).event,
    update: (body: unknown) =>
      db
        .connection()
        .from('agent_stream_frames')
        .where('run_id', id)
        .where('seq', row.seq)
        .update({ body: JSON.stringify(body) }),
    remove: () =>
      db
        .connection()
        .from('agent_stream_frames')
        .where('run_id', id)
        .where('seq', row.seq)
        .delete(),
  }
}

test.group('AI SDK runner | signed approvals', () => {
  test('a signed approval is stored with its signature and resumes in the same process', async ({
    assert,
  }) => {
    const signed = signedRunner(searchThenSend())
    const { driver, sink, parking, db } = await setupRunner(signed.runner)
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send it', principal: alice })
    ).done
    const { event } = await signedRow(db, id)
    assert.equal(event.id, 'call_2')
    assert.isString(event.approvalId)
    assert.notEqual(event.approvalId, 'call_2')
    assert.match(event.signature, /^[\w-]{43}$/)
    await parking.decisions.approve(id, 'call_2', decider)
    await driver.settled()
    assert.deepEqual(
      signed.ran.map((r) => r.tool),
      ['search', 'send_email']
    )
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'On it. Done.')
    assert.notExists(frames.find((f) => f.t === 'error'))
    // The resumed prompt carried the SDK's own request, signature and all, and its response.
    const prompt = JSON.parse(JSON.stringify(signed.model.doStreamCalls[1].prompt))
    assert.deepEqual(
      prompt.at(-1).content.map((p: any) => p.toolCallId),
      ['call_1', 'call_2']
    )
  })

  test('after a restart: a fresh runner on another replica resumes the signed approval from the stored frames', async ({
    assert,
  }) => {
    const before = signedRunner([searchThenSend()[0]])
    const first = await setupRunner(before.runner)
    const id = runId()
    await (
      await first.driver.start({ runId: id, input: 'Send it', principal: alice })
    ).done
    await first.sink.shutdown()
    // Everything rebuilt: tools, model, runner, runtime; only the database and the secret remain.
    const after = signedRunner([searchThenSend()[1]])
    const replica = setupReplica(after.runner)
    await replica.parking.decisions.approve(id, 'call_2', decider)
    await replica.driver.settled()
    assert.deepEqual(after.ran, [{ tool: 'send_email', input: { to: 'team@example.com' } }])
    assert.lengthOf(before.ran, 1)
    const frames: any[] = await collect(replica.sink.subscribe(id))
    assert.equal(textOf(frames), 'On it. Done.')
    assert.notExists(frames.find((f) => f.t === 'error'))
  }).timeout(30_000)

  for (const change of ['tampered', 'missing'] as const) {
    test(`a ${change} signature: the SDK refuses it, the tool never runs, the run fails with a fixed sentence`, async ({
      assert,
    }) => {
      const errors: unknown[] = []
      const signed = signedRunner(searchThenSend(), (error) => errors.push(error))
      const { driver, sink, parking, db } = await setupRunner(signed.runner)
      const id = runId()
      await (
        await driver.start({ runId: id, input: 'Send it', principal: alice })
      ).done
      const row = await signedRow(db, id)
      if (change === 'tampered') {
        const signature = row.event.signature as string
        const flipped = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`
        await row.update({ t: 'event', event: { ...row.event, signature: flipped } })
      } else {
        await row.remove()
      }
      await parking.decisions.approve(id, 'call_2', decider)
      await driver.settled()
      assert.deepEqual(
        signed.ran.map((r) => r.tool),
        ['search']
      )
      assert.lengthOf(signed.model.doStreamCalls, 1)
      const frames: any[] = await collect(sink.subscribe(id))
      const failure = frames.find((f) => f.t === 'error')
      assert.deepEqual(
        { code: failure?.code, message: failure?.message },
        { code: 'replay_diverged', message: FAILURE_SENTENCES.replay_diverged }
      )
      assert.notInclude(JSON.stringify(frames), 'signature verification')
      assert.isTrue(errors.some((error) => InvalidToolApprovalSignatureError.isInstance(error)))
    })
  }

  test('a signed approval refuses edits (inputSchema: false); one edited before that does not run: the model is told, the run goes on', async ({
    assert,
  }) => {
    const signed = signedRunner(searchThenSend())
    const { driver, sink, parking, db } = await setupRunner(signed.runner)
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send it', principal: alice })
    ).done
    const edit = { input: { to: 'boss@example.com' } }
    const refused = await parking.decisions
      .approve(id, 'call_2', decider, edit)
      .catch((error: unknown) => error)
    assert.instanceOf(refused, InvalidDecisionError)
    // An approval frame written before signed approvals refused edits: the edit is accepted.
    assert.equal(await withoutInputSchemas(db, id), 1)
    await parking.decisions.approve(id, 'call_2', decider, edit)
    await driver.settled()
    assert.deepEqual(
      signed.ran.map((r) => r.tool),
      ['search']
    )
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'On it. Done.')
    const error = frames.find(
      (f) => f.event?.kind === 'tool-output-error' && f.event.id === 'call_2'
    )
    assert.match(error.event.error, /^Invalid approval for tool send_email: its input was edited/)
    const prompt = JSON.parse(JSON.stringify(signed.model.doStreamCalls[1].prompt))
    const result = prompt.at(-1).content.find((p: any) => p.toolCallId === 'call_2')
    assert.equal(result.output.type, 'error-text')
  })

  test('decided from the chat (useChat): the signed approval resumes; the door names it by its own id', async ({
    assert,
  }) => {
    const signed = signedRunner(searchThenSend())
    const served = await serveApp({ runner: signed.runner })
    await resetTables(await served.app.container.make('lucid.db'))
    const transport = new DefaultChatTransport<UIMessage>({
      api: `${served.url}/chat`,
      headers: { 'x-user': 'alice' },
    })
    const messages: UIMessage[] = [
      { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Send it' }] },
    ]
    const read = async (stream: ReadableStream<UIMessageChunk>, message?: UIMessage) => {
      let last: UIMessage | undefined
      for await (const snapshot of readUIMessageStream({
        message,
        stream,
        terminateOnError: true,
      }))
        last = snapshot
      return last!
    }
    const send = (messageId?: string) =>
      transport.sendMessages({
        chatId: 'chat-signed',
        messages,
        trigger: 'submit-message',
        messageId,
        abortSignal: undefined,
      })
    const asked = await read(await send())
    const part = asked.parts.find((p: any) => p.state === 'approval-requested') as any
    assert.equal(part.toolCallId, 'call_2')
    assert.match(part.approval.id, /^approval-\d+$/)
    // The signature binds the SDK's approval id, which the door does not use: it stays on the
    // server, which verifies it on resume.
    assert.notProperty(part.approval, 'signature')
    const answered = structuredClone(asked)
    for (const p of answered.parts as any[]) {
      if (p.state === 'approval-requested') {
        p.state = 'approval-responded'
        p.approval = { ...p.approval, approved: true }
      }
    }
    messages.push(answered)
    const done = await read(await send(answered.id), structuredClone(answered))
    await served.agentStream.driver.settled()
    assert.deepEqual(
      signed.ran.map((r) => r.tool),
      ['search', 'send_email']
    )
    assert.include(JSON.stringify(done.parts), 'Done.')
  }).timeout(30_000)
})
