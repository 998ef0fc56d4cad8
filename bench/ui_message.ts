/**
 * The useChat rows of `npm run bench`: the AI SDK UI message stream door side by side with
 * `resumable-stream` (v2, the setup the AI SDK documents for `useChat({ resume: true })`: the
 * producer buffers the SSE chunks and answers resumes over Redis pub/sub; nothing durable), on
 * the same scripted turn: the same SSE chunks, byte for byte.
 *
 * - replay: a resume of a turn in flight that already holds `frames` frames, read to its last
 *   chunk, in chunks/s;
 * - resume -> first chunk: request to the first chunk of the turn's content (ours: after the
 *   `start` chunk; theirs: the first buffered data), p50 / p99 ms; ours also at a random cursor
 *   (`?after=`, the one cursor rule).
 * Ours is the door on a bare node:http server (the door and the SSE writer, as the controller
 * runs them), over loopback HTTP; theirs is in process (no HTTP at all), so it is ahead on that.
 */
import { createServer } from 'node:http'
import type { Database } from '@adonisjs/lucid/database'
import { Redis } from 'ioredis'
import { createResumableStreamContext } from 'resumable-stream/ioredis'
import { createRuntime } from '../src/runtime.js'
import { DoorRunStore } from '../src/store/door_runs.js'
import { tableNames } from '../src/store/schema.js'
import { serveChunks } from '../src/http/sse.js'
import { UI_MESSAGE_STREAM_HEADER, uiMessageSse } from '../src/http/ui_message_encoding.js'
import { now } from './baseline.js'
import { percentile } from './script.js'
import { seedStream } from '../tests/helpers/seed.js'

export interface UiBenchRow {
  metric: string
  db: string
  ours: string
  baseline: string
  target: string
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a')
const ms = (values: number[]) =>
  `${fmt(percentile(values, 50), 2)} / ${fmt(percentile(values, 99), 2)}`

/** A turn in flight: `frames` stored frames (text and tool calls), its writer's lease held. */
async function seedTurn(db: Database, id: string, frames: number) {
  await seedStream(db, id, frames, false)
  await new DoorRunStore(() => db.connection(), tableNames()).insert({
    runId: id,
    threadId: id,
    streamRunId: id,
    afterSeq: 0,
    kind: 'start',
    resumeHash: null,
    ownerId: null,
  })
}

/** The door's resume route on a bare node:http server: `GET /<chatId>?after=`. */
async function serveResume(db: Database) {
  const stack = createRuntime(db, {
    runner: {
      start: async () => ({ status: 'finished' }),
      resume: async () => ({ status: 'finished' }),
    },
  })
  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x')
    const controller = new AbortController()
    const reply = await stack.uiMessage.resume(
      url.pathname.slice(1),
      url.searchParams.get('after') ?? undefined,
      null,
      controller.signal
    )
    if (reply.kind !== 'stream')
      return res.writeHead(reply.kind === 'none' ? 204 : reply.status).end()
    await serveChunks(req, res, uiMessageSse(reply.events), {
      controller,
      headers: UI_MESSAGE_STREAM_HEADER,
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await stack.sink.shutdown()
    },
  }
}

/** Read a response until `done(text)`; the text read. */
async function readUntil(response: Response, done: (text: string) => boolean) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  while (!done(text)) {
    const chunk = await reader.read()
    if (chunk.done) break
    text += decoder.decode(chunk.value, { stream: true })
  }
  await reader.cancel()
  return text
}

/** The second complete `data:` block (the first after `start`) is in `text`. */
const hasContent = (text: string) =>
  text.split('\n\n').filter((b) => b.includes('data: ')).length >= 2

