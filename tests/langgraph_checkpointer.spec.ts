import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import type { RunnableConfig } from '@langchain/core/runnables'
import { Annotation, Command, END, START, StateGraph, interrupt } from '@langchain/langgraph'
import {
  MemorySaver,
  emptyCheckpoint,
  uuid6,
  type BaseCheckpointSaver,
} from '@langchain/langgraph-checkpoint'
import { CheckpointUnreadableError, LucidSaver } from '../src/runners/langgraph/checkpointer.js'
import { DEFAULT_LANGGRAPH_TABLES } from '../src/store/langgraph_schema.js'
import { createDatabase, resetLangGraphTables } from './helpers/db.js'

/**
 * `LucidSaver`, the LangGraph checkpointer on Lucid: LangGraph's official validation suite
 * (scripts/test_langgraph_checkpointer.mjs, a Vitest run) on this database, then what the suite
 * does not check: a compiled graph that parks on `interrupt` and resumes through a second saver
 * (another replica), bytes kept exactly, the metadata filter on values that are not strings,
 * and `deleteThread` leaving no row of the thread behind.
 */

/**
 * The validation suite's count with `@langchain/langgraph-checkpoint-validation` 1.1.1 (every
 * default spec and the opt-in `getDeltaChannelHistory`): a new version of the suite changes it.
 */
const VALIDATION_PASSED = 726

/** Run the validation script in a process of its own, on this suite's database. */
function runValidation(): Promise<{ code: number | null; output: string }> {
  const script = fileURLToPath(
    new URL('../scripts/test_langgraph_checkpointer.mjs', import.meta.url)
  )
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, VALIDATION_REPORTER: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
})

/** A graph that greets, then asks a person (`interrupt`) and logs the answer. */
function askingGraph(saver: BaseCheckpointSaver, ran: string[]) {
  return new StateGraph(State)
    .addNode('greet', () => {
      ran.push('greet')
      return { log: ['hello'] }
    })
    .addNode('ask', () => {
      const answer = interrupt({ question: 'Send it?' })
      ran.push('ask')
      return { log: [`answer: ${answer}`] }
    })
    .addEdge(START, 'greet')
    .addEdge('greet', 'ask')
    .addEdge('ask', END)
    .compile({ checkpointer: saver })
}

/** A thread's checkpoints, newest first: step, source, values and what runs next. */
async function historyOf(graph: ReturnType<typeof askingGraph>, config: object) {
  const history = []
  for await (const snapshot of graph.getStateHistory(config)) {
    const { step, source } = snapshot.metadata ?? {}
    history.push({ step, source, values: snapshot.values, next: snapshot.next })
  }
  return history
}

async function rowsOf(db: Database, threadId: string) {
  let rows = 0
  for (const table of Object.values(DEFAULT_LANGGRAPH_TABLES)) {
    const [{ n }] = await db.connection().from(table).where('thread_id', threadId).count('* as n')
    rows += Number(n)
  }
  return rows
}

