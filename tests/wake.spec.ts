import { test } from '@japa/runner'
import v8 from 'node:v8'
import vm from 'node:vm'
import { Wake } from '../src/core/wake.js'

/**
 * `Wake` (src/core/wake.ts): a one-shot signal many waits race in turn, each wait resolved by
 * whichever comes first, keeping nothing per wait once it settled (issue 26: a replay's every
 * chunk raced the end of the event loop's turn, a stream runner's every chunk its stop, each
 * with `Promise.race`, which left a reaction on the signal's promise per wait).
 */

/** The heap used after a full collection, in MB. */
function heapAfterGc() {
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc') as () => void
  gc()
  gc()
  return process.memoryUsage().heapUsed / 1e6
}

test.group('Wake (tests/wake.spec.ts)', () => {
  test('a wait resolves to what comes first: its promise, or the signal fired', async ({
    assert,
  }) => {
    const wake = new Wake<'fired'>()
    assert.equal(await wake.race(Promise.resolve(1)), 1)
    let later!: (value: number) => void
    const pending = new Promise<number>((resolve) => (later = resolve))
    const waiting = wake.race(pending)
    wake.fire('fired')
    assert.equal(await waiting, 'fired')
    assert.isTrue(wake.fired)
    // Fired: every later wait at once, its promise left to the caller (who awaits it again).
    later(2)
    assert.equal(await wake.race(pending), 'fired')
    assert.equal(await pending, 2)
    // Once: a second fire changes nothing.
    wake.fire('fired')
    assert.equal(await wake.race(new Promise(() => {})), 'fired')
  })

  // (An unhandled rejection anywhere in a spec fails the run: docs/testing.md. These failures
  // after the signal must leave none.)
  test("a wait's failure before the signal is its wait's; after it, nobody's", async ({
    assert,
  }) => {
    const wake = new Wake<'fired'>()
    await assert.rejects(() => wake.race(Promise.reject(new Error('first'))), 'first')
    let fail!: (error: Error) => void
    const pending = new Promise<number>((_, reject) => (fail = reject))
    const waiting = wake.race(pending)
    wake.fire('fired')
    assert.equal(await waiting, 'fired')
    fail(new Error('after the signal'))
    // A fired signal's later wait on a failing promise.
    assert.equal(await wake.race(Promise.reject(new Error('late'))), 'fired')
    await new Promise((resolve) => setTimeout(resolve, 20))
    // The caller that kept the promise still gets its failure.
    await assert.rejects(() => pending, 'after the signal')
  })

  test('a signal raced by 200,000 waits keeps nothing per wait (Promise.race keeps each: the control)', async ({
    assert,
  }) => {
    const waits = 200_000
    const wake = new Wake<'fired'>()
    const before = heapAfterGc()
    for (let i = 0; i < waits; i++) await wake.race(Promise.resolve(i))
    const kept = heapAfterGc() - before
    // The control: the same waits with Promise.race against one pending promise.
    let settle!: () => void
    const signal = new Promise<void>((resolve) => (settle = resolve))
    const controlBefore = heapAfterGc()
    for (let i = 0; i < waits; i++) await Promise.race([Promise.resolve(i), signal])
    const controlKept = heapAfterGc() - controlBefore
    settle()
    assert.isAbove(controlKept, 20, `Promise.race kept ${controlKept.toFixed(1)} MB`)
    assert.isBelow(kept, 5, `Wake kept ${kept.toFixed(1)} MB`)
  }).timeout(60_000)
})
