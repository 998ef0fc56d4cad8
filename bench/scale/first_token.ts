/**
 * Issue 26, a new run's first token, over HTTP on loopback: a runtime from `createRuntime`
 * served on node:http through the AG-UI Fetch handler and the useChat Fetch handler, a runner
 * that writes text at once. For each door, with B background runs talking meanwhile (30
 * tokens/s each, on the same replica and database: B = 0/20/100; QUICK: 0/20):
 *
 * - `POST -> first event`: the request sent to its first SSE event (`RUN_STARTED`, useChat's
 *   `start`), p50/p99 ms;
 * - `write -> first text`: the runner's first `write` of text to the client reading that text
 *   (`TEXT_MESSAGE_CONTENT`, `text-delta`), p50/p99 ms (one process, one clock);
 * - `statements before first event`: the start's own statements before its first event
 *   (`startStatements`), p50, and `round trips` (statements outside a transaction, plus one per
 *   transaction); the old start's claim ran outside its transaction, so both count it.
 *
 * Only APIs main already had: createRuntime, the two Fetch handlers, HTTP.
 *
 *   BENCH_DBS=sqlite,pg,mysql node --expose-gc --import=@poppinss/ts-exec bench/scale/first_token.ts
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRuntime } from '../../src/runtime.js'
import { createAgUiFetchHandler } from '../../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../../src/http/ui_message_fetch_handler.js'
import { connectionConfig, createDatabase, resetTables } from '../../tests/helpers/db.js'
import { toNode } from '../../tests/helpers/fetch_node.js'
import { DBS, emit as emitRow, percentile, QUICK } from './common.js'

const BACKGROUND = QUICK ? [0, 20] : [0, 20, 100]
const STARTS = process.env.BENCH_STARTS ? Number(process.env.BENCH_STARTS) : QUICK ? 40 : 150
const TOKENS_PER_SECOND = 30

const emit = (metric: string, db: string, x: number, value: number, unit: string) =>
  emitRow({ metric, db, x, xLabel: 'background runs', value, unit })

/**
 * The statements of one start among those sent between its POST and its first event: its
 * transaction (the one that records the run) and the statements outside any transaction that
 * name its thread or its run, but for the readers' own reads (batched reads of stream rows,
 * reads of stored rows). Other runs' commits (background, or this run's own frames) are left
 * out: they run beside the start, never before its first event.
 */
