/**
 * The cost of telemetry on the hot path (`BENCH_ONLY=otel`, issue 25 part 5): in ONE run, on
 * one database, re-attach over HTTP (AG-UI, random cursor) -> first new event, and write() ->
 * reader (same replica), without an OpenTelemetry SDK and with one installed globally (a
 * NodeTracerProvider with a BatchSpanProcessor to an in-memory exporter, a MeterProvider with a
 * PeriodicExportingMetricReader to an in-memory exporter every second). The two alternate, in
 * rounds, after a warm-up, so that neither gets the warmer process. Prints its own table.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api'
import {
  InMemoryMetricExporter,
  AggregationTemporality,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import { BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import type { Database } from '@adonisjs/lucid/database'
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { now } from './baseline.js'
import { percentile } from './script.js'

export const OTEL_SIZES = {
  quick: { frames: 2000, reattaches: 30, writes: 40, rounds: 2 },
  full: { frames: 10_000, reattaches: 200, writes: 200, rounds: 3 },
}
type Sizes = (typeof OTEL_SIZES)['quick']

/** An SDK installed as the global providers; `uninstall` goes back to none. */
function installSdk() {
  const spans = new InMemorySpanExporter()
  const tracing = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(spans)] })
  tracing.register()
  const exported = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const meter = new MeterProvider({
    readers: [
      new PeriodicExportingMetricReader({ exporter: exported, exportIntervalMillis: 1000 }),
    ],
  })
  metrics.setGlobalMeterProvider(meter)
  return {
    async uninstall() {
      await tracing.forceFlush()
      await meter.forceFlush()
      const seen = {
        spans: spans.getFinishedSpans().length,
        points: exported
          .getMetrics()
          .at(-1)
          ?.scopeMetrics.flatMap((scope) => scope.metrics)
          .reduce((sum, metric) => sum + metric.dataPoints.length, 0),
      }
      trace.disable()
      context.disable()
      propagation.disable()
      metrics.disable()
      await tracing.shutdown()
      await meter.shutdown()
      return seen
    },
  }
}

/** The AG-UI door's re-attach route on a bare node:http server, over `sink`, for `id`. */
async function serveDoor(db: Database, sink: LucidTokenStreamSink, id: string) {
  const { createRuntime } = await import('../src/runtime.js')
  const { DoorRunStore } = await import('../src/store/door_runs.js')
  const { AgUiDoor } = await import('../src/agui/door/door.js')
  const { tableNames } = await import('../src/store/schema.js')
  const { serveReattach } = await import('./serve_reattach.js')
  const stack = createRuntime(db, {
    runner: {
      start: async () => ({ status: 'finished' }),
      resume: async () => ({ status: 'finished' }),
    },
  })
  const runs = new DoorRunStore(() => db.connection(), tableNames())
  const run = { runId: id, threadId: id, streamRunId: id, afterSeq: 0, kind: 'start' as const }
  await runs.insert({ ...run, resumeHash: null, ownerId: null })
  const door = new AgUiDoor({
    sink,
    driver: stack.driver,
    parking: stack.parking,
    runs,
    queue: stack.queue,
  })
  const served = await serveReattach(door)
  return {
    url: served.url,
    close: async () => {
      await served.close()
      await stack.sink.shutdown()
    },
  }
}

/** One AG-UI re-attach at a random cursor: request -> the first event after the prelude, ms. */
async function reattachOnce(url: string, id: string, frames: number) {
  const after = String(1 + Math.floor(Math.random() * (frames - 1)))
  const t = now()
  const response = await fetch(`${url}/${id}?after=${after}`)
  const reader = response.body!.getReader()
  let text = ''
  while (!/"type":"(TOOL_CALL|TEXT_MESSAGE)_[A-Z]+"/.test(text)) {
    const chunk = await reader.read()
    if (chunk.done) break
    text += new TextDecoder().decode(chunk.value)
  }
  const took = now() - t
  await reader.cancel()
  return took
}

