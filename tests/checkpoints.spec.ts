import { test } from '@japa/runner'
import {
  StoredCheckpoints,
  TranslatorCheckpoints,
  checkpointKey,
  type CheckpointRowStore,
} from '../src/checkpoints/index.js'

/** A translator whose state is a string of `size` bytes. */
const weighing = (size: number) => ({ checkpoint: () => 'x'.repeat(size), restore: () => {} })

test.group('Translator checkpoints: bounded in bytes', () => {
  test('past maxBytes the least recently used streams go, then the stream saved to thins out; a state over maxBytes is not kept', ({
    assert,
  }) => {
    const checkpoints = new TranslatorCheckpoints<string>(1, 10, 100, 1000)
    for (let seq = 1; seq <= 3; seq++) checkpoints.save('a', seq, 'r', weighing(100))
    for (let seq = 1; seq <= 3; seq++) checkpoints.save('b', seq, 'r', weighing(100))
    assert.equal(checkpoints.bytes, 600)
    // 'a' used last: 'b' is the least recently used.
    assert.equal(checkpoints.nearest('a', 3)?.seq, 3)
    for (let seq = 1; seq <= 5; seq++) checkpoints.save('c', seq, 'r', weighing(100))
    assert.isNull(checkpoints.nearest('b', 3))
    assert.equal(checkpoints.nearest('a', 3)?.seq, 3)
    assert.equal(checkpoints.bytes, 800)
    // One stream alone past the budget: every other checkpoint goes, the newest stays.
    for (let seq = 10; seq <= 20; seq++) checkpoints.save('d', seq, 'r', weighing(100))
    assert.isAtMost(checkpoints.bytes, 1000)
    assert.isNull(checkpoints.nearest('a', 3))
    assert.equal(checkpoints.nearest('d', 20)?.seq, 20)
    // Larger than the whole budget: not kept (nothing else goes for it).
    const before = checkpoints.bytes
    checkpoints.save('e', 1, 'r', weighing(1001))
    assert.isNull(checkpoints.nearest('e', 1))
    assert.equal(checkpoints.bytes, before)
    // Discarding gives the bytes back.
    checkpoints.discard('d')
    checkpoints.discard('c')
    assert.equal(checkpoints.bytes, 0)
  })

  test('an object state weighs its JSON, maps and sets by what they hold', ({ assert }) => {
    const checkpoints = new TranslatorCheckpoints<object>(1, 10, 100, 10_000)
    const calls = new Map(Array.from({ length: 50 }, (_, i) => [`call_${i}`, { name: 'search' }]))
    checkpoints.save('a', 1, 'r', { checkpoint: () => ({ calls }), restore: () => {} })
    assert.isAbove(checkpoints.bytes, 50 * 'call_0'.length)
  })

  test('a state over a bound is told through onError (once a stream), in memory and stored', ({
    assert,
  }) => {
    const told: any[] = []
    const saved: string[] = []
    const rows: CheckpointRowStore = {
      nearest: async () => null,
      save: async (_run, _key, _incarnation, batch) =>
        void saved.push(...batch.map((row) => row.state)),
      discard: async () => {},
      isMissingTable: () => false,
    }
    const checkpoints = new TranslatorCheckpoints<string>(1, 10, 100, 1000)
    checkpoints.onError = (error) => told.push(error)
    checkpoints.stored = new StoredCheckpoints(rows, { encode: (s) => s, decode: (s) => s }, 'x', {
      every: 1,
      maxBytes: 500,
      onError: (error) => told.push(error),
    })
    const key = checkpointKey('run_big', 1, {})
    checkpoints.save(key, 1, 'r', weighing(2000))
    checkpoints.save(key, 2, 'r', weighing(2000))
    assert.lengthOf(told, 1)
    assert.include(told[0], { code: 'checkpoint_oversize', streamRunId: 'run_big', bytes: 2000 })
    assert.include(told[0].message, 'in memory')
    // Kept in memory, over the stored bound: not stored, told once.
    checkpoints.save(key, 3, 'r', weighing(600))
    checkpoints.save(key, 4, 'r', weighing(600))
    assert.lengthOf(told, 2)
    assert.include(told[1], { code: 'checkpoint_oversize', maxBytes: 500 })
    assert.include(told[1].message, 'stored')
    checkpoints.save(key, 5, 'r', weighing(100))
    assert.equal(checkpoints.nearest(key, 5)?.seq, 5)
    assert.lengthOf(told, 2)
  })
})
