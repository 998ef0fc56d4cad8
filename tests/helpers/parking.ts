import { getActiveTest } from '@japa/runner'
import { createRuntime, type RuntimeOptions } from '../../src/runtime.js'
import { scriptedAgent, type ScriptedAgentOptions } from '../../src/testing/scripted_agent.js'
import type { AgentRunner, RunContext } from '../../src/runner/contract.js'
import { createDatabase, resetTables } from './db.js'

/** The whole parking stack on fresh tables, with the scripted agent; closed when the test ends. */
export async function setupParking(
  agent: ScriptedAgentOptions = {},
  options: Partial<RuntimeOptions> = {},
  reset = true
) {
  const db = createDatabase()
  if (reset) await resetTables(db)
  const resumes: string[] = []
  const stack = createRuntime(db, {
    runner: scriptedAgent({ ...agent, onResume: (ctx) => resumes.push(ctx.runId) }),
    ...options,
  })
  getActiveTest()?.cleanup(async () => {
    await stack.sink.shutdown()
    await db.manager.closeAll()
  })
  return { db, resumes, ...stack }
}

/** The parking stack with a runner of the test's own, on fresh tables; closed when the test ends. */
export async function setupRunner(runner: AgentRunner, options: Partial<RuntimeOptions> = {}) {
  const db = createDatabase()
  await resetTables(db)
  const stack = createRuntime(db, { ...options, runner })
  getActiveTest()?.cleanup(async () => {
    await stack.sink.shutdown()
    await db.manager.closeAll()
  })
  return { db, ...stack }
}

/**
 * Another replica of the test's database (a runtime of its own, tables not reset) with `runner`;
 * closed when the test ends.
 */
export function setupReplica(runner: AgentRunner, options: Partial<RuntimeOptions> = {}) {
  const db = createDatabase()
  const stack = createRuntime(db, { ...options, runner })
  getActiveTest()?.cleanup(async () => {
    await stack.sink.shutdown()
    await db.manager.closeAll()
  })
  return { db, ...stack }
}

/** Ask approval of the tool call `call_1` (`pay`, `{ n: 1 }`) and park: a parked run's start. */
export async function askApproval(ctx: RunContext) {
  await ctx.writer.write({
    t: 'approval',
    runId: ctx.runId,
    id: 'call_1',
    toolName: 'pay',
    input: { n: 1 },
  })
  return { status: 'parked' as const, checkpoint: {} }
}

/**
 * A runner whose provider numbers tool calls per response: every iteration asks approval for
 * `call_1` again (inputs `{ n: 1 }`, `{ n: 2 }` ...), up to `rounds` parks.
 */
export function reusedIdRunner(rounds: number): AgentRunner {
  const ask = async (ctx: RunContext, n: number) => {
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'call_1',
      toolName: 'pay',
      input: { n },
    })
    return { status: 'parked' as const, checkpoint: { n } }
  }
  return {
    start: (ctx) => ask(ctx, 1),
    async resume(ctx) {
      const n = (ctx.checkpoint as { n: number }).n + 1
      return n > rounds ? { status: 'finished' } : ask(ctx, n)
    },
  }
}

/** Snapshot of every parking and stream table (to prove a refusal changed nothing). */
export async function snapshot(db: ReturnType<typeof createDatabase>) {
  const out: Record<string, unknown[]> = {}
  for (const table of [
    'agent_streams',
    'agent_stream_frames',
    'agent_suspensions',
    'agent_approvals',
    'agent_elicitations',
  ]) {
    out[table] = await db.connection().from(table).select('*').orderByRaw('1, 2')
  }
  return JSON.stringify(out)
}
