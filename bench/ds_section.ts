/**
 * The Durable Streams section of `npm run bench` (`BENCH_ONLY=ds`): the reference server
 * `@durable-streams/server` (its `DurableStreamTestServer`, in memory, in this process) beside
 * this package's Durable Streams door on each database, all driven by the same code
 * (bench/durable_streams.ts) over loopback HTTP in one run. Prints its own table.
 */
import { loadavg } from 'node:os'
import { DurableStreamTestServer } from '@durable-streams/server'
import {
  benchDurableStreamsTarget,
  timedCatchUps,
  type DsResult,
  type DsSizes,
} from './durable_streams.js'
import { percentile } from './script.js'

export const DS_SIZES: { quick: DsSizes; full: DsSizes } = {
  quick: { catchUpMessages: 2000, catchUpReads: 3, sseAppends: 30, longPolls: 10 },
  full: { catchUpMessages: 10_000, catchUpReads: 5, sseAppends: 300, longPolls: 100 },
}

/** A run's stream (frames dialect) read by catch-up: messages/s, and the load after. */
type RunCatchUp = Awaited<ReturnType<typeof timedCatchUps>> & { load: number }

interface Column {
  label: string
  result: DsResult | null
  /** The package only: catch-up of a run's stored frames (or why not). */
  run?: RunCatchUp
  runMissing?: string
  /** Why there is no result (the error, or what is missing). */
  missing?: string
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a')
const requests = (n: number) => `${n} request${n === 1 ? '' : 's'}`
const p50p99 = (values: number[]) =>
  `${fmt(percentile(values, 50), 2)} / ${fmt(percentile(values, 99), 2)}`

/** The reference server, in memory, on loopback. */
async function reference(sizes: DsSizes): Promise<Column> {
  const server = new DurableStreamTestServer({ port: 0, host: '127.0.0.1' })
  const url = await server.start()
  try {
    // Not reported: the client's and fetch's code warmed up, so that whichever server comes
    // first is not the one to pay for the process's first requests.
    const warmUp = { catchUpMessages: 200, catchUpReads: 1, sseAppends: 5, longPolls: 2 }
    await benchDurableStreamsTarget(
      { label: 'warm-up', streamUrl: (name) => `${url}/v1/stream/${name}` },
      warmUp
    )
    const result = await benchDurableStreamsTarget(
      { label: 'reference', streamUrl: (name) => `${url}/v1/stream/${name}` },
      sizes
    )
    return { label: '@durable-streams/server 0.3.7 (in memory)', result }
  } finally {
    await server.stop()
  }
}

/** The package's door on `dialect` (bench/ds_package.ts), or why it could not be measured. */
async function ours(dialect: string, label: string, sizes: DsSizes): Promise<Column> {
  const { servePackage } = await import('./ds_package.js')
  process.env.DB = dialect
  let served: Awaited<ReturnType<typeof servePackage>> | undefined
  try {
    served = await servePackage()
    const result = await benchDurableStreamsTarget(served.target, sizes)
    const column: Column = { label: `package, ${label}`, result }
    try {
      const url = await served.seedRun(sizes.catchUpMessages)
      const caught = await timedCatchUps(url, served.target.headers, sizes.catchUpReads, (items) =>
        items.length !== sizes.catchUpMessages
          ? `read ${items.length} messages of ${sizes.catchUpMessages}`
          : null
      )
      column.run = { ...caught, load: loadavg()[0] }
    } catch (error) {
      column.runMissing = (error as Error).message
    }
    return column
  } catch (error) {
    return { label: `package, ${label}`, result: null, missing: (error as Error).message }
  } finally {
    await served?.close()
  }
}

export async function benchDurableStreamsSection(
  dialects: { dialect: string; label: string }[],
  quick: boolean
) {
  const sizes = quick ? DS_SIZES.quick : DS_SIZES.full
  const columns: Column[] = []
  process.stderr.write('bench: Durable Streams, the reference server...\n')
  columns.push(await reference(sizes))
  for (const { dialect, label } of dialects) {
    process.stderr.write(`bench: Durable Streams, the package on ${dialect}...\n`)
    columns.push(await ours(dialect, label, sizes))
  }
  return () => print(columns, sizes)
}

function print(columns: Column[], sizes: DsSizes) {
  const cell = (column: Column, value: (r: DsResult) => string) =>
    column.result ? value(column.result) : `n/a (${column.missing})`
  const load = (column: Column, which: keyof DsResult['load']) =>
    column.result ? fmt(column.result.load[which], 2) : '-'
  const lines: [string, (r: DsResult) => string, keyof DsResult['load']][] = [
    [
      `catch-up read of a ${sizes.catchUpMessages.toLocaleString('en')}-message JSON stream, offset -1 to the end (official client, json(): chunk after chunk to the first up-to-date answer), messages/s (median of ${sizes.catchUpReads} after a first read, reported beside it with the requests a read took)`,
      (r) =>
        `${fmt(r.catchUp.median, 0)} (first: ${fmt(r.catchUp.first, 0)}; ${requests(r.catchUp.requests)})`,
      'catchUp',
    ],
    [
      `append (POST, one message) -> live SSE reader (official client, live: sse), p50 / p99 ms (${sizes.sseAppends} appends; in brackets the POST's own round trip, p50)`,
      (r) => `${p50p99(r.sse)} (POST answered: ${fmt(percentile(r.appends, 50), 2)})`,
      'sse',
    ],
    [
      `long-poll wake-up: append -> the waiting reader's 200 (fetch, live=long-poll), p50 / p99 ms (${sizes.longPolls} wake-ups; in brackets the POST's own round trip, p50)`,
      (r) => `${p50p99(r.longPoll)} (POST answered: ${fmt(percentile(r.longPollAppends, 50), 2)})`,
      'longPoll',
    ],
  ]
  const runRow = `catch-up read of a finished run's stream, its ${sizes.catchUpMessages.toLocaleString('en')} stored frames (\`/ds/runs/:runId/frames\`: text, tool calls, outputs; one message per frame), same reads, messages/s`
  const runCells = columns.map((column) =>
    column.run
      ? `${fmt(column.run.median, 0)} (first: ${fmt(column.run.first, 0)}; ${requests(column.run.requests)})`
      : `n/a (${column.runMissing ?? column.missing ?? 'no such stream'})`
  )
  const runLoads = columns.map((column) => (column.run ? fmt(column.run.load, 2) : '-'))
  console.log(
    `\nDurable Streams side by side (same run, same machine, loopback HTTP; load: the 1-minute load average after the row's measurement, per column, now ${fmt(loadavg()[0], 2)})\n`
  )
  console.log(`| metric | ${columns.map((c) => c.label).join(' | ')} | load |`)
  console.log(`| --- | ${columns.map(() => '---').join(' | ')} | --- |`)
  for (const [name, value, which] of lines) {
    const cells = columns.map((column) => cell(column, value))
    const loads = columns.map((column) => load(column, which)).join(' / ')
    console.log(`| ${name} | ${cells.join(' | ')} | ${loads} |`)
  }
  console.log(`| ${runRow} | ${runCells.join(' | ')} | ${runLoads.join(' / ')} |`)
}
