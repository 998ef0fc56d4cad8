/**
 * The other process of the `resumable-stream` rows (bench/resumable.ts): it owns the streams
 * (resumable-stream keeps a stream's chunks in its producer's memory and serves resumers over
 * Redis pub/sub), writes chunks on command and reports when each was written.
 */
import { Redis } from 'ioredis'
import { createResumableStreamContext } from 'resumable-stream/ioredis'
import { now } from './baseline.js'

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const publisher = new Redis(url)
const subscriber = new Redis(url)
const context = createResumableStreamContext({
  waitUntil: null,
  keyPrefix: process.env.RS_PREFIX,
  publisher,
  subscriber,
})
const controllers = new Map<string, ReadableStreamDefaultController<string>>()

type Command =
  | { op: 'create'; streamId: string }
  | { op: 'write'; streamId: string; count: number; intervalMs: number; size?: number }
  | { op: 'end'; streamId: string }
  | { op: 'exit' }
  | { op: 'clock' }

process.on('message', async (command: Command) => {
  try {
    if (command.op === 'exit') {
      publisher.disconnect()
      subscriber.disconnect()
      return process.exit(0)
    }
    if (command.op === 'clock') return process.send!({ ok: true, at: now() })
    if (command.op === 'create') {
      const stream = await context.createNewResumableStream(
        command.streamId,
        () =>
          new ReadableStream<string>({
            start: (controller) => void controllers.set(command.streamId, controller),
          })
      )
      // The producer's own reader (a chat's first request): drained, as a server would.
      void stream!.pipeTo(new WritableStream())
      return process.send!({ ok: true })
    }
    const controller = controllers.get(command.streamId)!
    if (command.op === 'end') {
      controller.close()
      return process.send!({ ok: true })
    }
    const writes: number[] = []
    for (let i = 0; i < command.count; i++) {
      const at = now()
      // One chunk, stamped: `<index> <write time>` padded to `size` characters, one per line.
      controller.enqueue(`${i} ${at} `.padEnd(command.size ?? 0, 'x') + '\n')
      writes.push(at)
      if (command.intervalMs > 0) await new Promise((r) => setTimeout(r, command.intervalMs))
    }
    process.send!({ ok: true, writes })
  } catch (error) {
    process.send!({ ok: false, error: (error as Error).message })
  }
})
process.send!({ ready: true })
