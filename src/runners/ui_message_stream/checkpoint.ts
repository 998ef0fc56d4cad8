import type { SettledItem } from '../../parking/types.js'
import type { AskedApproval } from './chunks.js'
import { CheckpointUnreadable } from '../shared/checkpoint_unreadable.js'

/**
 * What a parked segment keeps (JSON, never sent to a browser): each approval request the
 * stream made, by tool-call id (the item id), as the producer sent it (its approval id,
 * signature, descriptor). The messages are not in it: a resume rebuilds them from the frames.
 */
export interface UiMessageStreamCheckpoint {
  runner: 'ui-message-stream'
  version: 1
  approvals: Record<string, AskedApproval>
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/** The checkpoint of a resume, checked against its settled items. */
export function readCheckpoint(value: unknown, items: SettledItem[]): UiMessageStreamCheckpoint {
  if (!isObject(value) || value.runner !== 'ui-message-stream' || value.version !== 1) {
    throw new CheckpointUnreadable('not a UI message stream checkpoint')
  }
  const approvals = value.approvals
  if (!isObject(approvals)) throw new CheckpointUnreadable('no approvals')
  for (const asked of Object.values(approvals)) {
    if (!isObject(asked) || typeof asked.id !== 'string') {
      throw new CheckpointUnreadable('an approval it cannot read')
    }
  }
  if (items.some((item) => item.kind !== 'approval' || !Object.hasOwn(approvals, item.id))) {
    throw new CheckpointUnreadable('an item it never asked')
  }
  return value as unknown as UiMessageStreamCheckpoint
}