test.group('LucidSaver (the LangGraph checkpointer on Lucid)', (group) => {
  let db: Database
  group.each.setup(async () => {
    db = createDatabase()
    await resetLangGraphTables(db)
    return () => db.manager.closeAll()
  })

  test("passes LangGraph's checkpointer validation suite on this database", async ({ assert }) => {
    const { code, output } = await runValidation()
    const summary = /validation \((\w+)\): (\d+) passed, (\d+) failed, (\d+) skipped/.exec(output)
    assert.isNotNull(summary, output)
    assert.equal(summary![1], process.env.DB ?? 'sqlite')
    assert.equal(Number(summary![3]), 0, output)
    assert.equal(Number(summary![2]), VALIDATION_PASSED, output)
    assert.equal(code, 0, output)
  }).timeout(90_000)

  test('a graph parks on interrupt and resumes through another saver, each node run once', async ({
    assert,
  }) => {
    const ran: string[] = []
    const config = { configurable: { thread_id: `thread-${uuid6(1)}` } }
    const first = askingGraph(new LucidSaver(db), ran)
    await first.invoke({ log: ['start'] }, config)
    const parked = await first.getState(config)
    assert.deepEqual(
      parked.tasks.flatMap((task) => task.interrupts.map((pending) => pending.value)),
      [{ question: 'Send it?' }]
    )
    assert.deepEqual(parked.next, ['ask'])

    // Another replica: its own Database, its own saver, the same tables.
    const other = createDatabase()
    try {
      const graph = askingGraph(new LucidSaver(other), ran)
      const done = await graph.invoke(new Command({ resume: 'yes' }), config)
      assert.deepEqual(done.log, ['start', 'hello', 'answer: yes'])
      assert.deepEqual(ran, ['greet', 'ask'])
      const state = await graph.getState(config)
      assert.deepEqual(state.values.log, ['start', 'hello', 'answer: yes'])
      assert.lengthOf(state.next, 0)
      // The same history as LangGraph's own in-memory saver keeps for the same runs.
      const memory = askingGraph(new MemorySaver(), [])
      await memory.invoke({ log: ['start'] }, config)
      await memory.invoke(new Command({ resume: 'yes' }), config)
      assert.deepEqual(await historyOf(graph, config), await historyOf(memory, config))
      assert.lengthOf(await historyOf(graph, config), 4)
    } finally {
      await other.manager.closeAll()
    }
  }).timeout(30_000)

  test('keeps every byte and character of a value exactly', async ({ assert }) => {
    const saver = new LucidSaver(db)
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i)
    const text = 'nul \u0000, astral 😀, lone \ud800, 中文, \\ "quoted"'
    const checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(1),
      channel_values: { bytes, text },
      channel_versions: { bytes: 1, text: 1 },
    }
    const config = await saver.put(
      { configurable: { thread_id: 'bytes', checkpoint_ns: '' } },
      checkpoint,
      { source: 'input', step: -1, parents: {} },
      { bytes: 1, text: 1 }
    )
    await saver.putWrites(config, [['bytes', bytes]], 'task')
    const tuple = await saver.getTuple(config)
    assert.deepEqual([...(tuple?.checkpoint.channel_values.bytes as Uint8Array)], [...bytes])
    assert.equal(tuple?.checkpoint.channel_values.text, text)
    assert.deepEqual([...(tuple?.pendingWrites?.[0][2] as Uint8Array)], [...bytes])
  })

  test('list filters on metadata values of any JSON type, with a limit', async ({ assert }) => {
    const saver = new LucidSaver(db)
    let config: RunnableConfig = { configurable: { thread_id: 'filter', checkpoint_ns: '' } }
    for (let step = 0; step < 6; step += 1) {
      const metadata = {
        source: 'loop' as const,
        step,
        parents: {},
        tags: step % 2 === 0 ? ['even'] : ['odd'],
        owner: { id: step < 3 ? 'alice' : 'bob' },
      }
      config = await saver.put(config, { ...emptyCheckpoint(), id: uuid6(1) }, metadata, {})
    }
    const steps = async (filter: Record<string, unknown>, limit?: number) => {
      const found: number[] = []
      for await (const tuple of saver.list(
        { configurable: { thread_id: 'filter' } },
        { filter, limit }
      )) {
        found.push(tuple.metadata!.step)
      }
      return found
    }
    assert.deepEqual(await steps({ tags: ['even'] }), [4, 2, 0])
    assert.deepEqual(await steps({ owner: { id: 'bob' } }), [5, 4, 3])
    assert.deepEqual(await steps({ owner: { id: 'bob' }, tags: ['odd'] }), [5, 3])
    assert.deepEqual(await steps({ tags: ['even'] }, 2), [4, 2])
    assert.deepEqual(await steps({ step: 1 }), [1])
    assert.deepEqual(await steps({ owner: 'bob' }), [])
  })

  test("deleteThread removes the thread's checkpoints, values and writes, no other thread's", async ({
    assert,
  }) => {
    const saver = new LucidSaver(db)
    for (const threadId of ['gone', 'kept']) {
      const config = await saver.put(
        { configurable: { thread_id: threadId, checkpoint_ns: '' } },
        {
          ...emptyCheckpoint(),
          id: uuid6(1),
          channel_values: { a: 1 },
          channel_versions: { a: 1 },
        },
        { source: 'input', step: -1, parents: {} },
        { a: 1 }
      )
      await saver.putWrites(config, [['a', 2]], 'task')
    }
    assert.equal(await rowsOf(db, 'gone'), 3)
    await saver.deleteThread('gone')
    assert.equal(await rowsOf(db, 'gone'), 0)
    assert.equal(await rowsOf(db, 'kept'), 3)
  })

  test("a checkpoint that no longer reads fails with CheckpointUnreadableError, the serde's error its cause", async ({
    assert,
  }) => {
    const ran: string[] = []
    const config = { configurable: { thread_id: `thread-${uuid6(1)}` } }
    const saver = new LucidSaver(db)
    await askingGraph(saver, ran).invoke({ log: ['start'] }, config)
    await db
      .connection()
      .from(DEFAULT_LANGGRAPH_TABLES.checkpoints)
      .where('thread_id', config.configurable.thread_id)
      .update({ checkpoint: Buffer.from('{not json') })

    const error = await saver.getTuple(config).catch((caught: unknown) => caught)
    assert.instanceOf(error, CheckpointUnreadableError)
    assert.equal(
      (error as CheckpointUnreadableError).message,
      'A stored LangGraph checkpoint could not be read'
    )
    assert.instanceOf((error as CheckpointUnreadableError).cause, SyntaxError)
    const resumed = await askingGraph(saver, ran)
      .invoke(new Command({ resume: 'yes' }), config)
      .catch((caught: unknown) => caught)
    assert.instanceOf(resumed, CheckpointUnreadableError)
    assert.deepEqual(ran, ['greet'])
  })

  test('refuses an id longer than its column instead of storing it cut short', async ({
    assert,
  }) => {
    const saver = new LucidSaver(db)
    const long = 'x'.repeat(192)
    const meta = { source: 'input' as const, step: -1, parents: {} }
    const put = (threadId: string, taskId = 'task') =>
      saver
        .put(
          { configurable: { thread_id: threadId } },
          { ...emptyCheckpoint(), id: uuid6(1) },
          meta,
          {}
        )
        .then((config) => saver.putWrites(config, [['a', 1]], taskId))
    await assert.rejects(() => put(long), 'LucidSaver: "thread_id" is longer than 191 characters')
    await assert.rejects(
      () => put('short', long),
      'LucidSaver: "task_id" is longer than 191 characters'
    )
    assert.equal(await rowsOf(db, long), 0)
    assert.equal(await rowsOf(db, long.slice(0, 191)), 0)
    await put('x'.repeat(191))
    assert.equal(await rowsOf(db, 'x'.repeat(191)), 2)
  })
})
