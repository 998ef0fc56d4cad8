/**
 * This package's Durable Streams doors for the bench (bench/ds_section.ts): a runtime on fresh
 * tables of `process.env.DB`, served on a bare `node:http` server on loopback (the few lines of
 * adapter a host writes: tests/helpers/fetch_node.ts) by `createDurableStreamsFetchHandler`
 * under `/ds`, with the dialects: a created stream at `/ds/v1/stream/<name>`, a run's stream at
 * `/ds/runs/<runId>/frames`. Every request
 * carries the principal `bench` (`x-user`): the doors' owner-only rules are in every
 * measurement.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRuntime } from '../src/runtime.js'
import { DoorRunStore } from '../src/store/door_runs.js'
import { tableNames } from '../src/store/schema.js'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { createDatabase, resetTables } from '../tests/helpers/db.js'
import { toNode } from '../tests/helpers/fetch_node.js'
import { seedStream } from '../tests/helpers/seed.js'
import type { DsTarget } from './durable_streams.js'

const PRINCIPAL = 'bench'

export async function servePackage() {
  const db = createDatabase()
  await resetTables(db)
  const runtime = createRuntime(db, {
    runner: {
      start: async () => ({ status: 'finished' }),
      resume: async () => ({ status: 'finished' }),
    },
  })
  const principal = (request: Request) => {
    const user = request.headers.get('x-user')
    return user ? { id: user } : null
  }
  const handler = createDurableStreamsFetchHandler(runtime.sink, {
    basePath: '/ds',
    principal,
    anonymous: false,
    dialects: { agui: runtime.door, uiMessage: runtime.uiMessage, rules: {} },
  })
  const server = createServer(toNode(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds`
  const target: DsTarget = {
    label: 'package',
    streamUrl: (name) => `${url}/v1/stream/${name}`,
    headers: { 'x-user': PRINCIPAL },
  }
  let runs = 0
  return {
    target,
    /** A finished run of `frames` stored frames (an agent turn: text, tool calls, outputs), the principal's; its frames stream's URL. */
    seedRun: async (frames: number) => {
      const runId = `bench-ds-run-${process.pid}-${++runs}`
      await seedStream(db, runId, frames, true)
      await new DoorRunStore(() => db.connection(), tableNames()).insert({
        runId,
        threadId: runId,
        streamRunId: runId,
        afterSeq: 0,
        kind: 'start',
        resumeHash: null,
        ownerId: PRINCIPAL,
      })
      return `${url}/runs/${runId}/frames`
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await runtime.sink.shutdown()
      await db.manager.closeAll()
    },
  }
}
