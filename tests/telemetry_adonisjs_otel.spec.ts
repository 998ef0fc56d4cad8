import { test } from '@japa/runner'
import { fork } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { createDatabase, resetTables } from './helpers/db.js'
import { runInput } from './helpers/http.js'
import { runId, sleep } from './helpers/sink.js'

const APP = fileURLToPath(new URL('./fixtures/otel_app/bin/server.ts', import.meta.url))

/** A span as OTLP/HTTP JSON carries it (ids in hex), with its attributes flattened. */
interface OtlpSpan {
  name: string
  kind: number
  traceId: string
  spanId: string
  parentSpanId?: string
  attributes: Record<string, unknown>
}

function flatten(span: any): OtlpSpan {
  const attributes: Record<string, unknown> = {}
  for (const { key, value } of span.attributes ?? []) {
    attributes[key] = value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue
  }
  return { ...span, attributes }
}

/** An OTLP/HTTP JSON receiver on loopback: what the app's exporter posts to `/v1/traces`. */
async function otlpReceiver() {
  const spans: OtlpSpan[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const message = JSON.parse(body)
        for (const resource of message.resourceSpans ?? []) {
          for (const scope of resource.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) spans.push(flatten(span))
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, spans, close: () => new Promise((resolve) => server.close(resolve)) }
}

test.group('Traces in an AdonisJS app with @adonisjs/otel', () => {
  test('a run started over HTTP has its spans under the request trace (OTLP on loopback)', async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    await db.manager.closeAll()
    const receiver = await otlpReceiver()
    cleanup(async () => void (await receiver.close()))
    const child = fork(APP, [], {
      execArgv: ['--import=@poppinss/ts-exec'],
      env: {
        ...process.env,
        OTLP_ENDPOINT: receiver.url,
        APP_NAME: 'otel-fixture',
        // Traces only: no log or metric exporter left to wait for at shutdown.
        OTEL_LOGS_EXPORTER: 'none',
        OTEL_METRICS_EXPORTER: 'none',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    cleanup(() => void child.kill('SIGKILL'))
    const { url } = await new Promise<{ url: string }>((resolve, reject) => {
      const told = (message: any) => {
        if (!message?.url) return
        child.off('message', told)
        resolve(message)
      }
      child.on('message', told)
      child.once('exit', (code) => reject(new Error(`the app exited early (${code})`)))
    })

    const thread = runId('thread')
    const run = runId('run')
    const posted = await fetch(`${url}/agent/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify(runInput(thread, run)),
    })
    assert.equal(posted.status, 200)
    assert.include(await posted.text(), 'RUN_FINISHED')
    // The provider's shutdown flushes what the batch processor holds.
    const exited = new Promise((resolve) =>
      child.on('message', (m: any) => m?.exited && resolve(m))
    )
    child.send({ op: 'exit' })
    await exited
    for (let i = 0; i < 50 && !receiver.spans.some((s) => s.name.startsWith('invoke_agent')); i++)
      await sleep(100)

    const spans = receiver.spans
    const root = spans.find((span) => span.name === 'invoke_agent reporter')
    assert.exists(root, `spans: ${spans.map((span) => span.name).join(', ')}`)
    // The HTTP server span of the POST, made by @adonisjs/otel's HTTP instrumentation (and
    // named by its middleware after the route).
    const request = spans.find((span) => span.spanId === root!.parentSpanId)
    assert.exists(request, 'the root span has its request span for parent')
    assert.equal(request!.kind, 2) // SPAN_KIND_SERVER
    assert.equal(request!.traceId, root!.traceId)
    assert.match(request!.name, /^POST /)
    assert.deepInclude(root!.attributes, {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'reporter',
      'gen_ai.conversation.id': thread,
      'agent_stream.run_id': run,
    })
    const read = spans.find(
      (span) => span.name === 'agent_stream.reattach' && span.parentSpanId === request!.spanId
    )
    assert.exists(read, 'the door read is a span of the POST')
    assert.notProperty(root!.attributes, 'enduser.id')
  }).timeout(60_000)
})
