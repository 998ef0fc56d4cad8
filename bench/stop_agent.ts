/**
 * The stop benchmark's agent replica (bench/stop.ts), in its own process: a runtime on the
 * bench's database whose agent says one word and then talks until its `signal` aborts. It tells
 * the bench over IPC the moment the signal aborts (`{ aborted: runId, at }`, `at` on the wall
 * clock both processes share: `performance.timeOrigin + performance.now()`). Commands: `start`
 * (a run through the AG-UI door; answered once its first word is committed), `exit`.
 * Wakes up as `SINK_OPTIONS` and `REDIS_NOTIFIER` say (tests/helpers/replica_options.ts).
 */
import { createRuntime } from '../src/runtime.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { createDatabase } from '../tests/helpers/db.js'
import { sinkOptionsFromEnv } from '../tests/helpers/replica_options.js'
import { now } from './baseline.js'
import { holdNotifiers } from './stop.js'

const said = new Map<string, () => void>()
const runner: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({ t: 'text', v: 'Hello' })
    await ctx.writer.flush?.()
    said.get(ctx.runId)?.()
    await new Promise<void>((resolve) => {
      const aborted = () => {
        // First thing: the time, then the message (the bench's figure ends here).
        const at = now()
        process.send!({ aborted: ctx.runId, at })
        resolve()
      }
      if (ctx.signal.aborted) aborted()
      else ctx.signal.addEventListener('abort', aborted, { once: true })
    })
    return { status: 'finished' }
  },
  resume: async () => ({ status: 'finished' }),
}

const db = createDatabase()
const runtime = createRuntime(db, {
  ...(await sinkOptionsFromEnv()),
  runner,
  replicaId: `stop-agent-${process.pid}`,
})
const principal = { id: 'bench' }

type Command = { id: number; op: 'start' | 'exit'; runId?: string }
process.on('message', async (command: Command) => {
  try {
    if (command.op === 'exit') {
      await runtime.sink.shutdown()
      await db.manager.closeAll()
      return process.exit(0)
    }
    const runId = command.runId!
    const first = new Promise<void>((resolve) => said.set(runId, resolve))
    const run = { runId, threadId: `${runId}-t`, ownerId: principal.id, clientTools: [] }
    const started = await runtime.door.startRun(
      { ...run, inputMessage: null },
      { message: 'hi' },
      principal
    )
    if (!started || typeof started === 'string') throw new Error(`not started: ${started}`)
    await first
    said.delete(runId)
    process.send!({ id: command.id, ok: true })
  } catch (error) {
    process.send!({ id: command.id, ok: false, error: String(error) })
  }
})
// Ready means its notifiers are up (with Redis: subscribed): a stop from now on is heard.
await holdNotifiers(runtime.sink)
process.send!({ ready: true })
