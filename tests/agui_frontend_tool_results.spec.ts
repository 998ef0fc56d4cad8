import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { resetTables, snapshotTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { assertConforms, recordingFetch } from './helpers/agui.js'

/**
 * A step with a backend tool call (run and answered by the server) beside a call to the page's
 * tool: the client sends back both results, its copy of the server's and its own (as CopilotKit
 * does: its messages hold every `TOOL_CALL_RESULT` it was sent). The server's own is skipped (the
 * stored result stands), the page's reaches the agent; a copy of the server's alone starts
 * nothing (`unknown_tool_call`, nothing written).
 */
test.group('AG-UI: frontend tool results beside a backend call', () => {
  const seen: unknown[][] = []
  const runner = {
    async start(ctx: any) {
      const { toolResults = [] } = ctx.input
      if (toolResults.length > 0) {
        seen.push(toolResults)
        await ctx.writer.write({ t: 'text', v: `The page said ${toolResults[0].content}.` })
        return { status: 'finished' as const }
      }
      await ctx.writer.write({ t: 'event', event: { kind: 'step-start' } })
      await ctx.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'call_lookup',
          name: 'lookup',
          input: { q: 'story' },
          toolKind: 'read',
        },
      })
      await ctx.writer.write({
        t: 'event',
        event: { kind: 'tool-output', id: 'call_lookup', output: 'found' },
      })
      await ctx.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'call_confirm',
          name: 'confirm_story',
          input: { title: 'A story' },
          toolKind: 'action',
        },
      })
      return { status: 'finished' as const }
    },
    async resume() {
      return { status: 'finished' as const }
    },
  }
  const tool = {
    name: 'confirm_story',
    description: 'Ask the person to confirm the story',
    parameters: { type: 'object', properties: { title: { type: 'string' } } },
  }

  async function firstTurn() {
    const served = await serveApp({ runner, agui: { frontendTools: true } })
    const db = await served.app.container.make('lucid.db')
    await resetTables(db)
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${served.url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice', 'x-ag-ui-client-version': '1.0.0' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Write a story' }],
    })
    await client.runAgent({ tools: [tool] })
    const events = recorder.events()
    const calls = events.filter((e) => e.type === 'TOOL_CALL_START')
    const lookup = calls.find((e) => e.toolCallName === 'lookup')!.toolCallId as string
    const confirm = calls.find((e) => e.toolCallName === 'confirm_story')!.toolCallId as string
    return { served, db, recorder, client, events, lookup, confirm }
  }

  test("both results come back: the server's own is skipped, the page's reaches the agent", async ({
    assert,
  }) => {
    seen.length = 0
    const { recorder, client, events, lookup, confirm } = await firstTurn()
    await assertConforms(assert, events)
    assert.deepEqual(events.at(-1)!.outcome, { type: 'success', pendingToolCallIds: [confirm] })
    // The client holds the server's result of the backend call, as it was sent.
    assert.isTrue(client.messages.some((m: any) => m.role === 'tool' && m.toolCallId === lookup))

    client.messages.push({ id: 't-page', role: 'tool', toolCallId: confirm, content: 'yes' } as any)
    await client.runAgent({ tools: [tool] })
    const second = recorder.events()
    await assertConforms(assert, second)
    assert.notInclude(
      second.map((e) => e.type),
      'RUN_ERROR'
    )
    assert.deepEqual(second.at(-1)!.outcome, { type: 'success' })
    assert.lengthOf(seen, 1)
    assert.deepEqual(
      seen[0].map((r: any) => [r.id, r.name, r.content]),
      [['call_confirm', 'confirm_story', 'yes']]
    )
  })

  test("a copy of the server's result alone starts nothing: unknown_tool_call, nothing written", async ({
    assert,
  }) => {
    const { served, db, recorder, client, lookup } = await firstTurn()
    const before = await snapshotTables(db)
    const forged = new HttpAgent({
      url: `${served.url}/agui`,
      threadId: client.threadId,
      headers: { 'x-user': 'alice', 'x-ag-ui-client-version': '1.0.0' },
      fetch: recorder.fetch,
      initialMessages: client.messages.filter(
        (m: any) => !(m.role === 'tool' && m.toolCallId !== lookup)
      ) as any,
    })
    await forged.runAgent({ tools: [tool] }).catch(() => {})
    assert.deepEqual(
      recorder.events().map((e) => e.code),
      ['unknown_tool_call']
    )
    assert.deepEqual(await snapshotTables(db), before)
  })
})
