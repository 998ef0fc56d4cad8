import { test } from '@japa/runner'
import { averageCommitMs, coalesceText, type CoalescingInput } from '../src/sink/coalescing.js'

/** A writer growing a 10-char row, last text at t=1000, now t=1010, 40 ms window. */
const base: CoalescingInput = {
  rowChars: 10,
  heldChars: 0,
  addedChars: 5,
  now: 1010,
  lastTextAt: 1000,
  commitMs: 0,
  windowMs: 40,
  maxRowChars: 100,
}

test.group('Coalescing decision (no database)', () => {
  test('the first text after another frame is written at once, in a new row', ({ assert }) => {
    assert.deepEqual(coalesceText({ ...base, rowChars: null }), { write: 'now', newRow: true })
  })

  test('the first text after a quiet period as long as the window is written at once', ({
    assert,
  }) => {
    assert.deepEqual(coalesceText({ ...base, now: 1040 }), { write: 'now', newRow: false })
    assert.deepEqual(coalesceText({ ...base, now: 5000 }), { write: 'now', newRow: false })
    // Just inside the window: held.
    assert.equal(coalesceText({ ...base, now: 1039 }).write, 'hold')
  })

  test('later text is held for the window less the recent commit time', ({ assert }) => {
    assert.deepEqual(coalesceText(base), { write: 'hold', delayMs: 40 })
    assert.deepEqual(coalesceText({ ...base, commitMs: 15 }), { write: 'hold', delayMs: 25 })
    // A commit slower than the window still holds at least 1 ms.
    assert.deepEqual(coalesceText({ ...base, commitMs: 90 }), { write: 'hold', delayMs: 1 })
  })

  test('a row stops growing past maxRowChars: the text goes at once into a new row', ({
    assert,
  }) => {
    // 10 in the row + 80 held + 10 new = 100: still fits.
    assert.equal(coalesceText({ ...base, heldChars: 80, addedChars: 10 }).write, 'hold')
    // One more code unit does not.
    assert.deepEqual(coalesceText({ ...base, heldChars: 80, addedChars: 11 }), {
      write: 'now',
      newRow: true,
    })
  })

  test('the commit time is a moving average', ({ assert }) => {
    assert.equal(averageCommitMs(0, 10), 2)
    assert.closeTo(averageCommitMs(10, 20), 12, 1e-9)
  })
})
