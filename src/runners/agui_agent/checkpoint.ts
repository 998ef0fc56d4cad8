import type { SettledItem } from '../../parking/types.js'
import type { ParkedInterrupt } from './interrupts.js'
import { CheckpointUnreadable } from '../shared/checkpoint_unreadable.js'

/**
 * What a parked segment keeps (JSON, never sent to a browser): the interrupts the agent
 * finished its run with, as it sent them, and the item each became. The messages are not in it:
 * a resume rebuilds them from the stored frames, on any replica.
 */
export interface AgUiAgentCheckpoint {
  runner: 'agui-agent'
  version: 1
  parked: ParkedInterrupt[]
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/** The checkpoint of a resume, checked against its settled items. */
export function readCheckpoint(value: unknown, items: SettledItem[]): AgUiAgentCheckpoint {
  if (!isObject(value) || value.runner !== 'agui-agent' || value.version !== 1) {
    throw new CheckpointUnreadable('not an AG-UI agent checkpoint')
  }
  const parked = value.parked
  if (!Array.isArray(parked) || parked.length === 0) throw new CheckpointUnreadable('no interrupts')
  for (const entry of parked) {
    if (
      !isObject(entry) ||
      !isObject(entry.interrupt) ||
      typeof entry.interrupt.id !== 'string' ||
      typeof entry.itemId !== 'string' ||
      (entry.kind !== 'approval' && entry.kind !== 'elicitation')
    ) {
      throw new CheckpointUnreadable('an interrupt it cannot read')
    }
  }
  const ids = new Set((parked as ParkedInterrupt[]).map((entry) => entry.itemId))
  if (items.some((item) => !ids.has(item.id))) {
    throw new CheckpointUnreadable('an item it never asked')
  }
  return value as unknown as AgUiAgentCheckpoint
}