export async function benchUiMessage(
  db: Database,
  options: {
    label: string
    frames: number
    resumes: number
    redisUrl: string
    redisPrefix: string
    redis: boolean
  }
): Promise<UiBenchRow[]> {
  const { label, frames, resumes } = options
  const id = `bench-ui-${process.pid}-${Date.now()}`
  await seedTurn(db, id, frames)
  const http = await serveResume(db)
  const rows: UiBenchRow[] = []
  try {
    // Ours: the whole turn (useChat's resume replays from the start), to its last frame's chunk.
    // The last frame's last chunk carries its cursor (`<seq>`, or `<seq>.<offset>` for text).
    const last = new RegExp(`id: ${frames}(\\.\\d+)?\\ndata: [^\\n]*\\n\\n`)
    const ended = (text: string) => last.test(text.slice(-4096))
    const t0 = now()
    const body = await readUntil(await fetch(`${http.url}/${id}`), ended)
    const seconds = (now() - t0) / 1000
    const blocks = body
      .split('\n\n')
      .filter((b) => b.includes('data: '))
      .map((b) => `${b}\n\n`)
    const ourRate = blocks.length / seconds

    const fromStart: number[] = []
    const atCursor: number[] = []
    for (let i = 0; i < resumes; i++) {
      let t = now()
      await readUntil(await fetch(`${http.url}/${id}`), hasContent)
      fromStart.push(now() - t)
      const after = String(1 + Math.floor(Math.random() * (frames - 1)))
      t = now()
      await readUntil(await fetch(`${http.url}/${id}?after=${after}`), hasContent)
      atCursor.push(now() - t)
    }

    // Theirs: resumable-stream on Redis, the producer holding the same chunks, still streaming.
    let theirRate = Number.NaN
    const theirFirst: number[] = []
    if (options.redis) {
      const publisher = new Redis(options.redisUrl)
      const subscriber = new Redis(options.redisUrl)
      const context = createResumableStreamContext({
        waitUntil: null,
        keyPrefix: `${options.redisPrefix}rs:${id}`,
        publisher,
        subscriber,
      })
      let producer: ReadableStreamDefaultController<string> | undefined
      const first = await context.resumableStream(
        id,
        () =>
          new ReadableStream<string>({
            start(controller) {
              producer = controller
              for (const block of blocks) controller.enqueue(block)
            },
          })
      )
      // The first client reads everything produced so far (the producer keeps it buffered).
      const total = blocks.reduce((n, b) => n + b.length, 0)
      const firstReader = first!.getReader()
      const drain = async (reader: ReadableStreamDefaultReader<string>) => {
        for (let got = 0; got < total;) {
          const { value } = await reader.read()
          got += value!.length
        }
      }
      await drain(firstReader)
      const t1 = now()
      const resumed = (await context.resumeExistingStream(id))!.getReader()
      await drain(resumed)
      theirRate = blocks.length / ((now() - t1) / 1000)
      await resumed.cancel()
      for (let i = 0; i < resumes; i++) {
        const t = now()
        const reader = (await context.resumeExistingStream(id))!.getReader()
        await reader.read()
        theirFirst.push(now() - t)
        await reader.cancel()
      }
      producer?.close()
      await firstReader.cancel().catch(() => {})
      publisher.disconnect()
      subscriber.disconnect()
    }
    rows.push({
      metric: `UI message stream (useChat) resume of a ${frames.toLocaleString('en')}-frame turn in flight, replayed, chunks/s (${blocks.length} chunks; baseline: resumable-stream on Redis)`,
      db: label,
      ours: fmt(ourRate, 0),
      baseline: fmt(theirRate, 0),
      target: '(reported)',
    })
    rows.push({
      metric:
        'UI message stream resume (useChat, from the turn start) -> first chunk, p50 / p99 ms (baseline: resumable-stream resumeExistingStream)',
      db: label,
      ours: ms(fromStart),
      baseline: options.redis ? ms(theirFirst) : 'n/a',
      target: 'p50 <= 5',
    })
    rows.push({
      metric: 'UI message stream resume at a random cursor (?after=) -> first chunk, p50 / p99 ms',
      db: label,
      ours: ms(atCursor),
      baseline: 'n/a',
      target: 'p50 <= 5',
    })
  } finally {
    await http.close()
    // The seeded turn never ends on its own: end it, so no reader waits on it.
    await db
      .connection()
      .from('agent_streams')
      .where('run_id', id)
      .update({ status: 'ended', ended_at: Date.now() })
  }
  return rows
}
