import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner } from '../src/runner/contract.js'
import { resetTables } from './helpers/db.js'
import { postJson, runInput, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'

/** Every string a runner put where the projection must not let it out. */
const SECRETS = ['sk-live-42', 'bob@corp', 'org-provider-9', 'hidden plan', 'ECONNREFUSED 10.0.0.7']

/** Writes, besides plain text, every field the public projection keeps on the server. */
const leakyRunner: AgentRunner = {
  async start(ctx) {
    const event = (e: Record<string, unknown>) => ctx.writer.write({ t: 'event', event: e as any })
    await event({ kind: 'step-start', principal: 'bob@corp' })
    await event({ kind: 'secret-kind', data: 'sk-live-42' })
    await event({ kind: 'title', title: 'Trip', owner: 'bob@corp' })
    await event({ kind: 'reasoning', text: 'hidden plan' })
    await ctx.writer.write({ t: 'text', v: 'Hello.' })
    await event({
      kind: 'tool-input-available',
      id: 'c1',
      name: 'lookup',
      input: {},
      toolKind: 'read',
    })
    await event({ kind: 'tool-output-error', id: 'c1', error: 'ECONNREFUSED 10.0.0.7' })
    await event({
      kind: 'step-finish',
      usage: {
        inputTokens: 3,
        outputTokens: 4,
        providerMetadata: { openai: { organization: 'org-provider-9', cached: 1 } },
        raw: ['org-provider-9'],
      },
      costUsd: null,
      account: 'bob@corp',
    })
    return { status: 'finished' }
  },
  async resume() {
    return { status: 'finished' }
  },
}

/** Each event kind the native stream may carry, and the fields each may have (projection.ts). */
const NATIVE_FIELDS: Record<string, string[]> = {
  'step-start': [],
  'title': ['title'],
  'tool-input-available': ['id', 'name', 'input', 'toolKind', 'parentId'],
  'tool-output-error': ['id', 'error'],
  'step-finish': ['usage', 'costUsd', 'reasoningMs', 'model'],
}

/** Every key and string of a JSON value, however deep (the serialized wire, walked). */
function walk(value: unknown, path: string, visit: (path: string, value: unknown) => void) {
  visit(path, value)
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) walk(child, `${path}.${key}`, visit)
  }
}

test.group('The public projection over HTTP: native stream and AG-UI alike', () => {
  test('a secret kind, an extra field, nested usage metadata: nothing beyond the projection leaves', async ({
    assert,
  }) => {
    const { url, app, agentStream } = await serveApp({ runner: leakyRunner })
    await resetTables(await app.container.make('lucid.db'))
    const threadId = `t-${randomUUID()}`
    const runId = randomUUID()
    const agui = await postJson(`${url}/agui`, runInput(threadId, runId))
    const aguiText = await agui.text()
    await agentStream.driver.settled()
    const native = await fetch(`${url}/runs/${runId}/stream`, { headers: { 'x-user': 'alice' } })
    const nativeText = await native.text()
    const reattached = await fetch(`${url}/agui/runs/${runId}`, { headers: { 'x-user': 'alice' } })
    const reattachedText = await reattached.text()

    // The stored frames do hold every secret (the runner wrote them).
    const stored = JSON.stringify(await collect(agentStream.sink.subscribe(runId)))
    for (const secret of SECRETS) assert.include(stored, secret)

    for (const [route, body] of [
      ['native', nativeText],
      ['agui', aguiText],
      ['agui re-attach', reattachedText],
    ]) {
      for (const secret of [...SECRETS, 'secret-kind', 'providerMetadata', 'owner', 'principal']) {
        assert.notInclude(body, secret, `${route} leaks ${secret}`)
      }
    }

    // Native: every frame, walked: only the projection's kinds and fields; usage numbers only.
    const frames = parseSse(nativeText).map((item) => item.event as any)
    const kinds = frames.filter((f) => f.t === 'event').map((f) => f.event.kind)
    assert.deepEqual(kinds, [
      'step-start',
      'title',
      'tool-input-available',
      'tool-output-error',
      'step-finish',
    ])
    for (const frame of frames) {
      if (frame.t !== 'event') continue
      const { kind, ...fields } = frame.event
      for (const field of Object.keys(fields)) {
        assert.include(NATIVE_FIELDS[kind], field, `${kind}.${field} is not public`)
      }
    }
    const finish = frames.find((f) => f.event?.kind === 'step-finish')
    assert.deepEqual(finish.event, {
      kind: 'step-finish',
      usage: { inputTokens: 3, outputTokens: 4 },
      costUsd: null,
    })
    assert.equal(
      frames.find((f) => f.event?.kind === 'tool-output-error').event.error,
      'The tool call failed.'
    )

    // AG-UI: every event passes the official checks; walked, no string outside the projection.
    for (const body of [aguiText, reattachedText]) {
      const events = parseSse(body).map((item) => item.event) as WireEvent[]
      await assertConforms(assert, events)
      walk(events, '', (path, value) => {
        if (typeof value === 'string')
          for (const secret of SECRETS) assert.notInclude(value, secret, path)
      })
      const customs = events.filter((e) => e.type === 'CUSTOM').map((e) => [e.name, e.value])
      assert.deepEqual(
        customs.map(([name]) => name),
        ['title', 'agent_stream.run_state']
      )
      assert.deepEqual(customs[0], ['title', { title: 'Trip' }])
      // The door's projection is a CUSTOM event of its own; the agent wrote no state.
      assert.notInclude(
        events.map((e) => e.type),
        'STATE_SNAPSHOT'
      )
      const state = customs.at(-1)![1]
      walk(state?.usage ?? {}, 'usage', (path, value) => {
        if (path !== 'usage') assert.isNumber(value, path)
      })
    }
  })
})

async function collect<T>(iterable: AsyncIterable<T>) {
  const out: T[] = []
  for await (const item of iterable) out.push(item)
  return out
}
