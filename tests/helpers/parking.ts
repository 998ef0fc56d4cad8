import { getActiveTest } from '@japa/runner'
import { createParking, type ParkingOptions } from '../../src/parking/index.js'
import { scriptedAgent, type ScriptedAgentOptions } from '../../src/testing/scripted_agent.js'
import { createDatabase, resetTables } from './db.js'

/** The whole parking stack on fresh tables, with the scripted agent; closed when the test ends. */
export async function setupParking(
  agent: ScriptedAgentOptions = {},
  options: Partial<ParkingOptions> = {},
  reset = true
) {
  const db = createDatabase()
  if (reset) await resetTables(db)
  const resumes: string[] = []
  const stack = createParking(db, {
    runner: scriptedAgent({ ...agent, onResume: (ctx) => resumes.push(ctx.runId) }),
    ...options,
  })
  getActiveTest()?.cleanup(async () => {
    await stack.sink.shutdown()
    await db.manager.closeAll()
  })
  return { db, resumes, ...stack }
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