function startStatements(
  log: { sql: string; tx: string | null; bindings?: unknown[] }[],
  thread: string,
  run: string
) {
  const names = (s: { bindings?: unknown[] }) =>
    Boolean(s.bindings?.includes(thread) || s.bindings?.includes(run))
  const recording = log.find(
    (s) => s.tx && /insert into .agent_agui_runs./i.test(s.sql) && names(s)
  )
  if (!recording) return { statements: Number.NaN, roundTrips: Number.NaN }
  const counted = log.filter(
    (s) =>
      (s.tx === recording.tx || (!s.tx && names(s))) &&
      !/from .agent_streams. where .run_id. in \(/i.test(s.sql) &&
      // The tail's first read of a stream it starts to follow, as one joined statement.
      !/from .agent_streams. as .s. left join .agent_stream_frames./i.test(s.sql) &&
      !/^select .seq., .kind., .body./i.test(s.sql)
  )
  if (process.env.BENCH_DEBUG)
    process.stderr.write(
      `${counted.map((c) => `${c.tx ?? '-'} ${c.sql.slice(0, 90)}`).join('\n')}\n\n`
    )
  return { statements: counted.length, roundTrips: counted.filter((s) => !s.tx).length + 1 }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function bench(dialect: 'sqlite' | 'pg' | 'mysql') {
  const config = connectionConfig(dialect)
  const db = createDatabase(config)
  await resetTables(db)
  /** When each run's runner wrote its first text (performance.now()). */
  const wrote = new Map<string, number>()
  let stopBackground = false
  const gates = new Map<string, { promise: Promise<void>; open: () => void }>()
  const gate = (thread: string) => {
    let entry = gates.get(thread)
    if (!entry) {
      let open!: () => void
      const promise = new Promise<void>((resolve) => (open = resolve))
      entry = { promise, open }
      gates.set(thread, entry)
    }
    return entry
  }
  const opened = (thread: string) => gate(thread).promise
  const runtime = createRuntime(db, {
    runner: {
      name: 'first-token',
      async start(ctx: any) {
        if (ctx.threadId.startsWith('bg-')) {
          // A background run: talks until the measurement ends.
          while (!stopBackground && !ctx.signal.aborted) {
            await ctx.writer.write({ t: 'text', v: 'word ' })
            await sleep(1000 / TOKENS_PER_SECOND)
          }
          return { status: 'finished' }
        }
        // Its first text once the client has its first event: what the start sent before it
        // is the start's alone (the run's own end is not mixed in).
        await opened(ctx.threadId)
        wrote.set(ctx.threadId, performance.now())
        await ctx.writer.write({ t: 'text', v: 'Hello' })
        for (const word of [' there', ',', ' how', ' are', ' you', '?']) {
          await ctx.writer.write({ t: 'text', v: word })
        }
        return { status: 'finished' }
      },
    },
  } as any)
  /** Every statement sent, with its transaction (`null` outside one). */
  const log: { sql: string; tx: string | null; bindings?: unknown[] }[] = []
  for (const client of new Set([db.connection().getReadClient(), db.connection().getWriteClient()]))
    client.on('query', (q: any) =>
      log.push({ sql: q.sql, tx: q.__knexTxId ?? null, bindings: q.bindings })
    )
  const principal = () => ({ id: 'bench' })
  const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
  const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal })
  const server = createServer(
    toNode((request) =>
      new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
    )
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const doors = {
    agui: {
      post: (thread: string) =>
        fetch(`${url}/agui`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'accept': 'text/event-stream' },
          body: JSON.stringify({
            threadId: thread,
            runId: `run-${randomUUID()}`,
            messages: [{ id: `u-${randomUUID()}`, role: 'user', content: 'Hi' }],
            tools: [],
            context: [],
            state: {},
            forwardedProps: {},
          }),
        }),
      first: (event: any) => event.type === 'RUN_STARTED',
      text: (event: any) => event.type === 'TEXT_MESSAGE_CONTENT',
    },
    useChat: {
      post: (thread: string) =>
        fetch(`${url}/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            id: thread,
            trigger: 'submit-message',
            messages: [
              { id: `u-${randomUUID()}`, role: 'user', parts: [{ type: 'text', text: 'Hi' }] },
            ],
          }),
        }),
      first: (event: any) => event.type === 'start',
      text: (event: any) => event.type === 'text-delta',
    },
  }

  /** One start: its POST -> first event, write -> first text, and statements meanwhile. */
  async function one(door: (typeof doors)['agui']) {
    const thread = `t-${randomUUID()}`
    const before = log.length
    const sent = performance.now()
    const response = await door.post(thread)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ''
    let firstAt = Number.NaN
    let count = { statements: Number.NaN, roundTrips: Number.NaN }
    let textAt = Number.NaN
    while (Number.isNaN(textAt)) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let cut: number
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut)
        buffer = buffer.slice(cut + 2)
        const data = block.split('\n').find((line) => line.startsWith('data:'))
        if (!data || data.includes('[DONE]')) continue
        const event = JSON.parse(data.slice(5))
        if (Number.isNaN(firstAt) && door.first(event)) {
          firstAt = performance.now()
          count = startStatements(log.slice(before), thread, event.runId ?? event.messageId)
          gate(thread).open()
        }
        if (door.text(event)) {
          textAt = performance.now()
          break
        }
      }
    }
    void reader.cancel().catch(() => {})
    gates.delete(thread)
    return { start: firstAt - sent, text: textAt - (wrote.get(thread) ?? Number.NaN), count }
  }

  for (const background of BACKGROUND) {
    stopBackground = false
    const talking = Array.from({ length: background }, () =>
      runtime.driver.start({ runId: `bg-${randomUUID()}`, threadId: `bg-${randomUUID()}` })
    )
    await Promise.all(talking)
    await sleep(background ? 500 : 0)
    for (const [name, door] of Object.entries(doors)) {
      // Warm: the sink's clock, the pools' connections, the code paths.
      for (let i = 0; i < 5; i++) await one(door)
      const starts: number[] = []
      const texts: number[] = []
      const counts: number[] = []
      const trips: number[] = []
      for (let i = 0; i < STARTS; i++) {
        const measured = await one(door)
        starts.push(measured.start)
        texts.push(measured.text)
        counts.push(measured.count.statements)
        trips.push(measured.count.roundTrips)
        await sleep(5)
      }
      emit(`${name} POST -> first event p50`, dialect, background, percentile(starts, 50), 'ms')
      emit(`${name} POST -> first event p99`, dialect, background, percentile(starts, 99), 'ms')
      emit(`${name} write -> first text p50`, dialect, background, percentile(texts, 50), 'ms')
      emit(`${name} write -> first text p99`, dialect, background, percentile(texts, 99), 'ms')
      emit(
        `${name} statements before first event p50`,
        dialect,
        background,
        percentile(counts, 50),
        'statements'
      )
      emit(
        `${name} round trips before first event p50`,
        dialect,
        background,
        percentile(trips, 50),
        'round trips'
      )
    }
    stopBackground = true
    await runtime.driver.settled()
  }
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  await runtime.driver.settled()
  await runtime.sink.shutdown()
  await db.manager.closeAll()
}

for (const dialect of DBS) {
  process.env.DB = dialect
  await bench(dialect as 'sqlite' | 'pg' | 'mysql')
}
