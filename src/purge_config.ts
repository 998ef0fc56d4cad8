import { RuntimeException } from '@adonisjs/core/exceptions'
import type { PurgeScheduleOptions } from './sink/purge_schedule.js'

type Duration = string | number

/** `purge` in `config/agent_stream.ts`: the background purge (docs/operations.md). */
export interface PurgeConfig {
  /** How often (a duration, at least `1s`), from the end of one purge to the next. */
  every: Duration
  /** Streams per transaction, 1 to 10000. Default 100. */
  batchSize?: number
}

/**
 * The `purge` config in milliseconds, checked now (boot).
 * @throws RuntimeException naming the field
 */
export function purgeOf(
  config: PurgeConfig | undefined,
  ms: (name: string, value: Duration | undefined, min: number) => number | undefined
): PurgeScheduleOptions | undefined {
  if (config === undefined) return undefined
  const every = config === null || typeof config !== 'object' ? undefined : config.every
  if (every === undefined) {
    throw new RuntimeException(
      'Invalid "config/agent_stream.ts": "purge.every" is required (a duration such as "10m")'
    )
  }
  const batchSize = config.batchSize
  if (
    batchSize !== undefined &&
    (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
  ) {
    throw new RuntimeException(
      'Invalid "config/agent_stream.ts": "purge.batchSize" must be an integer from 1 to 10000'
    )
  }
  return { everyMs: ms('purge.every', every, 1000)!, batchSize }
}
