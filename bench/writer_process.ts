/**
 * The benchmark's other replica: writes a plan with our sink or the baseline writer, in its own
 * process, and reports when each commit returned.
 */
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { createDatabase } from '../tests/helpers/db.js'
import { BaselineWriter } from './baseline.js'
import { instrumentCommits, play, type Plan } from './script.js'
import { sinkOptionsFromEnv } from '../tests/helpers/replica_options.js'

const options = await sinkOptionsFromEnv()
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
