/**
 * `resumable-stream` (what the AI SDK documents for resumable chats) on the same Redis, same
 * machine, same run as our rows: delivery in the producer's process, delivery to a resumer in
 * another process, and a resume at a random point of a 10,000-chunk stream -> its first chunk.
 * It keeps each stream in its producer's memory (not durable: the producer's process ending
 * loses it) and serves resumers over Redis pub/sub.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { createResumableStreamContext } from 'resumable-stream/ioredis'
import { now } from './baseline.js'
import { percentile } from './script.js'

export interface ResumableResult {
  sameProcess: number[]
  otherProcess: number[]
  resume: number[]
  /** Resumes that failed (resumable-stream gives up after 1 s without the producer's answer). */
  failed: number
}

/** Latencies in ms: chunk written -> read, here and in another process; resume -> first chunk. */
export async function benchResumable(
  url: string,
  sizes: { frames: number; replay: number; reattach: number }
): Promise<ResumableResult> {
  const prefix = `agent_stream_bench_rs:${process.pid}`
  const publisher = new Redis(url)
  const subscriber = new Redis(url)
  const context = createResumableStreamContext({
    waitUntil: null,
    keyPrefix: prefix,
    publisher,
    subscriber,
  })
  const child = fork(fileURLToPath(new URL('./resumable_producer.ts', import.meta.url)), [], {
    execArgv: ['--import=@poppinss/ts-exec'],
    env: { ...process.env, REDIS_URL: url, RS_PREFIX: prefix },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  await new Promise((resolve) => child.once('message', resolve))
  try {
    // 1. The producer's own reader, in its process: chunk written -> read.
    let controller!: ReadableStreamDefaultController<string>
    const local = await context.createNewResumableStream(
      `${prefix}:local`,
      () => new ReadableStream<string>({ start: (c) => void (controller = c) })
    )
    const sameProcess: number[] = []
    const reading = (async () => {
      for await (const chunk of local!) sameProcess.push(now() - Number(chunk.split(' ')[1]))
    })()
    for (let i = 0; i < sizes.frames; i++) {
      controller.enqueue(`${i} ${now()} \n`)
      await new Promise((r) => setTimeout(r, 20))
    }
    controller.close()
    await reading

    // 2. A resumer in this process, the producer in the other: written -> read.
    const remoteId = `${prefix}:remote`
    await call(child, { op: 'create', streamId: remoteId })
    const remote = await context.resumeExistingStream(remoteId)
    const otherProcess: number[] = []
    const remoteReading = (async () => {
      let pending = ''
      for await (const chunk of remote!) {
        const at = now()
        pending += chunk
        const lines = pending.split('\n')
        pending = lines.pop()!
        for (const line of lines) otherProcess.push(at - Number(line.split(' ')[1]))
      }
    })()
    await call(child, { op: 'write', streamId: remoteId, count: sizes.frames, intervalMs: 20 })
    await call(child, { op: 'end', streamId: remoteId })
    await remoteReading
    // The two processes' clocks (`performance.timeOrigin` is taken at each process's start) may
    // disagree by milliseconds on a loaded machine: corrected by the offset the fastest of 20
    // IPC round trips gives (error at most half of that round trip).
    const offset = await clockOffset(child)
    for (let i = 0; i < otherProcess.length; i++) otherProcess[i] += offset

    // 3. A stream of `replay` chunks in the other process, still open: resume at a random
    // character -> first chunk.
    const longId = `${prefix}:long`
    await call(child, { op: 'create', streamId: longId })
    await call(child, {
      op: 'write',
      streamId: longId,
      count: sizes.replay,
      intervalMs: 0,
      size: 60,
    })
    const resume: number[] = []
    let failed = 0
    for (let i = 0; i < sizes.reattach; i++) {
      const skip = Math.floor(Math.random() * (sizes.replay - 1)) * 61
      const t = now()
      try {
        const stream = await context.resumeExistingStream(longId, skip)
        const reader = stream!.getReader()
        await reader.read()
        resume.push(now() - t)
        await reader.cancel()
      } catch {
        // Its own limit: no answer from the producer within 1 s ("Timeout waiting for ack").
        failed++
      }
    }
    await call(child, { op: 'end', streamId: longId })
    return { sameProcess, otherProcess, resume, failed }
  } finally {
    child.send({ op: 'exit' })
    await new Promise((resolve) => child.once('exit', resolve))
    publisher.disconnect()
    subscriber.disconnect()
    const cleaner = new Redis(url)
    const keys = await cleaner.keys(`${prefix}:*`)
    if (keys.length > 0) await cleaner.del(...keys)
    cleaner.disconnect()
  }
}

/** The child's clock minus ours, in ms, from the fastest of 20 round trips. */
async function clockOffset(child: ChildProcess) {
  let best = { rtt: Number.POSITIVE_INFINITY, offset: 0 }
  for (let i = 0; i < 20; i++) {
    const sent = now()
    const { at } = await call(child, { op: 'clock' })
    const back = now()
    if (back - sent < best.rtt) best = { rtt: back - sent, offset: at - (sent + back) / 2 }
  }
  return best.offset
}

function call(child: ChildProcess, command: object): Promise<any> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: any) =>
      message.ok ? resolve(message) : reject(new Error(message.error))
    )
    child.send(command)
  })
}

/** `p50 / p99` of latencies in ms. */
export const p50p99 = (values: number[]) =>
  `${percentile(values, 50).toFixed(2)} / ${percentile(values, 99).toFixed(2)}`
