import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { AgentRunner } from '../src/runner/contract.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { ReattachingAgent, assertConforms, recordingFetch } from './helpers/agui.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const assistantText = (messages: any[]) =>
  messages
    .filter((m) => m.role === 'assistant' && typeof m.content === 'string')
    .map((m) => m.content)
    .join('')

/** A run that writes, waits for `release()`, writes again and finishes. */
function gated() {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const runner: AgentRunner = {
    async start(ctx) {
      await ctx.writer.write({ t: 'text', v: 'Before the cut. ' })
      await ctx.writer.flush?.()
      await gate
      await ctx.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'c1',
          name: 'f',
          input: { a: 1 },
          toolKind: 'read',
        },
      })
      await ctx.writer.write({ t: 'event', event: { kind: 'tool-output', id: 'c1', output: 2 } })
      await ctx.writer.write({ t: 'text', v: 'After it.' })
      return { status: 'finished' }
    },
    async resume() {
      return { status: 'finished' }
    },
  }
  return { runner, release }
}

function client(url: string, recorder: ReturnType<typeof recordingFetch>) {
  const agent = new ReattachingAgent({
    url: `${url}/agui`,
    threadId: `t-${randomUUID()}`,
    headers: { 'x-user': 'alice' },
    fetch: recorder.fetch,
    initialMessages: [{ id: 'u1', role: 'user', content: 'go' }],
  })
  agent.backoffMs = 20
  return agent
}

test.group("The docs' re-attaching client", () => {
  test('is demo/reattaching_agent.ts, as docs/agui.md shows it', async ({ assert }) => {
    const readme = await readFile(new URL('../docs/agui.md', import.meta.url), 'utf8')
    const code = await readFile(new URL('../demo/reattaching_agent.ts', import.meta.url), 'utf8')
    assert.include(readme, `\`\`\`ts\n${code}\`\`\``)
  })

  test('the server ends the response mid-run (shutdown): it re-attaches and ends with the whole run', async ({
    assert,
  }) => {
    const { runner, release } = gated()
    const served = await serveApp({ runner })
    await resetTables(await served.app.container.make('lucid.db'))
    const recorder = recordingFetch()
    const agent = client(served.url, recorder)
    const running = agent.runAgent()
    try {
      while (!recorder.bodies[0]?.includes('TEXT_MESSAGE_CONTENT')) await sleep(5)
      // What shutdown does to every open AG-UI response: it ends, no RUN_FINISHED.
      served.agentStream.http.closeAll()
      while (recorder.bodies.length < 2) await sleep(5)
    } finally {
      release()
    }
    await running
    assert.notInclude(recorder.bodies[0], 'RUN_FINISHED')
    assert.match(recorder.urls[1], /\/agui\/threads\/[^/?]+\?after=\d/)
    assert.equal(assistantText(agent.messages), 'Before the cut. After it.')
    const calls = agent.messages.flatMap((m: any) => m.toolCalls ?? [])
    assert.lengthOf(calls, 1)
    assert.equal(calls[0].function.arguments, '{"a":1}')
    await assertConforms(assert, recorder.events(recorder.bodies.length - 1))
    assert.equal(recorder.events().at(-1)!.type, 'RUN_FINISHED')
  })

  test('a cut inside a frame (after TOOL_CALL_ARGS): re-attached, the arguments once', async ({
    assert,
  }) => {
    const served = await serveApp({ runner: scriptedAgent({ steps: ['reasoning', 'read'] }) })
    await resetTables(await served.app.container.make('lucid.db'))
    const recorder = recordingFetch((e) => e.type === 'TOOL_CALL_ARGS')
    const agent = client(served.url, recorder)
    await agent.runAgent()
    assert.lengthOf(recorder.bodies, 2)
    assert.equal(
      assistantText(agent.messages),
      'Let me look at this week. Revenue was 42. All done.'
    )
    const [call] = agent.messages.flatMap((m: any) => m.toolCalls ?? [])
    assert.equal(call.function.arguments, '{"q":"weekly numbers"}')
  })

  test('a server that keeps ending streams with nothing new: it gives up after maxAttempts', async ({
    assert,
    cleanup,
  }) => {
    let requests = 0
    const server = http.createServer((_req, res) => {
      requests++
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(`data: ${JSON.stringify({ type: 'RUN_STARTED', threadId: 't', runId: 'r' })}\n\n`)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanup(() => new Promise<void>((resolve) => server.close(() => resolve())))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const agent = client(url, recordingFetch())
    agent.backoffMs = 1
    await assert.rejects(() => agent.runAgent(), /re-attaching failed/)
    assert.equal(requests, 1 + agent.maxAttempts)
  })

  test('a refusal on re-attach (the run is gone) is thrown at once', async ({ assert }) => {
    const { runner, release } = gated()
    const served = await serveApp({ runner })
    await resetTables(await served.app.container.make('lucid.db'))
    const recorder = recordingFetch()
    const agent = client(served.url, recorder)
    const running = agent.runAgent()
    while (!recorder.bodies[0]?.includes('TEXT_MESSAGE_CONTENT')) await sleep(5)
    // Someone else's thread now: the door answers 404.
    agent.headers = { 'x-user': 'mallory' }
    served.agentStream.http.closeAll()
    // HttpAgent logs the failure it throws: keep the output clean.
    const error = console.error
    console.error = () => {}
    try {
      await assert.rejects(() => running, /404/)
    } finally {
      console.error = error
    }
    release()
    assert.lengthOf(recorder.bodies, 2)
  })
})