/** `writes` frames, one at a time: write() -> the reader holding it, ms each. */
async function writeToReader(sink: LucidTokenStreamSink, id: string, writes: number) {
  const writer = await sink.open(id)
  const reader = sink.subscribe(id)[Symbol.asyncIterator]()
  const latencies: number[] = []
  for (let i = 0; i < writes; i++) {
    const t = now()
    await writer.write({ t: 'event', event: { kind: 'title', title: `t${i}` } })
    await reader.next()
    latencies.push(now() - t)
  }
  await writer.end()
  await reader.return?.()
  return latencies
}

interface Measured {
  reattach: number[]
  write: number[]
}

/**
 * Measure on `dialect` (its tables reset). Returns the table's printer.
 */
export async function benchOtelSection(
  dialect: string,
  label: string,
  quick: boolean,
  database: { create: () => Database; reset: (db: Database) => Promise<void> },
  seed: (db: Database, id: string, frames: number, ended: boolean) => Promise<void>
) {
  const sizes: Sizes = quick ? OTEL_SIZES.quick : OTEL_SIZES.full
  process.env.DB = dialect
  const db = database.create()
  await database.reset(db)
  const sink = new LucidTokenStreamSink(db, { coalesceWindowMs: 40 })
  const id = `otel-replay-${process.pid}`
  await seed(db, id, sizes.frames, true)
  const http = await serveDoor(db, sink, id)
  const results: Record<'off' | 'on', Measured> = {
    off: { reattach: [], write: [] },
    on: { reattach: [], write: [] },
  }
  let seen: { spans: number; points?: number } = { spans: 0 }
  let streams = 0
  const round = async (into: Measured | null, count = 1) => {
    for (let i = 0; i < sizes.reattaches * count; i++) {
      const took = await reattachOnce(http.url, id, sizes.frames)
      into?.reattach.push(took)
    }
    const took = await writeToReader(sink, `otel-write-${process.pid}-${++streams}`, sizes.writes)
    into?.write.push(...took)
  }
  try {
    // Warm-up, with and without (not reported): the door's and the SDK's code optimized.
    await round(null)
    const warm = installSdk()
    await round(null)
    await warm.uninstall()
    for (let r = 0; r < sizes.rounds; r++) {
      await round(results.off)
      const sdk = installSdk()
      await round(results.on)
      seen = await sdk.uninstall()
    }
  } finally {
    await http.close()
    await sink.shutdown()
    await db.manager.closeAll()
  }
  return () => print(label, sizes, results, seen)
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a')
const p50p99 = (values: number[]) =>
  `${fmt(percentile(values, 50))} / ${fmt(percentile(values, 99))}`

function print(
  label: string,
  sizes: Sizes,
  results: Record<'off' | 'on', Measured>,
  seen: { spans: number; points?: number }
) {
  console.log(
    `\nThe cost of telemetry on ${label} (one run; ${sizes.rounds} rounds alternating without / with an SDK after a warm-up; with: NodeTracerProvider + BatchSpanProcessor to an in-memory exporter, MeterProvider + PeriodicExportingMetricReader every 1 s; the last round with it exported ${seen.spans} spans and ${seen.points ?? 0} metric data points)\n`
  )
  console.log('| metric | without SDK | with SDK |')
  console.log('| --- | --- | --- |')
  console.log(
    `| re-attach over HTTP (AG-UI, random cursor of a ${sizes.frames.toLocaleString('en')}-frame run) -> first new event, p50 / p99 ms (${results.off.reattach.length} each) | ${p50p99(results.off.reattach)} | ${p50p99(results.on.reattach)} |`
  )
  console.log(
    `| write() -> reader, same replica (a non-text frame, one at a time), p50 / p99 ms (${results.off.write.length} each) | ${p50p99(results.off.write)} | ${p50p99(results.on.write)} |`
  )
}
