import { test } from '@japa/runner'
import { PurgeSchedule } from '../src/sink/purge_schedule.js'

/**
 * Review of issue 26: `purge.every` accepts any duration of at least 1s, but a timer past
 * 2^31-1 ms (about 24.8 days) fires after 1 ms in Node: a schedule "every 30 days" must not
 * purge at once and then again every millisecond.
 */
test.group('Review 26: purge schedule', () => {
  test('a period past the timer limit (30 days) does not purge at once', async ({ assert }) => {
    let purges = 0
    const schedule = new PurgeSchedule({ everyMs: 30 * 86_400_000 }, async () => {
      purges++
      return 0
    })
    const warn = process.emitWarning
    process.emitWarning = () => {}
    try {
      schedule.start()
      await new Promise((resolve) => setTimeout(resolve, 150))
      await schedule.stop()
    } finally {
      process.emitWarning = warn
    }
    assert.equal(purges, 0)
    assert.isNull(schedule.status().lastRunAt)
  })
})
