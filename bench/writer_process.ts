/**
 * The benchmark's other replica: writes a plan with our sink or the baseline writer, in its own
 * process, and reports when each commit returned.
 */
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { createDatabase } from '../tests/helpers/db.js'
import { BaselineWriter } from './baseline.js'
import { instrumentCommits, play, type Plan } from './script.js'
import { notifiers } from '../src/follow/notifiers/index.js'

const options = JSON.parse(process.env.SINK_OPTIONS ?? '{}')
// `REDIS_NOTIFIER` (JSON: channel): this replica publishes (and wakes) through Redis.
if (process.env.REDIS_NOTIFIER) {
  const { Redis } = await import('ioredis')
  const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  client.on('error', () => {})
  options.notifier = notifiers.redis({ ...JSON.parse(process.env.REDIS_NOTIFIER), client })
}
const db = createDatabase()
const sink = new LucidTokenStreamSink(db, options)
const committedAt = instrumentCommits(sink)

process.on(
  'message',
  async (command: { op: 'ours' | 'baseline' | 'open' | 'exit'; runId: string; plan: Plan }) => {
    try {
      if (command.op === 'exit') {
        await sink.shutdown()
        await db.manager.closeAll()
        return process.exit(0)
      }
      if (command.op === 'open') {
        await sink.open(command.runId)
        return process.send!({ ok: true })
      }
      if (command.op === 'ours') {
        committedAt.clear()
        const writer = await sink.open(command.runId)
        await play(writer, command.plan)
        return process.send!({ ok: true, commits: [...committedAt] })
      }
      const writer = new BaselineWriter(db.connection(), command.runId)
      await play(writer, command.plan)
      process.send!({
        ok: true,
        commits: [...writer.committedAt].map(([seq, at]) => [`${seq}`, at]),
      })
    } catch (error) {
      process.send!({ ok: false, error: (error as Error).message })
    }
  }
)
process.send!({ ready: true })
